"""A CRD's openAPIV3Schema as a strict API server applies it: one owner for the templating
check (compiler/templating/check.py), the Kueue check (compiler/kueue/crd_schema.py) and the
tests' CRD checks."""

from __future__ import annotations

from typing import Any


def strict(schema: Any, patch: bool = False) -> Any:
    """Unknown fields are errors wherever the schema lists properties and does not preserve
    unknown fields: what `kubectl apply --validate=strict` (the default since 1.27) does.
    `patch`: the schema of a merge patch of such an object, which may leave out what the
    object has (no `required`)."""
    if isinstance(schema, list):
        return [strict(s, patch) for s in schema]
    if not isinstance(schema, dict):
        return schema
    found = {
        k: v if k == "enum" else strict(v, patch)
        for k, v in schema.items()
        # A list: JSON Schema's `required`, not a property of that name.
        if not (patch and k == "required" and isinstance(v, list))
    }
    if "properties" in found and not found.get("x-kubernetes-preserve-unknown-fields"):
        found.setdefault("additionalProperties", False)
    return found
