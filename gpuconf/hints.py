"""How messages name things: the closest known name ("did you mean"), runs of indices."""

from __future__ import annotations

from collections.abc import Iterable


def closest(wanted: str, options: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    import difflib  # only when a message needs a suggestion: a valid file never does

    return difflib.get_close_matches(wanted, list(options), n=n, cutoff=cutoff)


def suggestion(names: Iterable[str], otherwise: str = "") -> str:
    """ "did you mean 'a' or 'b'?"; `otherwise` when there is nothing to suggest."""
    listed = " or ".join(repr(n) for n in names)
    return f"did you mean {listed}?" if listed else otherwise


def did_you_mean(
    wanted: str, options: Iterable[str], *, otherwise: str = "", cutoff: float = 0.6
) -> str:
    """ "did you mean 'x'?" for the closest option; `otherwise` when none is close."""
    return suggestion(closest(wanted, options, cutoff=cutoff), otherwise)


def index_ranges(indices: Iterable[int]) -> str:
    """[0, 1, 2, 3, 6] -> "0–3, 6"; runs of three or more are spans."""
    runs: list[list[int]] = []
    for index in sorted(set(indices)):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
