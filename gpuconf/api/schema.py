"""The published JSON Schemas, generated from the models (editors show the field docstrings)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from gpuconf.api.cluster import Cluster
from gpuconf.api.node_config import NodeConfig

SCHEMA_BASE = "https://gpuconf.dev/schemas/"
SCHEMAS: dict[str, type[BaseModel]] = {
    "cluster.schema.json": Cluster,
    "node-config.schema.json": NodeConfig,
}


def json_schema(model: type[BaseModel], file_name: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_BASE + file_name,
        **schema,
    }


def schema_texts() -> dict[str, str]:
    return {
        name: json.dumps(json_schema(model, name), indent=2, sort_keys=True, ensure_ascii=False)
        + "\n"
        for name, model in SCHEMAS.items()
    }
