"""Kubernetes' DRA feature gates: each release's own name for a gate's stage (alpha, beta, GA),
as pkg/features/kube_features.go of 1.32-1.35 declares it."""

from __future__ import annotations

import pytest

from gpuconf.compiler.dra.kubernetes_gates import (
    DYNAMIC_RESOURCE_ALLOCATION,
    EXTENDED_RESOURCE,
    PRIORITIZED_LIST,
    Gate,
)


@pytest.mark.parametrize(
    ("gate", "stages"),
    [
        (DYNAMIC_RESOURCE_ALLOCATION, {32: "beta", 33: "beta", 34: "GA", 35: "GA"}),
        (PRIORITIZED_LIST, {33: "alpha", 34: "beta", 35: "beta"}),
        (EXTENDED_RESOURCE, {34: "alpha", 35: "alpha"}),
    ],
)
def test_each_gate_is_named_by_the_stage_its_release_gives_it(
    gate: Gate, stages: dict[int, str]
) -> None:
    assert {minor: gate.stage(minor) for minor in stages} == stages


def test_a_gate_on_by_default_is_on_from_its_minor_only() -> None:
    assert [DYNAMIC_RESOURCE_ALLOCATION.on_by_default(m) for m in (32, 33, 34)] == [
        False,
        False,
        True,
    ]
    assert not EXTENDED_RESOURCE.on_by_default(35)
