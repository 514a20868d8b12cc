"""Beside the GPU Operator: one place for the MIG config, one plugin per GPU, a MIG manager
that waits for gpuconf's plugin before it repartitions (gpus/gpu_operator.py has the facts), and
one migStrategy its GFD can label every pool under (resolve/mig_strategies.py)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.cluster.nvidia_components import GpuOperator
from gpuconf.compiler.resolve.class_selection import default_resource_name
from gpuconf.compiler.resolve.mig_strategies import MigStrategies, PoolNeed
from gpuconf.compiler.rules.context import SPEC, RuleContext, class_path, pool_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.gpu_operator import FIRST_WAITING, RELEASES

OPERATOR = (*SPEC, "gpuOperator")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    operator = ctx.cluster.spec.gpu_operator
    if operator is None:
        return
    yield from _namespace(ctx, operator)
    if operator.device_plugin and ctx.cluster.spec.allocation == "dra":
        yield ctx.error(
            (*OPERATOR, "devicePlugin"),
            "the GPU Operator's device plugin would advertise the GPUs NVIDIA's DRA driver "
            "already hands out (allocation: dra), and nothing gpuconf renders for DRA keeps "
            "the two off the same node",
            "set devicePlugin: false",
        )
    yield from _mig_waits(ctx, operator)
    yield from _one_mig_strategy(ctx, operator)


def _namespace(ctx: RuleContext, operator: GpuOperator) -> Iterator[Diagnostic]:
    mig_namespace = ctx.cluster.spec.mig_manager.namespace
    if any(p.mig_layouts() for p in ctx.cluster.spec.node_pools) and (
        mig_namespace != operator.namespace
    ):
        yield ctx.error(
            (*OPERATOR, "namespace"),
            f"the GPU Operator runs in {operator.namespace!r} but the MIG layouts go to "
            f"{mig_namespace!r} (spec.migManager.namespace); its MIG manager reads its "
            "ConfigMap only in the Operator's namespace",
            f"set spec.migManager.namespace: {operator.namespace}",
        )


def _mig_waits(ctx: RuleContext, operator: GpuOperator) -> Iterator[Diagnostic]:
    release = RELEASES[operator.version]
    if release.waits_for_clients or ctx.cluster.spec.allocation == "dra":
        return
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        if not pool.mig_layouts():
            continue
        manager = f"the MIG manager of GPU Operator {operator.version} ({release.mig_manager})"
        if operator.device_plugin:
            yield ctx.error(
                pool_path(i, "sharing"),
                f"{manager} would repartition pool {pool.name!r} under a running plugin: with "
                "the Operator's own device plugin kept on, the pool's plugin runs where "
                "nvidia.com/gpu.deploy.device-plugin=false, a value the MIG manager never "
                "pauses, and it waits only for the Operator's own pods",
                f"use GPU Operator {FIRST_WAITING} (its MIG manager waits for "
                "nvidia.com/gpu.deploy.client pods), or set gpuOperator.devicePlugin: false",
            )
        else:
            yield ctx.warning(
                pool_path(i, "sharing"),
                f"{manager} takes the plugin pods of pool {pool.name!r} off a node it repartitions "
                "(it pauses nvidia.com/gpu.deploy.device-plugin) but does not wait for them to "
                "go; a pod still holding a GPU makes the change fail "
                "(nvidia.com/mig.config.state=failed) until the node is labelled again",
                f"GPU Operator {FIRST_WAITING}'s MIG manager waits for them",
            )


def _one_mig_strategy(ctx: RuleContext, operator: GpuOperator) -> Iterator[Diagnostic]:
    strategies = ctx.mig_strategies
    if strategies.conflict:
        yield ctx.error(
            OPERATOR,
            "the GPU Operator's GPU Feature Discovery labels every pool under the one "
            "migStrategy of its ClusterPolicy (spec.mig.strategy), and none serves all of "
            "gpuconf's pools with MIG: " + "; ".join(_need(need) for need in strategies.needs),
            "make those pools agree (mixed serves any MIG layout; single only one profile on "
            "every GPU), or let gpuconf's node runtime write GFD's labels (plugin: gpuconf, "
            "spec.node.labels.owner: gpuconf, Kubernetes 1.30 or later), which keeps the "
            "Operator's GFD off gpuconf's pools",
        )
        return
    yield from _renamed_classes(ctx, strategies)
    if strategies.operator is not None and operator.device_plugin:
        yield _operator_plugin_strategy(ctx, strategies.operator, strategies.needs)


# k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go validateFlags: "using
# --mig-strategy=mixed is not supported with MPS". The Operator's plugin config (its
# devicePlugin.config) is not gpuconf's, so whether it shares by MPS is unknown here.
MIXED_WITHOUT_MPS = (
    "; and under mixed NVIDIA's device plugin refuses to start where its config shares GPUs "
    'with MPS ("using --mig-strategy=mixed is not supported with MPS")'
)


def _operator_plugin_strategy(
    ctx: RuleContext, strategy: str, needs: tuple[PoolNeed, ...]
) -> Diagnostic:
    pools = ", ".join(repr(n.pool) for n in needs)
    mixed = strategy == "mixed"
    return ctx.warning(
        (*OPERATOR, "devicePlugin"),
        f"gpuconf sets the ClusterPolicy's mig.strategy to {strategy} for its GFD on pools "
        f"{pools}; the Operator's own device plugin runs by that strategy too on the nodes it "
        "serves outside gpuconf's pools, and names their MIG devices by it"
        + (MIXED_WITHOUT_MPS if mixed else ""),
        "check that those nodes' workloads request their MIG devices by the names migStrategy "
        f"{strategy} gives"
        + (", and that the Operator's devicePlugin.config shares no GPU with MPS" if mixed else ""),
    )


def _need(need: PoolNeed) -> str:
    wanted = " or ".join(sorted(need.strategies, reverse=True)) or "no strategy at all"
    return f"pool {need.pool!r} needs {wanted} ({', '.join(need.reasons)})"


def _renamed_classes(ctx: RuleContext, strategies: MigStrategies) -> Iterator[Diagnostic]:
    """A MIG class whose name the Operator's one strategy changes from the one its pools
    would give it alone, unless the file says that name."""
    spec = ctx.cluster.spec
    if spec.plugin != "nvidia" or spec.allocation != "device-plugin":
        return
    for resolved in ctx.classes:
        if resolved.spec.select.mig_profile is None or resolved.spec.resource_name is not None:
            continue
        moved = [p for p in resolved.pools if strategies.own[p] != strategies.pools[p]]
        if not moved:
            continue
        own = strategies.own[moved[0]]
        alone = default_resource_name(resolved.spec, spec, single_mig=own == "single")
        yield ctx.warning(
            class_path(resolved.index, "select"),
            f"class {resolved.name!r} is advertised as {resolved.resource_name} under migStrategy "
            f"{strategies.operator}, where its pool {moved[0]!r} alone would run {own} and name "
            f"it {alone}: {strategies.held_to(strategies.pools[moved[0]])}",
            f"say resourceName: {resolved.resource_name} in the class to keep that name and this "
            f"warning off; pods asking for {alone} there no longer fit",
        )
