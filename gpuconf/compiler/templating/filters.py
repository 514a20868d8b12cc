"""The encoding filters: the only way a value reaches a template's output.

Each returns `Encoded` text; the environment's finalize hook refuses anything else, so a
template cannot print a value raw. YAML is a superset of JSON, and a JSON value written with
`ensure_ascii` is one flow node on one line: no key, document, anchor, comment or line break
(U+2028 included) can come out of a value, whatever it holds.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpuconf.compiler.plan.annotation_readers import ANNOTATION_READERS, FLUX_READERS
from gpuconf.compiler.plan.pod_security import POD_SECURITY_READERS
from gpuconf.compiler.resolve.metadata_guard import Guard, refusals
from gpuconf.compiler.resolve.object_labels import OWNER_LABELS, POD_SELECTOR_LABELS, SELECTED
from gpuconf.formats.located_yaml import LoadFailed, parse_text


class Encoded(str):
    """Text an encoding filter produced: the only kind of value a template may print.

    Joined to any other string (`~`, `+`) it becomes a plain string again, which is refused."""

    __slots__ = ()


def yaml_value(value: Any) -> Encoded:
    """Any plain value as one JSON (so YAML) flow node."""
    return Encoded(json.dumps(value, ensure_ascii=True, allow_nan=False, sort_keys=True))


def toml_scalar(value: Any) -> Encoded:
    """A TOML value: a basic string with every control character escaped, a number, a list."""
    from gpuconf.formats.toml_writer import toml_value  # tomllib, only for a TOML template

    return Encoded(toml_value(value))


_MARKDOWN_SPECIAL = re.compile(r"[\\`*_{}\[\]<>|#]")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x85\x0b\x0c]+")


def markdown_text(value: Any) -> Encoded:
    """Text inside a Markdown line or table cell: on one line, its markup characters escaped."""
    text = _LINE_BREAKS.sub(" ", str(value))
    return Encoded(_MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), text))


def markdown_code(value: Any) -> Encoded:
    """Text shown as inline code: on one line, fenced with enough backticks to hold it."""
    text = _LINE_BREAKS.sub(" ", str(value))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Encoded(f"{fence}{pad}{text}{pad}{fence}")


def text_line(value: Any) -> Encoded:
    """One line of a fenced code block: no line break, and no fence of its own to end the block."""
    text = _LINE_BREAKS.sub(" ", str(value))
    return Encoded(" " + text if text.lstrip().startswith(("```", "~~~")) else text)


class BlockRefused(ValueError):
    """A site's block held text that is not the YAML its place takes."""

    def __init__(self, message: str, line: str, hint: str = "") -> None:
        super().__init__(message)
        self.line = line
        """The block's line that was refused, to find it in the template."""
        self.hint = hint


def _block_data(text: str, key: str) -> Any:
    """A block's YAML text as data, read by gpuconf's loader under `key`."""
    body = textwrap.indent(textwrap.dedent(str(text)).strip("\n"), "  ")
    try:
        return parse_text(f"{key}:\n{body}\n", "block").data[key]
    except LoadFailed as failure:
        lines = body.splitlines()
        # libyaml may stop past the end of an unclosed value: the block's last line then.
        at = min(max(failure.diagnostic.line - 2, 0), len(lines) - 1)
        raise BlockRefused(
            f"the block's YAML: {failure.diagnostic.message}", lines[at] if lines else ""
        ) from None


def with_entries(
    mapping: Mapping[str, Any], block: str, apart: Mapping[str, str] | None = None
) -> Mapping[str, Any]:
    """`mapping` with the entries a site's block (YAML text) sets, replacing those it names.
    `apart`: keys the template lays out beside `mapping` in the same object, each with the hint
    saying which block changes it; the block may not set them (the object would hold them twice)."""
    if not block.strip():
        return mapping
    extra = _block_data(block, "entries")
    if not isinstance(extra, dict):
        raise BlockRefused("the block must hold YAML entries (key: value)", block.strip())
    for key, how in (apart or {}).items():
        if key in extra:
            raise BlockRefused(
                f"the block sets {key}, which gpuconf lays out apart",
                _line_of(block, key),
                f"{how} (docs/templates.md)",
            )
    return {**mapping, **extra}


def with_pod_entries(
    pod: Mapping[str, Any], block: str, container_groups: Sequence[Sequence[Any]]
) -> Mapping[str, Any]:
    """`pod` (a pod spec's entries) with those a site's pod_spec block sets. The template lays
    out the tolerations and each container field (containers, initContainers: the fields of
    `container_groups`) apart, for their own blocks to change."""
    if not block.strip():
        return pod
    apart = {"tolerations": "add tolerations in the extra_tolerations block"}
    for field, _ in container_groups:
        apart[field] = (
            f"change {field} in the container_image, container_env and container_resources blocks"
        )
    return with_entries(pod, block, apart)


def _line_of(block: str, key: str) -> str:
    """The block's line that sets `key` (its key, not a longer one or a value that holds it)."""
    for line in block.splitlines():
        written = line.strip().removeprefix("- ").partition(":")[0].strip().strip("'\"")
        if written == key:
            return line
    return block.strip()


def _with_guarded(
    kind: str, written: Mapping[str, Any], block: str, guards: Mapping[str, Guard]
) -> Mapping[str, Any]:
    """`written` (a `kind`, label or annotation, mapping gpuconf wrote) with the entries a site's
    block sets, refusing the first that changes a key gpuconf writes, or sets one read beside it
    or on any object, in a way its reader does not take (metadata_guard.py)."""
    if not block.strip():
        return written
    added = with_entries({}, block)
    for refusal in refusals(written, added, guards):
        raise BlockRefused(
            f"the block {refusal.message(kind)}",
            _line_of(block, refusal.key),
            refusal.hint(kind),
        )
    return {**written, **added}


def label_guards(selector: Mapping[str, Any] | None = None) -> dict[str, Guard]:
    """The labels a user may not change as they like on an object of gpuconf's: those marking
    it as gpuconf's, the Pod Security labels, Flux's reconcile and ssa (read from labels as from
    annotations) and (with `selector`, a DaemonSet's matchLabels) the pod labels its selector
    matches (object_labels.py, plan/pod_security.py, plan/annotation_readers.py)."""
    return {
        **OWNER_LABELS,
        **POD_SECURITY_READERS,
        **FLUX_READERS,
        **{key: POD_SELECTOR_LABELS.get(key, SELECTED) for key in selector or {}},
    }


def with_labels(
    labels: Mapping[str, Any], block: str, selector: Mapping[str, Any] | None = None
) -> Mapping[str, Any]:
    """`labels` with the entries a site's block sets. A block may not change what `label_guards`
    holds in a way its reader does not take."""
    if not block.strip():
        return labels  # before label_guards builds its table: the shipped blocks are empty
    return _with_guarded("label", labels, block, label_guards(selector))


def with_annotations(annotations: Mapping[str, Any], block: str) -> Mapping[str, Any]:
    """`annotations` with the entries a site's block sets. A block may not change one gpuconf
    writes in a way the program reading it does not take (plan/annotation_readers.py)."""
    return _with_guarded("annotation", annotations, block, ANNOTATION_READERS)


def with_items(sequence: Sequence[Any], block: str) -> Sequence[Any]:
    """`sequence` with the items a site's block (a YAML list) appends."""
    if not block.strip():
        return sequence
    extra = _block_data(block, "items")
    if not isinstance(extra, list):
        raise BlockRefused("the block must hold a YAML list (- item)", block.strip())
    return [*sequence, *extra]


FILTERS: dict[str, Callable[..., Any]] = {
    "yaml": yaml_value,
    "toml": toml_scalar,
    "md": markdown_text,
    "code": markdown_code,
    "line": text_line,
    "with_entries": with_entries,
    "with_pod_entries": with_pod_entries,
    "with_labels": with_labels,
    "with_annotations": with_annotations,
    "with_items": with_items,
}
