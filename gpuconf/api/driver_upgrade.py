"""What a driver upgrade writes on its Node, so `kubectl get nodes -L gpuconf.dev/driver-upgrade
-L gpuconf.dev/driver-version` shows each node's progress: the compiler admits these keys for the
driver installer's account (plan/driver_upgrade_policy.py), the node writes them
(node/driver_upgrade.py). NVIDIA's k8s-driver-manager writes only `nvidia.com/gpu.deploy.*`
(cmd/driver-manager/main.go v0.12.0; the `nvidia.com/gpu-driver-upgrade-state` label belongs to
the GPU Operator's upgrade controller, which gpuconf does not run), so none of them collide."""

from __future__ import annotations

from typing import Final, Literal

CONFIG_DIGEST_ENV: Final = "DRIVER_CONFIG_DIGEST"
"""The digest of what decides the installed driver (compiler/plan/driver_config_digest.py), in the
env of the driver container and k8s-driver-manager (which read it under this name)."""
CONFIG_STATE_FILE: Final = "/run/nvidia/nvidia-driver.state"
"""Where the driver container stores the digest of the driver it loaded; k8s-driver-manager's
`driverConfigStateFile` (cmd/driver-manager/main.go v0.12.0)."""

UPGRADE_LABEL: Final = "gpuconf.dev/driver-upgrade"
VERSION_LABEL: Final = "gpuconf.dev/driver-version"
"""The driver version nvidia-smi answered with on every GPU once the new driver loaded."""
CORDONED_ANNOTATION: Final = "gpuconf.dev/driver-upgrade-cordoned"
"""Set with the cordon gpuconf made; only a cordon so marked is lifted again (an administrator's
cordon stays)."""

UpgradeState = Literal["evicting", "eviction-timed-out", "installing", "ready"]
EVICTING: Final = "evicting"
"""Cordoned; the pods holding the node's GPUs are being evicted."""
EVICTION_TIMED_OUT: Final = "eviction-timed-out"
"""Some GPU pods were still there at the timeout (a PodDisruptionBudget kept refusing): the node
stays cordoned, the old driver loaded; the container exits and the kubelet retries it."""
INSTALLING: Final = "installing"
"""No GPU pod left (or no driver was loaded): set before anything unloads; from here NVIDIA's
k8s-driver-manager unloads the old driver and the driver container installs and validates the
new one."""
READY: Final = "ready"
"""The new driver answered with its version and setup has readied the runtime: uncordoned."""
