"""Every name, label, resource name and namespace a cluster file sets, each at the edge of what
Kubernetes admits where gpuconf puts it: one value just past the edge, one just within.

The edges are Kubernetes' own (k8s.io/apimachinery v0.34.4 pkg/util/validation/validation.go,
k8s.io/kubernetes v1.34.4 pkg/apis/core/helper/helpers.go IsExtendedResourceName), less what
gpuconf adds around a name (gpuconf-<pool> as the nvidia.com/mig.config label value).
tests/compiler/test_name_limits.py checks that validate refuses the one and accepts the other;
tests/control_plane/test_name_limits_admitted.py that kube-apiserver admits what the accepted
ones render."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from builders import cluster_file

from gpuconf.diagnostics import KeyPath

Document = dict[str, Any]


def dns_label(length: int, start: str = "n") -> str:
    return (start + "-" + "x" * length)[: length - 1] + "z"


def subdomain(length: int) -> str:
    """A DNS subdomain of `length` characters, in dot-separated parts of at most 63."""
    parts = []
    while length > 63:
        size = 62 if length == 64 else 63  # the last part keeps at least one character
        parts.append(dns_label(size, "d"))
        length -= size + 1
    parts.append(dns_label(length, "d"))
    return ".".join(parts)


def label_name(length: int) -> str:
    return "K" + "_" * (length - 2) + "9" if length > 1 else "K"


def label_value(length: int) -> str:
    return "V" + "." * (length - 2) + "0" if length > 1 else "V"


def _rename(document: Document, kind: str, old: str, new: str) -> None:
    """Rename a pool or class and every reference to it."""
    spec = document["spec"]
    if kind == "pool":
        for pool in spec["nodePools"]:
            if pool["name"] == old:
                pool["name"] = new
        for klass in spec.get("resourceClasses", []):
            pools = klass["select"].get("pools")
            if pools:
                klass["select"]["pools"] = [new if p == old else p for p in pools]
        return
    for klass in spec.get("resourceClasses", []):
        if klass["name"] == old:
            klass["name"] = new
        fallbacks = (klass.get("claim") or {}).get("firstAvailable")
        if fallbacks:
            klass["claim"]["firstAvailable"] = [new if c == old else c for c in fallbacks]
    for quota in spec.get("quotas", []):
        quota["classes"] = {new if c == old else c: n for c, n in quota["classes"].items()}


def _set(*path: str | int) -> Callable[[Document, str], None]:
    def setter(document: Document, value: str) -> None:
        node: Any = document
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        node[path[-1]] = value

    return setter


def _key(*path: str | int, value: str = "v") -> Callable[[Document, str], None]:
    """Set a mapping's only entry: the value given becomes its key."""

    def setter(document: Document, key: str) -> None:
        node: Any = document
        for part in path:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        node.clear()
        node[key] = value

    return setter


def _renamed(kind: str, old: str) -> Callable[[Document, str], None]:
    return lambda document, new: _rename(document, kind, old, new)


def _toleration(field: str) -> Callable[[Document, str], None]:
    def setter(document: Document, value: str) -> None:
        toleration = {
            "key": "dedicated",
            "operator": "Equal",
            "value": "gpu",
            "effect": "NoSchedule",
        }
        toleration[field] = value
        document["spec"]["nodePools"][0]["tolerations"] = [toleration]

    return setter


def _scraper(document: Document, value: str) -> None:
    monitoring = document["spec"].setdefault("node", {}).setdefault("monitoring", {})
    monitoring["networkPolicy"] = True
    monitoring["scraperNamespaces"] = [value]


def _queue_namespace(document: Document, value: str) -> None:
    """The first quota's namespace, and the ClusterQueue named after it."""
    quota = document["spec"]["quotas"][0]
    old = quota["namespace"]
    quota["namespace"] = value
    for queue in document["spec"]["kueue"].get("clusterQueues", []):
        if queue["name"] == old:
            queue["name"] = value


def _cluster_queue(document: Document, value: str) -> None:
    """The second listed ClusterQueue (quotas join it by clusterQueue), and those quotas."""
    queue = document["spec"]["kueue"]["clusterQueues"][1]
    old, queue["name"] = queue["name"], value
    for quota in document["spec"]["quotas"]:
        if quota.get("clusterQueue") == old:
            quota["clusterQueue"] = value


def _mig_namespace(document: Document, value: str) -> None:
    """The GPU Operator's namespace, where its MIG manager reads its ConfigMap."""
    document["spec"]["gpuOperator"]["namespace"] = value
    document["spec"].setdefault("migManager", {})["namespace"] = value


def _edge(make: Callable[[int], str], edge: int, suffix: str = "") -> tuple[str, str]:
    """The value one past the edge and the one at it, `edge` the longest Kubernetes admits."""
    return make(edge + 1) + suffix, make(edge) + suffix


@dataclass(frozen=True)
class Limit:
    id: str
    example: str
    """The example cluster (clusters/<example>.yaml) the value goes into."""
    path: KeyPath
    """Where the diagnostic for the value past the edge stands."""
    set: Callable[[Document, str], None]
    past: str
    within: str

    @classmethod
    def at(
        cls,
        id: str,
        example: str,
        path: KeyPath,
        edge: tuple[str, str],
        setter: Callable[[Document, str], None] | None = None,
    ) -> Limit:
        """The value goes where the diagnostic stands unless `setter` puts it elsewhere."""
        return cls(id, example, path, setter or _set(*path), *edge)

    def document(self, value: str) -> Document:
        document = copy.deepcopy(cluster_file(self.example))
        self.set(document, value)
        return document


def limit(prefix: str) -> Limit:
    """The one limit whose id starts with `prefix`."""
    [found] = [candidate for candidate in LIMITS if candidate.id.startswith(prefix)]
    return found


POOL = ("spec", "nodePools", 0)
CLASS = ("spec", "resourceClasses", 0)
MONITORING = ("spec", "node", "monitoring")
LIMITS = (
    Limit.at(
        "cluster name: a DNS label (gpuconf.dev/cluster label value)",
        "lab",
        ("metadata", "name"),
        _edge(dns_label, 63),
    ),
    Limit.at(
        "gpuconf's namespace: a DNS label", "lab", ("spec", "namespace"), _edge(dns_label, 63)
    ),
    Limit.at(
        "pool name: 63 less gpuconf- (nvidia.com/mig.config label value)",
        "mig",
        (*POOL, "name"),
        _edge(dns_label, 55),
        _renamed("pool", "h100"),
    ),
    Limit.at(
        "declared node name: a DNS subdomain",
        "lab",
        (*POOL, "nodes", 0, "name"),
        _edge(subdomain, 253),
    ),
    Limit.at(
        "node selector key prefix: a DNS subdomain of 253",
        "fleet",
        (*POOL, "nodeSelector", f"{subdomain(254)}/k"),
        _edge(subdomain, 253, "/k"),
        _key(*POOL, "nodeSelector"),
    ),
    Limit.at(
        "node selector key name: 63",
        "fleet",
        (*POOL, "nodeSelector", f"gpuconf.dev/{label_name(64)}"),
        _edge(lambda n: f"gpuconf.dev/{label_name(n)}", 63),
        _key(*POOL, "nodeSelector"),
    ),
    Limit.at(
        "node selector value: a label value",
        "fleet",
        (*POOL, "nodeSelector", "node.example.com/gpu"),
        _edge(label_value, 63),
        lambda d, v: _key(*POOL, "nodeSelector", value=v)(d, "node.example.com/gpu"),
    ),
    Limit.at(
        "toleration key prefix: a DNS subdomain of 253",
        "fleet",
        (*POOL, "tolerations", 0, "key"),
        _edge(subdomain, 253, "/k"),
        _toleration("key"),
    ),
    Limit.at(
        "toleration value: a label value",
        "fleet",
        (*POOL, "tolerations", 0, "value"),
        _edge(label_value, 63),
        _toleration("value"),
    ),
    Limit.at(
        "class name: a DNS label (DeviceClass, claim request, class label key)",
        "dra-lab",
        (*CLASS, "name"),
        _edge(dns_label, 63),
        _renamed("class", "big-memory"),
    ),
    Limit.at(
        "resource name domain: 253 less requests.",
        "lab",
        (*CLASS, "resourceName"),
        _edge(subdomain, 244, "/t4"),
    ),
    Limit.at(
        "resource name: not in kubernetes.io",
        "lab",
        (*CLASS, "resourceName"),
        ("gpu.kubernetes.io/t4", "gpu.kubernetes.example/t4"),
    ),
    Limit.at(
        "resource name: not requests.",
        "lab",
        (*CLASS, "resourceName"),
        ("requests.example.com/t4", "request.example.com/t4"),
    ),
    Limit.at(
        "resource domain: 253 less requests.",
        "lab",
        ("spec", "resourceDomain"),
        _edge(subdomain, 244),
    ),
    Limit.at(
        "resource domain: not kubernetes.io",
        "lab",
        ("spec", "resourceDomain"),
        ("gpu.kubernetes.io", "gpu.kubernetes.example"),
    ),
    Limit.at(
        "quota namespace: a DNS label",
        "lab",
        ("spec", "quotas", 0, "namespace"),
        _edge(dns_label, 63),
    ),
    Limit.at(
        "extra monitoring label key prefix: a DNS subdomain of 253",
        "lab",
        (*MONITORING, "extraLabels", f"{subdomain(254)}/release"),
        _edge(subdomain, 253, "/release"),
        _key(*MONITORING, "extraLabels"),
    ),
    Limit.at(
        "extra monitoring label value: a label value",
        "lab",
        (*MONITORING, "extraLabels", "release"),
        _edge(label_value, 63),
        lambda d, v: _key(*MONITORING, "extraLabels", value=v)(d, "release"),
    ),
    Limit.at(
        "scraper namespace: a DNS label",
        "lab",
        (*MONITORING, "scraperNamespaces", 0),
        _edge(dns_label, 63),
        _scraper,
    ),
    Limit.at(
        "MIG manager ConfigMap: a DNS subdomain its file name (configmap-<name>.yaml) holds",
        "mig",
        ("spec", "migManager", "configMapName"),
        _edge(subdomain, 240),
    ),
    Limit.at(
        "GPU Operator namespace: a DNS label",
        "mig",
        ("spec", "gpuOperator", "namespace"),
        _edge(dns_label, 63),
        _mig_namespace,
    ),
    Limit.at(
        "Kueue cohort: a DNS label",
        "training-fleet",
        ("spec", "kueue", "cohort"),
        _edge(dns_label, 63),
    ),
    Limit.at(
        "Kueue LocalQueue: a DNS label",
        "training-fleet",
        ("spec", "kueue", "localQueue"),
        _edge(dns_label, 63),
    ),
    Limit.at(
        "Kueue ClusterQueue: a DNS label",
        "training-fleet",
        ("spec", "kueue", "clusterQueues", 1, "name"),
        _edge(dns_label, 63),
        _cluster_queue,
    ),
    Limit.at(
        "Kueue quota namespace and its ClusterQueue: a DNS label",
        "training-fleet",
        ("spec", "quotas", 0, "namespace"),
        _edge(dns_label, 63),
        _queue_namespace,
    ),
)
