"""What a live cluster has against what its cluster file declares: per pool, declared vs present
nodes, drifted nodes (the node runtime's inventory annotations) and nodes whose GPU changes wait
for running containers (a rollout that has not finished); per class, declared capacity vs
allocatable on the nodes vs in use and quota (from the live ResourceQuotas)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from gpuconf.adopt.quota_scopes import Held, namespace_limit, scopes
from gpuconf.compiler.explain import class_rows
from gpuconf.compiler.plan.dra import dra_quota_key
from gpuconf.compiler.plan.pod import node_selector
from gpuconf.compiler.plan.quotas import QUOTA_NAME, device_plugin_quota_key
from gpuconf.compiler.resolve.object_labels import CLUSTER_LABEL
from gpuconf.compiler.validate import Validated
from gpuconf.formats.quantity import device_count
from gpuconf.gpus.dra_attributes import DRIVER as DRA_DRIVER
from gpuconf.node.node_annotation import DRIFT_ANNOTATION, PENDING_ANNOTATION, REPORT_ANNOTATION


class PoolStatus(NamedTuple):
    pool: str
    declared: int
    present: int
    missing: list[str]
    """Declared node names the cluster does not have."""
    drifted: dict[str, list[str]]
    """Node → the drift problems its runtime reported."""
    rolling_out: dict[str, int]
    """Node → how many GPU changes wait for running containers to release GPUs."""
    publishing: int | None = None
    """DRA: present nodes with a ResourceSlice of NVIDIA's DRA driver; None in device-plugin mode."""


class ClassStatus(NamedTuple):
    name: str
    resource: str
    capacity: int
    allocatable: int | None
    """None where the class is not an extended resource (DRA), so Node objects cannot say."""
    in_use: int
    quota: int
    device_class: bool | None = None
    """DRA: whether the cluster has the class's DeviceClass; None in device-plugin mode."""


class QuotaDrift(NamedTuple):
    """A line of a namespace's gpuconf-gpus ResourceQuota that is not as rendered."""

    namespace: str
    key: str
    rendered: int | None
    """None where render writes no such line (or no quota in the namespace)."""
    live: int | None
    """None where the live quota has no such line, or the namespace has no such quota."""
    in_cluster: bool
    """Whether the namespace has gpuconf's quota at all (not yet synced, or deleted)."""


class Status(NamedTuple):
    cluster: str
    pools: list[PoolStatus]
    classes: list[ClassStatus]
    supply: dict[str, int]
    """Resource → what its classes' nodes have allocatable together (device plugin only): one
    quota line holds every class requested by that resource at once."""
    quota_drift: list[QuotaDrift]
    backstop: bool = False
    """The ResourceQuotas are Kueue's backstop: each namespace's is what Kueue may admit there,
    borrowing included, so together they may exceed what the nodes have."""

    def problems(self) -> list[str]:
        out: list[str] = []
        for pool in self.pools:
            if pool.publishing is not None and pool.publishing < pool.present:
                out.append(
                    f"pool {pool.pool}: {pool.present - pool.publishing} of {pool.present} nodes "
                    f"publish no GPU through {DRA_DRIVER}"
                )
            if pool.present < pool.declared:
                out.append(f"pool {pool.pool}: {pool.present} of {pool.declared} nodes present")
            out += [f"pool {pool.pool}: node {n} is declared but absent" for n in pool.missing]
            out += [
                f"pool {pool.pool}: node {node} drifted: {'; '.join(problems)}"
                for node, problems in pool.drifted.items()
            ]
            out += [
                f"pool {pool.pool}: node {node} has {count} GPU change(s) waiting for running containers"
                for node, count in pool.rolling_out.items()
            ]
        out += [_drift_text(drift) for drift in self.quota_drift]
        by_resource: dict[str, list[ClassStatus]] = {}
        for row in self.classes:
            by_resource.setdefault(row.resource, []).append(row)
            if row.device_class is False:
                out.append(f"class {row.name}: the cluster has no DeviceClass {row.name}")
            if row.allocatable is not None and row.allocatable < row.capacity:
                out.append(
                    f"class {row.name}: {row.allocatable} of {row.capacity} {row.resource} allocatable"
                )
        for resource, rows in by_resource.items():
            quota = rows[0].quota  # the same quota lines count every class of the resource
            available = self.supply.get(resource, sum(r.capacity for r in rows))
            if quota > available and not self.backstop:
                named = (
                    f"class {rows[0].name}"
                    if len(rows) == 1
                    else f"classes {', '.join(r.name for r in rows)} ({resource})"
                )
                out.append(
                    f"{named}: quotas add up to {quota}, more than the {available} available"
                )
        return out

    def as_json(self) -> str:
        data = {
            "cluster": self.cluster,
            "pools": [p._asdict() for p in self.pools],
            "classes": [c._asdict() for c in self.classes],
            "quota_drift": [d._asdict() for d in self.quota_drift],
            "problems": self.problems(),
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def as_text(self) -> str:
        dra = any(p.publishing is not None for p in self.pools)
        pools = _table(
            ("pool", "declared", "present", "drifted", "rolling out", *(["publishing"] * dra)),
            [
                (
                    p.pool,
                    str(p.declared),
                    str(p.present),
                    str(len(p.drifted)),
                    str(len(p.rolling_out)),
                    *([str(p.publishing)] * dra),
                )
                for p in self.pools
            ],
        )
        classes = _table(
            ("class", "resource", "capacity", "allocatable", "in use", "quota"),
            [
                (
                    c.name,
                    c.resource,
                    str(c.capacity),
                    "-" if c.allocatable is None else str(c.allocatable),
                    str(c.in_use),
                    str(c.quota),
                )
                for c in self.classes
            ],
        )
        problems = self.problems()
        tail = (
            ["", f"{len(problems)} problem(s):", *(f"  - {p}" for p in problems)]
            if problems
            else ["", "no problems"]
        )
        return "\n".join([f"cluster {self.cluster}", *pools, "", *classes, *tail]) + "\n"


def _drift_text(drift: QuotaDrift) -> str:
    where = f"namespace {drift.namespace}: ResourceQuota {QUOTA_NAME}"
    if not drift.in_cluster:
        return f"{where} is not in the cluster (rendered with {drift.key}: {drift.rendered})"
    if drift.live is None:
        return f"{where} has no {drift.key}, rendered {drift.rendered}"
    rendered = "not rendered" if drift.rendered is None else f"rendered {drift.rendered}"
    return f"{where} holds {drift.key}: {drift.live}, {rendered}"


def status(
    validated: Validated,
    nodes: Sequence[Mapping[str, Any]],
    quotas: Sequence[Mapping[str, Any]],
    dra: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]] | None = None,
    rendered_quotas: Mapping[str, Mapping[str, int]] | None = None,
) -> Status:
    """`dra`: the cluster's DeviceClasses and ResourceSlices, for a DRA cluster that serves them.
    `rendered_quotas`: namespace → the hard values of the gpuconf-gpus quota the cluster file
    renders there, which the live ones are compared with."""
    cluster = validated.cluster
    device_plugin = cluster.spec.allocation == "device-plugin"
    device_classes, slices = dra if dra is not None and not device_plugin else (None, None)
    publishing = _publishing_nodes(slices) if slices is not None else None
    members = {
        pool.name: [n for n in nodes if _matches(_at(n, "metadata", "labels"), node_selector(pool))]
        for pool in cluster.spec.node_pools
    }
    pools = [_pool_status(p, members[p.name], publishing) for p in cluster.spec.node_pools]
    class_names = (
        {str(_at(c, "metadata").get("name")) for c in device_classes}
        if device_classes is not None
        else None
    )
    classes = []
    nodes_of: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row, resolved in zip(class_rows(validated), validated.classes, strict=True):
        resource = row.request
        # Only the class's pools' nodes: classes may share a resource name (nvidia.com/gpu).
        on_its_nodes = {_name(n): n for pool in resolved.pools for n in members[pool]}
        nodes_of.setdefault(resource, {}).update(on_its_nodes)
        hard_key = (device_plugin_quota_key if device_plugin else dra_quota_key)(resolved)
        in_use, quota = _namespace_limits(quotas, hard_key)
        classes.append(
            ClassStatus(
                row.name,
                resource if device_plugin else f"DeviceClass {row.name}",
                row.capacity,
                _allocatable(on_its_nodes.values(), resource) if device_plugin else None,
                in_use,
                quota,
                None if class_names is None else row.name in class_names,
            )
        )
    supply = (
        {resource: _allocatable(on.values(), resource) for resource, on in nodes_of.items()}
        if device_plugin
        else {}
    )
    drift = (
        _quota_drift(cluster.metadata.name, quotas, rendered_quotas)
        if rendered_quotas is not None
        else []
    )
    backstop = cluster.spec.kueue is not None
    return Status(cluster.metadata.name, pools, classes, supply, drift, backstop)


def rendered_quotas(validated: Validated) -> dict[str, dict[str, int]]:
    """Namespace → the hard values of the ResourceQuota render writes there (Kueue's backstop
    included), from the same plan render uses."""
    from gpuconf.compiler.plan import plan

    return {
        str(artifact.values["meta"]["namespace"]): {
            key: int(count) for key, count in artifact.values["hard"].items()
        }
        for artifact in plan(validated, validated.cluster.metadata.name)
        if artifact.kind == "ResourceQuota"
    }


def _quota_drift(
    cluster: str, quotas: Sequence[Mapping[str, Any]], rendered: Mapping[str, Mapping[str, int]]
) -> list[QuotaDrift]:
    """gpuconf's own quotas against what render writes: missing (not synced yet), changed by
    hand, or left in a namespace the file no longer gives a quota (where its cluster label says
    it is this cluster's)."""
    live = {
        str(_at(q, "metadata").get("namespace")): q
        for q in quotas
        if _at(q, "metadata").get("name") == QUOTA_NAME
    }
    left: dict[str, dict[str, int]] = {
        namespace: {}
        for namespace, quota in live.items()
        if _at(quota, "metadata", "labels").get(CLUSTER_LABEL) == cluster
    }
    out: list[QuotaDrift] = []
    for namespace, hard in sorted({**left, **rendered}.items()):
        quota = live.get(namespace)
        held = _at(quota, "spec", "hard") if quota is not None else {}
        for key in sorted({*hard, *held}):
            count = device_count(held[key]) if key in held else None
            if count != hard.get(key):
                out.append(QuotaDrift(namespace, key, hard.get(key), count, quota is not None))
    return out


def _allocatable(nodes: Iterable[Mapping[str, Any]], resource: str) -> int:
    return sum(_count(_at(n, "status", "allocatable"), resource) for n in nodes)


def _namespace_limits(quotas: Sequence[Mapping[str, Any]], key: str) -> tuple[int, int]:
    """(in use, quota) of `key` over the namespaces its quotas hold as a whole
    (adopt/quota_scopes.py): during a cut-over the team's own quota beside gpuconf's, the
    smaller is the limit. A namespace whose scoped quotas leave some pods unlimited counts as
    one without a quota."""
    by_namespace: dict[str, list[Held]] = {}
    for quota in quotas:
        spec = _at(quota, "spec")
        hard = _at(spec, "hard")
        if key in hard:
            namespace = str(_at(quota, "metadata").get("namespace"))
            by_namespace.setdefault(namespace, []).append(
                Held(
                    _count(hard, key),
                    _count(_at(quota, "status", "used"), key),
                    scopes(spec),
                )
            )
    limits = [namespace_limit(held) for held in by_namespace.values()]
    return (
        sum(limit.used for limit in limits if limit is not None),
        sum(limit.hard for limit in limits if limit is not None),
    )


def _publishing_nodes(slices: Sequence[Mapping[str, Any]]) -> set[str]:
    """Nodes with a ResourceSlice of NVIDIA's DRA driver that lists at least one device."""
    return {
        str(_at(s, "spec").get("nodeName"))
        for s in slices
        if _at(s, "spec").get("driver") == DRA_DRIVER and _at(s, "spec").get("devices")
    }


def _pool_status(
    pool: Any, members: Sequence[Mapping[str, Any]], publishing: set[str] | None
) -> PoolStatus:
    """`members`: the nodes the pool's selector picks."""
    names = {_name(n) for n in members}
    declared_names = [node.name for node in pool.nodes]
    drifted: dict[str, list[str]] = {}
    rolling_out: dict[str, int] = {}
    for node in members:
        name = _name(node)
        annotations = _at(node, "metadata", "annotations")
        if annotations.get(DRIFT_ANNOTATION) == "true":
            drifted[name] = _json(annotations.get(REPORT_ANNOTATION), {}).get("problems") or [
                "drifted"
            ]
        pending = _json(annotations.get(PENDING_ANNOTATION), [])
        if isinstance(pending, list) and pending:
            rolling_out[name] = len(pending)
    size = pool.size if pool.size is not None else len(declared_names)
    return PoolStatus(
        pool.name,
        size,
        len(members),
        [n for n in declared_names if n not in names],
        dict(sorted(drifted.items())),
        dict(sorted(rolling_out.items())),
        None if publishing is None else len(names & publishing),
    )


def _name(node: Mapping[str, Any]) -> str:
    return str(_at(node, "metadata").get("name"))


def _matches(labels: Mapping[str, Any], selector: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _at(data: Mapping[str, Any], *path: str) -> Mapping[str, Any]:
    node: Any = data
    for part in path:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _count(values: Mapping[str, Any], key: str) -> int:
    value = values.get(key)
    return 0 if value is None else device_count(value) or 0


def _json(text: Any, default: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else default
    except ValueError:
        return default


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    table = [tuple(header), *map(tuple, rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(line)).rstrip() for line in table]
