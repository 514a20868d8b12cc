"""The published JSON Schemas, generated from the models (editors show the field docstrings)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from gpuconf.api.cluster import Cluster
from gpuconf.api.gpu_model import GPU_MODEL_NAME, GPU_MODEL_REFERENCE
from gpuconf.api.node_config import NodeConfig

SCHEMA_BASE = "https://gpuconf.dev/schemas/"
MODEL_NAME_DEF = "GpuModelName"
SCHEMAS: dict[str, type[BaseModel]] = {
    "cluster.schema.json": Cluster,
    "node-config.schema.json": NodeConfig,
}


def _model_name_schema(known: Sequence[str]) -> dict[str, Any]:
    """Known names as an enum, so editors complete them; any other well-formed name still
    validates (spec.gpuModels may declare it)."""
    pattern = {"type": "string", "pattern": GPU_MODEL_NAME}
    if not known:
        return pattern
    return {"anyOf": [{"enum": sorted(known)}, pattern]}


def _refer_to_model_names(node: Any) -> bool:
    """Replace each model-reference marker with a $ref to MODEL_NAME_DEF; True if any was found."""
    found = False
    if isinstance(node, dict):
        if node.get("$comment") == GPU_MODEL_REFERENCE:
            del node["$comment"]
            node["$ref"] = f"#/$defs/{MODEL_NAME_DEF}"
            return True
        for value in node.values():
            found = _refer_to_model_names(value) or found
    elif isinstance(node, list):
        for value in node:
            found = _refer_to_model_names(value) or found
    return found


def json_schema(
    model: type[BaseModel], file_name: str, model_names: Sequence[str] = ()
) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    if _refer_to_model_names(schema):
        schema.setdefault("$defs", {})[MODEL_NAME_DEF] = _model_name_schema(model_names)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_BASE + file_name,
        **schema,
    }


def schema_texts(model_names: Sequence[str] = ()) -> dict[str, str]:
    """`model_names`: the GPU catalog's names, offered for completion wherever a model is named."""
    return {
        name: json.dumps(
            json_schema(model, name, model_names), indent=2, sort_keys=True, ensure_ascii=False
        )
        + "\n"
        for name, model in SCHEMAS.items()
    }
