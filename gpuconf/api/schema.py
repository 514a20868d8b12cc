"""The published JSON Schemas, generated from the models (editors show the field docstrings)."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from gpuconf.api.cluster import Cluster
from gpuconf.api.gpu_model import GPU_MODEL_NAME, GPU_MODEL_REFERENCE
from gpuconf.api.node_config import NodeConfig
from gpuconf.api.record import Record

SCHEMA_BASE = "https://gpuconf.dev/schemas/"
MODEL_NAME_DEF = "GpuModelName"
SCHEMAS: dict[str, type[Record]] = {
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


def _field_docstrings(model: type[Record]) -> dict[str, str]:
    """The string literal right below each annotated field in the class body, cleaned as
    `inspect.cleandoc` cleans docstrings; fields of base models included."""
    docs: dict[str, str] = {}
    for base in reversed(model.__mro__):
        if base is Record or not issubclass(base, Record):
            continue
        [body] = ast.parse(textwrap.dedent(inspect.getsource(base))).body
        assert isinstance(body, ast.ClassDef)
        for statement, following in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _key(model: type[Record], name: str) -> str:
    """The key field `name` has in the file."""
    found = model.__record_fields__.get(name)
    return found.alias if found else name


class _DocumentedFields(GenerateJsonSchema):
    """Each field's docstring as the description of its property, for editors to show."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        model: type[Record] = schema["cls"]
        properties = json_schema.get("properties", {})
        for name, text in _field_docstrings(model).items():
            key = _key(model, name)
            if key in properties:
                properties[key].setdefault("description", text)
        return json_schema


def json_schema(
    model: type[Record], file_name: str, model_names: Sequence[str] = ()
) -> dict[str, Any]:
    schema = TypeAdapter(model).json_schema(
        by_alias=True, mode="validation", schema_generator=_DocumentedFields
    )
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
