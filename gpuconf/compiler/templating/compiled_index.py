"""compiled/index.json: which of gpuconf's templates have code compiled ahead of time, from what
text, and what each chain does with its values (`python -m
gpuconf.compiler.templating.compile_shipped` writes both)."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.machinery import SourceFileLoader
from pathlib import Path
from typing import Any

from gpuconf.compiler.templating.chain_analysis import ChainAnalysis
from gpuconf.formats.sha256 import sha256

COMPILED = Path(__file__).parent / "compiled"
"""gpuconf's templates compiled ahead of time to Python, with compiled/index.json saying from
what."""


def source_digest(source: str) -> str:
    return sha256(source.encode("utf-8")).hexdigest()


class CompiledIndex:
    """compiled/index.json: for each shipped template, its module and the digest of the text it
    was compiled from, its extends chain and what that chain does with its values."""

    def __init__(self, shipped: Path) -> None:
        self.shipped = shipped
        self._index: dict[str, Any] | None = None
        self._holds: dict[str, bool] = {}

    @property
    def index(self) -> dict[str, Any]:
        if self._index is None:
            try:
                self._index = json.loads((COMPILED / "index.json").read_text(encoding="utf-8"))
            except FileNotFoundError:
                self._index = {}
        return self._index

    def entry(self, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.index.get("templates", {}).get(name)
        return found

    def holds(self, name: str, source: str | None = None) -> bool:
        """Whether `name`'s module was compiled from `source`, or else from the text templates/
        holds (read once)."""
        entry = self.entry(name)
        if entry is None:
            return False
        if source is not None:
            return bool(entry["sha256"] == source_digest(source))
        found = self._holds.get(name)
        if found is None:
            try:
                text = (self.shipped / name).read_text(encoding="utf-8")
            except OSError:
                return False
            found = self._holds[name] = entry["sha256"] == source_digest(text)
        return found

    def module(self, name: str) -> Path:
        return COMPILED / str(self.index["templates"][name]["module"])

    def code(self, name: str) -> Any:
        """The compiled module's code object (Python's __pycache__ keeps its bytecode)."""
        path = self.module(name)
        return SourceFileLoader(path.stem, str(path)).get_code(path.stem)

    def analysis(self, name: str, usable: Callable[[str], bool]) -> ChainAnalysis | None:
        """The recorded analysis of `name`'s chain, where every template of it is `usable`."""
        entry = self.entry(name)
        if entry is None or "chain" not in entry:
            return None
        if not all(usable(member) for member in entry["chain"]):
            return None
        return ChainAnalysis(
            skeleton=entry["skeleton"],
            printed_only=frozenset(tuple(path) for path in entry["printedOnly"]),
            keys_only=frozenset(tuple(path) for path in entry["keysOnly"]),
        )
