"""`gpuconf explain --host`: per pool, what `gpuconf node setup` will write on its hosts and how it
reloads the engine. The exact bytes depend on each host's files: `gpuconf node setup --dry-run
--root DIR` prints them for a copy of one."""

from __future__ import annotations

from gpuconf.api.runtime_files import (
    CDI_SPEC,
    DRIVER_READY_MARKER,
    HOST_DRIVER_LOADED,
    SETUP_READY_MARKER,
    TOOLKIT_CONFIG,
    engine_files,
    restart_summary,
    toolkit_settings,
)
from gpuconf.compiler.resolve.device_lists import device_list_strategy
from gpuconf.compiler.resolve.runtime_settings import runtime_settings
from gpuconf.compiler.validate import Validated
from gpuconf.formats.toml_writer import toml_value


def _flattened(table: dict[str, object], prefix: str = "") -> list[str]:
    lines = []
    for key, value in sorted(table.items()):
        if isinstance(value, dict):
            lines += _flattened(value, f"{prefix}{key}.")
        else:
            lines.append(f"{prefix}{key} = {toml_value(value)}")
    return lines


def host_setup_text(validated: Validated) -> str:
    cluster = validated.cluster
    lines = ["what `gpuconf node setup` does on each pool's hosts"]
    for pool in cluster.spec.node_pools:
        settings = runtime_settings(cluster, pool)
        strategy = device_list_strategy(cluster, pool)
        cdi = settings.enable_cdi or strategy == "cdi"
        lines += ["", f"pool {pool.name} ({settings.engine}), DaemonSet gpuconf-setup-{pool.name}"]
        waits = DRIVER_READY_MARKER if settings.driver_root != "/" else HOST_DRIVER_LOADED
        lines.append(f"  waits for    {waits}")
        for file in engine_files(settings):
            lines.append(f"  writes       {file.path}: {file.purpose}")
        toolkit = _flattened(toolkit_settings(strategy, settings.driver_root))
        if toolkit:
            lines.append(f"  writes       {TOOLKIT_CONFIG}: merged, " + "; ".join(toolkit))
        if strategy == "cdi":
            lines.append(f"  writes       {CDI_SPEC}: nvidia-ctk cdi generate, names = UUIDs")
        default = (
            "nvidia is the default runtime" if settings.set_as_default else "RuntimeClass nvidia"
        )
        lines.append(
            f"  runtime      nvidia ({settings.binary_path}); {default}; CDI {'on' if cdi else 'off'}"
        )
        lines.append(f"  reload       {restart_summary(settings)}; nothing when nothing changed")
        lines.append(f"  ready        {SETUP_READY_MARKER} (every GPU pod waits for it)")
    return "\n".join(lines) + "\n"
