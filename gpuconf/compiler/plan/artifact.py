"""An artifact: one output file as the plan decided it, a template and the values it shapes."""

from __future__ import annotations

from typing import Any, NamedTuple

from gpuconf.diagnostics import KeyPath


class Artifact(NamedTuple):
    path: str
    """Relative POSIX path inside the cluster's output folder."""
    template: str
    """The template (templates/<name>) that shapes it; its suffix says the format."""
    values: dict[str, Any]
    """What the template may print: plain data (strings, numbers, lists, mappings)."""
    kind: str = ""
    """A manifest's kind, which its output must be; empty for other files."""
    in_kustomization: bool = False
    """A Kubernetes manifest listed in kustomization.yaml."""
    source: KeyPath = ()
    """Where in the cluster file its values come from, for diagnostics."""


def manifest(
    path: str, template: str, kind: str, values: dict[str, Any], source: KeyPath = ()
) -> Artifact:
    return Artifact(path, template, values, kind, in_kustomization=True, source=source)
