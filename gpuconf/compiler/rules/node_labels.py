"""spec.node.labels: gpuconf writes GPU Feature Discovery's labels only where its node runtime
runs and may patch its Node, says where GFD's migStrategy single cannot describe a node, and
where a pool selects its nodes by a label gpuconf's node runtime writes, which its node policy
then refuses it, or by gpuconf's pool or class labels, which would let its nodes leave it.

GFD's single strategy (k8s-device-plugin v0.20.0 internal/lm/mig-strategy.go) labels MIG devices
as nvidia.com/gpu.*, which is what they are where NVIDIA's plugin runs migStrategy single. With
`plugin: nvidia` no gpuconf node runtime runs, so gpuconf can never be the label owner there:
NVIDIA's GFD is. With `plugin: gpuconf` the node is in single's situation where a MIG class's
resourceName is nvidia.com/gpu, and labels as GFD would.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpuconf.api.node_facts import POOL_LABEL
from gpuconf.compiler.rules.context import SPEC, RuleContext, class_path, pool_path
from gpuconf.compiler.rules.node_selection import label_writers, relabel_command
from gpuconf.diagnostics import Diagnostic
from gpuconf.gpus.gfd_labels import CLASS_LABEL_PREFIX
from gpuconf.gpus.label_owner import gpuconf_writes_gfd_labels, node_runtime_labels_nodes
from gpuconf.gpus.resource_names import NVIDIA_GPU

OWNER = (*SPEC, "node", "labels", "owner")


def check(ctx: RuleContext) -> Iterator[Diagnostic]:
    yield from _no_label_writer(ctx)
    yield from _selected_by_gpuconf_label(ctx)
    yield from _selected_by_written_label(ctx)


def _selected_by_gpuconf_label(ctx: RuleContext) -> Iterator[Diagnostic]:
    """A pool selecting by gpuconf's own labels other than as itself. The node policy lets a
    Node set gpuconf.dev/pool only to its own pool's name (plan/own_node_pool_labels.py): a pool
    selecting by another value would let a Node of it rename itself out of the pool, which then
    no longer selects it. A class label is written by the node runtime of the pool it counts
    devices for, the runtime that selector would place: circular, and the policy lets a Node
    take back any class label, so it could leave the pool."""
    for i, pool in enumerate(ctx.cluster.spec.node_pools):
        for key, value in sorted(pool.node_selector.items()):
            path = pool_path(i, "nodeSelector", key)
            if key == POOL_LABEL and value != pool.name:
                yield ctx.error(
                    path,
                    f"pool {pool.name!r} selects its nodes by {POOL_LABEL}={value}, gpuconf's "
                    f"pool label, whose value is a pool's name: gpuconf's node runtime sets it "
                    f"to {pool.name!r} on the pool's nodes and so takes them out of the pool",
                    f"select by {POOL_LABEL}: {pool.name} (kubectl label nodes --overwrite "
                    f"-l {POOL_LABEL}={value} {POOL_LABEL}={pool.name}), or drop nodeSelector",
                )
            elif key.startswith(CLASS_LABEL_PREFIX):
                yield ctx.error(
                    path,
                    f"pool {pool.name!r} selects its nodes by {key}, a class label: only "
                    "gpuconf's node runtime writes it, on the nodes of the pools serving that "
                    "class, so it cannot place that runtime, and a node may remove it and "
                    "leave the pool",
                    f"label the pool's nodes by a label only you write ({relabel_command(pool)}) "
                    f"and drop {key} from its nodeSelector",
                )


def _selected_by_written_label(ctx: RuleContext) -> Iterator[Diagnostic]:
    """A pool selecting its nodes by a label gpuconf's node runtime writes. The node policy lets
    no node change a label any pool selects on (plan/own_node_pool_labels.py), so it refuses the
    runtime's whole label patch, pool and class labels too, wherever it would change that one:
    on every node that does not carry it already (nothing else writes it where gpuconf owns the
    labels) and wherever its value moves (a -SHARED product, a new driver)."""
    spec = ctx.cluster.spec
    if not gpuconf_writes_gfd_labels(spec):
        return
    pools = spec.node_pools
    for i, pool in enumerate(pools):
        for key in sorted(pool.node_selector):
            writers = label_writers(pools, key)
            unselected = [p.name for p in writers if key not in p.node_selector]
            written = (
                f"pool {pool.name!r} selects its nodes by {key}, a label gpuconf's node runtime "
                "writes (spec.node.labels.owner: gpuconf), and the node policy lets no node "
                "change a label a pool selects on: it refuses the runtime's whole label patch "
                "(pool and class labels too)"
            )
            hint = (
                f"label the pool's nodes by a label only you write ({relabel_command(pool)}) "
                f"and drop {key} from its nodeSelector, or set spec.node.labels.owner: gfd"
            )
            if unselected:
                named = ", ".join(repr(name) for name in unselected)
                yield ctx.error(
                    pool_path(i, "nodeSelector", key),
                    f"{written} on every node of the pools that do not select by {key} and so "
                    f"carry none ({named})",
                    hint,
                )
            elif writers:
                yield ctx.warning(
                    pool_path(i, "nodeSelector", key),
                    f"{written} wherever the value it writes is not the node's already (a "
                    "product renamed -SHARED, a new driver or CUDA version)",
                    hint,
                )


def check_single(ctx: RuleContext) -> Iterator[Diagnostic]:
    """Over resolved classes: where a MIG class is nvidia.com/gpu, GFD's single strategy."""
    if not gpuconf_writes_gfd_labels(ctx.cluster.spec):
        return
    for resolved in ctx.classes:
        profile = resolved.spec.select.mig_profile
        if resolved.resource_name != NVIDIA_GPU or profile is None:
            continue
        for pool in resolved.pools:
            others = _other_devices(ctx, pool, profile)
            if others:
                yield ctx.warning(
                    class_path(resolved.index, "resourceName"),
                    f"class {resolved.name!r} advertises {profile} MIG devices as {NVIDIA_GPU}, "
                    "NVIDIA's migStrategy single, whose GPU Feature Discovery labels describe a "
                    f"node only when all its GPUs hold {profile} devices alone; pool {pool!r} "
                    f"also has {others}, so its nodes get GFD's "
                    f"{NVIDIA_GPU}.product=<model>-MIG-INVALID and {NVIDIA_GPU}.count=0",
                    f"give the class another resourceName (migStrategy mixed labels every "
                    f"profile as nvidia.com/mig-<profile>.*), or make {profile} the only "
                    f"layout of pool {pool!r}",
                )


def _other_devices(ctx: RuleContext, pool: str, profile: str) -> str:
    """What else the pool's declared GPUs hold beside `profile` MIG devices, in words."""
    others: set[str] = set()
    for group in ctx.inventory.by_pool(pool):
        for gpu in group.shape:
            if gpu.mig is None:
                others.add("whole GPUs")
            else:
                others.update(f"{p} MIG devices" for p, n in gpu.mig.items() if p != profile and n)
    return " and ".join(sorted(others))


def _no_label_writer(ctx: RuleContext) -> Iterator[Diagnostic]:
    """A warning, not an error: the setting does no harm, and a cluster moving between modes
    keeps rendering; but nothing writes the labels it asks for."""
    spec = ctx.cluster.spec
    if ctx.located.value_at(OWNER) != "gpuconf" or node_runtime_labels_nodes(spec):
        return
    if spec.allocation == "dra" or spec.plugin == "nvidia":
        runs = "allocation: dra" if spec.allocation == "dra" else "plugin: nvidia"
        yield ctx.warning(
            OWNER,
            f"with {runs} no gpuconf node runtime runs, so nothing would write GPU Feature "
            "Discovery's labels: NVIDIA's GFD is their owner there (under migStrategy single "
            f"it labels the MIG devices as {NVIDIA_GPU}.*)",
            "set owner: gfd and run NVIDIA's GFD (or the GPU Operator's), or use plugin: gpuconf",
        )
        return
    yield ctx.warning(
        OWNER,
        f"Kubernetes {spec.kubernetes.version} has no ValidatingAdmissionPolicy (GA in 1.30), "
        "which gpuconf's node runtime needs to label its own Node",
        "set owner: gfd or off, or target Kubernetes 1.30 or later",
    )
