"""Pieces every gpuconf DaemonSet's pod shares: scheduling on a pool, hardened containers."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster, NodePool
from gpuconf.api.node_facts import POOL_LABEL as POOL_LABEL
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import metadata
from gpuconf.compiler.resolve.object_labels import NAME_LABEL
from gpuconf.compiler.resolve.pool_selector import node_selector as node_selector
from gpuconf.diagnostics import KeyPath

# A device plugin holds a few sockets and device lists; these bounds leave it room for bursts.
PLUGIN_RESOURCES = {
    "requests": {"cpu": "20m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "256Mi"},
}
GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def tolerations(pool: NodePool) -> list[dict[str, Any]]:
    own = [t.as_data() for t in pool.tolerations]
    return [*own, GPU_TAINT] if GPU_TAINT not in own else own


def on_pool_nodes(pool: NodePool) -> dict[str, Any]:
    """Where each per-node pod of a pool runs: on the pool's nodes, past the GPU taint, and
    among the last pods a node under pressure evicts."""
    return {
        "priorityClassName": "system-node-critical",
        "nodeSelector": node_selector(pool),
        "tolerations": tolerations(pool),
    }


def hardened(read_only_root: bool = True, user: int = 0) -> dict[str, Any]:
    """No privilege, no capabilities, no writable root; user 0 only to reach root-owned host paths."""
    return {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": read_only_root,
        "capabilities": {"drop": ["ALL"]},
        "runAsUser": user,
        "runAsNonRoot": user != 0,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def host_path(name: str, path: str, kind: str) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path, "type": kind}}


def pool_daemonset(
    cluster: Cluster, pool: NodePool, app: str, component: str, wave: str, pod_spec: dict[str, Any]
) -> dict[str, Any]:
    """The DaemonSet `<app>-<pool>` in gpuconf's namespace, selecting its pods by app and pool."""
    meta = metadata(
        cluster,
        f"{app}-{pool.name}",
        component,
        namespace=cluster.spec.namespace,
        wave=wave,
        **{POOL_LABEL: pool.name},
    )
    match = {NAME_LABEL: app, POOL_LABEL: pool.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": match},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {"metadata": {"labels": {**meta["labels"], **match}}, "spec": pod_spec},
        },
    }


def pool_source(cluster: Cluster, pool: NodePool) -> KeyPath:
    """The pool's place in the cluster file, which its outputs' diagnostics name."""
    pools = cluster.spec.node_pools
    # Found by identity first: list.index compares the pool with each one before it, field by
    # field (a Record's __eq__), for every file of every pool.
    for index, candidate in enumerate(pools):
        if candidate is pool:
            return ("spec", "nodePools", index)
    return ("spec", "nodePools", pools.index(pool))


_CONTAINER_LAID_OUT = ("name", "image", "env", "resources")


def _container(container: dict[str, Any]) -> dict[str, Any]:
    """A container as _daemonset.j2 lays it out: the fields a site may override apart."""
    shaped = {k: container[k] for k in _CONTAINER_LAID_OUT if k in container}
    shaped["fields"] = {k: v for k, v in container.items() if k not in _CONTAINER_LAID_OUT}
    return shaped


def daemonset(path: str, template: str, workload: dict[str, Any], source: KeyPath = ()) -> Artifact:
    """A DaemonSet built by `pool_daemonset`, as the values templates/_daemonset.j2 lays out."""
    spec = workload["spec"]
    pod_template = spec["template"]
    pod = dict(pod_template["spec"])
    tolerations = pod.pop("tolerations")
    groups = [
        (field, [_container(c) for c in pod.pop(field)])
        for field in ("initContainers", "containers")
        if field in pod
    ]
    values = {
        "meta": workload["metadata"],
        "selector": spec["selector"]["matchLabels"],
        "update_strategy": spec["updateStrategy"],
        "pod_meta": pod_template["metadata"],
        "tolerations": tolerations,
        "container_groups": groups,
        "pod": pod,
    }
    return manifest(path, template, "DaemonSet", values, source)
