"""DRA and the target Kubernetes: the feature gates the rendered objects need, declared where the
version leaves them off (gates in compiler/dra/kubernetes_gates.py)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.base import kubernetes_minor
from gpuconf.compiler.dra.kubernetes_gates import DYNAMIC_RESOURCE_ALLOCATION, Gate, dra_api_version
from gpuconf.compiler.rules.context import RuleContext
from gpuconf.diagnostics import Diagnostic, KeyPath

GATES = ("spec", "kubernetes", "featureGates")


def gate_problem(ctx: RuleContext, gate: Gate, path: KeyPath, what: str) -> Iterator[Diagnostic]:
    """An error at `path` when `what` (e.g. "firstAvailable") needs `gate` and the target
    version lacks it, leaves it off undeclared, or it is declared off."""
    version = ctx.cluster.spec.kubernetes.version
    minor = kubernetes_minor(version)
    if minor < gate.since:
        yield ctx.error(
            path,
            f"{what} needs Kubernetes 1.{gate.since} or newer (feature gate {gate.name}), not {version}",
            f"target 1.{max(gate.since, gate.on_from or 0)} or later, or leave {what} out",
        )
        return
    declared = ctx.cluster.spec.kubernetes.feature_gates.get(gate.name)
    if declared is True or (declared is None and gate.on_by_default(minor)):
        return
    api = ""
    runtime_config = ""
    if gate is DYNAMIC_RESOURCE_ALLOCATION:
        api = f" and the API {dra_api_version(minor)}, both off by default"
        runtime_config = f" and --runtime-config={dra_api_version(minor)}=true on the API server"
    state = (
        "declared off" if declared is False else f"{gate.stage(minor)}, off by default in {version}"
    )
    yield ctx.error(
        (*GATES, gate.name) if declared is False else path,
        f"{what} needs the feature gate {gate.name} ({state}){api}",
        f"run the API server, scheduler, controller manager and kubelets with "
        f"--feature-gates={gate.name}=true{runtime_config}, and declare it: "
        f"spec.kubernetes.featureGates: {{{gate.name}: true}}",
    )


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    path = ("spec", "allocation")
    yield from gate_problem(ctx, DYNAMIC_RESOURCE_ALLOCATION, path, "allocation: dra")
