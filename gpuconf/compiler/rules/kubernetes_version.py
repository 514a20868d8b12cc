"""The target Kubernetes version: one gpuconf supports, and new enough for what the cluster uses."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.base import kubernetes_minor
from gpuconf.compiler.rules.context import RuleContext
from gpuconf.diagnostics import Diagnostic

OLDEST_SUPPORTED = 29
NEWEST_SUPPORTED = 37
OLDEST_DRA = 32


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    minor = kubernetes_minor(spec.kubernetes.version)
    path = ("spec", "kubernetes", "version")
    if not OLDEST_SUPPORTED <= minor <= NEWEST_SUPPORTED:
        yield ctx.error(
            path,
            f"Kubernetes {spec.kubernetes.version} is not supported",
            f"gpuconf targets Kubernetes 1.{OLDEST_SUPPORTED} to 1.{NEWEST_SUPPORTED}",
        )
    elif spec.allocation == "dra" and minor < OLDEST_DRA:
        yield ctx.error(
            path,
            f"allocation: dra needs Kubernetes 1.{OLDEST_DRA} or newer, not {spec.kubernetes.version}",
            "DeviceClass is resource.k8s.io/v1beta1 in 1.32, v1beta2 in 1.33, v1 from 1.34; or use allocation: device-plugin",
        )
