"""Where gpuconf's own templates lie: gpuconf/templates in a wheel, templates/ in a checkout."""

from __future__ import annotations

from pathlib import Path

SHIPPED_PREFIX = "gpuconf"
"""An override extends gpuconf's template of the same name as `gpuconf/<name>`."""
SUFFIX = ".j2"


def shipped_folder() -> Path:
    package = Path(__file__).resolve().parents[2]
    inside = package / "templates"
    return inside if inside.is_dir() else package.parent / "templates"


def shipped_names() -> list[str]:
    """Every shipped template, the shared layouts (`_manifest.j2`, …) included."""
    folder = shipped_folder()
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(SUFFIX) and p.is_file())
