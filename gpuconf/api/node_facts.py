"""What the cluster document and the node's own config both name, free of models: validating
a cluster file imports no node-side model."""

from __future__ import annotations

from typing import Literal

DeviceListStrategy = Literal["cdi", "volume-mounts", "envvar"]

DEFAULT_METRICS_PORT = 9402
"""Prometheus metrics and /healthz; NVIDIA's DCGM exporter usually listens on 9400 on the same nodes."""

MAX_GPUS_PER_NODE = 64
"""The most GPUs a node of a pool has (indices 0 to 63)."""

CONTAINERISED_DRIVER_ROOT = "/run/nvidia/driver"
"""Where NVIDIA's driver container mounts the driver's root on the host."""

LabelOwner = Literal["gpuconf", "gfd", "off"]
"""Who writes the GPU Feature Discovery labels (nvidia.com/gpu.product, …) on a pool's nodes."""

POOL_LABEL = "gpuconf.dev/pool"
"""A pool's default node selector, its pods' label, and the label the node runtime publishes."""

MIG_CONFIG_PREFIX = "gpuconf-"
"""A pool's mig-parted configuration is gpuconf-<pool>, which its nodes' nvidia.com/mig.config
label names (the GPU Operator's MIG manager applies the configuration the label names)."""


KUBELET_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
"""Where the kubelet serves kubelet.sock and looks for device plugins' sockets (k8s.io/kubelet
pkg/apis/deviceplugin/v1beta1/constants.go, DevicePluginPath)."""
MAX_UNIX_SOCKET_PATH = 107
"""Bytes a unix socket's path may hold: sun_path's 108 less its terminating NUL (unix(7))."""
