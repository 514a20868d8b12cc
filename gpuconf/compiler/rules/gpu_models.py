"""GPU models: the ones a cluster declares are coherent and clash with nothing; every model named
in the file is in the catalog or declared."""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.compiler.rules.context import SPEC, RuleContext, class_path, pool_path
from gpuconf.diagnostics import Diagnostic, KeyPath, format_path
from gpuconf.gpus.model_checks import model_problems

_ONE_GPU_TWO_NAMES = "two names for one GPU cannot be told apart on the node or by DRA selectors"


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    yield from _declared(ctx)
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        if pool.gpus is not None:
            yield from _check_name(ctx, pool.gpus.model, pool_path(i, "gpus", "model"))
        for j, node in enumerate(pool.nodes):
            for k, gpu in enumerate(node.gpus):
                if gpu.model is not None:
                    yield from _check_name(
                        ctx, gpu.model, pool_path(i, "nodes", j, "gpus", k, "model")
                    )
    for i, resource_class in enumerate(ctx.cluster.spec.resource_classes):
        selected = resource_class.select.model
        if isinstance(selected, str):
            yield from _check_name(ctx, selected, class_path(i, "select", "model"))
        elif selected is not None:
            for k, name in enumerate(selected):
                yield from _check_name(ctx, name, class_path(i, "select", "model", k))


def _check_name(ctx: RuleContext, name: str, path: KeyPath) -> Iterator[Diagnostic]:
    if ctx.catalog.get(name) is None and name not in ctx.set_aside.gpu_models:
        known = ctx.catalog.by_nvml_name(name)
        hint = f"write the catalog name {known.name!r}" if known else ctx.catalog.suggest(name)
        yield ctx.error(path, f"unknown GPU model {name!r}", hint)


def _declared(ctx: RuleContext) -> Iterator[Diagnostic]:
    """Each declared model once, under a name and an NVML name no catalog model has."""
    by_nvml_name = {m.nvml_name: m for m in ctx.catalog.builtin() if not m.integrated}
    first: dict[str, KeyPath] = {}
    first_nvml: dict[str, tuple[str, KeyPath]] = {}
    for i, model in enumerate(ctx.cluster.spec.gpu_models):
        path = (*SPEC, "gpuModels", i)
        kept = ctx.catalog.get(model.name)
        if kept is not None and not ctx.catalog.is_declared(kept):
            yield ctx.error(
                (*path, "name"),
                f"GPU model {model.name!r} is already in the catalog ({kept.nvml_name}, "
                f"{kept.memory_mib} MiB)",
                "remove this declaration to use the catalog's, or give yours another name",
            )
        elif model.name in first:
            yield ctx.error(
                (*path, "name"),
                f"GPU model {model.name!r} is declared twice",
                f"{format_path(ctx.located.original(first[model.name]))} declares it first; keep one",
            )
        else:
            first[model.name] = path
        same_device = by_nvml_name.get(model.nvml_name)
        declared = first_nvml.setdefault(model.nvml_name, (model.name, (*path, "nvmlName")))
        if same_device is not None and same_device.name != model.name:
            yield ctx.error(
                (*path, "nvmlName"),
                f"NVML name {model.nvml_name!r} is the catalog's {same_device.name!r}",
                f"use {same_device.name!r}: {_ONE_GPU_TWO_NAMES}",
            )
        elif declared[0] != model.name:
            yield ctx.error(
                (*path, "nvmlName"),
                f"NVML name {model.nvml_name!r} is also declared for GPU model {declared[0]!r}",
                f"{format_path(ctx.located.original(declared[1]))} declares it first: "
                + _ONE_GPU_TWO_NAMES,
            )
        for problem in model_problems(model):
            yield ctx.error((*path, *problem.path), problem.message, problem.hint)
