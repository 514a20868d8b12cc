"""A CRD's openAPIV3Schema as a strict API server applies it: one owner for the templating
check (compiler/templating/check.py), the Kueue check (compiler/kueue/crd_schema.py) and the
tests' CRD checks."""

from __future__ import annotations

from typing import Any


def strict(schema: Any) -> Any:
    """Unknown fields are errors wherever the schema lists properties and does not preserve
    unknown fields: what `kubectl apply --validate=strict` (the default since 1.27) does."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    found = {k: v if k == "enum" else strict(v) for k, v in schema.items()}
    if "properties" in found and not found.get("x-kubernetes-preserve-unknown-fields"):
        found.setdefault("additionalProperties", False)
    return found
