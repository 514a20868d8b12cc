"""What a pool's ResourceFlavor holds: its nodes' labels, the taints its tolerations say those
nodes carry, and the tolerations themselves."""

from __future__ import annotations

from gpuconf.api.cluster import NodePool
from gpuconf.api.cluster.pool import Toleration


def taint(toleration: Toleration) -> dict[str, str] | None:
    """The taint a pool's toleration says its nodes carry; None where it names no single taint
    (no key, or no effect: a taint has both)."""
    if toleration.key is None or toleration.effect is None:
        return None
    found = {"key": toleration.key, "effect": toleration.effect}
    if toleration.operator == "Equal" and toleration.value:
        found["value"] = toleration.value
    return found


def node_taints(pool: NodePool) -> list[tuple[int, dict[str, str]]]:
    """The flavor's nodeTaints, each with the index of the toleration it comes from."""
    return [(i, t) for i, t in enumerate(map(taint, pool.tolerations)) if t is not None]
