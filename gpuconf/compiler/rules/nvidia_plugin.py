"""What NVIDIA's device plugin cannot do, said up front (its parser would silently ignore it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.rules.context import RuleContext, class_path, pool_path
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.nvidia_plugin_releases import (
    ALLOCATION_POLICY_SINCE,
    RELEASES,
    at_least,
    image,
    image_release,
    plugin_release,
)
from gpuconf.gpus.resource_names import nvidia_resources

_USE_GPUCONF = "plugin: gpuconf gives each class its own resource and sharing"


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    if spec.plugin != "nvidia" or spec.allocation != "device-plugin":
        return
    for resolved in ctx.classes:
        name = resolved.spec.resource_name
        profile = resolved.spec.select.mig_profile
        shared = resolved.spec.sharing.strategy != "none"
        allowed = nvidia_resources(profile, shared)
        if name is not None and name not in allowed:
            yield ctx.error(
                class_path(resolved.index, "resourceName"),
                f"NVIDIA's device plugin cannot advertise {name!r}",
                f"it advertises {' or '.join(sorted(allowed))} (its rename option is ignored at run time); {_USE_GPUCONF}",
            )
        yield from _mps_settings(ctx, resolved)
    for i, pool in enumerate(spec.node_pools):
        covering = [c for c in ctx.classes if c.members_in(pool.name)]
        for resolved in covering:
            profile = resolved.spec.select.mig_profile
            wanted = {
                (id(grp), gpu.index)
                for grp in ctx.inventory.by_pool(pool.name)
                for gpu in grp.shape
                if (gpu.mig is None) == (profile is None)
                and (profile is None or profile in (gpu.mig or {}))
            }
            taken = {
                (id(m.group), m.gpu.index) for m in resolved.members if m.group.pool == pool.name
            }
            if taken != wanted:
                yield ctx.error(
                    class_path(resolved.index, "select"),
                    f"NVIDIA's device plugin cannot give class {resolved.name!r} only some of pool {pool.name!r}'s "
                    + ("MIG devices" if profile else "GPUs"),
                    f"with plugin: nvidia a class takes all of a pool's GPUs; {_USE_GPUCONF}",
                )
        yield from _one_setting_per_node(ctx, i, pool.name, covering)
    yield from _release(ctx)
    yield from _shared_names(ctx)


# Settings NVIDIA's plugin holds once per node, so every shared class of a pool must agree:
# (what differs, the setting of one class, why it matters).
_NODE_WIDE_SETTINGS: tuple[tuple[str, Callable[[ResolvedClass], str], str], ...] = (
    (
        "sharing strategy",
        lambda c: c.spec.sharing.strategy,
        "NVIDIA's device plugin applies one sharing strategy per node",
    ),
    (
        "'.shared' suffix of their resource names",
        lambda c: "with" if c.resource_name.endswith(".shared") else "without",
        "NVIDIA's plugin renames all shared resources of a node or none (renameByDefault)",
    ),
    (
        "allocationPolicy",
        lambda c: c.spec.allocation_policy,
        "NVIDIA's device plugin has one sharedDevicesAllocationPolicy per node",
    ),
    (
        "failRequestsGreaterThanOne setting",
        lambda c: str(getattr(c.spec.sharing, "fail_requests_greater_than_one", False)).lower(),
        "NVIDIA's device plugin has one such setting per node",
    ),
)


def _one_setting_per_node(
    ctx: RuleContext, i: int, pool: str, covering: list[ResolvedClass]
) -> Iterator[Diagnostic]:
    shared = [c for c in covering if c.spec.sharing.strategy != "none"]
    for what, setting, why in _NODE_WIDE_SETTINGS:
        if len({setting(c) for c in shared}) > 1:
            each = ", ".join(f"{c.name}: {setting(c)}" for c in shared)
            yield ctx.error(
                pool_path(i),
                f"shared classes on pool {pool!r} disagree on the {what} ({each})",
                f"{why}; {_USE_GPUCONF}",
            )


def _mps_settings(ctx: RuleContext, resolved: ResolvedClass) -> Iterator[Diagnostic]:
    sharing = resolved.spec.sharing
    if sharing.strategy != "mps":
        return
    for key, value in (
        ("memoryLimitMiB", sharing.memory_limit_mi_b),
        ("activeThreadPercentage", sharing.active_thread_percentage),
    ):
        if value is not None:
            yield ctx.error(
                class_path(resolved.index, "sharing", key),
                f"NVIDIA's device plugin cannot set {key}",
                f"it gives each MPS client an equal share of the GPU; remove {key}, or {_USE_GPUCONF}",
            )


_IMAGE_PATH = ("spec", "images", "nvidiaDevicePlugin")


def _release(ctx: RuleContext) -> Iterator[Diagnostic]:
    """Options the release does not read, and an image of a release gpuconf cannot write for."""
    spec = ctx.cluster.spec
    version = plugin_release(ctx.cluster)
    if not at_least(version, ALLOCATION_POLICY_SINCE):
        for resolved in ctx.classes:
            shared = resolved.spec.sharing.strategy != "none"
            if shared and resolved.spec.allocation_policy == "pack":
                yield ctx.error(
                    class_path(resolved.index, "allocationPolicy"),
                    f"NVIDIA's device plugin {version} always spreads shared GPUs "
                    f"(sharedDevicesAllocationPolicy exists from {ALLOCATION_POLICY_SINCE})",
                    f"set spec.nvidiaPlugin.version to {ALLOCATION_POLICY_SINCE} or later, "
                    "or remove allocationPolicy",
                )
    tagged = image_release(spec.images.nvidia_device_plugin)
    if tagged is None or tagged == version:
        return
    if tagged not in RELEASES:
        yield ctx.error(
            _IMAGE_PATH,
            f"the image is NVIDIA's device plugin {tagged}; gpuconf writes its config for "
            f"{RELEASES[0]} to {RELEASES[-1]}",
            f"use one of those releases, e.g. {image(RELEASES[-1])}",
        )
        return
    yield ctx.error(
        _IMAGE_PATH,
        f"the image is NVIDIA's device plugin {tagged}, but spec.nvidiaPlugin.version is {version}",
        f"gpuconf writes the config {version} reads: set nvidiaPlugin.version: {tagged} (or leave "
        f"it out), or leave the image out to get {image(version)}",
    )


def _shared_names(ctx: RuleContext) -> Iterator[Diagnostic]:
    """One resource name on several pools works, but quotas count the classes together."""
    by_name: dict[str, list[ResolvedClass]] = {}
    for resolved in ctx.classes:
        by_name.setdefault(resolved.resource_name, []).append(resolved)
    for name, together in sorted(by_name.items()):
        if len(together) < 2:
            continue
        each = ", ".join(f"{c.name} (pools {', '.join(c.pools) or 'none'})" for c in together)
        # Renaming parts shared GPUs from whole ones, so it helps only where both share a name.
        renaming = not ctx.cluster.spec.nvidia_plugin.rename_by_default and (
            len({c.spec.sharing.strategy == "none" for c in together}) > 1
        )
        rename = (
            f"set spec.nvidiaPlugin.renameByDefault: true (shared GPUs become {name}.shared) or "
            if renaming
            else ""
        )
        yield ctx.warning(
            class_path(together[1].index, "name"),
            f"classes {each} are all requested as {name!r}: a quota cannot tell them apart "
            "(it limits their sum), and a pod reaches one of them only by its node selector",
            "give pods the node selector of the pool they need; once workloads can change their "
            f"requests, {rename}use plugin: gpuconf for one resource per class",
        )
