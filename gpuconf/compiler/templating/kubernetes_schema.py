"""The strict schemas of the built-in Kubernetes kinds gpuconf emits, vendored in
kubernetes-schemas/ (`python -m gpuconf.compiler.templating.vendor_kubernetes` writes them):
what a site's override of a template that writes such a kind is checked against."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

KUBERNETES = Path(__file__).parent / "kubernetes-schemas"
SCHEMAS = KUBERNETES / "kinds.json"


def kind_key(api_version: str, kind: str) -> str:
    return f"{api_version} {kind}"


@cache
def _vendored() -> dict[str, Any]:
    vendored: dict[str, Any] = json.loads(SCHEMAS.read_text(encoding="utf-8"))
    return vendored


def vendored_release() -> str:
    """The Kubernetes release the schemas come from."""
    return str(_vendored()["kubernetes"])


def vendored_kinds() -> list[tuple[str, str]]:
    """Every (apiVersion, kind) with a vendored schema."""
    return [(key.rpartition(" ")[0], key.rpartition(" ")[2]) for key in _vendored()["kinds"]]


@cache
def kubernetes_validator(api_version: str, kind: str) -> Any:
    """The JSON Schema validator of a built-in kind, as kubernetes-validate's strict mode
    checks it (unknown fields refused), else None: a kind Kubernetes does not ship, or an
    apiVersion gpuconf does not write."""
    vendored = _vendored()
    root = vendored["kinds"].get(kind_key(api_version, kind))
    if root is None:
        return None
    import jsonschema  # only where a site's template writes such a kind

    return jsonschema.Draft202012Validator({**root, "$defs": vendored["$defs"]})
