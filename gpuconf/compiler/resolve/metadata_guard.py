"""The one rule for metadata a user adds to what gpuconf writes (a site template's label and
annotation blocks, monitoring.extraLabels): add keys, and set any key nothing reads; a key gpuconf
writes that another program reads changes only where that program still gets what gpuconf's
value tells it. Which keys are read, by what, and what a change may be: object_labels.py for
labels, plan/annotation_readers.py for annotations."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple


def unchanged(written: str, value: Any) -> str | None:
    """Nothing but gpuconf's own value keeps what the reader reads from it."""
    return None if value == written else ""


class Guard(NamedTuple):
    """How a key gpuconf writes is read, and which values a user may set it to."""

    reader: str
    """What reads the key and why it depends on gpuconf's value, naming the source read."""
    breaks: Callable[[str, Any], str | None] = unchanged
    """Given gpuconf's value and a user's: None where the reader still gets what gpuconf's value
    tells it, else why not ("" where "it changes the value" says it all)."""
    instead: str = ""
    """What a user may do instead; "" for adding keys of their own."""


class Refusal(NamedTuple):
    key: str
    written: str
    value: Any
    why: str
    guard: Guard

    def message(self, kind: str) -> str:
        """`kind` is label or annotation."""
        text = f"changes the {kind} {self.key}: {self.written!r} gpuconf writes to {self.value!r}"
        return f"{text}: {self.why}" if self.why else text

    def hint(self, kind: str) -> str:
        return f"{self.guard.reader}; {self.guard.instead or f'add {kind}s of your own instead'}"


def refusals(
    written: Mapping[str, Any], added: Mapping[str, Any], guards: Mapping[str, Guard]
) -> Iterator[Refusal]:
    """Each of `added` that changes a key of `written` (what gpuconf wrote on one object) that
    `guards` holds, in a way its reader does not take."""
    for key, value in added.items():
        guard = guards.get(key)
        if guard is None or key not in written:
            continue
        why = guard.breaks(written[key], value)
        if why is not None:
            yield Refusal(key, written[key], value, why, guard)
