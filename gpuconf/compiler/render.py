"""Render: each artifact's template shapes its values; the output is parsed back, checked and
written in canonical form. Same artifacts, same templates, same bytes."""

from __future__ import annotations

from collections.abc import Iterable

from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.templating.check import checked_json, checked_toml, checked_yaml
from gpuconf.compiler.templating.engine import TemplateFailed, Templates, TemplateSource

RenderedTree = dict[str, bytes]


class RenderFailed(Exception):
    """A template failed or its output was refused while rendering `artifact`."""

    def __init__(self, artifact: Artifact, failure: TemplateFailed) -> None:
        super().__init__(str(failure))
        self.artifact = artifact
        self.failure = failure


def render_artifact(artifact: Artifact, templates: Templates) -> bytes:
    name = artifact.template
    text = templates.render(name, artifact.values)

    def chain() -> list[TemplateSource]:
        return templates.chain(name)

    if name.endswith(".yaml.j2"):
        text = checked_yaml(text, artifact.kind, chain)
    elif name.endswith(".json.j2"):
        text = checked_json(text, chain)
    elif name.endswith(".toml.j2"):
        text = checked_toml(text, chain)
    elif not text.endswith("\n"):
        text += "\n"
    return text.replace("\r\n", "\n").encode("utf-8")


def render(artifacts: Iterable[Artifact], templates: Templates) -> RenderedTree:
    tree: RenderedTree = {}
    for artifact in artifacts:
        if artifact.path in tree:
            raise ValueError(f"two artifacts share the path {artifact.path}")
        try:
            tree[artifact.path] = render_artifact(artifact, templates)
        except TemplateFailed as failure:
            raise RenderFailed(artifact, failure) from None
    return dict(sorted(tree.items()))
