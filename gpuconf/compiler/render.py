"""Render: each artifact's template shapes its values; the output is parsed back, checked and
written in canonical form. Same artifacts, same templates, same bytes."""

from __future__ import annotations

from collections.abc import Iterable

from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.templating.check import (
    NotASkeleton,
    checked_json,
    checked_toml,
    checked_yaml,
    filled_skeleton,
)
from gpuconf.compiler.templating.engine import TemplateFailed, Templates, TemplateSource
from gpuconf.compiler.templating.output_schemas import OutputSchemas

RenderedTree = dict[str, bytes]


class RenderFailed(Exception):
    """A template failed or its output was refused while rendering `artifact`."""

    def __init__(self, artifact: Artifact, failure: TemplateFailed) -> None:
        super().__init__(str(failure))
        self.artifact = artifact
        self.failure = failure


def render_artifact(artifact: Artifact, templates: Templates) -> bytes:
    name = artifact.template

    def chain() -> list[TemplateSource]:
        return templates.chain(name)

    # gpuconf's own templates write metadata only through with_labels and with_annotations,
    # whose guard refuses what a site's block may not change: the output's metadata is
    # checked again only where a site's file shapes the template.
    planned = artifact.values if templates.site_shaped(name) else None

    if name.endswith(".yaml.j2") and templates.analysis(name).skeleton:
        # The template's text is parsed with a token for each value (values, JSON-encoded,
        # would each parse to itself), so parsing costs what the template writes, not what
        # the values hold; a token anywhere else, and the values are rendered in place.
        skeleton, values = templates.render_skeleton(name, artifact.values)
        try:
            text = filled_skeleton(
                skeleton,
                templates.token_prefix,
                values,
                artifact.kind,
                chain,
                templates.skeletons,
                artifact.patch_of,
                planned,
            )
            if templates.token_prefix in text:
                # A token inside a value: text captured from a `| yaml`, which the chain's
                # analysis sends to the in-place path before it gets here; a guard, should a
                # way to capture it escape that reading.
                raise NotASkeleton
        except (NotASkeleton, TypeError):  # TypeError: a value the writer cannot write
            text = checked_yaml(
                templates.render(name, artifact.values),
                artifact.kind,
                chain,
                artifact.patch_of,
                planned,
            )
        return text.encode("utf-8")
    text = templates.render(name, artifact.values)
    if name.endswith(".yaml.j2"):
        return checked_yaml(text, artifact.kind, chain, artifact.patch_of, planned).encode("utf-8")
    if name.endswith(".json.j2"):
        text = checked_json(text, chain)
    elif name.endswith(".toml.j2"):
        text = checked_toml(text, chain)
    elif not text.endswith("\n"):
        text += "\n"
    return text.replace("\r\n", "\n").encode("utf-8")


def render(artifacts: Iterable[Artifact], templates: Templates) -> RenderedTree:
    tree: RenderedTree = {}
    schemas = OutputSchemas(templates)
    for artifact in artifacts:
        if artifact.path in tree:
            raise ValueError(f"two artifacts share the path {artifact.path}")
        try:
            tree[artifact.path] = render_artifact(artifact, templates)
            schemas.check(artifact, tree[artifact.path])
        except TemplateFailed as failure:
            raise RenderFailed(artifact, failure) from None
    return dict(sorted(tree.items()))
