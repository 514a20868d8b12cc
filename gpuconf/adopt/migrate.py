"""`gpuconf migrate`: rewrite cluster files from older forms to the current one, in place, through
the round-trip writer (comments and everything untouched kept).

Each migration names the apiVersion it applies to and the one it leaves. gpuconf.dev/v1alpha1 is
the only apiVersion so far, so the one migration shipped rewrites a spelling that version accepts
in two forms into the form that grows: a pool's MIG `sharing` written as one mapping becomes a
list of one layout, the form that takes layouts for further GPU indices."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gpuconf.adopt.cluster_file import ClusterFile, Edited, edited
from gpuconf.api.version import API_VERSION
from gpuconf.formats import round_trip_yaml


class Migration(NamedTuple):
    name: str
    from_version: str
    to_version: str
    apply: Callable[[CommentedMap], list[str]]
    """Rewrites the document in place; returns one line per change (what moved where)."""


def _pool_mig_sharing_as_list(document: CommentedMap) -> list[str]:
    changes: list[str] = []
    pools = (document.get("spec") or {}).get("nodePools")
    for index, pool in enumerate(pools if isinstance(pools, CommentedSeq) else []):
        sharing = pool.get("sharing") if isinstance(pool, CommentedMap) else None
        if isinstance(sharing, CommentedMap):
            # The mapping moves whole, with its comments, into a block list of one.
            pool["sharing"] = round_trip_yaml.sequence([sharing], flow=False)
            changes.append(f"spec.nodePools[{index}].sharing: one MIG layout → a list of one")
    return changes


MIGRATIONS: Sequence[Migration] = (
    Migration("pool-mig-sharing-as-list", API_VERSION, API_VERSION, _pool_mig_sharing_as_list),
)


def migrated(file: ClusterFile) -> tuple[Edited, list[str]]:
    """The file after every migration that applies, in order; and what each changed."""
    changes: list[str] = []
    for migration in MIGRATIONS:
        if file.document.get("apiVersion") != migration.from_version:
            continue
        done = migration.apply(file.document)
        if migration.to_version != migration.from_version:
            file.document["apiVersion"] = migration.to_version
        changes += [f"{migration.name}: {change}" for change in done]
    return edited(file), changes
