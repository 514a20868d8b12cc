"""Dynamic Resource Allocation: what a DRA selector can express."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.dra.cel_proof import CelError, selected_devices
from gpuconf.compiler.dra.devices import DraDevice, expected_devices, published_devices
from gpuconf.compiler.dra.selector import cel_selector
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.rules.context import RuleContext, class_path
from gpuconf.diagnostics import Diagnostic

_BUG_HINT = (
    "DRA tells devices apart only by what NVIDIA's driver publishes (type, productName, memory, "
    "profile, index, uuid): narrow select until those differ, or report a gpuconf bug"
)


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    """Each class's selector compiles to CEL that selects exactly the class's GPUs."""
    if ctx.cluster.spec.allocation != "dra":
        return
    devices = published_devices(ctx.inventory)
    for resolved in ctx.classes:
        expression = cel_selector(resolved, ctx.catalog)
        if not isinstance(expression, str):
            for problem in expression:
                yield ctx.error(
                    class_path(resolved.index, "select", problem.key), problem.message, problem.hint
                )
            continue
        yield from _agrees(ctx, resolved, expression, devices)


def _agrees(
    ctx: RuleContext, resolved: ResolvedClass, expression: str, devices: list[DraDevice]
) -> Iterator[Diagnostic]:
    path = class_path(resolved.index, "select")
    selected = selected_devices(expression, devices)
    if isinstance(selected, CelError):
        yield ctx.error(path, f"class {resolved.name!r}: {selected.message}", _BUG_HINT)
        return
    expected = expected_devices(resolved, devices)
    if selected == expected:
        return
    by_key = {d.key: d for d in devices}
    extra = sorted({by_key[k].describe() for k in selected - expected})
    missed = sorted({by_key[k].describe() for k in expected - selected})
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
