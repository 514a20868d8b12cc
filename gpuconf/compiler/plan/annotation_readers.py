"""Every annotation gpuconf writes, what reads each, and which values a site's block may give it;
and the hook annotations, which no object gpuconf writes may carry (resolve/metadata_guard.py
holds the rule; the tests hold that every annotation rendered is here).

Sources read: Argo CD's sync engine in argoproj/argo-cd at 37ee009 (Aug 2026), which now holds
gitops-engine as gitops-engine/ (GetAnnotationCSVs reads a sync-options value's options in order,
taking the first value of each at 37ee009; gitops-engine before c6321991b1 read them in a Go
map's random order); Flux's kustomize-controller at v1.9.0-36 (186fb3b) with fluxcd/pkg ssa
v0.77.0, which it builds against."""

from __future__ import annotations

import re
from typing import Any

from gpuconf.compiler.plan.cluster_objects import KEPT_ANNOTATION
from gpuconf.compiler.plan.config_hash import CONFIG_HASH_ANNOTATION
from gpuconf.compiler.plan.meta import (
    FLUX_PRUNE,
    FLUX_RECONCILE,
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
    """A Namespace's wave (gpuconf's first) may be lower, an optional kind's (its last) higher,
    any other not change: what each wave holds needs the waves before it and is needed by
    those after it."""
    if not isinstance(value, str):
        return _NOT_TEXT
    if not _ATOI.fullmatch(value) or int(value) not in _GO_INT:
        return "Argo CD reads a wave as a Go int and takes anything else as wave 0"
    own, wave = int(written), int(value)
    waves = sorted(int(w) for w in WAVES)
    if wave == own or waves[0] == own > wave or waves[-1] == own < wave:
        return None
    if wave < own:
        before = max(w for w in waves if w < own)
        return f"wave {own}'s objects need wave {before} applied first: {WAVES[str(before)]}"
    after = min(w for w in waves if w > own)
    return f"wave {after} needs wave {own}'s objects applied first: {WAVES[str(after)]}"


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


def _equal_fold(value: Any, word: str) -> bool:
    """Go's strings.EqualFold, which Flux compares its annotations' values with (fluxcd/pkg
    ssa/utils/meta.go, AnyInMetadata): equal code point by code point under simple case folding
    (the long s folds to s, ß not to ss)."""
    return (
        isinstance(value, str)
        and len(value) == len(word)
        and all(a.casefold() == b.casefold() for a, b in zip(value, word, strict=True))
    )


# kustomize-controller's values (api/v1/kustomization_types.go), each read by any case.
_DISABLED, _MERGE, _IGNORE, _IF_NOT_PRESENT = "disabled", "Merge", "Ignore", "IfNotPresent"
_FLUX_SKIPS = (
    "Flux's kustomize-controller then never applies the object (fluxcd/pkg ssa "
    "manager_apply.go, shouldSkipApply: its ExclusionSelector), nor prunes it"
)


def _prune_breaks(written: str, value: Any) -> str | None:
    if not isinstance(value, str):
        return _NOT_TEXT
    return None if _equal_fold(value, written) else ""


def _reconcile_breaks(written: str, value: Any) -> str | None:
    if not isinstance(value, str):
        return _NOT_TEXT
    return _FLUX_SKIPS if _equal_fold(value, _DISABLED) else None


def _ssa_breaks(written: str, value: Any) -> str | None:
    """Where gpuconf writes Merge, Merge by any case; elsewhere no value that skips the apply."""
    if not isinstance(value, str):
        return _NOT_TEXT
    if written:
        return None if _equal_fold(value, written) else ""
    if _equal_fold(value, _IGNORE):
        return _FLUX_SKIPS
    if _equal_fold(value, _IF_NOT_PRESENT):
        return (
            "Flux's kustomize-controller then creates the object but never updates it "
            "(fluxcd/pkg ssa manager_apply.go, shouldSkipApply: its IfNotPresentSelector), "
            "so no later render of gpuconf's reaches the cluster"
        )
    return None


_FLUX_READS = (
    "Flux's kustomize-controller reads it from an object's labels and annotations alike, by any "
    "case (internal/controller/kustomization_controller.go, apply; fluxcd/pkg ssa "
    "utils/meta.go, AnyInMetadata)"
)
FLUX_READERS = {
    FLUX_RECONCILE: Guard(
        f"{_FLUX_READS}: disabled leaves the object out of every apply and prune",
        _reconcile_breaks,
        "gpuconf's objects are the Kustomization's to apply: suspend the Kustomization instead",
        read_with=EVERY_OBJECT,
    ),
    FLUX_SSA: Guard(
        f"{_FLUX_READS}: Ignore leaves the object out of every apply and prune, IfNotPresent "
        "applies it only where it is missing, and Merge (what gpuconf writes on an adopted "
        "Namespace) leaves the fields other field managers set: an adopted Namespace is its "
        "owner's, gpuconf only adds labels",
        _ssa_breaks,
        "leave it as gpuconf writes it (Merge, by any case, where it does)",
        read_with=EVERY_OBJECT,
    ),
}
"""The Flux annotations (and labels) that make kustomize-controller skip or keep an object,
guarded on every object gpuconf writes, as labels too (filters.label_guards)."""


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
        "leave it as gpuconf writes it, but for a Namespace's, which may be lower, and an "
        "optional kind's, which may be higher",
    ),
    SYNC_OPTIONS: Guard(
        "Argo CD reads sync-options as a comma-separated list and takes the first value of "
        "each option (gitops-engine pkg/sync/resource/annotations.go, GetAnnotationOptionValue)",
        _sync_options_break,
        "add options of your own after gpuconf's (e.g. Prune=false,Delete=false,Validate=false)",
    ),
    FLUX_PRUNE: Guard(
        "Flux's kustomize-controller deletes an object gone from the source unless it is "
        "annotated prune: disabled, by any case (internal/controller/kustomization_controller.go, "
        "deleteObjects; fluxcd/pkg ssa utils/meta.go, AnyInMetadata): gpuconf's Namespaces hold "
        "workloads and are never deleted",
        _prune_breaks,
    ),
    **FLUX_READERS,
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
