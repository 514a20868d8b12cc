"""Dynamic Resource Allocation: the Kubernetes version and what a DRA selector can express."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.dra.cel_proof import CelError, selected_devices
from gpuconf.compiler.dra.devices import DraDevice, expected_devices, published_devices
from gpuconf.compiler.dra.selector import cel_selector
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.rules.context import RuleContext, class_path
from gpuconf.diagnostics import Diagnostic

OLDEST_SUPPORTED = (1, 29)
NEWEST_SUPPORTED = (1, 37)
OLDEST_DRA = (1, 32)
_BUG_HINT = (
    "DRA tells devices apart only by what NVIDIA's driver publishes (type, productName, memory, "
    "profile, index, uuid): narrow select until those differ, or report a gpuconf bug"
)


def minor_version(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def check_version(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    version = minor_version(spec.kubernetes.version)
    path = ("spec", "kubernetes", "version")
    if not OLDEST_SUPPORTED <= version <= NEWEST_SUPPORTED:
        yield ctx.error(
            path,
            f"Kubernetes {spec.kubernetes.version} is not supported",
            "gpuconf targets Kubernetes 1.29 to 1.37",
        )
    elif spec.allocation == "dra" and version < OLDEST_DRA:
        yield ctx.error(
            path,
            f"allocation: dra needs Kubernetes 1.32 or newer, not {spec.kubernetes.version}",
            "DeviceClass is resource.k8s.io/v1beta1 in 1.32, v1beta2 in 1.33, v1 from 1.34; or use allocation: device-plugin",
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
