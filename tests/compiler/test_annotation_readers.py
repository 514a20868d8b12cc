"""plan/annotation_readers.py: every annotation gpuconf writes has its reader named, and a user's
value is taken only where that reader still gets what gpuconf's value tells it."""

from __future__ import annotations

from typing import Any

import pytest
from builders import load_yaml

from gpuconf.compiler.plan.annotation_readers import ANNOTATION_READERS, ARGOCD_HOOK, HELM_HOOK
from gpuconf.compiler.plan.meta import SYNC_OPTIONS, SYNC_WAVE, WAVES
from gpuconf.compiler.resolve.metadata_guard import refusals


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    pod = obj.get("spec", {}).get("template", {}).get("metadata", {})
    return {**obj["metadata"].get("annotations", {}), **pod.get("annotations", {})}


def test_every_annotation_gpuconf_writes_has_its_reader_named(compiled_examples) -> None:  # type: ignore[no-untyped-def]
    written = {
        key
        for tree in compiled_examples.rendered.values()
        for path, data in tree.items()
        if path.endswith(".yaml") and path != "kustomization.yaml"
        for obj in [load_yaml(data)]
        if isinstance(obj.get("metadata"), dict)
        for key in _annotations(obj)
    }
    assert SYNC_OPTIONS in written
    assert written <= ANNOTATION_READERS.keys()
    assert not written & {ARGOCD_HOOK, HELM_HOOK}


def _admitted(written: dict[str, str], value: Any) -> bool:
    key = next(iter(written))
    return not any(refusals(written, {key: value}, ANNOTATION_READERS))


# gitops-engine applies a wave once the waves before it are healthy: an object stays after the
# gpuconf wave before its own and before the one after; only the first and last have room.
@pytest.mark.parametrize(
    ("wave", "admitted"),
    [
        ("-2", range(-6, -1)),
        ("-1", [-1]),
        ("0", [0]),
        ("1", [1]),
        ("2", range(2, 7)),
    ],
)
def test_a_sync_wave_may_move_only_between_gpuconf_s_neighbouring_waves(
    wave: str, admitted: range | list[int]
) -> None:
    assert wave in WAVES
    moves = [n for n in range(-6, 7) if _admitted({SYNC_WAVE: wave}, str(n))]
    assert moves == list(admitted)


@pytest.mark.parametrize("value", ["1.0", "one", " 1", "1_0", "", "9223372036854775808", 1])
def test_a_sync_wave_argo_cd_would_not_read_as_an_int_is_refused(value: Any) -> None:
    assert not _admitted({SYNC_WAVE: "1"}, value)


@pytest.mark.parametrize("value", ["+1", "01", "-0001"])
def test_a_sync_wave_go_reads_as_gpuconf_s_is_taken(value: str) -> None:
    assert _admitted({SYNC_WAVE: "-1" if value.startswith("-") else "1"}, value)


@pytest.mark.parametrize(
    ("value", "admitted"),
    [
        ("Prune=false,Delete=false", True),
        (" Delete=false , Prune=false,,", True),
        ("Prune=false,Delete=false,Validate=false,PruneLast=true", True),
        ("Prune=false", False),
        ("Prune=false,Delete=false,Delete=true", False),
        ("Delete=confirm,Prune=false,Delete=false", False),
        ("prune=false,delete=false", False),
        ("", False),
    ],
)
def test_sync_options_keep_every_option_gpuconf_writes_and_no_other_value_of_it(
    value: str, admitted: bool
) -> None:
    assert _admitted({SYNC_OPTIONS: "Prune=false,Delete=false"}, value) is admitted


# gitops-engine (argo-cd 37ee009) pkg/sync/hook/hook.go, IsHook: argocd.argoproj.io/hook of any
# value makes a hook (Skip alone: never applied; no type it knows: ignored), else helm.sh/hook of
# any value but crd-install (pkg/sync/hook/helm/hook.go). On every object, whatever gpuconf wrote.
@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        (ARGOCD_HOOK, "PreSync", "takes the object for a hook"),
        (ARGOCD_HOOK, " Sync , PostSync", "takes the object for a hook"),
        (ARGOCD_HOOK, "Skip", "never applies the object"),
        (ARGOCD_HOOK, "Skip,Skip", "never applies the object"),
        (ARGOCD_HOOK, "Skip,PreSync", "takes the object for a hook"),
        (ARGOCD_HOOK, "", "leaves the object out of every sync"),
        (ARGOCD_HOOK, "presync", "leaves the object out of every sync"),
        (HELM_HOOK, "pre-install,post-upgrade", "takes the object for a hook"),
        (HELM_HOOK, "pre-delete", "leaves the object out of every sync"),
    ],
)
@pytest.mark.parametrize("written", [{}, {SYNC_WAVE: "-2", SYNC_OPTIONS: "Prune=false"}])
def test_a_hook_annotation_is_refused_on_any_object_gpuconf_writes(
    key: str, value: str, why: str, written: dict[str, str]
) -> None:
    [refusal] = refusals(written, {key: value}, ANNOTATION_READERS)
    assert refusal.written is None
    assert why in refusal.why
    assert "IsHook" in refusal.hint("annotation")


@pytest.mark.parametrize(
    "added",
    [
        {HELM_HOOK: "crd-install"},
        {"argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"},
        {"helm.sh/hook-delete-policy": "hook-succeeded"},
    ],
)
def test_what_argo_cd_does_not_read_as_a_hook_is_taken(added: dict[str, str]) -> None:
    """crd-install is no hook to Argo CD; a delete policy is read only on hooks
    (pkg/sync/sync_task.go, hasHookDeletePolicy)."""
    assert not any(refusals({SYNC_WAVE: "1"}, added, ANNOTATION_READERS))
