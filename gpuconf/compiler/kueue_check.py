"""The Kueue objects of a render, checked before anything is written: against the CRD schemas of
the declared Kueue release (vendored in compiler/kueue/crds/) and against what Kueue's webhook
and quota accounting refuse beyond them (compiler/kueue/admission.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuconf.compiler.kueue.admission import Capacity, refusals
from gpuconf.compiler.kueue.crd_schema import CrdSchemas
from gpuconf.compiler.kueue.queues import flavor_capacity
from gpuconf.compiler.kueue.releases import GROUP
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.plan.kueue import kueue_objects
from gpuconf.compiler.validate import Validated
from gpuconf.diagnostics import Diagnostic

WHERE = ("spec", "kueue")


def kueue_problems(
    validated: Validated, artifacts: Iterable[Artifact] | None = None
) -> list[Diagnostic]:
    """`artifacts`: the render's plan; without it, only the Kueue objects are planned."""
    kueue = validated.cluster.spec.kueue
    if kueue is None:
        return []
    if artifacts is None:
        artifacts = kueue_objects(validated.cluster, validated.classes)[0]
    objects: list[dict[str, Any]] = [
        a.content
        for a in artifacts
        if a.in_kustomization and a.content["apiVersion"].startswith(f"{GROUP}/")
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
