"""The cut-over from NVIDIA's chart labels the right nodes: each documented `kubectl label`
selects the value GPU Feature Discovery really gives the pool's nodes while the chart runs, and
the label it writes is the one the pool's rendered DaemonSets select."""

from __future__ import annotations

import re
import shlex

from builders import RENDERED, REPO, cluster_file, load_yaml, read_tree

from gpuconf.gpus.catalog import Catalog
from gpuconf.gpus.node_labels import PRODUCT_LABEL

NVIDIA_PLUGIN_DOC = (REPO / "docs" / "nvidia-plugin.md").read_text(encoding="utf-8")


def _gfd_product(nvml_name: str, shared: bool, renamed: bool) -> str:
    """`getProductName` and `sanitise` of k8s-device-plugin `internal/lm/resource.go` (v0.20.0):
    characters outside [A-Za-z0-9-_. ] dropped, blanks joined by '-', `-SHARED` appended for
    replicas > 1 without a rename."""
    parts = ["-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", nvml_name).split())]
    if shared and not renamed:
        parts.append("SHARED")
    return "-".join(parts)


def _nvml_name(catalog: Catalog, model: str) -> str:
    found = catalog.get(model)
    assert found is not None
    return found.nvml_name


def _chart_products() -> dict[str, str]:
    """Pool -> the gpu.product label GFD gives its nodes under the chart nvidia-migration
    replaces (the same sharing, renameByDefault false)."""
    spec = cluster_file("nvidia-migration")["spec"]
    catalog = Catalog.load()
    shared = {
        pool
        for c in spec["resourceClasses"]
        if c.get("sharing", {}).get("replicas", 1) > 1
        for pool in c["select"]["pools"]
    }
    renamed = spec["nvidiaPlugin"]["renameByDefault"]
    return {
        p["name"]: _gfd_product(
            _nvml_name(catalog, p["gpus"]["model"]), p["name"] in shared, renamed
        )
        for p in spec["nodePools"]
    }


def _documented_commands() -> list[list[str]]:
    return [
        shlex.split(line)
        for line in NVIDIA_PLUGIN_DOC.splitlines()
        if line.strip().startswith("kubectl label nodes -l ")
    ]


def test_each_cut_over_command_selects_the_label_gfd_gives_the_pool_under_the_chart() -> None:
    products = _chart_products()
    commands = _documented_commands()
    labelled = {}
    for argv in commands:
        assert argv[:4] == ["kubectl", "label", "nodes", "-l"], argv
        key, value = argv[4].split("=")
        target, pool = argv[5].split("=")
        assert key == PRODUCT_LABEL
        assert target == "gpuconf.dev/pool"
        labelled[pool] = value
    assert labelled == products
    assert products["t4"] == "Tesla-T4-SHARED"  # not the Tesla-T4 the old example selected


def test_the_pools_rendered_daemonsets_select_the_label_the_commands_write() -> None:
    tree = read_tree(RENDERED / "nvidia-migration")
    for pool in _chart_products():
        daemonsets = [
            load_yaml(text)
            for path, text in tree.items()
            if path.startswith(f"pools/{pool}/daemonset-")
        ]
        assert daemonsets
        for ds in daemonsets:
            selector = ds["spec"]["template"]["spec"]["nodeSelector"]
            assert selector == {"gpuconf.dev/pool": pool}, ds["metadata"]["name"]
