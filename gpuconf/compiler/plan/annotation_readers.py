"""Every annotation gpuconf writes, what reads each, and which values a site's block may give it;
and the hook annotations, which no object gpuconf writes may carry (resolve/metadata_guard.py
holds the rule; the tests hold that every annotation rendered is here).

Sources read: Argo CD's sync engine in argoproj/argo-cd at 37ee009 (Aug 2026), which now holds
gitops-engine as gitops-engine/ (argoproj/gitops-engine v0.7.0-144, 5baed56, reads a sync-options
value's options in a Go map's random order); Flux's kustomize-controller at v1.9.0-36
(186fb3b)."""

from __future__ import annotations

import re
from typing import Any

from gpuconf.compiler.plan.cluster_objects import KEPT_ANNOTATION
from gpuconf.compiler.plan.config_hash import CONFIG_HASH_ANNOTATION
from gpuconf.compiler.plan.meta import (
    FLUX_PRUNE,
    FLUX_SSA,
    SKIP_DRY_RUN_ON_MISSING_KIND,
    SYNC_OPTIONS,
    SYNC_WAVE,
    WAVES,
)
from gpuconf.compiler.resolve.metadata_guard import EVERY_OBJECT, Guard

_NOT_TEXT = "Kubernetes takes only strings as annotation values"

# Go's strconv.Atoi, which Argo CD reads a wave with (gitops-engine pkg/sync/syncwaves/waves.go,
# Wave): an optional sign and decimal digits, within a 64-bit int. Anything else is silently
# wave 0 (the Helm hook weight it falls back to).
_ATOI = re.compile(r"[+-]?[0-9]+")
_GO_INT = range(-(2**63), 2**63)


def _wave_breaks(written: str, value: Any) -> str | None:
    if not isinstance(value, str):
        return _NOT_TEXT
    if not _ATOI.fullmatch(value) or int(value) not in _GO_INT:
        return "Argo CD reads a wave as a Go int and takes anything else as wave 0"
    own, wave = int(written), int(value)
    before = max((int(w) for w in WAVES if int(w) < own), default=None)
    after = min((int(w) for w in WAVES if int(w) > own), default=None)
    if before is not None and wave <= before:
        return f"wave {wave} is not after wave {before}, {WAVES[str(before)]}"
    if after is not None and wave >= after:
        return f"wave {wave} is not before wave {after}, {WAVES[str(after)]}"
    return None


def _options(text: str) -> list[str]:
    """Argo CD's reading of a sync-options value (gitops-engine pkg/sync/resource/annotations.go,
    GetAnnotationCSVs): comma-separated, each trimmed, empty ones skipped."""
    return [option.strip() for option in text.split(",") if option.strip()]


SYNC_OPTION_READERS = {
    "Prune=false": "without it a sync deletes the object once it leaves the rendered tree "
    "(gitops-engine pkg/sync/sync_context.go, isPruningDisabled), a Namespace with every "
    "workload in it",
    "Delete=false": "without it deleting the Application deletes the object "
    "(controller/appcontroller.go, shouldBeDeleted), a Namespace with every workload in it",
    SKIP_DRY_RUN_ON_MISSING_KIND: "without it a cluster lacking the kind's CRD fails the "
    "whole sync in its dry run (gitops-engine pkg/sync/sync_context.go)",
    "ServerSideApply=true": "without it Argo CD applies the whole object client-side rather "
    "than owning only the fields gpuconf writes on a Namespace someone else owns",
}
"""What each sync option gpuconf writes keeps Argo CD from doing."""


def _sync_options_break(written: str, value: Any) -> str | None:
    if not isinstance(value, str):
        return _NOT_TEXT
    options = _options(value)
    for option in _options(written):
        if option not in options:
            reader = SYNC_OPTION_READERS.get(option)
            return f"it drops {option}: {reader}" if reader else f"it drops {option}"
        name = option.split("=", 1)[0] + "="
        other = next((o for o in options if o.startswith(name) and o != option), None)
        if other is not None:
            return f"it sets {other} beside {option}, and Argo CD reads only one value of an option"
    return None


ARGOCD_HOOK = "argocd.argoproj.io/hook"
HELM_HOOK = "helm.sh/hook"
# Argo CD's hook types (gitops-engine pkg/sync/common/types.go, NewHookType) and the Helm hooks
# it runs as its own (pkg/sync/hook/helm/type.go, NewType).
_ARGOCD_HOOKS = ("PreSync", "Sync", "PostSync", "SyncFail", "Skip")
_HELM_HOOKS = ("pre-install", "pre-upgrade", "post-upgrade", "post-install")
_AS_A_HOOK = (
    "Argo CD then takes the object for a hook, not a resource of the Application: it deletes "
    "and recreates it at each sync (hook-delete-policy BeforeHookCreation, the default: "
    "pkg/sync/hook/delete_policy.go), a Namespace with every workload in it and a DaemonSet "
    "with every pod, and never prunes nor reports its health"
)


def _hook_breaks(types: tuple[str, ...], value: Any) -> str:
    """Why an object annotated `value` (one of `types` or not) is lost to the Application."""
    if not isinstance(value, str):
        return _NOT_TEXT
    # GetAnnotationCSVs (pkg/sync/resource/annotations.go): _options' reading, deduplicated.
    named = [hook for hook in dict.fromkeys(_options(value)) if hook in types]
    if named == ["Skip"]:
        return "Argo CD then never applies the object (pkg/sync/sync_phase.go, syncPhases)"
    if not named:
        return (
            "Argo CD then leaves the object out of every sync, as a hook of no type it knows "
            "(pkg/sync/ignore/ignore.go, Ignore)"
        )
    return _AS_A_HOOK


def _argocd_hook_breaks(written: str, value: Any) -> str | None:
    return _hook_breaks(_ARGOCD_HOOKS, value)


def _helm_hook_breaks(written: str, value: Any) -> str | None:
    """Helm's crd-install alone is no hook to Argo CD (pkg/sync/hook/helm/hook.go, IsHook)."""
    if value == "crd-install":
        return None
    return _hook_breaks(_HELM_HOOKS, value)


_HOOK_READER = (
    "Argo CD takes any object annotated {key}{but} for a hook, run around a sync rather than "
    "synced (gitops-engine pkg/sync/hook/hook.go, IsHook; pkg/sync/reconcile.go, splitHooks)"
)
_HOOK_INSTEAD = (
    "gpuconf's objects are the Application's resources: give a hook of your own a file of its "
    "own (hook-delete-policy alone changes nothing: Argo CD reads it only on hooks, "
    "pkg/sync/sync_task.go)"
)
HOOK_READERS = {
    ARGOCD_HOOK: Guard(
        _HOOK_READER.format(key=ARGOCD_HOOK, but=" (Skip alone: never applied)"),
        _argocd_hook_breaks,
        _HOOK_INSTEAD,
        read_with=EVERY_OBJECT,
    ),
    HELM_HOOK: Guard(
        _HOOK_READER.format(key=HELM_HOOK, but=", unless it is crd-install,"),
        _helm_hook_breaks,
        _HOOK_INSTEAD,
        read_with=EVERY_OBJECT,
    ),
}
"""The annotations that make Argo CD take an object for a hook, refused on every object gpuconf
writes: each is a resource of the Application, synced, pruned (or kept) and health-checked."""

ANNOTATION_READERS = {
    SYNC_WAVE: Guard(
        "Argo CD applies an Application's waves lowest first, each once every object of the "
        "waves before it is synced and healthy (gitops-engine pkg/sync/sync_context.go, Sync), "
        "so an object moved before what it needs, or after what needs it, stops the sync",
        _wave_breaks,
        "give it a wave between the waves gpuconf writes before and after it (a Namespace's "
        "may be lower, an optional kind's higher)",
    ),
    SYNC_OPTIONS: Guard(
        "Argo CD reads sync-options as a comma-separated list and takes the first value of "
        "each option (gitops-engine pkg/sync/resource/annotations.go, GetAnnotationOptionValue)",
        _sync_options_break,
        "add options of your own after gpuconf's (e.g. Prune=false,Delete=false,Validate=false)",
    ),
    FLUX_PRUNE: Guard(
        "Flux's kustomize-controller deletes an object gone from the source unless it is "
        "annotated prune: disabled (internal/controller/kustomization_controller.go, "
        "deleteObjects): gpuconf's Namespaces hold workloads and are never deleted"
    ),
    FLUX_SSA: Guard(
        "Flux's kustomize-controller leaves the fields other field managers set on an object "
        "annotated ssa: Merge (internal/controller/kustomization_controller.go, apply's "
        "cleanup exclusions): an adopted Namespace is its owner's, gpuconf only adds labels"
    ),
    KEPT_ANNOTATION: Guard(
        "gpuconf's next render reads it back (compiler/kept_namespaces.py) to know a kept "
        "Namespace was gpuconf's own"
    ),
    CONFIG_HASH_ANNOTATION: Guard(
        "the DaemonSet controller replaces the pods when their template changes: the hash of "
        "the config files they read only at start rolls them onto a new config"
    ),
    **HOOK_READERS,
}
"""By annotation key: every annotation gpuconf writes is read by something; the hook annotations,
which gpuconf writes on no object, may be on none."""
