"""plan/annotation_readers.py: every annotation gpuconf writes has its reader named, and a user's
value is taken only where that reader still gets what gpuconf's value tells it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import REPO, load_yaml, run_cli, site_block

from gpuconf.compiler.plan import annotation_readers
from gpuconf.compiler.plan.annotation_readers import ANNOTATION_READERS, ARGOCD_HOOK, HELM_HOOK
from gpuconf.compiler.plan.cluster_objects import ADOPTED, NEVER_DELETED
from gpuconf.compiler.plan.meta import (
    FLUX_PRUNE,
    FLUX_RECONCILE,
    FLUX_SSA,
    SYNC_OPTIONS,
    SYNC_WAVE,
    WAVES,
)
from gpuconf.compiler.resolve.metadata_guard import refusals
from gpuconf.compiler.templating.filters import label_guards


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


# gitops-engine applies a wave once the waves before it are healthy: a Namespace's wave (the
# first) may be lower, an optional kind's (the last) higher, the others not at all.
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
def test_only_the_first_sync_wave_may_be_lower_and_the_last_higher(
    wave: str, admitted: range | list[int]
) -> None:
    assert wave in WAVES
    moves = [n for n in range(-6, 7) if _admitted({SYNC_WAVE: wave}, str(n))]
    assert moves == list(admitted)


def test_a_middle_sync_wave_stays_put_even_with_room_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    apart = {str(int(wave) * 10): held for wave, held in WAVES.items()}
    monkeypatch.setattr(annotation_readers, "WAVES", apart)
    moves = [n for n in range(-30, 31) if _admitted({SYNC_WAVE: "10"}, str(n))]
    assert moves == [10]


def test_a_moved_sync_wave_is_refused_with_the_rule_as_the_docs_state_it() -> None:
    [refusal] = refusals({SYNC_WAVE: "0"}, {SYNC_WAVE: "1"}, ANNOTATION_READERS)
    assert refusal.why == (f"wave 1 needs wave 0's objects applied first: {WAVES['1']}")
    assert refusal.hint("annotation").endswith(
        "; leave it as gpuconf writes it, but for a Namespace's, which may be lower, and an "
        "optional kind's, which may be higher"
    )


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


def _flux_refused(written: dict[str, str], key: str, value: Any) -> list[str]:
    return [r.why for r in refusals(written, {key: value}, ANNOTATION_READERS)]


# Flux reads its values by strings.EqualFold (fluxcd/pkg ssa/utils/meta.go, AnyInMetadata):
# kustomize-controller 186fb3b internal/controller/kustomization_controller.go keeps an object
# annotated prune: disabled (deleteObjects), skips reconcile: disabled and ssa: Ignore (apply's
# ExclusionSelector), updates ssa: IfNotPresent never (IfNotPresentSelector).
@pytest.mark.parametrize(
    ("value", "admitted"),
    [("disabled", True), ("Disabled", True), ("DISABLED", True), ("enabled", False), ("", False)],
)
def test_flux_prune_keeps_disabled_by_any_case(value: str, admitted: bool) -> None:
    assert (not _flux_refused(NEVER_DELETED, FLUX_PRUNE, value)) is admitted


@pytest.mark.parametrize(
    ("value", "admitted"),
    [("Merge", True), ("merge", True), ("MERGE", True), ("Override", False), ("Ignore", False)],
)
def test_flux_ssa_on_an_adopted_namespace_keeps_merge_by_any_case(
    value: str, admitted: bool
) -> None:
    assert (not _flux_refused(ADOPTED, FLUX_SSA, value)) is admitted


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        (FLUX_RECONCILE, "disabled", "never applies the object"),
        (FLUX_RECONCILE, "Disabled", "never applies the object"),
        (FLUX_SSA, "Ignore", "never applies the object"),
        (FLUX_SSA, "ignore", "never applies the object"),
        (FLUX_SSA, "IfNotPresent", "never updates it"),
        (FLUX_SSA, "ifnotpresent", "never updates it"),
        # Go's EqualFold folds the long s to s.
        (FLUX_RECONCILE, "di\u017fabled", "never applies the object"),
    ],
)
@pytest.mark.parametrize("written", [{}, NEVER_DELETED], ids=["any object", "a namespace"])
def test_a_flux_annotation_that_skips_the_object_is_refused_on_any_object(
    key: str, value: str, why: str, written: dict[str, str]
) -> None:
    [refused] = _flux_refused(written, key, value)
    assert why in refused


@pytest.mark.parametrize(
    ("key", "value"),
    [(FLUX_RECONCILE, "enabled"), (FLUX_SSA, "Merge"), (FLUX_SSA, "merge"), (FLUX_SSA, "Override")],
)
def test_a_flux_annotation_that_skips_nothing_is_taken_where_gpuconf_writes_none(
    key: str, value: str
) -> None:
    assert not _flux_refused({SYNC_WAVE: "1"}, key, value)


@pytest.mark.parametrize(
    ("key", "value"), [(FLUX_RECONCILE, "disabled"), (FLUX_SSA, "IfNotPresent")]
)
def test_flux_s_skipping_labels_are_refused_too(key: str, value: str) -> None:
    """AnyInMetadata reads labels as annotations."""
    assert any(refusals({}, {key: value}, label_guards()))
    assert not any(refusals({}, {key: "Merge" if key == FLUX_SSA else "enabled"}, label_guards()))


def test_a_site_block_skipping_gpuconf_s_namespace_in_flux_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    site_block(
        tmp_path, "namespace.yaml.j2", "extra_annotations", f"team: gpu\n{FLUX_SSA}: ifnotpresent"
    )
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "--check", cwd=REPO
    )
    assert result.code == 1
    assert f"{tmp_path.as_posix()}/namespace.yaml.j2:4:1: " in result.err
    assert f"the block sets the annotation {FLUX_SSA} to 'ifnotpresent'" in result.err
    assert "AnyInMetadata" in result.err
