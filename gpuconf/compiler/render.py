"""Render: artifacts become bytes. Same artifacts, same bytes."""

from __future__ import annotations

import json
from collections.abc import Iterable

from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.formats.yaml_writer import dump

RenderedTree = dict[str, bytes]


def render_artifact(artifact: Artifact) -> bytes:
    if artifact.format == "yaml":
        text = dump(artifact.content)
    elif artifact.format == "json":
        text = json.dumps(artifact.content, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    else:
        text = str(artifact.content)
        text = text if text.endswith("\n") else text + "\n"
    return text.replace("\r\n", "\n").encode("utf-8")


def render(artifacts: Iterable[Artifact]) -> RenderedTree:
    tree: RenderedTree = {}
    for artifact in artifacts:
        if artifact.path in tree:
            raise ValueError(f"two artifacts share the path {artifact.path}")
        tree[artifact.path] = render_artifact(artifact)
    return dict(sorted(tree.items()))
