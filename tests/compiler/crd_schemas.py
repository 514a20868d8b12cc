"""Validate objects against the CRD schemas of the programs that read them
(gpuconf/compiler/templating/crds/, and the Kueue releases' CRD manifests gpuconf ships in
gpuconf/compiler/kueue/crds/)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
from builders import REPO, load_yaml

from gpuconf.compiler.strict_schema import strict

CRDS = REPO / "gpuconf" / "compiler" / "templating" / "crds"
KUEUE_CRDS = REPO / "gpuconf" / "compiler" / "kueue" / "crds"


@cache
def _validators() -> dict[tuple[str, str], jsonschema.Draft7Validator]:
    validators = {}
    for path in CRDS.glob("*.json"):
        crd = json.loads(path.read_text())
        key = (f"{crd['group']}/{crd['version']}", crd["kind"])
        validators[key] = jsonschema.Draft7Validator(strict(crd["schema"]))
    # Kueue's served versions: v1beta1 in every release gpuconf supports, v1beta2 from v0.16; the
    # newest release's schema is kept for each (a test per release checks its own).
    for path in sorted(KUEUE_CRDS.glob("*/*.yaml"), key=lambda p: version_key(p.parent.name)):
        crd = load_yaml(path.read_text())
        for served in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{served['name']}", crd["spec"]["names"]["kind"])
            validators[key] = jsonschema.Draft7Validator(
                strict(served["schema"]["openAPIV3Schema"])
            )
    return validators


def version_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.removeprefix("v").split("."))


def crd_errors(obj: dict[str, Any]) -> list[str]:
    """`key.path: message` for each way `obj` breaks its kind's schema; KeyError if unknown."""
    validator = _validators()[(obj["apiVersion"], obj["kind"])]
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    ]
