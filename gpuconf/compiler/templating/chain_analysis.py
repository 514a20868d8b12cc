"""What a template chain does with its values: the answer printed_values.py reads from the
chain's syntax trees, and compiled/index.json records for gpuconf's own chains."""

from __future__ import annotations

from typing import NamedTuple

ValuePath = tuple[str | int, ...]


class ChainAnalysis(NamedTuple):
    skeleton: bool
    """Every `| yaml` is the whole of an expression written to the output."""
    printed_only: frozenset[ValuePath]
    """Value paths used only printed whole or tested for presence (empty unless skeleton)."""


IN_PLACE = ChainAnalysis(skeleton=False, printed_only=frozenset())
