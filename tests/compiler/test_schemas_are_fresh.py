"""The committed JSON Schemas are what the models generate, and every example satisfies them."""

from __future__ import annotations

import json

import jsonschema
import pytest
from builders import CASES, CATALOG, CLUSTERS, EXAMPLES, REPO

from gpuconf.api.schema import schema_texts
from gpuconf.formats.located_yaml import load_file

SCHEMAS = REPO / "schemas"
POSITIVE = sorted((CASES / "positive").glob("*/cluster.yaml"))


def test_committed_schemas_equal_the_generated_ones() -> None:
    texts = schema_texts(CATALOG.names())
    committed = {p.name: p.read_text(encoding="utf-8") for p in SCHEMAS.glob("*.json")}
    assert sorted(committed) == sorted(texts)
    for name, text in texts.items():
        assert committed[name] == text, f"schemas/{name} is stale: run `gpuconf schema`"


def test_schemas_are_valid_draft_2020_12() -> None:
    for path in SCHEMAS.glob("*.json"):
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "path",
    [CLUSTERS / f"{n}.yaml" for n in EXAMPLES] + POSITIVE,
    ids=[*EXAMPLES, *(f"positive/{p.parent.name}" for p in POSITIVE)],
)
def test_cluster_file_satisfies_the_published_schema(path) -> None:  # type: ignore[no-untyped-def]
    schema = json.loads((SCHEMAS / "cluster.schema.json").read_text(encoding="utf-8"))
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(load_file(path).data),
        key=lambda e: list(e.path),
    )
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def _completions(schema: dict[str, object], model_field: str) -> object:
    definitions = schema["$defs"]
    assert isinstance(definitions, dict)
    shape = definitions["GpuShape"]["properties"][model_field]
    return definitions[shape["$ref"].removeprefix("#/$defs/")]


def test_schema_offers_catalog_models_for_completion_and_accepts_declared_ones() -> None:
    schema = json.loads((SCHEMAS / "cluster.schema.json").read_text(encoding="utf-8"))
    names = _completions(schema, "model")
    assert names == {
        "anyOf": [
            {"enum": CATALOG.names()},
            {"type": "string", "pattern": names["anyOf"][1]["pattern"]},  # type: ignore[index]
        ]
    }
    validator = jsonschema.Draft202012Validator(
        schema["$defs"]["GpuShape"] | {"$defs": schema["$defs"]}
    )
    assert not list(validator.iter_errors({"model": "Jetson-AGX-Orin-64GB", "count": 1}))
    assert not list(validator.iter_errors({"model": "My-Lab-GPU", "count": 1}))
    assert list(validator.iter_errors({"model": "not a name", "count": 1}))
