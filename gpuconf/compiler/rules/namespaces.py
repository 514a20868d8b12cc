"""Namespaces gpuconf renders are its own: never `default` or a `kube-*` system namespace."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import SPEC, RuleContext, quota_path
from gpuconf.diagnostics import Diagnostic


def is_system_namespace(name: str) -> bool:
    return name == "default" or name.startswith("kube-")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    if is_system_namespace(spec.namespace):
        yield ctx.error(
            (*SPEC, "namespace"),
            f"{spec.namespace!r} is a system namespace; gpuconf creates and owns the namespace of its own objects",
            "use a namespace of gpuconf's own, e.g. gpuconf-system",
        )
    for i, quota in enumerate(spec.quotas):
        policy = quota.namespace_policy or spec.namespace_policy
        if policy != "external" and is_system_namespace(quota.namespace):
            yield ctx.error(
                quota_path(i, "namespace"),
                f"{quota.namespace!r} is a system namespace; namespacePolicy {policy} would render it",
                "set namespacePolicy: external on this quota to render only its ResourceQuota",
            )
