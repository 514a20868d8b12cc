"""What a template chain does with its values: the answer printed_values.py reads from the
chain's syntax trees, and compiled/index.json records for gpuconf's own chains."""

from __future__ import annotations

from typing import NamedTuple

ValuePath = tuple[str | int, ...]

DERIVABLE_FILTERS = frozenset(
    {"with_labels", "with_annotations", "with_items", "with_entries", "with_pod_entries"}
)
"""Filters (filters.py) whose result depends on their arguments alone: where one of them is
given a value the skeleton stands in for, and its result is printed whole, the skeleton holds
a token worked out again, from each artifact's own values, when the skeleton is filled."""

KEY_BLIND_FILTERS = frozenset({"with_entries", "with_pod_entries"})
"""Filters that read their mapping's keys, never its values: they copy each value as it is."""


class ChainAnalysis(NamedTuple):
    skeleton: bool
    """Every `| yaml` is the whole of an expression written to the output."""
    printed_only: frozenset[ValuePath]
    """Value paths used only printed whole (alone, or through DERIVABLE_FILTERS) or tested for
    presence (empty unless skeleton)."""
    keys_only: frozenset[ValuePath] = frozenset()
    """Mappings only iterated as `for key, value in mapping | items` (or `| dictsort`, or
    through KEY_BLIND_FILTERS first), each value only printed whole: what they hold shapes
    the output by its keys alone."""


IN_PLACE = ChainAnalysis(skeleton=False, printed_only=frozenset())
