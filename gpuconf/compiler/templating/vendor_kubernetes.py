"""Write kubernetes/: the strict JSON schemas of the built-in kinds gpuconf emits, taken from
kubernetes-validate (a test dependency) for the Kubernetes release the control-plane tests run,
trimmed to the definitions those kinds reach, without descriptions.

After changing KINDS or the release: ``python -m gpuconf.compiler.templating.vendor_kubernetes``.
A test fails while the committed file differs from what this writes."""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata, resources
from typing import Any

from gpuconf.compiler.templating.kubernetes_schema import KUBERNETES, SCHEMAS, kind_key
from gpuconf.formats.quantity import QUANTITY_PATTERN

RELEASE = "1.34.0"
"""The release tests/control_plane/go.mod pins (k8s.io/kubernetes v1.34.x)."""
DRA_VERSIONS = ("v1beta1", "v1beta2", "v1")
"""Every resource.k8s.io version gpuconf writes (compiler/dra/kubernetes_gates.py)."""
KINDS: tuple[tuple[str, str], ...] = (
    ("v1", "ConfigMap"),
    ("v1", "Namespace"),
    ("v1", "ResourceQuota"),
    ("v1", "ServiceAccount"),
    ("apps/v1", "DaemonSet"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
    *(
        (f"resource.k8s.io/{version}", kind)
        for version in DRA_VERSIONS
        for kind in ("DeviceClass", "ResourceClaimTemplate")
    ),
)
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_DEFINITIONS_REF = "/api/_definitions.json#/$defs/"
_LOCAL_REF = "#/$defs/"
# Maps whose keys are names (of fields, of definitions), not JSON Schema keywords.
_NAMING = frozenset({"properties", "patternProperties", "$defs"})


def _schema_folder() -> Any:
    return (
        resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{RELEASE}-local-strict"
    )


def _file_name(api_version: str, kind: str) -> str:
    """kubernetes-validate's name for a kind's schema file (its utils.validate)."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"


def _trimmed(schema: Any, names: bool = False) -> Any:
    """`schema` without what validation never reads (descriptions, x-kubernetes-* hints),
    with references into kubernetes-validate's definitions file made local."""
    if isinstance(schema, list):
        return [_trimmed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if names:
        return {key: _trimmed(value) for key, value in schema.items()}
    kept = {}
    for key, value in schema.items():
        if key in ("description", "$schema", "$id") or key.startswith("x-kubernetes-"):
            continue
        if key == "$ref":
            value = str(value).replace(_DEFINITIONS_REF, _LOCAL_REF)
        kept[key] = _trimmed(value, names=key in _NAMING)
    return kept


def _references(schema: Any) -> set[str]:
    found = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.removeprefix(_LOCAL_REF))
            else:
                found |= _references(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= _references(item)
    return found


def vendored() -> dict[str, Any]:
    """What kubernetes/ holds: each kind's root schema and every definition they reach."""
    folder = _schema_folder()
    definitions = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    kinds = {
        kind_key(api_version, kind): _trimmed(
            json.loads((folder / _file_name(api_version, kind)).read_text(encoding="utf-8"))
        )
        for api_version, kind in KINDS
    }
    reached: dict[str, Any] = {}
    waiting = set().union(*map(_references, kinds.values()))
    while waiting:
        name = waiting.pop()
        reached[name] = _trimmed(definitions[name])
        waiting |= _references(reached[name]) - reached.keys()
    if QUANTITY in reached:
        # kubernetes-validate takes any string (and refuses null, which both of its branches
        # match); the API server parses it (resource.ParseQuantity) and refuses the object.
        reached[QUANTITY] = {"type": ["string", "number", "null"], "pattern": QUANTITY_PATTERN}
    return {
        "kubernetes": RELEASE,
        "source": f"kubernetes-validate {metadata.version('kubernetes-validate')}, "
        f"kubernetes-json-schema/v{RELEASE}-local-strict",
        "kinds": kinds,
        "$defs": reached,
    }


def vendored_text() -> str:
    return json.dumps(vendored(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    SCHEMAS.write_text(vendored_text(), encoding="utf-8", newline="\n")
    print(f"wrote {SCHEMAS.relative_to(KUBERNETES.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
