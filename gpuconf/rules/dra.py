"""Dynamic Resource Allocation: the Kubernetes version and what a DRA selector can express."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.diagnostics import Diagnostic
from gpuconf.rules.context import RuleContext

OLDEST_SUPPORTED = (1, 29)
NEWEST_SUPPORTED = (1, 37)
OLDEST_DRA = (1, 32)


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
    if ctx.cluster.spec.allocation != "dra":
        return
    yield from ()
