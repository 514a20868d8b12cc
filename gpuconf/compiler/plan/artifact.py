"""An artifact: one output file as the plan decided it, a template and the values it shapes."""

from __future__ import annotations

from typing import Any, NamedTuple

from gpuconf.diagnostics import KeyPath


class PatchOf(NamedTuple):
    """A YAML file that is no object but a merge patch of one (or Helm values a chart copies
    into an object unchanged): checked against that object's vendored CRD schema, unknown
    fields refused, none required (the object has them)."""

    schema: str
    """The schema's file under compiler/templating/crds/, without `.json`."""
    at: tuple[str, ...] = ()
    """Where the file's data stands in the object: ("spec",) for values copied into its spec."""


class Artifact(NamedTuple):
    path: str
    """Relative POSIX path inside the cluster's output folder."""
    template: str
    """The template (templates/<name>) that shapes it; its suffix says the format."""
    values: dict[str, Any]
    """What the template may print: plain data (strings, numbers, booleans, None, lists,
    tuples, mappings with string keys), which the skeleton memo tells apart by repr."""
    kind: str = ""
    """A manifest's kind, which its output must be; empty for other files."""
    in_kustomization: bool = False
    """A Kubernetes manifest listed in kustomization.yaml."""
    source: KeyPath = ()
    """Where in the cluster file its values come from, for diagnostics."""
    patch_of: PatchOf | None = None
    """For a YAML file that is not a manifest: the object it patches, whose schema it passes."""
    outside_input: bool = False
    """Its values carry input no gpuconf schema checked (`gpuconf gitops`'s command-line
    values): its output is checked against its kind's schema at every render
    (templating/output_schemas.py), not only where a site's template shapes it."""


def manifest(
    path: str, template: str, kind: str, values: dict[str, Any], source: KeyPath = ()
) -> Artifact:
    return Artifact(path, template, values, kind, in_kustomization=True, source=source)
