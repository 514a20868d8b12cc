"""The cluster file an importer writes: gpuconf's own layout (the style of clusters/), small
leaf mappings on one line, a header saying where it came from and what was left out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gpuconf.api.version import CLUSTER_API_VERSION
from gpuconf.formats import round_trip_yaml

# Written `{model: L4, count: 2}`, as the examples write them.
ONE_LINE = frozenset({"gpus", "select", "sharing", "nodeSelector", "classes", "kubernetes"})
SCHEMA_COMMENT = "yaml-language-server: $schema=../schemas/cluster.schema.json"


def cluster_document(
    name: str, spec: Mapping[str, Any], origin: str, left_out: Sequence[str]
) -> CommentedMap:
    document: CommentedMap = _styled(
        {
            "apiVersion": CLUSTER_API_VERSION,
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": spec,
        },
        block=True,
    )
    header = [SCHEMA_COMMENT, f"Imported by `{origin}`."]
    if left_out:
        header.append("Not imported:")
        header += [f"  - {line}" for line in left_out]
    document.yaml_set_start_comment("\n".join(header))
    return document


def _styled(value: Any, block: bool) -> Any:
    if isinstance(value, Mapping):
        items = {k: _styled(v, block and k not in ONE_LINE) for k, v in value.items()}
        return (
            round_trip_yaml.block_mapping(items) if block else round_trip_yaml.flow_mapping(items)
        )
    if isinstance(value, list | tuple):
        out: CommentedSeq = round_trip_yaml.sequence(
            [_styled(v, block) for v in value], flow=not block or not value
        )
        return out
    return value
