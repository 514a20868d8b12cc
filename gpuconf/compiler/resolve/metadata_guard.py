"""The one rule for metadata a user adds to what gpuconf writes (a site template's label and
annotation blocks, monitoring.extraLabels, a site's whole template): add keys, and set any key
nothing reads; a key gpuconf writes that another program reads changes only where that program
still gets what gpuconf's value tells it; a key gpuconf does not write but another program reads
beside gpuconf's, or on any object, takes only the values that keep gpuconf's objects working.
Which keys are read, by what, and what a change may be: object_labels.py and
plan/pod_security.py for labels, plan/annotation_readers.py for annotations."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from gpuconf.api.shape_errors import as_yaml_spells

EVERY_OBJECT = ""
"""`Guard.read_with` of a key read on any object, whatever gpuconf writes on it."""


def unchanged(written: str, value: Any) -> str | None:
    """Nothing but gpuconf's own value keeps what the reader reads from it."""
    return None if value == written else ""


class Guard(NamedTuple):
    """How a key gpuconf writes (or one read beside those) is read, and which values a user may
    set it to."""

    reader: str
    """What reads the key and why it depends on gpuconf's value, naming the source read."""
    breaks: Callable[[str, Any], str | None] = unchanged
    """Given gpuconf's value and a user's: None where the reader still gets what gpuconf's value
    tells it, else why not ("" where "it changes the value" says it all)."""
    instead: str = ""
    """What a user may do instead; "" for adding keys of their own."""
    read_with: str | None = None
    """For a key gpuconf does not write itself: the key it writes that this one is read with
    (`breaks` then gets that key's value), or EVERY_OBJECT where it is read on any object
    (`breaks` gets ""). None: guarded only where gpuconf writes the key."""
    may_drop: bool = False
    """Whether a whole template may leave out the key gpuconf writes: without it the reader
    falls back to a default that breaks nothing of gpuconf's."""


class Refusal(NamedTuple):
    key: str
    written: str | None
    """gpuconf's value of the key; None where gpuconf does not write it."""
    value: Any
    why: str
    guard: Guard
    dropped: bool = False
    """The key gpuconf writes is not there at all (a whole template of a site's left it out)."""

    def message(self, kind: str) -> str:
        """`kind` is label or annotation."""
        if self.dropped:
            text = f"drops the {kind} {self.key}: {as_yaml_spells(self.written)} gpuconf writes"
        elif self.written is None:
            text = f"sets the {kind} {self.key} to {as_yaml_spells(self.value)}"
        else:
            text = f"changes the {kind} {self.key}: {as_yaml_spells(self.written)} gpuconf writes to {as_yaml_spells(self.value)}"
        return f"{text}: {self.why}" if self.why else text

    def hint(self, kind: str) -> str:
        if self.dropped:
            return f"{self.guard.reader}; write gpuconf's {kind}s (in the template's values) too"
        return f"{self.guard.reader}; {self.guard.instead or f'add {kind}s of your own instead'}"


def refusals(
    written: Mapping[str, Any], added: Mapping[str, Any], guards: Mapping[str, Guard]
) -> Iterator[Refusal]:
    """Each of `added` that changes a key of `written` (what gpuconf wrote on one object) that
    `guards` holds in a way its reader does not take, or sets a key gpuconf does not write
    that `guards` holds for such an object to a value its reader does not take."""
    for key, value in added.items():
        guard = guards.get(key)
        if guard is None:
            continue
        read_with = key if key in written else guard.read_with
        if read_with is None or (read_with and read_with not in written):
            continue
        own = written[read_with] if read_with else ""
        why = guard.breaks(own, value)
        if why is not None:
            yield Refusal(key, written.get(key), value, why, guard)


def kept_refusals(
    written: Mapping[str, Any], found: Mapping[str, Any], guards: Mapping[str, Guard]
) -> Iterator[Refusal]:
    """`refusals` of a whole object's keys (`found`, what a template wrote where gpuconf's plan
    asked for `written`), then each key `guards` holds that `written` has and `found` lacks,
    unless its guard may drop it."""
    yield from refusals(written, found, guards)
    for key, own in written.items():
        if key in guards and key not in found and not guards[key].may_drop:
            yield Refusal(key, own, None, "", guards[key], dropped=True)


def keeps(
    written: Mapping[str, Any], found: Mapping[str, Any], guards: Mapping[str, Guard]
) -> bool:
    """Whether `found` keeps what each reader reads from `written` (no `kept_refusals`)."""
    return not any(kept_refusals(written, found, guards))
