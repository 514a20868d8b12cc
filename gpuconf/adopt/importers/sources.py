"""Reading the files an importer is given (their text, as the command read it): located YAML,
so each thing not imported is reported where it stands in its file; Kubernetes manifests may
hold several documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from gpuconf.diagnostics import Diagnostic, InvalidInput, KeyPath, Severity
from gpuconf.formats.located_yaml import LoadFailed, Located, parse_text


class Source(NamedTuple):
    """One object of an input file (a YAML document, or an item of a `kind: List` document),
    and where its values are."""

    located: Located
    prefix: KeyPath = ()
    """Where the object stands in its document: () or ("items", i)."""

    @property
    def data(self) -> Any:
        return self.located.value_at(self.prefix) if self.prefix else self.located.data

    def at(self, *path: str | int) -> Any:
        return self.located.value_at((*self.prefix, *path))

    def not_imported(self, path: KeyPath, message: str, hint: str = "") -> Diagnostic:
        where = (*self.prefix, *path)
        return self.located.diagnostic(where, message, hint, severity=Severity.WARNING)

    def wrong(self, path: KeyPath, message: str, hint: str = "") -> InvalidInput:
        return InvalidInput([self.located.diagnostic((*self.prefix, *path), message, hint)])


def _objects(document: Source) -> Iterator[Source]:
    """A document's objects: `kubectl get … -o yaml` of several objects writes one
    `kind: List` whose `items` are the objects."""
    items = document.at("items")
    if document.at("kind") == "List" and isinstance(items, list):
        for index in range(len(items)):
            yield document._replace(prefix=("items", index))
    else:
        yield document


def documents(text: str, shown: str) -> Iterator[Source]:
    """Each object of a file's text: its `---`-separated documents, and the items of a
    `kind: List`."""
    if not text.lstrip().startswith("---") and "\n---" not in text:
        yield from _objects(one(text, shown))
        return
    for first_line, chunk in _documents(text):
        if any(line.strip() and not line.startswith("#") for line in chunk.splitlines()):
            # Empty lines before the chunk keep its positions those of the file.
            yield from _objects(one("\n" * first_line + chunk, shown))


def one(text: str, shown: str) -> Source:
    """A file's text holding one document."""
    try:
        return Source(parse_text(text, shown))
    except LoadFailed as failure:
        raise InvalidInput([failure.diagnostic]) from None


def embedded(text: str, owner: Source, key: KeyPath) -> Source:
    """A YAML file held as a string inside another (a ConfigMap's data, a chart value); its
    problems are reported at the key holding it."""
    try:
        return Source(parse_text(text, owner.located.file))
    except LoadFailed as failure:
        raise owner.wrong(
            key, f"the embedded file does not load: {failure.diagnostic.message}"
        ) from None


def _documents(text: str) -> list[tuple[int, str]]:
    """Each document's text and the index of its first line."""
    chunks: list[tuple[int, str]] = []
    start, current = 0, list[str]()
    for number, line in enumerate(text.split("\n")):
        if line.rstrip() == "---" or line.startswith("--- "):
            chunks.append((start, "\n".join(current)))
            start, current = number + 1, []
        else:
            current.append(line)
    chunks.append((start, "\n".join(current)))
    return chunks
