"""Turn pydantic's validation errors into located diagnostics a user can act on."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

from gpuconf.api import base, gpu_model, kubernetes_names
from gpuconf.api.core_validator import ValidationError
from gpuconf.api.node_facts import MIG_CONFIG_PREFIX
from gpuconf.api.record import Limits, Record
from gpuconf.diagnostics import Diagnostic, KeyPath
from gpuconf.formats.located_yaml import MISSING, Located, child
from gpuconf.hints import did_you_mean

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

_PATTERNS: dict[str, tuple[str, str]] = {
    base.DNS_LABEL: (
        "is not a valid DNS label",
        "use lowercase letters, digits and '-', starting and ending with a letter or digit, "
        "at most 63 characters",
    ),
    base.DNS_SUBDOMAIN: (
        "is not a valid DNS subdomain",
        "use lowercase letters, digits, '-' and '.', at most 253 characters",
    ),
    base.POOL_NAME: (
        "is not a valid pool name",
        "use lowercase letters, digits and '-', starting and ending with a letter or digit, at "
        f"most {base.POOL_NAME_MAX} characters ({MIG_CONFIG_PREFIX}<pool> is the nodes' "
        "nvidia.com/mig.config label value, at most 63)",
    ),
    base.CONFIG_MAP_NAME: (
        "is not a ConfigMap name gpuconf can write",
        f"a DNS subdomain of at most {base.CONFIG_MAP_NAME_MAX} characters: lowercase letters, "
        f"digits, '-' and '.' (the file {base.CONFIG_MAP_FILE.format('<name>')} must fit a "
        "file name's 255)",
    ),
    base.LABEL_KEY: (
        "is not a valid label key",
        "an optional DNS-subdomain prefix of at most 253 characters and '/', then a name of at "
        "most 63 characters",
    ),
    base.LABEL_VALUE: (
        "is not a valid label value",
        "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
    ),
    base.EXTENDED_RESOURCE: (
        "is not a valid extended resource name",
        "write <domain>/<name>, e.g. gpuconf.dev/a100",
    ),
    base.RESOURCE_DOMAIN: (
        "is not a valid resource domain",
        "a DNS subdomain of at most 244 characters outside kubernetes.io, e.g. gpuconf.dev",
    ),
    base.IMAGE: (
        "is not a valid image reference",
        "write registry/repository:tag, lowercase, no spaces",
    ),
    base.KUBE_VERSION: (
        "is not a Kubernetes minor version",
        'write it quoted as "1.MINOR", e.g. "1.34"',
    ),
    base.DRIVER_VERSION: ("is not an NVIDIA driver version", 'write it quoted, e.g. "550.54.15"'),
    base.GPU_UUID: (
        "is not a GPU UUID",
        "write it as nvidia-smi -L prints it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
    ),
    base.QUANTITY: (
        "is not a memory quantity",
        'write MiB as a number ("40960") or a quantity such as "40Gi"',
    ),
    base.MIG_PROFILE: (
        "is not a MIG profile name",
        "write it as nvidia-smi names it, e.g. 1g.10gb",
    ),
    base.JETPACK_VERSION: ("is not a JetPack version", 'write it quoted, e.g. "6.2"'),
    gpu_model.GPU_MODEL_NAME: (
        "is not a GPU model name",
        "at most 63 letters, digits, '-', '_' or '.', e.g. H100-SXM5-80GB",
    ),
    gpu_model.PCI_DEVICE_ID: (
        "is not a PCI device id",
        'write it as 0x and four uppercase hex digits, quoted, e.g. "0x2330" (lspci -nn shows 10de:2330)',
    ),
    gpu_model.COMPUTE_CAPABILITY: (
        "is not a compute capability",
        'write it quoted as MAJOR.MINOR, e.g. "8.9"',
    ),
    base.ABSOLUTE_PATH: (
        "is not an absolute path",
        "start with '/' and use letters, digits, '.', '_', '-' and '/'",
    ),
}

_WHY: dict[str, Callable[[str], str | None]] = {
    base.DNS_LABEL: kubernetes_names.too_long(63),
    base.DNS_SUBDOMAIN: kubernetes_names.too_long(kubernetes_names.QUALIFIED_PREFIX_MAX),
    base.POOL_NAME: kubernetes_names.too_long(base.POOL_NAME_MAX),
    base.LABEL_VALUE: kubernetes_names.too_long(kubernetes_names.LABEL_VALUE_MAX),
    base.LABEL_KEY: kubernetes_names.qualified_name,
    base.EXTENDED_RESOURCE: kubernetes_names.extended_resource_name,
    base.RESOURCE_DOMAIN: kubernetes_names.resource_domain,
}
"""Patterns that stand for several of Kubernetes' rules: which one a value breaks."""

_TYPE_NOUNS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


_KEYED = frozenset({"missing", "extra_forbidden"})
"""Error types whose loc ends in a key of the document, present or missing."""


def as_yaml_spells(value: Any) -> str:
    """The value as YAML spells it (true, null, {"a": 1}), not as Python does (True, None)."""
    if value is None or isinstance(value, (bool, dict, list)):
        text = json.dumps(value, ensure_ascii=False, default=repr)
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _data_path(
    located: Located, loc: tuple[int | str, ...], names_a_key: bool
) -> tuple[KeyPath, bool]:
    """Map pydantic's loc onto the document, dropping union-member and tag names.

    `names_a_key`: the loc ends in a key the document lacks (a missing required key), not in
    the name of a union member such as ``list[MigLayout]``.
    Returns the path and whether a union member name was dropped along the way."""
    path: list[int | str] = []
    node: Any = located.data
    dropped = False
    for position, part in enumerate(loc):
        found = child(node, part)
        if found is not MISSING:
            node = found
            path.append(part)
        elif names_a_key and isinstance(node, dict) and position == len(loc) - 1:
            path.append(part)
        else:
            dropped = True
    return tuple(path), dropped


def _unwrap(annotation: Any) -> Iterator[Any]:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        yield from _unwrap(get_args(annotation)[0])
    elif origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            yield from _unwrap(arg)
    elif origin in (list, dict):
        yield from _unwrap(get_args(annotation)[-1])
    else:
        yield annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Record)


_KEYS: dict[type[Record], dict[str, Any]] = {}


def _keys(model: type[Record]) -> dict[str, Any]:
    """A record's keys in the file, each with its field's type (read once per record)."""
    if model not in _KEYS:
        hints = typing.get_type_hints(model, include_extras=True)
        _KEYS[model] = {f.alias: hints[name] for name, f in model.__record_fields__.items()}
    return _KEYS[model]


def _model_at(
    root: type[Record] | None, loc: tuple[int | str, ...]
) -> type[Record] | _UnionOf | None:
    """The model class whose keys are checked at ``loc`` (its last part being a key)."""
    current: type[Record] | _UnionOf | None = root
    for part in loc[:-1]:
        if current is None or isinstance(part, int):
            continue
        annotation = _keys(current).get(part) if isinstance(current, type) else None
        if annotation is None:
            tagged = [m for m in _members(current) if _tag(m) == part]
            if tagged:
                current = tagged[0]
            continue
        models = [t for t in _unwrap(annotation) if _is_model(t)]
        current = models[0] if len(models) == 1 else _UnionOf(models) if models else None
    return current


class _UnionOf:
    """Placeholder for a field whose value is one of several models (a tagged union)."""

    def __init__(self, models: list[type[Record]]) -> None:
        self.models = models


def _members(current: Any) -> list[type[Record]]:
    return list(getattr(current, "models", []))


def _tag(model: type[Record]) -> str | None:
    annotation = _keys(model).get("strategy")
    if annotation is None or get_origin(annotation) is not Literal:
        return None
    return str(get_args(annotation)[0])


def _pattern_at(root: type[Record] | None, loc: tuple[int | str, ...]) -> str | None:
    """The pattern of the string field at ``loc`` (list indices after its key skipped)."""
    keys = [(i, part) for i, part in enumerate(loc) if isinstance(part, str) and part != "[key]"]
    if not keys:
        return None
    at, key = keys[-1]
    model = _model_at(root, loc[: at + 1])
    if not isinstance(model, type):
        return None
    return _pattern_in(_keys(model).get(key))


def _pattern_in(annotation: Any) -> str | None:
    if get_origin(annotation) is typing.Annotated:
        inner, *extras = get_args(annotation)
        for extra in extras:
            if isinstance(extra, Limits) and "pattern" in extra.limits:
                return str(extra.limits["pattern"])
        return _pattern_in(inner)
    return next(filter(None, (_pattern_in(arg) for arg in get_args(annotation))), None)


def _allowed_keys(root: type[Record] | None, loc: tuple[int | str, ...]) -> list[str]:
    model = _model_at(root, loc)
    if not isinstance(model, type):
        return []
    return list(_keys(model))


def _quote_float_hint(value: float) -> str:
    text = repr(value)
    if len(text.partition(".")[2]) == 1:
        # YAML read 1.30 as 1.3: the user's trailing zero is gone, so show both readings.
        return f'quote it as you meant it, e.g. "{text}0" or "{text}" (YAML reads {text} as a number and drops trailing zeros)'
    return f'quote it: "{text}" (YAML reads it as a number)'


def pattern_wording(pattern: str, value: Any) -> tuple[str, str]:
    """The message and hint for `value`, which does not match `pattern` (one of api/base.py's):
    what it is not, and which of Kubernetes' rules it breaks where the pattern holds several."""
    what, hint = _PATTERNS.get(pattern, ("has the wrong format", ""))
    why = _WHY.get(pattern)
    reason = why(value) if why is not None and isinstance(value, str) else None
    if reason:
        return f"{as_yaml_spells(value)} {what}: {reason}", hint
    return f"{as_yaml_spells(value)} {what}", hint


def _message(error: ErrorDetails, value: Any, root: type[Record] | None) -> tuple[str, str]:
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    loc = tuple(error["loc"])
    if kind == "missing":
        return f"required key {loc[-1]!r} is missing", ""
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, loc)
        listed = "allowed keys: " + ", ".join(allowed) if allowed else ""
        hint = did_you_mean(str(loc[-1]), allowed, otherwise=listed)
        return f"unknown key {loc[-1]!r}", hint
    if kind == "string_pattern_mismatch":
        return pattern_wording(ctx.get("pattern", ""), value)
    if kind == "literal_error":
        expected = ctx.get("expected", "")
        options = [o.strip().strip("'") for o in expected.replace(" or ", ", ").split(",")]
        return f"{as_yaml_spells(value)} is not one of {expected}", did_you_mean(
            str(value), options, cutoff=0.5
        )
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        expected = ctx.get("expected_tags", "")
        if kind == "union_tag_not_found":
            union = _model_at(root, (*loc, ""))
            tags = sorted(t for m in _members(union) if (t := _tag(m)) is not None)
            return f"needs a {ctx.get('discriminator', 'strategy')} key", "one of " + ", ".join(
                tags
            )
        key = str(ctx.get("discriminator", "")).strip("'")
        # pydantic's tag is the value as str() spells it ('None' for null): show the file's.
        tag = value[key] if isinstance(value, dict) and key in value else ctx.get("tag")
        return f"unknown {key} {as_yaml_spells(tag)}", f"one of {expected}"
    if kind in _TYPE_NOUNS:
        hint = ""
        if kind == "string_type" and loc and loc[-1] == "pciDeviceId":
            # YAML reads 0x2330 as 9008: quoting the number would not give the id back.
            hint = _PATTERNS[gpu_model.PCI_DEVICE_ID][1]
        elif kind == "string_type" and isinstance(value, int) and not isinstance(value, bool):
            hint = f'quote it: "{value}" (YAML reads it as a number)'
        elif kind == "string_type" and isinstance(value, float):
            hint = _quote_float_hint(value)
        return f"should be {_TYPE_NOUNS[kind]}, not {as_yaml_spells(value)}", hint
    bounds = {
        "greater_than_equal": ("must be at least", "ge"),
        "less_than_equal": ("must be at most", "le"),
        "greater_than": ("must be more than", "gt"),
        "less_than": ("must be less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"{words} {ctx.get(key)}, not {as_yaml_spells(value)}", ""
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)", ""
    if kind == "too_long":
        return f"has more than {ctx.get('max_length')} items", ""
    if kind == "string_too_short":
        shortest = ctx.get("min_length")
        return (
            "must not be empty" if shortest == 1 else f"is shorter than {shortest} characters",
            "",
        )
    if kind == "string_too_long":
        longest = ctx.get("max_length")
        known = _PATTERNS.get(_pattern_at(root, loc) or "")
        if known is not None and isinstance(value, str) and isinstance(longest, int):
            what, hint = known
            return (
                f"{as_yaml_spells(value)} {what}: {kubernetes_names.too_long(longest)(value)}",
                hint,
            )
        return f"is longer than {longest} characters", ""
    return error["msg"], ""


def wording(error: ErrorDetails, value: Any) -> tuple[str, str]:
    """The message and hint for one error of a file no record describes (a pydantic-core schema
    of its own, as the fake NVML file's): cluster files' words, less what only a record's
    fields tell (the keys it allows, its patterns' names)."""
    return _message(error, value, None)


def _at_tag(detail: ErrorDetails, path: KeyPath, value: Any) -> KeyPath:
    """An unknown union tag is the tag key's fault (sharing.strategy), not its mapping's."""
    key = str((detail.get("ctx") or {}).get("discriminator", "")).strip("'")
    if detail["type"] == "union_tag_invalid" and isinstance(value, dict) and key in value:
        return (*path, key)
    return path


def diagnostics_from(
    error: ValidationError, located: Located, root: type[Record]
) -> list[Diagnostic]:
    by_path: dict[KeyPath, list[tuple[ErrorDetails, bool]]] = {}
    for detail in error.errors(include_url=False):
        path, dropped = _data_path(located, tuple(detail["loc"]), detail["type"] in _KEYED)
        by_path.setdefault(path, []).append((detail, dropped))
    diagnostics: list[Diagnostic] = []
    for path, details in by_path.items():
        value = located.value_at(path)
        if any(p[: len(path)] == path and len(p) > len(path) for p in by_path):
            # The value took one member's shape (a mapping): that member's errors say what is
            # wrong inside it; "should be a list" from another member would only mislead.
            details = [
                (d, dropped)
                for d, dropped in details
                if not dropped or d["type"] not in _TYPE_NOUNS
            ]
            if not details:
                continue
        if len(details) > 1 and all(dropped for _, dropped in details):
            nouns = sorted({_TYPE_NOUNS.get(d["type"], "") for d, _ in details} - {""})
            if nouns:
                diagnostics.append(
                    located.diagnostic(
                        path, f"should be {' or '.join(nouns)}, not {as_yaml_spells(value)}"
                    )
                )
                continue
        seen: set[str] = set()
        for detail, _ in details:
            # A mapping key that failed its pattern: show the key, not the value under it.
            shown = detail["input"] if detail["loc"][-1:] == ("[key]",) else value
            message, hint = _message(detail, shown, root)
            if message not in seen:
                seen.add(message)
                diagnostics.append(located.diagnostic(_at_tag(detail, path, value), message, hint))
    return diagnostics
