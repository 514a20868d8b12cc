"""Dynamic Resource Allocation: what a DRA selector can express with the chosen driver release
(imported by `rules.dra` only for clusters with allocation: dra)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.dra.cel_proof import CelError, selected_devices
from gpuconf.compiler.dra.devices import DraDevice, cluster_devices, expected_devices
from gpuconf.compiler.dra.selector import CelSelector, cel_selector
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.rules.context import SPEC, RuleContext, class_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.dra_attributes import SHARING_GATES

_BUG_HINT = (
    "DRA tells devices apart only by what NVIDIA's driver publishes (type, productName, "
    "architecture, memory, profile, uuid; index up to v25.3): narrow select until those differ, "
    "or report a gpuconf bug"
)


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    """Each class's selector compiles to CEL that selects exactly the class's GPUs, naming only
    attributes the chosen driver release publishes."""
    published = cluster_devices(ctx.cluster, ctx.inventory)
    for resolved in ctx.classes:
        selector = cel_selector(resolved, ctx.catalog, published.names)
        yield from _agrees(ctx, resolved, selector, published.devices)
    yield from _feature_gates(ctx, published.release, published.names.sharing_gated)
    yield from _device_list(ctx)


def _feature_gates(ctx: RuleContext, release: str, gated: bool) -> Iterator[Diagnostic]:
    """From v25.8 the driver refuses sharing unless its gate is on. gpuconf does not install the
    driver: a gate declared off is an error, one not declared a warning to check the install."""
    if not gated:
        return
    gates = ctx.cluster.spec.dra.feature_gates
    for resolved in ctx.classes:
        strategy = resolved.spec.sharing.strategy
        gate = SHARING_GATES.get(strategy)
        if gate is None or gates.get(gate) is True:
            continue
        report = ctx.error if gate in gates else ctx.warning
        yield report(
            class_path(resolved.index, "sharing", "strategy"),
            f"NVIDIA's DRA driver {release} refuses {strategy} sharing ('unknown GPU sharing "
            f"strategy') unless its feature gate {gate} is on",
            f"install the driver with --set featureGates.{gate}=true and declare it as "
            f"spec.dra.featureGates.{gate}: true, or remove sharing",
        )


def _device_list(ctx: RuleContext) -> Iterator[Diagnostic]:
    node = ctx.cluster.spec.node
    chosen: str | None = node.device_list_strategy
    if "device_list_strategy" in node.fields_given and chosen not in (None, "cdi"):
        yield ctx.warning(
            (*SPEC, "node", "deviceListStrategy"),
            f"deviceListStrategy {chosen} has no effect with allocation: dra: NVIDIA's DRA "
            "driver always hands devices to the runtime by CDI",
            "remove deviceListStrategy; the container runtime must have CDI enabled",
        )


def _agrees(
    ctx: RuleContext, resolved: ResolvedClass, selector: CelSelector, devices: list[DraDevice]
) -> Iterator[Diagnostic]:
    path = class_path(resolved.index, "select")
    selected = selected_devices(selector.expression, devices)
    if isinstance(selected, CelError):
        yield ctx.error(path, f"class {resolved.name!r}: {selected.message}", _BUG_HINT)
        return
    expected = expected_devices(resolved, devices)
    if selected == expected:
        return
    by_key = {d.key: d for d in devices}
    extra = sorted({by_key[k].describe() for k in selected - expected})
    missed = sorted({by_key[k].describe() for k in expected - selected})
    if selector.unproven:
        # Narrowed by model where UUIDs were missing, and that was not enough.
        also = f"; by model alone it would also select {_listed(extra)}" if extra else ""
        for problem in selector.unproven:
            yield ctx.error(
                class_path(resolved.index, "select", problem.key),
                problem.message + also,
                problem.hint,
            )
        return
    parts = [f"also selects {_listed(extra)}"] if extra else []
    parts += [f"misses {_listed(missed)}"] if missed else []
    yield ctx.error(
        path,
        f"the DeviceClass selector of class {resolved.name!r} would not select the class's GPUs: it "
        + " and ".join(parts),
        _BUG_HINT,
    )


def _listed(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
