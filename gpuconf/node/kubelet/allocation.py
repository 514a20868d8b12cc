"""Allocate: what a container gets for the device IDs the kubelet picked."""

from __future__ import annotations

from collections.abc import Sequence

from gpuconf.node.kubelet.proto import api_pb2
from gpuconf.node.resource_view import ResourceView

VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
VOLUME_MOUNTS_ROOT = "/var/run/nvidia-container-devices"
"""NVIDIA's volume-mounts strategy: one /dev/null mount per device under this directory."""
CDI_KIND = "nvidia.com/gpu"
"""The kind `nvidia-ctk cdi generate` writes; with --device-name-strategy=uuid, GPUs and MIG
devices are named by their UUIDs."""
NO_LEGACY_DEVICES = "void"
"""With CDI the runtime already has the devices; `void` keeps NVIDIA's legacy hook from adding
the ones an image's own NVIDIA_VISIBLE_DEVICES (CUDA images say `all`) would name."""
MPS_PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
SHM = "/dev/shm"


class AllocationRefused(Exception):
    """The request cannot be served; the message tells the kubelet (and the user) why."""


class UnhealthyDevices(AllocationRefused):
    """Known devices that turned unhealthy after the kubelet chose them.

    The kubelet picks among the devices ListAndWatch last called healthy, so this happens when
    an XID lands between its choice and the call. NVIDIA's plugin (v0.20.0,
    internal/plugin/server.go Allocate → internal/rm/rm.go ValidateRequest) checks only that
    the IDs are known and hands the GPU out anyway; the container then starts on a GPU that
    just failed. Refusing fails the pod's admission instead (UnexpectedAdmissionError), and
    its controller recreates it, placed on the devices the kubelet now knows are healthy."""


def cdi_name(uuid: str) -> str:
    return f"{CDI_KIND}={uuid}"


def container_allocation(
    view: ResourceView, device_ids: Sequence[str]
) -> api_pb2.ContainerAllocateResponse:
    unknown = [i for i in device_ids if i not in view.by_id]
    if unknown:
        offered = f"{len(view.devices)} device(s)" if view.devices else "no devices"
        raise AllocationRefused(
            f"unknown device IDs for {view.resource.name}: {', '.join(unknown)} "
            f"(this plugin offers {offered})"
        )
    unhealthy = [i for i in dict.fromkeys(device_ids) if i not in view.healthy_ids]
    if unhealthy:
        raise UnhealthyDevices(
            f"{view.resource.name} device(s) turned unhealthy before Allocate: "
            f"{', '.join(unhealthy)}; not handed out (the pod is to be placed again)"
        )
    sharing = view.resource.sharing
    if view.shared and sharing.fail_requests_greater_than_one and len(device_ids) > 1:
        raise AllocationRefused(
            f"request for {len(device_ids)} {view.resource.name} too large: shared resources "
            "(failRequestsGreaterThanOne) allow at most 1 per container"
        )
    uuids = list(dict.fromkeys(view.by_id[i].visible_uuid for i in device_ids))
    response = api_pb2.ContainerAllocateResponse()
    if view.device_list_strategy == "cdi":
        response.cdi_devices.extend(api_pb2.CDIDevice(name=cdi_name(uuid)) for uuid in uuids)
        response.envs[VISIBLE_DEVICES_ENV] = NO_LEGACY_DEVICES
    elif view.device_list_strategy == "volume-mounts":
        response.envs[VISIBLE_DEVICES_ENV] = VOLUME_MOUNTS_ROOT
        response.mounts.extend(
            api_pb2.Mount(host_path="/dev/null", container_path=f"{VOLUME_MOUNTS_ROOT}/{uuid}")
            for uuid in uuids
        )
    else:
        response.envs[VISIBLE_DEVICES_ENV] = ",".join(uuids)
    if sharing.strategy == "mps":
        _add_mps(response, view)
    return response


def _add_mps(response: api_pb2.ContainerAllocateResponse, view: ResourceView) -> None:
    """The daemon's pipe and shared memory; its limits are set server-side, out of the pod's reach."""
    sharing = view.resource.sharing
    if sharing.mps_pipe_directory is not None:
        pipe = sharing.mps_pipe_directory
        response.envs[MPS_PIPE_ENV] = pipe
        response.mounts.append(api_pb2.Mount(host_path=pipe, container_path=pipe))
    if sharing.mps_shm_directory is not None:
        response.mounts.append(
            api_pb2.Mount(host_path=sharing.mps_shm_directory, container_path=SHM)
        )
