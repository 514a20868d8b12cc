"""The Kueue objects of a render, checked as rendered and before anything is written: against the
CRD schemas of the declared Kueue release (vendored in compiler/kueue/crds/) and against what
Kueue's webhook and quota accounting refuse beyond them (compiler/kueue/admission.py).

Validate never gets here: the rules (compiler/rules/kueue_limits.py) refuse, at the cluster
file's own keys, every limit a cluster file can reach. This check is render's backstop, on the
real output, which a site's template may change.

The templating check (compiler/templating/check.py) checks a CRD kind against one storage
version's schema; a Kueue kind's schema depends on the release the cluster declares (v1beta1
ClusterQueue differs from v0.13 to v0.19), and its CEL rules need cel-python, so Kueue's kinds
are checked here, on the parsed output, with the release in hand."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpuconf.compiler.plan.artifact import Artifact
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
    # Imported here: a cluster without Kueue renders without its CRD schemas and admission.
    from gpuconf.compiler.kueue.admission import Capacity, refusals
    from gpuconf.compiler.kueue.crd_schema import CrdSchemas
    from gpuconf.compiler.kueue.limits import QUEUE_LIMITS
    from gpuconf.compiler.kueue.queues import flavor_capacity

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
        found += [
            (r.object, r.path, r.message)
            for r in refusals(objects, capacity, QUEUE_LIMITS[kueue.version])
        ]
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
