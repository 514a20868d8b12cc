"""An artifact: one output file, as data, before it becomes bytes."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

Format = Literal["yaml", "json", "text"]


class Artifact(NamedTuple):
    path: str
    """Relative POSIX path inside the cluster's output folder."""
    content: Any
    format: Format = "yaml"
    in_kustomization: bool = False
    """A Kubernetes manifest listed in kustomization.yaml."""


def manifest(path: str, obj: dict[str, Any]) -> Artifact:
    return Artifact(path, obj, "yaml", in_kustomization=True)
