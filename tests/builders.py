"""Builders every test folder shares: where things are, clusters, pools and node configs as data,
and in-memory ways to validate, compile, render and run the CLI."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ruamel.yaml import YAML

from gpuconf.api.node_config import ExpectedGpu, NodeConfig, ResourceSettings, RuntimeSettings
from gpuconf.api.validators import validate_node_config
from gpuconf.api.version import CLUSTER_API_VERSION, NODE_CONFIG_API_VERSION
from gpuconf.compiler.pipeline import Compiled, compile_paths
from gpuconf.compiler.plan import plan
from gpuconf.compiler.render import RenderedTree, render
from gpuconf.compiler.templating.engine import Templates
from gpuconf.compiler.templating.skeleton_memo import SkeletonMemo
from gpuconf.compiler.validate import Validated, validate
from gpuconf.diagnostics import Diagnostic
from gpuconf.formats.located_yaml import parse_text
from gpuconf.formats.yaml_writer import dump
from gpuconf.gpus.catalog import Catalog

REPO = Path(__file__).resolve().parent.parent
CLUSTERS = REPO / "clusters"
RENDERED = REPO / "rendered"
CASES = REPO / "tests" / "cases"
EXAMPLES = sorted(p.stem for p in CLUSTERS.glob("*.yaml"))
CATALOG = Catalog.load()
MIG_MODELS = sorted(name for name, m in CATALOG.models.items() if m.mig is not None)
WHOLE_MODELS = sorted(name for name, m in CATALOG.models.items() if m.mig is None)
H100 = "NVIDIA H100 80GB HBM3"
DECLARED_H20: dict[str, Any] = {
    "name": "H20",
    "nvmlName": "NVIDIA H20",
    "memoryMiB": 97871,
    "pciDeviceId": "0x2329",
    "architecture": "Hopper",
    "computeCapability": "9.0",
    "nvlinks": 18,
}
"""A GPU the catalog lacks, as spec.gpuModels declares it."""


class Clock:
    """A clock a test moves by hand (``clock.now += seconds``), for code given a ``clock``."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- reading ------------------------------------------------------------------------------


def load_yaml(text: str | bytes) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def read_tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def manifest_paths(tree: dict[str, bytes]) -> list[str]:
    """The Kubernetes manifests of a rendered cluster: what its kustomization.yaml lists."""
    return list(load_yaml(tree["kustomization.yaml"])["resources"])


CRD_API_GROUPS = ("monitoring.coreos.com/", "kueue.x-k8s.io/")
"""Groups of the CRD kinds gpuconf renders (Kueue's config.kueue.x-k8s.io too): kubernetes-validate
has no schema for them; tests/compiler/test_manifests_are_valid_kubernetes.py checks them
against their CRDs' schemas instead."""


def of_a_crd(obj: dict[str, Any]) -> bool:
    return any(group in str(obj["apiVersion"]) for group in CRD_API_GROUPS)


def configmap_data(tree: dict[str, bytes], path: str, key: str) -> Any:
    return load_yaml(load_yaml(tree[path])["data"][key])


def cluster_file(name: str) -> dict[str, Any]:
    """An example from clusters/ as plain data (round-tripped through JSON: no ruamel types)."""
    data = YAML(typ="safe").load((CLUSTERS / f"{name}.yaml").read_text())
    return json.loads(json.dumps(data))  # type: ignore[no-any-return]


# --- clusters as data ---------------------------------------------------------------------


def cluster(
    pools: list[dict[str, Any]],
    classes: list[dict[str, Any]],
    plugin: str = "gpuconf",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_API_VERSION,
        "kind": "Cluster",
        "metadata": {"name": "t"},
        "spec": {
            "kubernetes": {"version": "1.34"},
            "plugin": plugin,
            "nodePools": pools,
            "resourceClasses": classes,
            **spec,
        },
    }


def pool(
    name: str,
    model: str,
    count: int,
    sharing: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": name,
        "runtime": {"engine": "containerd"},
        "gpus": {"model": model, "count": count},
        "size": 1,
        **fields,
    }
    if sharing is not None:
        found["sharing"] = sharing
    return found


def as_dra(data: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    """The cluster under DRA; before 1.34 with the feature gate DRA needs there declared on,
    and without sharing replicas, which DRA refuses (each claim takes whole devices)."""
    changed = copy.deepcopy(data)
    changed["spec"]["allocation"] = "dra"
    for resource_class in changed["spec"].get("resourceClasses", []):
        resource_class.get("sharing", {}).pop("replicas", None)
    target = changed["spec"]["kubernetes"]
    if version is not None:
        target["version"] = version
    if int(target["version"].split(".")[1]) < 34:
        target.setdefault("featureGates", {})["DynamicResourceAllocation"] = True
    return changed


def heterogeneous(classes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """DRA: H100 nodes (GPUs 6-7 in 1g.10gb MIG mode, one node with UUIDs), L40S and L4 pools."""
    uuid = "GPU-00000000-0000-4000-8000-0000000000{:02d}"
    h100 = pool(
        "h100",
        "H100-SXM5-80GB",
        8,
        [{"strategy": "mig", "layout": "all-1g.10gb", "indices": [6, 7]}],
        size=3,
        nodes=[
            {"name": "h100-a", "gpus": [{"index": i, "uuid": uuid.format(i)} for i in range(8)]}
        ],
    )
    document = cluster(
        [h100, pool("l40s", "L40S", 4, size=2), pool("l4", "L4", 1, size=4)],
        classes,
        allocation="dra",
        **spec,
    )
    document["metadata"]["name"] = "hetero"
    del document["spec"]["plugin"]
    return document


# --- validating and compiling in memory ---------------------------------------------------


def check(document: dict[str, Any]) -> Validated | list[Diagnostic]:
    return validate(parse_text(dump(document), "cluster.yaml"), CATALOG)


def valid(document: dict[str, Any]) -> Validated:
    outcome = check(document)
    assert not isinstance(outcome, list), [d.as_text() for d in outcome]
    return outcome


def errors(document: dict[str, Any]) -> list[Diagnostic]:
    outcome = check(document)
    assert isinstance(outcome, list), "expected diagnostics, the cluster validated"
    return [d for d in outcome if d.is_error]


class NoMemo(Templates):
    """Templates that render every artifact in place, for comparing with the skeleton memo."""

    def _memo(self, name: str) -> SkeletonMemo | None:
        return None


def rendered(document: dict[str, Any]) -> RenderedTree:
    return render(plan(valid(document), "cluster.yaml"), Templates())


def compile_example(*names: str) -> Compiled:
    compiled = compile_paths([CLUSTERS / f"{n}.yaml" for n in names], relative_to=REPO)
    assert compiled.ok, [d.as_text() for d in compiled.diagnostics]
    return compiled


def compile_folder(folder: Path, *names: str) -> Compiled:
    """Compile cluster files in `folder` (all of them when no names are given), in memory."""
    return compile_paths([folder / n for n in names] or [folder], relative_to=folder)


def site_block(folder: Path, template: str, block: str, text: str) -> None:
    """A site template in `folder` extending gpuconf's `template` with `block` replaced by `text`."""
    (folder / template).write_text(
        f'{{% extends "gpuconf/{template}" %}}\n{{% block {block} %}}\n{text}\n{{% endblock %}}\n'
    )


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*argv: str, cwd: Path | None = None, stdin: str | TextIO | None = "") -> CliResult:
    """Run `gpuconf [-C CWD] ARGV…` in this process, as a user would, capturing what it prints;
    `stdin`: what is piped into it (never the test runner's own standard input), a stream that
    stands for it (a terminal), or None where it is closed (`<&-`: Python has no sys.stdin)."""
    from unittest import mock

    from gpuconf.cli import main

    out, err = io.StringIO(), io.StringIO()
    piped = (
        io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8")
        if isinstance(stdin, str)
        else stdin
    )
    prefix = ["-C", str(cwd)] if cwd is not None else []
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        mock.patch.object(sys, "stdin", piped),
    ):
        code = main([*prefix, *argv])
    return CliResult(int(code), out.getvalue(), err.getvalue())


def node_daemonset_refusal(
    folder: Path, block: str, text: str, output: Path | None = None
) -> tuple[str, CliResult]:
    """The first line of what `render` says of lab.yaml with the node DaemonSet's `block`
    overridden by `text` in `folder`, which it must refuse; and the whole result. Rendered
    with `--check`, or into `output`, which must then not have been written."""
    site_block(folder, "node-daemonset.yaml.j2", block, text)
    into = ["-o", str(output)] if output else ["--check"]
    result = run_cli("render", "clusters/lab.yaml", "--templates", str(folder), *into, cwd=REPO)
    assert result.code == 1, result.err
    assert output is None or not output.exists()
    return result.err.splitlines()[0], result


def run_reader_gone(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m gpuconf ARGV…` with stdout a pipe whose reader has already gone, as in
    `gpuconf … | head` once head has read its lines: every write to stdout fails with EPIPE."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [sys.executable, "-m", "gpuconf", *argv],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)


# --- node configs as data -----------------------------------------------------------------


def gpu_uuid(index: int) -> str:
    return f"GPU-{index:08x}-0000-4000-8000-{index:012x}"


def mig_uuid(gpu: int, instance: int) -> str:
    return f"MIG-{gpu:08x}-{instance:04x}-4000-8000-{instance:012x}"


def node_config(resources: list[dict[str, Any]], gpus: int = 8, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "apiVersion": NODE_CONFIG_API_VERSION,
        "kind": "NodeConfig",
        "cluster": "lab",
        "pool": "h100",
        "runtime": {
            "engine": "containerd",
            "setAsDefault": True,
            "binaryPath": "/usr/bin/nvidia-container-runtime",
        },
        "health": {"ignoredXids": [13, 31, 43, 45, 68, 109], "recoverAfterSeconds": 0},
        "metricsPort": 0,
        "inventory": {
            "default": [
                {"index": i, "model": "H100-80GB", "nvmlName": H100, "memoryMiB": 81559}
                for i in range(gpus)
            ]
        },
        "resources": resources,
    }
    config.update(overrides)
    return config


def read_node_config(config: dict[str, Any]) -> NodeConfig:
    """A node config as the node runtime reads it: the frozen schema (api/validators.py)."""
    return validate_node_config(config)


def resource_settings(data: dict[str, Any]) -> ResourceSettings:
    """One resource's settings, read as the node runtime reads them."""
    return read_node_config(node_config([data])).resources[0]


def expected_gpu(data: dict[str, Any]) -> ExpectedGpu:
    return read_node_config(node_config([], inventory={"default": [data]})).inventory.default[0]


def runtime_settings(data: dict[str, Any]) -> RuntimeSettings:
    return read_node_config(node_config([], runtime=data)).runtime


def resource(name: str, indices: list[int], **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "name": f"gpuconf.dev/{name}",
        "class": name,
        "gpus": {"default": indices},
        "sharing": {"strategy": "none"},
    }
    settings.update(extra)
    return settings


def nvlink_box(gpus: int = 8) -> list[dict[str, Any]]:
    """A fake NVML inventory: two NUMA nodes of four GPUs. NVLinks: quads all-to-all
    (0-1 and 2-3 doubled), plus one link i <-> i+4 (0-4 doubled)."""
    links: dict[tuple[int, int], int] = {}
    for quad in (range(4), range(4, 8)):
        for a in quad:
            for b in quad:
                if a < b:
                    links[(a, b)] = 1
    links.update({(0, 1): 2, (2, 3): 2, (0, 4): 2, (1, 5): 1, (2, 6): 1, (3, 7): 1})
    out = []
    for i in range(gpus):
        peers = {str(b if a == i else a): n for (a, b), n in links.items() if i in (a, b)}
        out.append(
            {
                "index": i,
                "uuid": gpu_uuid(i),
                "name": H100,
                "memoryMiB": 81559,
                "pciBusId": f"0000:{0x18 + i:02x}:00.0",
                "numaNode": 0 if i < 4 else 1,
                "nvlinks": peers,
            }
        )
    return out


# --- Jetson modules as folders ------------------------------------------------------------

ORIN_RELEASE = (
    "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
    "DATE: Wed Jan  8 01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\n"
)


def jetson_root(
    folder: Path,
    chip_id: int | None = 0x23,
    release: str | None = ORIN_RELEASE,
    family: str | None = "Tegra",
    mem_total_kb: int = 64_335_836,
) -> Path:
    """The files a Jetson module shows under `folder`, as Tegra discovery reads them (None: absent).

    Orin (chip 0x23 = 35) with JetPack 6.2 unless told otherwise."""
    files = {
        "etc/nv_tegra_release": release,
        "sys/devices/soc0/family": None if family is None else family + "\n",
        "sys/devices/soc0/soc_id": None if chip_id is None else f"{chip_id}\n",
        "proc/meminfo": f"MemTotal:       {mem_total_kb} kB\nMemFree:        1024 kB\n",
    }
    for relative, text in files.items():
        if text is not None:
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(text, encoding="utf-8")
    return folder


# --- hosts for `gpuconf node setup` -------------------------------------------------------

NVIDIA_RUNTIME = "/usr/bin/nvidia-container-runtime"
RUNTIME_FACTS = REPO / "tests" / "node" / "runtimes" / "facts"


def setup_config(
    engine: str, device_list_strategy: str = "envvar", **runtime: Any
) -> dict[str, Any]:
    """A node config for setup: ``runtime`` overrides the pool's runtime settings (camelCase)."""
    settings = {
        "engine": engine,
        "setAsDefault": True,
        "binaryPath": NVIDIA_RUNTIME,
        "restart": "none",
    }
    return node_config(
        [], gpus=1, runtime={**settings, **runtime}, deviceListStrategy=device_list_strategy
    )


@dataclass
class HostTree:
    """A host's / in a temporary folder, with the toolkit installed and the driver loaded."""

    folder: Path

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.write(NVIDIA_RUNTIME, "#!/bin/sh\n")
        (self.proc / "driver" / "nvidia").mkdir(parents=True, exist_ok=True)
        (self.proc / "driver" / "nvidia" / "version").write_text("NVRM version: 550.54.15\n")

    @property
    def root(self) -> Path:
        return self.folder / "host"

    @property
    def proc(self) -> Path:
        return self.folder / "proc"

    def at(self, host_path: str) -> Path:
        return self.root / host_path.lstrip("/")

    def write(self, host_path: str, text: str | bytes, mode: int = 0o644) -> Path:
        path = self.at(host_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        path.chmod(mode)
        return path

    def program(self, name: str, script: str) -> Path:
        """A host program in /usr/local/bin: a shell script that runs ``script``."""
        return self.write(f"/usr/local/bin/{name}", f"#!/bin/sh\n{script}\n", mode=0o755)

    def read(self, host_path: str) -> str:
        return self.at(host_path).read_text()

    def config_file(self, config: dict[str, Any]) -> Path:
        path = self.folder / "node-config.yaml"
        path.write_text(dump(config))
        return path

    def setup_argv(self, config: dict[str, Any], *extra: str) -> list[str]:
        return [
            "node", "setup", "--config", str(self.config_file(config)), "--root", str(self.root),
            "--host-commands", "direct", "--proc", str(self.proc), "--wait-interval", "0.05", *extra,
        ]  # fmt: skip

    def setup(self, config: dict[str, Any], *extra: str) -> CliResult:
        """`gpuconf node setup --once` (or ``extra``) on this host, in this process."""
        return run_cli(*self.setup_argv(config, *(extra or ("--once",))))

    def files(self) -> dict[str, bytes]:
        """Every file under the root except the toolkit binary, by host path."""
        return {
            "/" + str(p.relative_to(self.root)): p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_file() and not p.is_symlink() and p != self.at(NVIDIA_RUNTIME)
        }


def fake_nvidia_ctk(host: HostTree, devices: list[str], kind: str = "nvidia.com/gpu") -> None:
    """A host `nvidia-ctk` whose `cdi generate` prints a spec with these device names."""
    spec = {
        "cdiVersion": "0.5.0",
        "kind": kind,
        "devices": [
            {"name": name, "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}
            for name in devices
        ],
        "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"]},
    }
    host.program(
        "nvidia-ctk", f"echo \"$@\" > {host.folder}/ctk-args\ncat <<'EOF'\n{json.dumps(spec)}\nEOF"
    )


def dcgm_series() -> set[str]:
    """The DCGM series gpuconf's dcgm-exporter collects: the fields of its counters file."""
    from gpuconf.compiler.plan.dcgm_exporter_counters import COUNTERS

    return {line.split(",")[0] for line in COUNTERS.splitlines() if not line.startswith("#")}


# GFD's per-profile MIG labels, k8s-device-plugin v0.20.0 internal/lm/resource_test.go
# "mig mixed appends shared" / "rename does not append": NewMigDevice(1, 2, 300)
# (named "1g.300gb") shared by time-slicing with 2 replicas. GFD's test passes the resource
# name nvidia.com/mig-1g.1gb by hand; newMigStrategyMixedLabeler derives it from the device's
# name, so here it is nvidia.com/mig-1g.300gb.
GFD_MIG_SHARED = {
    "nvidia.com/mig-1g.300gb.count": "1",
    "nvidia.com/mig-1g.300gb.replicas": "2",
    "nvidia.com/mig-1g.300gb.sharing-strategy": "time-slicing",
    "nvidia.com/mig-1g.300gb.memory": "300",
    "nvidia.com/mig-1g.300gb.product": "MOCKMODEL-MIG-1g.300gb-SHARED",
    "nvidia.com/mig-1g.300gb.multiprocessors": "0",
    "nvidia.com/mig-1g.300gb.slices.gi": "1",
    "nvidia.com/mig-1g.300gb.slices.ci": "2",
    "nvidia.com/mig-1g.300gb.engines.copy": "0",
    "nvidia.com/mig-1g.300gb.engines.decoder": "0",
    "nvidia.com/mig-1g.300gb.engines.encoder": "0",
    "nvidia.com/mig-1g.300gb.engines.jpeg": "0",
    "nvidia.com/mig-1g.300gb.engines.ofa": "0",
}
