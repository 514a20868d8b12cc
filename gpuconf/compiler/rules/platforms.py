"""Pool platforms: each pool's CPU architecture and GPU kind agree; Jetson (tegra) pools ask
nothing of the module it cannot do (one integrated GPU, no MIG, MPS, DRA or driver install)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.base import version_parts
from gpuconf.api.cluster import NodePool
from gpuconf.api.cluster.pool import ARCH_LABEL
from gpuconf.api.gpu_model import GpuModel
from gpuconf.compiler.rules.context import SPEC, RuleContext, pool_path
from gpuconf.diagnostics import Diagnostic, KeyPath
from gpuconf.gpus.jetson import JETPACK_L4T, jetpack_for_l4t_major, soc_of


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        yield from _platform(ctx, i, pool)
    yield from _jetson_cdi(ctx)


def _jetson_cdi(ctx: RuleContext) -> Iterator[Diagnostic]:
    spec = ctx.cluster.spec
    jetsons = [p.name for p in spec.node_pools if p.platform == "tegra"]
    if jetsons and spec.node.device_list_strategy == "cdi":
        yield ctx.warning(
            (*SPEC, "node", "deviceListStrategy"),
            f"pools {', '.join(jetsons)} run Jetson modules, whose CDI spec must name the "
            "integrated GPU 0 (nvidia-ctk cdi generate --mode=csv names it by index, not UUID); "
            "NVIDIA's plugin takes CDI only where NVML exists",
            "leave deviceListStrategy out: Jetson pools then use volume-mounts",
        )


def _models(ctx: RuleContext, i: int, pool: NodePool) -> list[tuple[KeyPath, GpuModel]]:
    """Each model the pool names, with where it is named (unknown names are reported elsewhere)."""
    named: list[tuple[KeyPath, str]] = []
    if pool.gpus is not None:
        named.append((pool_path(i, "gpus", "model"), pool.gpus.model))
    for j, node in enumerate(pool.nodes):
        for k, gpu in enumerate(node.gpus):
            if gpu.model is not None:
                named.append((pool_path(i, "nodes", j, "gpus", k, "model"), gpu.model))
    return [(path, model) for path, name in named if (model := ctx.catalog.get(name)) is not None]


def _platform(ctx: RuleContext, i: int, pool: NodePool) -> Iterator[Diagnostic]:
    models = _models(ctx, i, pool)
    wanted, selected = pool.cpu_architecture(), pool.node_selector.get(ARCH_LABEL)
    if wanted is not None and selected is not None and selected != wanted:
        yield ctx.error(
            pool_path(i, "nodeSelector", ARCH_LABEL),
            f"the node selector picks {selected} nodes but the pool is {wanted}",
            f"remove {ARCH_LABEL} from nodeSelector: gpuconf adds it from the pool's architecture",
        )
    if pool.platform == "discrete":
        for path, model in models:
            if model.integrated:
                yield ctx.error(
                    path,
                    f"{model.name} is an integrated GPU (Jetson/Tegra)",
                    "set platform: tegra on the pool",
                )
        if pool.jetpack is not None:
            yield ctx.error(
                pool_path(i, "jetpack"),
                "jetpack applies to platform tegra",
                "remove it, or set platform: tegra",
            )
        return
    yield from _tegra(ctx, i, pool, models)


def _tegra(
    ctx: RuleContext, i: int, pool: NodePool, models: list[tuple[KeyPath, GpuModel]]
) -> Iterator[Diagnostic]:
    """Jetson: one integrated GPU per arm64 module, driver from JetPack, nothing NVML-only."""
    for path, model in models:
        if not model.integrated:
            yield ctx.error(
                path,
                f"{model.name} is not a Jetson module; a tegra pool's GPU is the module's "
                "integrated GPU",
                "use a Jetson model ("
                + ", ".join(m.name for m in ctx.catalog.models.values() if m.integrated)
                + "), or platform: discrete",
            )
    if pool.architecture == "amd64":
        yield ctx.error(
            pool_path(i, "architecture"),
            "Jetson modules are arm64",
            "remove architecture (tegra pools are arm64), or write arm64",
        )
    if ctx.cluster.spec.allocation == "dra":
        yield ctx.error(
            pool_path(i, "platform"),
            "NVIDIA's DRA driver discovers GPUs through NVML, which Jetson modules lack",
            "use allocation: device-plugin for clusters with tegra pools",
        )
    if pool.gpus is not None and pool.gpus.count != 1:
        yield ctx.error(
            pool_path(i, "gpus", "count"),
            f"a Jetson module has one integrated GPU, not {pool.gpus.count}",
            "write count: 1",
        )
    for j, node in enumerate(pool.nodes):
        for k, gpu in enumerate(node.gpus):
            path = pool_path(i, "nodes", j, "gpus", k)
            if gpu.index != 0:
                yield ctx.error(
                    (*path, "index"),
                    f"a Jetson module's only GPU has index 0, not {gpu.index}",
                    "write index: 0",
                )
            if gpu.uuid is not None:
                yield ctx.error(
                    (*path, "uuid"),
                    "the integrated GPU of a Jetson module has no UUID the node can read",
                    "remove uuid; the node runtime checks the SoC instead",
                )
    if pool.sharing is not None:
        yield ctx.error(
            pool_path(i, "sharing"),
            "Jetson's integrated GPU has no MIG",
            "remove sharing; a class can time-slice the GPU instead",
        )
    if pool.driver is not None and pool.driver.install:
        yield ctx.error(
            pool_path(i, "driver", "install"),
            "a Jetson module's driver comes with JetPack (L4T); NVIDIA's driver container is for "
            "discrete GPUs",
            "remove install: the driver is part of the module's JetPack",
        )
    if pool.jetpack is not None:
        yield from _jetpack(ctx, i, pool.jetpack, models)


def _jetpack(
    ctx: RuleContext, i: int, jetpack: str, models: list[tuple[KeyPath, GpuModel]]
) -> Iterator[Diagnostic]:
    path = pool_path(i, "jetpack")
    l4t = JETPACK_L4T.get(jetpack)
    if l4t is None:
        yield ctx.warning(
            path,
            f"gpuconf does not know JetPack {jetpack}; it cannot check that it supports the modules",
            "known releases: " + ", ".join(JETPACK_L4T),
        )
        return
    major = version_parts(l4t)[0]
    for _, model in models:
        soc = soc_of(model)
        if soc is None or major in soc.l4t_majors:
            continue
        supported = [jp for m in soc.l4t_majors for jp in jetpack_for_l4t_major(m)]
        yield ctx.error(
            path,
            f"JetPack {jetpack} (L4T {l4t}) does not support {model.name} "
            f"({soc.family}, {soc.name})",
            f"{soc.family} modules run JetPack " + ", ".join(supported),
        )
