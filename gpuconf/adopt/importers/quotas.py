"""`gpuconf import quotas RESOURCEQUOTA… --into FILE`: the GPU lines of ResourceQuotas written as
the cluster file's `spec.quotas`, through the round-trip writer (the file keeps its comments).

A quota line becomes a class's quota where exactly one class is requested by that name
(`requests.<resource>`, or `<class>.deviceclass.resource.k8s.io/devices` under DRA). Lines that
name no class, or several (NVIDIA's nvidia.com/gpu shared by classes), scopes, and non-GPU
resources are listed, not dropped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gpuconf.adopt.cluster_file import ClusterFile
from gpuconf.adopt.importers.sources import Source
from gpuconf.adopt.quota_scopes import described, scopes
from gpuconf.api.cluster.quota import QUOTA_MAX
from gpuconf.api.kubernetes_names import QUOTA_PREFIX
from gpuconf.compiler.plan.dra import dra_quota_key
from gpuconf.compiler.plan.quotas import device_plugin_quota_key
from gpuconf.compiler.validate import Validated
from gpuconf.diagnostics import Diagnostic
from gpuconf.formats import round_trip_yaml
from gpuconf.formats.quantity import device_count


def quota_keys(validated: Validated) -> dict[str, list[str]]:
    """Each ResourceQuota key gpuconf writes for the cluster's classes → the classes it counts
    (the keys render writes: plan/quotas.py, plan/dra.py)."""
    keys: dict[str, list[str]] = {}
    dra = validated.cluster.spec.allocation == "dra"
    key_of = dra_quota_key if dra else device_plugin_quota_key
    for resolved in validated.classes:
        keys.setdefault(key_of(resolved), []).append(resolved.name)
    return keys


def import_quotas(
    file: ClusterFile, validated: Validated, sources: Sequence[Source]
) -> list[Diagnostic]:
    """Set the quotas in `file`'s document; returns what was not imported."""
    keys = quota_keys(validated)
    left_out: list[Diagnostic] = []
    # namespace → class → its quotas' lines
    limits: dict[str, dict[str, list[_Line]]] = {}
    for source in sources:
        if source.at("kind") != "ResourceQuota":
            left_out.append(source.not_imported(("kind",), "not a ResourceQuota; skipped"))
            continue
        namespace = source.at("metadata", "namespace")
        if not isinstance(namespace, str):
            left_out.append(
                source.not_imported(("metadata",), "no metadata.namespace: skipped", "")
            )
            continue
        spec = source.at("spec")
        held_scopes = scopes(spec) if isinstance(spec, dict) else frozenset()
        scope_key = next((k for k in ("scopes", "scopeSelector") if source.at("spec", k)), "")
        hard = source.at("spec", "hard")
        if not isinstance(hard, dict):
            left_out.append(source.not_imported(("spec",), "no spec.hard mapping: skipped"))
            continue
        for key, value in hard.items():
            where = ("spec", "hard", key)
            named = keys.get(key, [])
            counted_as = _counted_as(key)
            if not named and counted_as in keys:
                left_out.append(
                    source.not_imported(
                        where,
                        f"Kubernetes counts {counted_as.removeprefix(QUOTA_PREFIX)} in a quota only "
                        f"as {counted_as}: this line limits nothing, so it is not imported",
                        f"to limit the namespace, write {counted_as} and import again",
                    )
                )
            elif len(named) != 1:
                message = (
                    f"{key} counts classes {', '.join(named)} together; gpuconf quotas one class"
                    if named
                    else "no class of the cluster is requested by this name"
                )
                left_out.append(source.not_imported(where, message))
            elif (count := device_count(value)) is None or count < 0:
                left_out.append(source.not_imported(where, f"{value!r} is not a device count"))
            elif count > QUOTA_MAX:
                # More than any cluster holds: the namespace is unlimited in effect, as it is
                # without a quota.
                kept = _written(file.document, namespace, named[0])
                left_out.append(
                    source.not_imported(
                        where,
                        f"{value} is more than a gpuconf quota holds ({QUOTA_MAX:,}): not "
                        + (
                            "imported, which leaves the namespace as unlimited as this line did"
                            if kept is None
                            else f"imported; the file keeps {named[0]}: {kept} there"
                        ),
                    )
                )
            else:
                line = _Line(count, held_scopes, source, ("spec", scope_key))
                limits.setdefault(namespace, {}).setdefault(named[0], []).append(line)
    for namespace, classes in limits.items():
        chosen = {name: _limit(name, lines, left_out) for name, lines in classes.items()}
        _set_quota(file.document, namespace, chosen)
    return left_out


class _Line(NamedTuple):
    value: int
    scopes: frozenset[str]
    source: Source
    scope_at: tuple[str, str]


def _counted_as(key: object) -> str:
    """The key the quota admission counts a device-plugin resource by: the API server admits
    `nvidia.com/gpu` and `limits.nvidia.com/gpu` in a quota, but its pod evaluator counts an
    extended resource only as `requests.<name>` (k8s.io/kubernetes v1.34
    pkg/quota/v1/evaluator/core/pods.go, isExtendedResourceNameForQuota)."""
    resource = str(key).removeprefix("limits.")
    return resource if resource.startswith(QUOTA_PREFIX) else QUOTA_PREFIX + resource


def _limit(name: str, lines: list[_Line], left_out: list[Diagnostic]) -> int:
    """A class's quota in a namespace: the smallest unscoped one, which holds every pod
    (adopt/quota_scopes.py), the scoped ones said to be left out; without one, gpuconf's quotas
    having no scopes, the smallest scoped one held over all the namespace's pods, so no pod gets
    more than it had."""
    unscoped = [line.value for line in lines if not line.scopes]
    limit = min(unscoped) if unscoped else min(line.value for line in lines)
    for line in lines:
        if not line.scopes:
            continue
        held = f"this quota holds only the pods of {described(line.scopes)} ({name}: {line.value})"
        if unscoped and line.value < limit:
            message = (
                f"{held}; gpuconf's quotas have no scopes: not imported, so those pods may now "
                f"use up to the namespace's {limit}"
            )
        elif unscoped:
            message = (
                f"{held}; gpuconf's quotas have no scopes: not imported, and the namespace's "
                f"quota of {limit} holds those pods too"
            )
        else:
            message = (
                f"{held}; gpuconf's quotas have no scopes: imported as {limit} for every pod of "
                "the namespace"
            )
        left_out.append(line.source.not_imported(line.scope_at, message))
    return limit


def _namespace_quota(document: CommentedMap, namespace: str) -> CommentedMap | None:
    """The file's quota entry for `namespace`, if any."""
    for quota in document["spec"].get("quotas") or ():
        if isinstance(quota, CommentedMap) and quota.get("namespace") == namespace:
            return quota
    return None


def _written(document: CommentedMap, namespace: str, name: str) -> object | None:
    """The quota the file gives class `name` in `namespace`, if any."""
    quota = _namespace_quota(document, namespace)
    classes = quota.get("classes") if quota is not None else None
    if isinstance(classes, dict) and name in classes:
        kept: object = classes[name]
        return kept
    return None


def _set_quota(document: CommentedMap, namespace: str, classes: dict[str, int]) -> None:
    spec = document["spec"]
    quotas = spec.get("quotas")
    if not isinstance(quotas, CommentedSeq):
        quotas = round_trip_yaml.sequence([], flow=False)
        spec["quotas"] = quotas
    quota = _namespace_quota(document, namespace)
    if quota is not None:
        existing: Any = quota.get("classes")
        if isinstance(existing, CommentedMap):
            existing.update(classes)
        else:
            quota["classes"] = round_trip_yaml.flow_mapping(classes)
        return
    # Written like the file's quotas are: `classes: {a: 1}` or one class per line.
    like: Any = quotas[0].get("classes") if quotas and isinstance(quotas[0], CommentedMap) else None
    flow = not isinstance(like, CommentedMap) or bool(like.fa.flow_style())
    written = (
        round_trip_yaml.flow_mapping(classes) if flow else round_trip_yaml.block_mapping(classes)
    )
    quotas.append(round_trip_yaml.block_mapping({"namespace": namespace, "classes": written}))
