"""DRA mode: a DeviceClass per class, a ResourceClaimTemplate per class and namespace, the quota key."""

from __future__ import annotations

from typing import Any

from gpuconf.api.base import kubernetes_minor
from gpuconf.api.cluster import Cluster
from gpuconf.compiler.dra.devices import DRIVER
from gpuconf.compiler.dra.selector import cel_selector
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.gpus.catalog import Catalog
from gpuconf.gpus.dra_attributes import attribute_set

CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"
CLAIM_REQUEST = "gpu"


def resource_api_version(kubernetes: str) -> str:
    """resource.k8s.io is v1beta1 in 1.32, v1beta2 in 1.33 and v1 (GA) from 1.34."""
    minor = kubernetes_minor(kubernetes)
    version = "v1beta1" if minor <= 32 else "v1beta2" if minor == 33 else "v1"
    return f"resource.k8s.io/{version}"


def dra_quota_key(resolved: ResolvedClass) -> str:
    return f"{resolved.name}.deviceclass.resource.k8s.io/devices"


def _driver_config(resolved: ResolvedClass) -> dict[str, Any] | None:
    """The driver's GpuConfig (or MigDeviceConfig) carrying the class's sharing."""
    sharing = resolved.spec.sharing
    kind = "GpuConfig" if resolved.spec.select.mig_profile is None else "MigDeviceConfig"
    settings: dict[str, Any]
    if sharing.strategy == "none":
        return None
    if sharing.strategy == "time-slicing":
        settings = {"strategy": "TimeSlicing"}
        if kind == "GpuConfig":
            settings["timeSlicingConfig"] = {"interval": "Default"}
    else:
        mps: dict[str, Any] = {
            "defaultPinnedDeviceMemoryLimit": f"{resolved.mps_memory_limit_mib}Mi"
        }
        if sharing.active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = sharing.active_thread_percentage
        settings = {"strategy": "MPS", "mpsConfig": mps}
    return {"apiVersion": CONFIG_API_VERSION, "kind": kind, "sharing": settings}


def device_class(cluster: Cluster, resolved: ResolvedClass, catalog: Catalog) -> Artifact:
    # Validation proved the expression selects exactly the class's GPUs.
    expression = cel_selector(
        resolved, catalog, attribute_set(cluster.spec.dra.driver_version)
    ).expression
    return manifest(
        f"cluster/deviceclass-{resolved.name}.yaml",
        "deviceclass.yaml.j2",
        "DeviceClass",
        {
            "api_version": resource_api_version(cluster.spec.kubernetes.version),
            "meta": metadata(cluster, resolved.name, "device-class", wave=WAVE_CONFIG),
            "expression": expression,
            "driver": DRIVER,
            "parameters": _driver_config(resolved),
        },
        source=("spec", "resourceClasses", resolved.index),
    )


def claim_template(cluster: Cluster, resolved: ResolvedClass, namespace: str) -> Artifact:
    api_version = resource_api_version(cluster.spec.kubernetes.version)
    request: dict[str, Any] = {"name": CLAIM_REQUEST}
    if api_version.endswith("/v1beta1"):
        request["deviceClassName"] = resolved.name
    else:
        request["exactly"] = {"deviceClassName": resolved.name}
    return manifest(
        f"claims/{namespace}/{resolved.name}.yaml",
        "resourceclaimtemplate.yaml.j2",
        "ResourceClaimTemplate",
        {
            "api_version": api_version,
            "meta": metadata(
                cluster, resolved.name, "claim-template", namespace=namespace, wave=WAVE_CONFIG
            ),
            "requests": [request],
        },
        source=("spec", "resourceClasses", resolved.index),
    )


def dra_objects(
    cluster: Cluster, classes: tuple[ResolvedClass, ...], catalog: Catalog
) -> list[Artifact]:
    """DeviceClasses, and the claim templates pods name in each namespace with quota for a class."""
    by_name = {c.name: c for c in classes}
    artifacts = [device_class(cluster, c, catalog) for c in classes]
    for quota in cluster.spec.quotas:
        artifacts += [
            claim_template(cluster, by_name[name], quota.namespace)
            for name, count in sorted(quota.classes.items())
            if count > 0
        ]
    return artifacts
