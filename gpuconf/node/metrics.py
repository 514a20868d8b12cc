"""The runtime's Prometheus metrics, in a registry of their own."""

from __future__ import annotations

import contextlib

from gpuconf.node.prometheus_text import Counter, Gauge, Registry


class Metrics:
    def __init__(self) -> None:
        self.registry = Registry()
        r = self.registry
        self.devices = Gauge(
            "gpuconf_node_devices",
            "Devices advertised to the kubelet.",
            ["resource", "health"],
            registry=r,
        )
        self.allocations = Counter(
            "gpuconf_node_allocations",
            "Containers given devices by Allocate.",
            ["resource"],
            registry=r,
        )
        self.allocate_errors = Counter(
            "gpuconf_node_allocate_errors", "Allocate calls refused.", ["resource"], registry=r
        )
        self.registrations = Counter(
            "gpuconf_node_registrations",
            "Registrations with the kubelet, by result.",
            ["resource", "result"],
            registry=r,
        )
        self.config_reloads = Counter(
            "gpuconf_node_config_reloads",
            "Changed node configs applied without a restart.",
            registry=r,
        )
        self.config_reload_failures = Counter(
            "gpuconf_node_config_reload_failures",
            "Changed node configs refused as invalid (the last good one stays).",
            registry=r,
        )
        self.drift = Gauge(
            "gpuconf_node_inventory_drift",
            "1 when the GPUs found differ from those declared.",
            registry=r,
        )
        self.drift_problems = Gauge(
            "gpuconf_node_inventory_drift_problems",
            "Differences between declared and found GPUs.",
            registry=r,
        )
        self.gpus_declared = Gauge(
            "gpuconf_node_gpus_declared",
            "GPUs the node config declares for this node.",
            registry=r,
        )
        self.gpus_present = Gauge(
            "gpuconf_node_gpus_present",
            "GPUs NVML lists now (one that fell off the bus is missing).",
            registry=r,
        )
        self.registered = Gauge(
            "gpuconf_node_registered",
            "1 while the resource is registered with the kubelet.",
            ["resource"],
            registry=r,
        )
        self.plugin_socket_unavailable = Gauge(
            "gpuconf_node_plugin_socket_unavailable",
            "1 while the resource's device-plugin socket cannot be made (something stands where "
            "it goes; the log names it): the resource is not offered, retried every tick.",
            ["resource"],
            registry=r,
        )
        self.config_refused = Gauge(
            "gpuconf_node_config_refused",
            "1 while the node config on disk is refused as invalid (the last good one serves).",
            registry=r,
        )
        self.xid_events = Counter(
            "gpuconf_node_xid_events",
            "XID events seen, by class (application, workload, reset).",
            ["class"],
            registry=r,
        )
        self.gpus_awaiting_reset = Gauge(
            "gpuconf_node_gpus_awaiting_reset",
            "GPUs withheld after a reset XID until NVML shows them reset.",
            registry=r,
        )
        self.nvml_errors = Counter(
            "gpuconf_node_nvml_errors", "NVML calls that failed.", ["call"], registry=r
        )

        self.pod_resources_up = Gauge(
            "gpuconf_node_pod_resources_up",
            "1 while the kubelet's PodResources API says which devices are held.",
            registry=r,
        )
        self.device_checkpoint_readable = Gauge(
            "gpuconf_node_device_checkpoint_readable",
            "0 while the kubelet's device checkpoint cannot be read (bad content: held is then "
            "List's alone; a failing read: held is unknown).",
            registry=r,
        )
        self.handed_out_save_failing = Gauge(
            "gpuconf_node_handed_out_save_failing",
            "1 while what Allocate hands out cannot be written to the state folder: Allocate "
            "still answers, but a restart would forget what no poll has named yet.",
            registry=r,
        )
        self.pending_gpu_changes = Gauge(
            "gpuconf_node_pending_gpu_changes",
            "GPUs whose config change waits for containers to release them (held: named by "
            "PodResources List or the kubelet's device checkpoint, or handed out by Allocate "
            "and not yet named by a poll begun after the answer, for at most 30 s).",
            registry=r,
        )
        self.mps_daemon_up = Gauge(
            "gpuconf_node_mps_daemon_up",
            "1 while the resource's MPS control daemon answers.",
            ["resource"],
            registry=r,
        )
        self.mps_daemon_starts = Counter(
            "gpuconf_node_mps_daemon_starts",
            "MPS control daemon starts, by result.",
            ["resource", "result"],
            registry=r,
        )

    def set_devices(self, resource: str, healthy: int, unhealthy: int) -> None:
        self.devices.labels(resource, "Healthy").set(healthy)
        self.devices.labels(resource, "Unhealthy").set(unhealthy)

    def forget_resource(self, resource: str) -> None:
        for health in ("Healthy", "Unhealthy"):
            with contextlib.suppress(KeyError):
                self.devices.remove(resource, health)
        with contextlib.suppress(KeyError):
            self.registered.remove(resource)
        with contextlib.suppress(KeyError):
            self.plugin_socket_unavailable.remove(resource)
