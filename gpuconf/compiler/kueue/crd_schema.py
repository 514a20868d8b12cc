"""Kueue objects checked against the CRD schemas of the declared release, as a strict API server
checks them: the served version's openAPIV3Schema with its defaults applied, unknown fields
refused, and its CEL rules (x-kubernetes-validations) evaluated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from gpuconf.api.cluster.kueue import KueueRelease
from gpuconf.compiler.kueue.crd_rules import CelRules, with_defaults
from gpuconf.compiler.strict_schema import strict
from gpuconf.formats.located_yaml import load_file

CRDS = Path(__file__).with_name("crds")


class SchemaError(NamedTuple):
    path: str
    """The field in the object, dotted (spec.resourceGroups.0.flavors)."""
    message: str


class CrdSchemas:
    """The release's CRDs, by (apiVersion, kind): the schema of each version it serves."""

    __slots__ = ("_rules", "_schemas", "release")

    def __init__(self, release: KueueRelease) -> None:
        self.release = release
        self._rules = CelRules()
        self._schemas: dict[tuple[str, str], Any] = {}
        for path in sorted((CRDS / release).glob("*.yaml")):
            crd = load_file(path, f"gpuconf/compiler/kueue/crds/{release}/{path.name}").data
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                if version.get("served"):
                    schema = version["schema"]["openAPIV3Schema"]
                    self._schemas[f"{group}/{version['name']}", kind] = strict(schema)

    def errors(self, obj: dict[str, Any]) -> Iterator[SchemaError]:
        # Imported here: only clusters with Kueue pay for jsonschema.
        import jsonschema

        schema = self._schemas.get((obj["apiVersion"], obj["kind"]))
        if schema is None:
            yield SchemaError(
                "apiVersion", f"Kueue {self.release} serves no {obj['kind']} at {obj['apiVersion']}"
            )
            return
        obj = with_defaults(schema, obj)
        validator = jsonschema.Draft7Validator(schema)
        found = [
            SchemaError(".".join(map(str, e.absolute_path)), e.message)
            for e in validator.iter_errors(obj)
        ]
        if not found:
            # The rules assume the shape the schema gives (the API server runs them only then).
            found = [SchemaError(f.path, f.message) for f in self._rules.failures(schema, obj)]
        yield from sorted(found)
