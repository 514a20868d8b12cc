"""The "did you mean" part of a hint: the known name closest to what the user wrote."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(
    wanted: str, options: Iterable[str], *, otherwise: str = "", cutoff: float = 0.6
) -> str:
    """ "did you mean 'x'?" for the closest option; `otherwise` when none is close."""
    close = difflib.get_close_matches(wanted, list(options), n=1, cutoff=cutoff)
    return f"did you mean {close[0]!r}?" if close else otherwise
