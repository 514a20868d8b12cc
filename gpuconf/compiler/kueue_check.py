"""The Kueue objects of a render, checked as rendered and before anything is written: against the
CRD schemas of the declared Kueue release (vendored in compiler/kueue/crds/) and against what
Kueue's webhook and quota accounting refuse beyond them (compiler/kueue/admission.py).

The templating check (compiler/templating/check.py) checks a CRD kind against one storage
version's schema; a Kueue kind's schema depends on the release the cluster declares (v1beta1
ClusterQueue differs from v0.13 to v0.19), and its CEL rules need cel-python, so Kueue's kinds
are checked here, on the parsed output, with the release in hand."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpuconf.compiler.kueue.admission import Capacity, refusals
from gpuconf.compiler.kueue.crd_schema import CrdSchemas
from gpuconf.compiler.kueue.queues import flavor_capacity
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.kueue import kueue_objects
from gpuconf.compiler.render import render
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.validate import Validated
from gpuconf.diagnostics import Diagnostic
from gpuconf.formats.located_yaml import parse_text

WHERE = ("spec", "kueue")
KINDS = frozenset({"ResourceFlavor", "ClusterQueue", "LocalQueue"})


def kueue_problems(
    validated: Validated, artifacts: Iterable[Artifact], tree: Mapping[str, bytes]
) -> list[Diagnostic]:
    """`tree`: what the render of `artifacts` gave; its Kueue manifests are read back from it."""
    kueue = validated.cluster.spec.kueue
    if kueue is None:
        return []
    objects: list[dict[str, Any]] = [
        parse_text(tree[a.path].decode("utf-8"), a.path).data
        for a in artifacts
        if a.in_kustomization and a.kind in KINDS
    ]
    schemas = CrdSchemas(kueue.version)
    found = []
    for obj in objects:
        name = obj["metadata"]["name"]
        if "namespace" in obj["metadata"]:
            name = f"{obj['metadata']['namespace']}/{name}"
        found += [
            (f"{obj['kind']} {name}", e.path, f"{e.message} (Kueue {kueue.version}'s CRD schema)")
            for e in schemas.errors(obj)
        ]
    if not found:
        # The rules read the shape the schemas give (a site's template may break it).
        capacity = {
            key: Capacity(devices, over)
            for key, (devices, over) in flavor_capacity(validated.classes).items()
        }
        found += [(r.object, r.path, r.message) for r in refusals(objects, capacity)]
    return [
        validated.located.diagnostic(
            WHERE,
            f"{what}: {path + ': ' if path else ''}{message}",
            "gpuconf rendered an object Kueue would refuse; please report it, with the cluster file"
            if "CRD schema" not in message
            else "",
        )
        for what, path, message in found
    ]


def planned_kueue_problems(validated: Validated, templates: Templates) -> list[Diagnostic]:
    """`kueue_problems` for validate: only the Kueue objects are planned and rendered (a failing
    template raises RenderFailed, as in a render)."""
    if validated.cluster.spec.kueue is None:
        return []
    artifacts = kueue_objects(validated.cluster, validated.classes)[0]
    return kueue_problems(validated, artifacts, render(artifacts, templates))
