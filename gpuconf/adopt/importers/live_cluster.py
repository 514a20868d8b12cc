"""`gpuconf import cluster`: a cluster file from a live cluster's GPU nodes, read from the labels
GPU Feature Discovery puts on them (NVIDIA/k8s-device-plugin internal/lm: `nvidia.com/gpu.product`,
the sanitised NVML name with `-SHARED` appended when shared and not renamed; `gpu.count`,
`gpu.replicas`, `gpu.sharing-strategy`; `cuda.driver-version.full`) or gpuconf's own pool label.

Nodes with the same pool label, or else the same model, GPU count, sharing, container engine and
driver, form a pool that declares them by name; each pool gets one class. What the labels do not
say is listed: a node whose GPUs run MIG is listed, not imported, as its labels count MIG devices
but do not give the layout that made them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from gpuconf.api.base import POOL_NAME_MAX
from gpuconf.errors import UserError
from gpuconf.gpus.catalog import Catalog

GFD = "nvidia.com/"
PRODUCT = "nvidia.com/gpu.product"
COUNT = "nvidia.com/gpu.count"
REPLICAS = "nvidia.com/gpu.replicas"
SHARING = "nvidia.com/gpu.sharing-strategy"
DRIVER = "nvidia.com/cuda.driver-version.full"
SHARED_SUFFIX = "-SHARED"
MIG_PRODUCT = "-MIG-"
MIG_COUNT = re.compile(r"nvidia\.com/mig-(?P<profile>.+)\.count")
POOL_LABEL = "gpuconf.dev/pool"
ENGINES = {"containerd": "containerd", "docker": "docker", "cri-o": "cri-o"}


class NodeShape(NamedTuple):
    pool: str | None
    model: str
    gpus: int
    replicas: int
    sharing: str
    engine: str
    driver: str | None


class LiveImport(NamedTuple):
    spec: dict[str, Any]
    left_out: list[str]


def _sanitised(nvml_name: str) -> str:
    """internal/lm/resource.go, sanitise: what GFD makes of an NVML name."""
    return "-".join(re.sub(r"[^A-Za-z0-9-_. ]", "", nvml_name).split())


def import_live(
    nodes: Sequence[Mapping[str, Any]], kubernetes_version: str, catalog: Catalog
) -> LiveImport:
    models = {_sanitised(m.nvml_name): m.name for m in catalog.builtin()}
    left_out: list[str] = []
    groups: dict[NodeShape, list[str]] = {}
    nvidia_plugin = False
    renamed: set[bool] = set()
    for node in nodes:
        metadata = node.get("metadata") or {}
        name = str(metadata.get("name"))
        labels: Mapping[str, str] = metadata.get("labels") or {}
        allocatable: Mapping[str, Any] = (node.get("status") or {}).get("allocatable") or {}
        product = labels.get(PRODUCT)
        if product is None:
            if any(key.startswith(GFD) for key in allocatable):
                left_out.append(
                    f"node {name}: advertises NVIDIA resources but has no {PRODUCT} label"
                )
            continue
        shared_label = product.endswith(SHARED_SUFFIX)
        mig = _mig_devices(labels, product.removesuffix(SHARED_SUFFIX))
        if mig is not None:
            parent, devices = mig
            left_out.append(
                f"node {name}: its {models.get(parent, parent)} GPUs run MIG ({devices}), whose "
                "layout the labels do not give: declare its pool with sharing: "
                "[{strategy: mig, layout: …}] (docs/mig.md)"
            )
            continue
        model = models.get(product.removesuffix(SHARED_SUFFIX))
        if model is None:
            left_out.append(
                f"node {name}: GPU {product!r} is not in gpuconf's catalog (declare it in spec.gpuModels)"
            )
            continue
        nvidia_plugin |= any(key.startswith("nvidia.com/gpu") for key in allocatable)
        replicas = _int(labels.get(REPLICAS), 1)
        if replicas > 1:
            renamed.add(not shared_label)
        shape = NodeShape(
            labels.get(POOL_LABEL),
            model,
            _int(labels.get(COUNT), 1),
            replicas,
            labels.get(SHARING, "none") if replicas > 1 else "none",
            _engine(node, name, left_out),
            labels.get(DRIVER),
        )
        groups.setdefault(shape, []).append(name)
    if not groups:
        raise UserError(
            f"no node carries GPU Feature Discovery's {PRODUCT} label: nothing to import"
        )
    spec: dict[str, Any] = {"kubernetes": {"version": kubernetes_version}}
    if nvidia_plugin:
        spec["plugin"] = "nvidia"
        spec["nvidiaPlugin"] = {"renameByDefault": renamed == {True}}
        if len(renamed) > 1:
            left_out.append(
                "some shared nodes are renamed (.shared) and some not: renameByDefault false"
            )
    names = _pool_names(list(groups))
    spec["nodePools"] = [_pool(names[s], s, sorted(groups[s])) for s in groups]
    spec["resourceClasses"] = [_class(names[s], s) for s in groups]
    unlabelled = sorted(n for s, members in groups.items() if s.pool is None for n in members)
    if unlabelled:
        left_out.append(
            f"nodes {', '.join(unlabelled)} have no {POOL_LABEL} label, which gpuconf's pools "
            f"select by: label each with its pool's name"
        )
    for shape, members in groups.items():
        if shape.pool is not None and names[shape] != shape.pool:
            left_out.append(
                f"nodes {', '.join(sorted(members))} are labelled {POOL_LABEL}={shape.pool}"
                f"{_why_renamed(shape, shape.pool, names, groups)}: pool {names[shape]}; label "
                "them with that name"
            )
    return LiveImport(spec, left_out)


SHAPE_WORDS = {
    "model": "GPU model",
    "gpus": "GPU count",
    "replicas": "sharing",
    "sharing": "sharing",
    "engine": "container engine",
    "driver": "driver",
}
"""What each NodeShape field is, in words, for nodes whose pool label their shape splits."""


def _why_renamed(
    shape: NodeShape,
    label: str,
    names: Mapping[NodeShape, str],
    groups: Mapping[NodeShape, list[str]],
) -> str:
    """Why a pool label did not become the pool's name: too long, or another pool has it."""
    if len(label) > POOL_NAME_MAX:
        return (
            f", longer than a pool name may be ({POOL_NAME_MAX} characters: gpuconf-<pool> is "
            "a label value)"
        )
    holder = next((s for s, name in names.items() if name == label), None)
    if holder is None:  # a value the API server refuses (ends in "-"): trimmed
        return ", not a pool name as it stands"
    if holder.pool != label:
        return f", the name of the pool of nodes {', '.join(sorted(groups[holder]))}"
    differ = dict.fromkeys(
        word
        for field, word in SHAPE_WORDS.items()
        if getattr(shape, field) != getattr(holder, field)
    )
    return f" but differ from the rest so labelled in {', '.join(differ)}"


def _mig_devices(labels: Mapping[str, str], product: str) -> tuple[str, str] | None:
    """(the GPUs' GFD product, the MIG devices in words) where the node's GPUs are partitioned:
    GFD (internal/lm/mig-strategy.go) labels each MIG profile nvidia.com/mig-<profile>.count under
    the mixed strategy, and names the product <GPU>-MIG-<profile> under single."""
    parent, single, profile = product.partition(MIG_PRODUCT)
    if single:
        return parent, f"nvidia.com/gpu: {labels.get(COUNT, '?')} of {profile}"
    counts = {
        match["profile"]: int(value)
        for key, value in sorted(labels.items())
        if (match := MIG_COUNT.fullmatch(key)) and value.isdigit() and int(value) > 0
    }
    if not counts:
        return None
    return product, ", ".join(f"nvidia.com/mig-{p}: {n}" for p, n in counts.items())


def _engine(node: Mapping[str, Any], name: str, left_out: list[str]) -> str:
    info = (node.get("status") or {}).get("nodeInfo") or {}
    runtime = str(info.get("containerRuntimeVersion", "")).partition("://")[0]
    if "k3s" in str(info.get("kubeletVersion", "")):
        return "k3s"
    if runtime not in ENGINES:
        left_out.append(f"node {name}: container runtime {runtime!r} unknown: containerd assumed")
        return "containerd"
    return ENGINES[runtime]


def _pool_names(shapes: list[NodeShape]) -> dict[NodeShape, str]:
    names: dict[NodeShape, str] = {}
    taken: set[str] = set()
    for shape in shapes:
        given = shape.pool or re.sub(r"[^a-z0-9-]", "-", shape.model.lower()).strip("-")
        base = given[:POOL_NAME_MAX].rstrip("-")
        name, suffix = base, 2
        while name in taken:
            tail = f"-{suffix}"
            name, suffix = f"{base[: POOL_NAME_MAX - len(tail)].rstrip('-')}{tail}", suffix + 1
        taken.add(name)
        names[shape] = name
    return names


def _pool(name: str, shape: NodeShape, members: list[str]) -> dict[str, Any]:
    pool: dict[str, Any] = {"name": name, "runtime": {"engine": shape.engine}}
    if shape.driver:
        pool["driver"] = {"version": shape.driver}
    pool["gpus"] = {"model": shape.model, "count": shape.gpus}
    pool["nodes"] = [
        {"name": node, "gpus": [{"index": i} for i in range(shape.gpus)]} for node in members
    ]
    return pool


def _class(name: str, shape: NodeShape) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "select": {"pools": [name]}}
    if shape.replicas > 1:
        strategy = "mps" if shape.sharing == "mps" else "time-slicing"
        out["sharing"] = {"strategy": strategy, "replicas": shape.replicas}
    return out


def _int(text: str | None, default: int) -> int:
    return int(text) if text is not None and text.isdigit() else default
