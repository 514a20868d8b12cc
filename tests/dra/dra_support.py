"""Helpers the DRA tests share: compile a cluster given as data, in memory, in DRA mode."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gpuconf.compiler.plan import plan
from gpuconf.compiler.render import RenderedTree, render
from gpuconf.compiler.validate import Validated, validate
from gpuconf.diagnostics import Diagnostic
from gpuconf.formats.located_yaml import parse_text
from gpuconf.gpus.catalog import Catalog

REPO = Path(__file__).resolve().parents[2]
CATALOG = Catalog.load()


def cluster_file(name: str) -> dict[str, Any]:
    """An example from clusters/ as plain data (round-tripped through JSON: no ruamel types)."""
    data = YAML(typ="safe").load((REPO / "clusters" / f"{name}.yaml").read_text())
    return json.loads(json.dumps(data))  # type: ignore[no-any-return]


def as_dra(data: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    changed["spec"]["allocation"] = "dra"
    if version is not None:
        changed["spec"]["kubernetes"]["version"] = version
    return changed


def check(data: dict[str, Any]) -> Validated | list[Diagnostic]:
    # JSON is YAML: the located loader reads it and records every key's position.
    return validate(parse_text(json.dumps(data, indent=1), "cluster.yaml"), CATALOG)


def validated(data: dict[str, Any]) -> Validated:
    outcome = check(data)
    assert isinstance(outcome, Validated), [d.as_text() for d in outcome]
    return outcome


def errors(data: dict[str, Any]) -> list[Diagnostic]:
    outcome = check(data)
    assert isinstance(outcome, list), "expected diagnostics, the cluster is valid"
    return [d for d in outcome if d.is_error]


def rendered(data: dict[str, Any]) -> RenderedTree:
    return render(plan(validated(data), "cluster.yaml"))


def heterogeneous(classes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """H100 nodes (GPUs 6-7 in 1g.10gb MIG mode, one node with UUIDs), L40S and L4 pools."""
    uuid = "GPU-00000000-0000-4000-8000-0000000000{:02d}"
    return {
        "apiVersion": "gpuconf.dev/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "hetero"},
        "spec": {
            "kubernetes": {"version": "1.34"},
            "allocation": "dra",
            "nodePools": [
                {
                    "name": "h100",
                    "runtime": {"engine": "containerd"},
                    "gpus": {"model": "H100-SXM5-80GB", "count": 8},
                    "size": 3,
                    "nodes": [
                        {
                            "name": "h100-a",
                            "gpus": [{"index": i, "uuid": uuid.format(i)} for i in range(8)],
                        }
                    ],
                    "sharing": {"strategy": "mig", "layout": "all-1g.10gb", "indices": [6, 7]},
                },
                {
                    "name": "l40s",
                    "runtime": {"engine": "containerd"},
                    "gpus": {"model": "L40S", "count": 4},
                    "size": 2,
                },
                {
                    "name": "l4",
                    "runtime": {"engine": "containerd"},
                    "gpus": {"model": "L4", "count": 1},
                    "size": 4,
                },
            ],
            "resourceClasses": classes,
            **spec,
        },
    }
