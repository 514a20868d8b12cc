"""Helpers the MIG tests share: compile a cluster from a dict or an example, read rendered files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from gpuconf.compiler.pipeline import Compiled, compile_paths
from gpuconf.compiler.validate import Validated, validate
from gpuconf.diagnostics import Diagnostic
from gpuconf.formats.located_yaml import parse_text
from gpuconf.formats.yaml_writer import dump
from gpuconf.gpus.catalog import Catalog

REPO = Path(__file__).resolve().parents[2]
CATALOG = Catalog.load()
MIG_MODELS = sorted(name for name, m in CATALOG.models.items() if m.mig is not None)
WHOLE_MODELS = sorted(name for name, m in CATALOG.models.items() if m.mig is None)


def load_yaml(text: str | bytes) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def cluster(
    pools: list[dict[str, Any]], classes: list[dict[str, Any]], plugin: str = "gpuconf"
) -> dict[str, Any]:
    return {
        "apiVersion": "gpuconf.dev/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "t"},
        "spec": {
            "kubernetes": {"version": "1.34"},
            "plugin": plugin,
            "nodePools": pools,
            "resourceClasses": classes,
        },
    }


def pool(
    name: str, model: str, count: int, sharing: dict[str, Any] | list[dict[str, Any]] | None
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": name,
        "runtime": {"engine": "containerd"},
        "gpus": {"model": model, "count": count},
        "size": 1,
    }
    if sharing is not None:
        found["sharing"] = sharing
    return found


def check(document: dict[str, Any]) -> Validated | list[Diagnostic]:
    return validate(parse_text(dump(document), "c.yaml"), CATALOG)


def errors(document: dict[str, Any]) -> list[Diagnostic]:
    outcome = check(document)
    assert isinstance(outcome, list), "expected diagnostics, the cluster validated"
    return [d for d in outcome if d.is_error]


def valid(document: dict[str, Any]) -> Validated:
    outcome = check(document)
    assert not isinstance(outcome, list), [d.as_text() for d in outcome]
    return outcome


def compile_example(*names: str) -> Compiled:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        compiled = compile_paths([Path("clusters") / f"{n}.yaml" for n in names])
    assert compiled.ok, [d.as_text() for d in compiled.diagnostics]
    return compiled


def configmap_data(tree: dict[str, bytes], path: str, key: str) -> Any:
    return load_yaml(load_yaml(tree[path])["data"][key])
