"""A CRD schema's defaults and its CEL rules (x-kubernetes-validations), applied as the API
server applies them: defaults first, then every rule on every value present. Transition rules
(those naming oldSelf) check updates, not a new object, and are left out.

cel-python (celpy) is imported here and in compiler/dra/cel_proof.py only."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, NamedTuple


class RuleFailure(NamedTuple):
    path: str
    message: str


def with_defaults(schema: Any, value: Any) -> Any:
    """`value` with the schema's defaults filled in where a field is absent (a copy)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        filled = dict(value)
        for name, prop in (schema.get("properties") or {}).items():
            if name not in filled and isinstance(prop, dict) and "default" in prop:
                filled[name] = copy.deepcopy(prop["default"])
            if name in filled:
                filled[name] = with_defaults(prop, filled[name])
        return filled
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [with_defaults(schema["items"], item) for item in value]
    return value


class CelRules:
    """The schema's rules, each compiled once."""

    __slots__ = ("_programs",)

    def __init__(self) -> None:
        self._programs: dict[str, Any] = {}

    def _program(self, rule: str) -> Any:
        if rule not in self._programs:
            import celpy

            environment = celpy.Environment()
            self._programs[rule] = environment.program(environment.compile(rule))
        return self._programs[rule]

    def failures(self, schema: Any, value: Any, path: str = "") -> Iterator[RuleFailure]:
        if not isinstance(schema, dict):
            return
        from celpy.adapter import json_to_cel
        from celpy.evaluation import CELEvalError

        for validation in schema.get("x-kubernetes-validations") or []:
            rule = validation["rule"]
            if "oldSelf" in rule:
                continue
            try:
                passed = self._program(rule).evaluate({"self": json_to_cel(value)})
            except CELEvalError as error:
                yield RuleFailure(path, f"rule {rule!r} fails: {error.args[0]}")
                continue
            if not passed:
                yield RuleFailure(path, validation.get("message") or f"failed rule: {rule}")
        if isinstance(value, dict):
            for name, prop in (schema.get("properties") or {}).items():
                if name in value:
                    yield from self.failures(prop, value[name], f"{path}.{name}".lstrip("."))
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                yield from self.failures(schema["items"], item, f"{path}.{i}")
