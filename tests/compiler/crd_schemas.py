"""Validate objects against the CRD schemas of the programs that read them (gpuconf/compiler/templating/crds/)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
from builders import REPO

CRDS = REPO / "gpuconf" / "compiler" / "templating" / "crds"


def _strict(schema: Any) -> Any:
    """The CRD schema as a strict API server applies it: unknown fields are errors."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    strict = {k: _strict(v) if k != "enum" else v for k, v in schema.items()}
    if "properties" in strict and not strict.get("x-kubernetes-preserve-unknown-fields"):
        strict.setdefault("additionalProperties", False)
    return strict


@cache
def _validators() -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    validators = {}
    for path in CRDS.glob("*.json"):
        crd = json.loads(path.read_text())
        key = (f"{crd['group']}/{crd['version']}", crd["kind"])
        validators[key] = jsonschema.Draft7Validator(_strict(crd["schema"]))
    return validators


def crd_errors(obj: dict[str, Any]) -> list[str]:
    """`key.path: message` for each way `obj` breaks its kind's schema; KeyError if unknown."""
    validator = _validators()[(obj["apiVersion"], obj["kind"])]
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    ]
