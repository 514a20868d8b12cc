"""The GPU Operator releases gpuconf hands nodes over to, and the node labels that hand-over takes.

Read from NVIDIA/gpu-operator at each tag (`deployments/gpu-operator/values.yaml`,
`controllers/state_manager.go`) and from the MIG manager each ships (NVIDIA/mig-parted).

The Operator schedules each operand by a per-node `nvidia.com/gpu.deploy.<operand>` label. Its
node labeller (`addGPUStateLabels`, state_manager.go) writes them on nodes with
`nvidia.com/gpu.present=true` (set from NFD's `pci-10de` labels) but leaves a key that already
has a non-empty value alone, so a `false` written first keeps that operand off the node. It
sets `nvidia.com/gpu.deploy.mig-manager=true` only where GFD's `nvidia.com/mig.capable` (or a
product name with A100/H100/A30) says so, and only when the key is absent: a gpuconf node has
no GFD labels of its own, so gpuconf writes it.

The Operator's GFD is one DaemonSet for the whole cluster: `gfd.enabled: false` deletes it
(`isStateEnabled("gpu-feature-discovery")`, state_manager.go), and where it is enabled it runs
on the nodes labelled `nvidia.com/gpu.deploy.gpu-feature-discovery=true`
(assets/gpu-feature-discovery/0500_daemonset.yaml, the same at every release in RELEASES). So
GFD is replaced only on pools where gpuconf's node runtime writes GFD's labels
(gpus/label_owner.py), and turned off in the values only where no pool still needs it: the MIG
manager and users select GPU nodes by its `nvidia.com/gpu.product`, `nvidia.com/mig.capable`.

Before repartitioning, the MIG manager sets each GPU client's deploy label to
`paused-for-mig-change` (a `false` stays `false`) and waits for their pods to go. From mig-parted
v0.15.0 (`pkg/mig/reconfigure/reconfigure.go`: `gpuClientDeployLabel`,
`waitForPodsWithNodeSelector`) that includes `nvidia.com/gpu.deploy.client`, when the node has
it, and every DaemonSet pod on the node whose nodeSelector has that key. Earlier MIG managers
(`deployments/container/reconfigure-mig.sh` up to v0.12, the Go port in v0.13 and v0.14) wait
only for the Operator's own pods by their `app=` labels."""

from __future__ import annotations

from typing import NamedTuple, get_args

from gpuconf.api.base import version_parts
from gpuconf.api.cluster.nvidia_components import GpuOperatorRelease

DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
DEVICE_PLUGIN_DEPLOY = f"{DEPLOY_PREFIX}device-plugin"
GFD_DEPLOY = f"{DEPLOY_PREFIX}gpu-feature-discovery"
MIG_MANAGER_DEPLOY = f"{DEPLOY_PREFIX}mig-manager"
CLIENT_DEPLOY = f"{DEPLOY_PREFIX}client"
PAUSED = "paused-for-mig-change"
CLUSTER_POLICY = "cluster-policy"
"""The ClusterPolicy NVIDIA's chart creates (templates/clusterpolicy.yaml)."""

# Operands gpuconf replaces on its pools: the Helm values / ClusterPolicy section and the deploy
# label that schedules each (assets/state-*/ daemonset nodeSelectors).
REPLACED_OPERANDS: dict[str, str] = {
    "driver": f"{DEPLOY_PREFIX}driver",
    "toolkit": f"{DEPLOY_PREFIX}container-toolkit",
    "devicePlugin": DEVICE_PLUGIN_DEPLOY,
    "gfd": GFD_DEPLOY,
}


def replaced_operands(*, gfd_labels: bool) -> dict[str, str]:
    """The operands of REPLACED_OPERANDS gpuconf replaces on one pool: GFD only where gpuconf's
    node runtime writes GFD's labels (`gfd_labels`), the rest always."""
    return {s: label for s, label in REPLACED_OPERANDS.items() if s != "gfd" or gfd_labels}


class Release(NamedTuple):
    mig_manager: str
    """The k8s-mig-manager image tag the release's values.yaml pins."""
    waits_for_clients: bool
    """Whether that MIG manager pauses `nvidia.com/gpu.deploy.client` and waits for the
    DaemonSet pods that select it (mig-parted v0.15.0 and later)."""


RELEASES: dict[str, Release] = {
    "v25.3.4": Release("v0.12.3-ubuntu20.04", waits_for_clients=False),
    "v25.10.1": Release("v0.13.1", waits_for_clients=False),
    "v26.3.3": Release("v0.14.2", waits_for_clients=False),
    "v26.7.0": Release("v0.15.0", waits_for_clients=True),
}
assert set(RELEASES) == set(get_args(GpuOperatorRelease))
FIRST_WAITING = min(
    (r for r, info in RELEASES.items() if info.waits_for_clients), key=version_parts
)


def pool_deploy_labels(
    release: str | None,
    *,
    mig: bool,
    driver_managed: bool,
    operator_device_plugin: bool,
    gfd_labels: bool,
) -> dict[str, str]:
    """The `nvidia.com/gpu.deploy.*` labels a gpuconf pool's nodes carry.

    `release`: the GPU Operator's, None without it. `mig`: the pool declares a MIG layout, so
    the MIG manager must run there and gpuconf's plugin pods must be among the clients it
    stops. `driver_managed`: gpuconf's driver installer runs there with NVIDIA's
    k8s-driver-manager, which from v0.12.0 stops the same clients by the same label
    (cmd/driver-manager/main.go `nvidiaGPUClientDeployLabel`). `operator_device_plugin`: the
    Operator's own device plugin stays enabled for other nodes, so this node must say false to
    it (and gpuconf's plugin selects that false, so the two never share a node). `gfd_labels`:
    gpuconf's node runtime writes GFD's labels there, so the Operator's GFD stays off; else it
    is said `true` outright, which also undoes a `false` an earlier hand-off wrote."""
    labels: dict[str, str] = {}
    if release is not None:
        labels = {
            label: "false"
            for section, label in replaced_operands(gfd_labels=gfd_labels).items()
            if section != "devicePlugin" or operator_device_plugin
        }
        if not gfd_labels:
            labels[GFD_DEPLOY] = "true"
        labels[MIG_MANAGER_DEPLOY] = "true" if mig else "false"
    if driver_managed or (mig and release is not None and RELEASES[release].waits_for_clients):
        labels[CLIENT_DEPLOY] = "true"
    return dict(sorted(labels.items()))


def client_node_selector(
    release: str | None,
    *,
    mig: bool,
    driver_managed: bool,
    operator_device_plugin: bool,
    gfd_labels: bool,
) -> dict[str, str]:
    """What a gpuconf GPU-client DaemonSet (its plugin, NVIDIA's plugin, the MPS daemon) adds to
    its nodeSelector: the labels of `pool_deploy_labels` that must hold for it to run, which is
    also what makes the MIG manager and the driver manager wait for it."""
    labels = pool_deploy_labels(
        release,
        mig=mig,
        driver_managed=driver_managed,
        operator_device_plugin=operator_device_plugin,
        gfd_labels=gfd_labels,
    )
    wanted = (CLIENT_DEPLOY, DEVICE_PLUGIN_DEPLOY)
    return {k: v for k, v in labels.items() if k in wanted}
