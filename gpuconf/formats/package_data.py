"""Where the files that ship with gpuconf live, in a wheel and in a source checkout alike."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def shipped_dir(name: str) -> Path:
    """``schemas`` or ``templates``: inside the installed package, else at the checkout's top."""
    inside = _PACKAGE / name
    if inside.is_dir():
        return inside
    return _PACKAGE.parent / name
