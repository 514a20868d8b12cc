"""A template's output, parsed back and checked before anything is written.

YAML is read with gpuconf's own loader (one document, one mapping, core-schema scalars, no
anchors, tags or duplicate keys) and written again by the canonical YAML writer, so the
bytes do not depend on how a template laid the text out. A manifest must be the kind the
plan asked for with a name; a file that patches an object (the GPU Operator's values and
ClusterPolicy patch, whose values a user chose) must pass that object's CRD schema (crds/).
Manifests a site's template shapes, or that carry input from outside, pass their kind's schema
(output_schemas.py: Kubernetes' own for built-in kinds, the vendored CRD's for the others), and
keep the metadata other programs read as the plan asked for it (`_check_metadata`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from operator import itemgetter
from pathlib import Path
from typing import Any

from gpuconf.compiler.plan.annotation_readers import ANNOTATION_READERS
from gpuconf.compiler.plan.artifact import PatchOf
from gpuconf.compiler.resolve.metadata_guard import kept_refusals
from gpuconf.compiler.strict_schema import strict
from gpuconf.compiler.templating.engine import TemplateFailed, TemplateSource, template_line
from gpuconf.compiler.templating.filters import label_guards
from gpuconf.diagnostics import format_path
from gpuconf.formats.located_yaml import LoadFailed, Located, parse_text
from gpuconf.formats.yaml_writer import Hole, Holed, dump, written_with_holes

CRDS = Path(__file__).parent / "crds"

Chain = Callable[[], list[TemplateSource]]
"""The files that made an output, found only when it is refused."""


def _refused(chain: Chain, text: str, line: int, message: str, hint: str = "") -> TemplateFailed:
    lines = text.splitlines()
    output_line = lines[line - 1] if 0 < line <= len(lines) else ""
    file, number = template_line(chain(), output_line)
    return TemplateFailed(file, number, message, hint)


class NotASkeleton(Exception):
    """A value's token stood where no value can be put back whole (inside a longer string,
    as a key that is not a string, or as a key that another token's value repeats)."""


Filler = Callable[[list[Any]], Any]
"""A parsed skeleton's data with each token replaced by its value, for given values."""


def _filler(node: Any, prefix: str) -> Filler | None:
    """How to fill `node` (a parsed skeleton), worked out once per skeleton text; None where
    it holds no token, so it is its own filled value (read, never changed, by what follows)."""
    kind = type(node)
    if kind is str:
        if node.startswith(prefix):
            return itemgetter(int(node[len(prefix) :]))
        if prefix in node:
            raise NotASkeleton
        return None
    if kind is dict:
        return _mapping_filler(node, prefix)
    if kind is list:
        items = [(item, _filler(item, prefix)) for item in node]
        if all(fill is None for _, fill in items):
            return None
        return lambda values: [item if fill is None else fill(values) for item, fill in items]
    return None


def _mapping_filler(node: dict[str, Any], prefix: str) -> Filler | None:
    entries = []
    for key, item in node.items():
        key_at = None
        if key.startswith(prefix):
            key_at = int(key[len(prefix) :])
        elif prefix in key:
            raise NotASkeleton
        entries.append((key, key_at, item, _filler(item, prefix)))
    if all(key_at is None and fill is None for _, key_at, _, fill in entries):
        return None

    def fill(values: list[Any]) -> dict[str, Any]:
        filled = {}
        for key, key_at, item, fill_item in entries:
            if key_at is not None:
                key = values[key_at]
                if type(key) is not str or key in node or key in filled:
                    raise NotASkeleton
            filled[key] = item if fill_item is None else fill_item(values)
        return filled

    return fill


class Skeleton:
    """A skeleton text parsed, how to fill it (None: it holds no token) and, once an output of
    it has passed the checks, its text as the writer writes it with holes for the values."""

    __slots__ = ("checked_as", "fill", "getters", "holed", "located", "name_at", "tried", "whole")

    def __init__(self, located: Located, fill: Filler | None, whole: bool) -> None:
        self.located = located
        self.fill = fill
        self.whole = whole
        """False where a token stood inside a longer string or as a key that is not a whole key."""
        self.checked_as: str | None = None
        """The kind an output of it passed `_check` as, with no planned metadata and no patch."""
        self.tried = False
        self.holed: Holed | None = None
        self.getters: list[Filler] = []
        """What stands in each hole, from the values: a value, or a mapping with a value as a
        key (the order of whose keys depends on the values)."""
        self.name_at: tuple[int, bool] | None = None
        """The hole holding the manifest's name (False) or its whole metadata (True)."""

    def written(self, prefix: str) -> Holed | None:
        """The skeleton as the writer writes it, with holes where values stand, where `_check`
        (given no planned metadata and no patch) reads no value but the manifest's name: none
        stands as the kind or the apiVersion. Worked out once."""
        if not self.tried:
            self.tried = True
            self.holed = self._written(prefix)
        return self.holed

    def filled(self, holed: Holed, values: list[Any]) -> str | None:
        """The text for `values`, where they name the manifest as the output that passed
        `_check` did (a string, in a metadata mapping); else None."""
        filled = [get(values) for get in self.getters]
        if self.name_at is not None:
            at, whole_metadata = self.name_at
            metadata = filled[at]
            name = metadata.get("name") if whole_metadata and type(metadata) is dict else metadata
            if (whole_metadata and type(metadata) is not dict) or type(name) is not str:
                return None
        return holed.filled(filled)

    def _written(self, prefix: str) -> Holed | None:
        holes: list[Hole] = []
        data = _with_holes(self.located.data, prefix, holes, self.getters)
        if type(data) is not dict or Hole in (type(data.get("kind")), type(data.get("apiVersion"))):
            return None
        metadata = data.get("metadata")
        if type(metadata) is Hole:
            self.name_at = holes.index(metadata), True
        elif type(metadata) is dict and type(metadata.get("name")) is Hole:
            self.name_at = holes.index(metadata["name"]), False
        return written_with_holes(data, holes)


def _with_holes(node: Any, prefix: str, holes: list[Hole], getters: list[Filler]) -> Any:
    """`node` (a parsed skeleton) with a Hole for each token and for each mapping holding a
    token as a key; `getters[i]` gives what stands in `holes[i]`."""
    kind = type(node)
    if kind is str and node.startswith(prefix):
        getters.append(itemgetter(int(node[len(prefix) :])))
    elif kind is dict and any(key.startswith(prefix) for key in node):
        getters.append(_mapping_filler(node, prefix))  # type: ignore[arg-type]
    elif kind is dict:
        return {key: _with_holes(item, prefix, holes, getters) for key, item in node.items()}
    elif kind is list:
        return [_with_holes(item, prefix, holes, getters) for item in node]
    else:
        return node
    holes.append(Hole())
    return holes[-1]


def filled_skeleton(
    text: str,
    prefix: str,
    values: list[Any],
    kind: str,
    chain: Chain,
    parsed: dict[str, Skeleton],
    patch_of: PatchOf | None = None,
    planned: Mapping[str, Any] | None = None,
) -> str:
    """`checked_yaml` for a skeleton: the template's text is parsed with each value's token,
    the values are put back as data (JSON-encoded, each would have parsed to itself), and the
    whole is checked and written as `checked_yaml` would. Raises NotASkeleton where a token
    stood anywhere but in a whole value or key: the caller renders the values in place.

    `parsed`: skeletons already read, by their text. Outputs of one template mostly share
    their skeleton (500 quotas, one text), and the same text parses, and fills, the same way."""
    skeleton = parsed.get(text)
    if skeleton is None:
        located = _parsed(text, chain)
        try:
            skeleton = Skeleton(located, _filler(located.data, prefix), whole=True)
        except NotASkeleton:
            skeleton = Skeleton(located, None, whole=False)
        parsed[text] = skeleton
    if not skeleton.whole:
        raise NotASkeleton
    unplanned = planned is None and patch_of is None
    if unplanned and skeleton.checked_as == kind:
        # Another output of this text passed the checks, which read none of these values
        # but the name (`Skeleton.written`): the values are written into the text's holes.
        holed = skeleton.written(prefix)
        written = None if holed is None else skeleton.filled(holed, values)
        if written is not None:
            return written
    located = skeleton.located
    data = located.data if skeleton.fill is None else skeleton.fill(values)
    _check(located._replace(data=data), kind, patch_of, text, chain, planned)
    if unplanned:
        skeleton.checked_as = kind
    return dump(data)


def _parsed(text: str, chain: Chain) -> Located:
    try:
        return parse_text(text, "output")
    except LoadFailed as failure:
        found = failure.diagnostic
        where = format_path(found.path)
        raise _refused(
            chain, text, found.line, f"the output is not a manifest: {where}: {found.message}"
        ) from None


def checked_yaml(
    text: str,
    kind: str,
    chain: Chain,
    patch_of: PatchOf | None = None,
    planned: Mapping[str, Any] | None = None,
) -> str:
    """`text` as gpuconf writes YAML, once it parsed and (for a manifest) is a `kind`, (for a
    patch) passes the patched object's schema, (given `planned`, the artifact's values) keeps
    the metadata the plan asked for."""
    located = _parsed(text, chain)
    _check(located, kind, patch_of, text, chain, planned)
    return dump(located.data)


def _check(
    located: Located,
    kind: str,
    patch_of: PatchOf | None,
    text: str,
    chain: Chain,
    planned: Mapping[str, Any] | None = None,
) -> None:
    if kind:
        _check_manifest(located, kind, text, chain)
        if planned is not None:
            _check_metadata(located, planned, text, chain)
    if patch_of is not None:
        validator, source = patch_validator(*patch_of)
        _check_schema(located, validator, source, text, chain)


def _check_manifest(located: Located, kind: str, text: str, chain: Chain) -> None:
    data = located.data
    metadata = data.get("metadata")
    if data.get("kind") != kind or not isinstance(data.get("apiVersion"), str):
        raise _refused(
            chain,
            text,
            located.position(("kind",) if "kind" in data else ())[0],
            f"the output must be a {kind} with an apiVersion, not {data.get('kind')!r}",
        )
    if kind == "Kustomization" and data.get("apiVersion", "").startswith("kustomize.config"):
        return  # kustomize's own file, not an object
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise _refused(chain, text, 1, f"the {kind} has no metadata.name")


def _planned_metadata(
    values: Mapping[str, Any],
) -> Iterator[tuple[tuple[str, ...], str, Mapping[str, Any], Mapping[str, Any] | None]]:
    """Where a manifest's metadata stands, what it is (for messages), the metadata the plan
    asked for there and the selector its labels must match: the object's own, and a
    DaemonSet's pod template's."""
    meta = values.get("meta")
    if isinstance(meta, dict):
        yield ("metadata",), "", meta, None
    pod = values.get("pod_meta")
    if isinstance(pod, dict):
        yield ("spec", "template", "metadata"), "pod ", pod, values.get("selector")


def _check_metadata(located: Located, values: Mapping[str, Any], text: str, chain: Chain) -> None:
    """The backstop of the block guard (filters.with_labels, with_annotations) for a template a
    site's file shapes, which may write its metadata any way: each label and annotation the plan
    asked for that another program reads is there with a value its reader takes, and no key
    refused on gpuconf's objects is (resolve/metadata_guard.py)."""
    for at, what, planned, selector in _planned_metadata(values):
        found = located.data
        for key in at:
            found = found.get(key) if isinstance(found, dict) else None
        for field, guards in (
            ("labels", label_guards(selector)),
            ("annotations", ANNOTATION_READERS),
        ):
            written = planned.get(field) or {}
            output = found.get(field) if isinstance(found, dict) else None
            kind = f"{what}{field[:-1]}"
            for refusal in kept_refusals(
                written, output if isinstance(output, dict) else {}, guards
            ):
                path = (*at, field) if refusal.dropped else (*at, field, refusal.key)
                message = f"the template {refusal.message(kind)}"
                raise refused_at(located, path, message, text, chain, refusal.hint(kind))


def _check_schema(located: Located, validator: Any, source: str, text: str, chain: Chain) -> None:
    failure = schema_failure(located, validator, source, text, chain)
    if failure is not None:
        raise failure


def schema_failure(
    located: Located, validator: Any, source: str, text: str, chain: Chain
) -> TemplateFailed | None:
    """The output's refusal at the template line of its first error against `validator`
    (from `source`): the line that writes the wrong field as it stands (a site block's plain
    YAML), else the line that wrote it in `text`, the template's output."""
    errors = sorted(validator.iter_errors(located.data), key=lambda e: list(map(str, e.path)))
    if not errors:
        return None
    error = errors[0]
    path = tuple(error.absolute_path)
    said = error.message
    # Only on a refusal: quantity.py's decimal and fractions cost every render otherwise.
    from gpuconf.formats.quantity import QUANTITY_PATTERN

    if error.validator == "pattern" and error.validator_value == QUANTITY_PATTERN:
        said = f"{error.instance!r} is not a Kubernetes quantity (e.g. 500m, 2Gi, 1.5)"
    message = f"{format_path(path)}: {said} ({source})"
    at_fault, value = _at_fault(error)
    return failure_at(located, at_fault, value, message, text, chain)


def failure_at(
    located: Located,
    path: tuple[Any, ...],
    value: Any,
    message: str,
    text: str,
    chain: Chain,
    hint: str = "",
) -> TemplateFailed:
    """The output's refusal of `value` at `path`: at the line that writes it as it stands (a
    site block's plain YAML), else at the template line that wrote it in `text`."""
    sources = chain()
    for key, written_value in _entries_to_find(located.data, path, value):
        written = _line_writing(sources, key, written_value)
        if written is not None:
            return TemplateFailed(*written, message, hint)
    return refused_at(located, path, message, text, chain, hint)


def _entries_to_find(data: Any, path: tuple[Any, ...], value: Any) -> Iterator[tuple[str, Any]]:
    """The `key: value` entries whose line would show where `value` at `path` was written,
    nearest first: its own key; else, for a list item (a sysctl missing its value), the item's
    own scalar entries, then the key of the list holding it, with that list."""
    if path and isinstance(path[-1], str):
        yield path[-1], value
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not isinstance(item, (dict, list)):
                yield key, item
    depth = len(path)
    while depth and not isinstance(path[depth - 1], str):
        depth -= 1
    if depth:
        held = data
        for key in path[:depth]:
            held = held[key]
        yield path[depth - 1], held


def refused_at(
    located: Located,
    path: tuple[Any, ...],
    message: str,
    text: str,
    chain: Chain,
    hint: str = "",
) -> TemplateFailed:
    """The output's refusal at the template line that wrote `path` (or the nearest key above
    it that `text`, the template's output, has)."""
    known = path
    while known and known not in located.positions:
        known = known[:-1]
    return _refused(chain, text, located.position(known)[0], message, hint)


def _at_fault(error: Any) -> tuple[tuple[Any, ...], Any]:
    """The key path and value an error is about: for an unknown field, that field rather than
    the object that holds it."""
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        listed = error.schema.get("properties", {})
        unknown = sorted(key for key in error.instance if key not in listed)
        if unknown:
            return (*path, unknown[0]), error.instance[unknown[0]]
    return path, error.instance


def _line_writing(sources: list[TemplateSource], key: str, value: Any) -> tuple[str, int] | None:
    """The first template line (override first) that reads, as YAML, `key: value` (itself, or
    inside the flow mappings and lists it writes), or `key:` opening that value on the lines
    below it."""
    for source in sources:
        for number, line in enumerate(source.text.splitlines(), 1):
            entry = line.strip().removeprefix("- ")
            if key not in entry or "{{" in entry or "{%" in entry:
                continue
            if entry.startswith("["):
                entry = f"list: {entry}"  # the loader reads a mapping: hold the flow list in one
            try:
                data = parse_text(entry, "line").data
            except LoadFailed:
                continue
            if _writes(data, key, value) or (
                data == {key: None} and value and type(value) in (dict, list)
            ):
                return source.display, number
    return None


def _writes(data: Any, key: str, value: Any) -> bool:
    """Whether `data` (a line's YAML) holds `key: value` at any depth."""
    if isinstance(data, dict):
        if key in data and data[key] == value and type(data[key]) is type(value):
            return True
        return any(_writes(child, key, value) for child in data.values())
    if isinstance(data, list):
        return any(_writes(child, key, value) for child in data)
    return False


def checked_toml(text: str, chain: Chain) -> str:
    import tomllib  # only where a TOML file is rendered

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = int(match.group(1)) if (match := re.search(r"line (\d+)", str(error))) else 1
        raise _refused(chain, text, line, f"the output is not TOML: {error}") from None
    return text


def checked_json(text: str, chain: Chain) -> str:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise _refused(chain, text, error.lineno, f"the output is not JSON: {error.msg}") from None
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@cache
def _crd_files() -> dict[tuple[str, str], Path]:
    found = {}
    for path in CRDS.iterdir():  # not glob: its pattern machinery costs more than the listing
        if path.suffix == ".json":
            group, _, kind = path.stem.partition("_")
            found[(group, kind)] = path
    return found


@cache
def crd_validator(api_version: str, kind: str) -> Any:
    """The JSON Schema validator for a CRD kind gpuconf vendors (crds/), else None."""
    group = api_version.partition("/")[0]
    path = _crd_files().get((group, kind.lower()))
    if path is None:
        return None
    crd = json.loads(path.read_text(encoding="utf-8"))
    if f"{crd['group']}/{crd['version']}" != api_version or crd["kind"] != kind:
        return None
    import jsonschema  # only where such a kind is rendered

    return jsonschema.Draft7Validator(strict(crd["schema"]))


@cache
def patch_validator(schema: str, at: tuple[str, ...] = ()) -> tuple[Any, str]:
    """The JSON Schema validator for a merge patch of the object crds/<schema>.json defines,
    standing at `at` in it, and where that schema comes from, as diagnostics say it."""
    crd = json.loads((CRDS / f"{schema}.json").read_text(encoding="utf-8"))
    found = crd["schema"]
    for key in at:
        found = found["properties"][key]
    import jsonschema  # only where such a patch is rendered

    where = f" at {format_path(at)}" if at else ""
    source = f"the {crd['kind']} CRD's schema in crds/{schema}.json, as a merge patch{where}"
    return jsonschema.Draft7Validator(strict(found, patch=True)), source
