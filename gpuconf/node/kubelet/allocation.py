"""Allocate: what a container gets for the device IDs the kubelet picked."""

from __future__ import annotations

from collections.abc import Sequence

from gpuconf.node.kubelet.proto import api_pb2
from gpuconf.node.resource_view import ResourceView

VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
VOLUME_MOUNTS_ROOT = "/var/run/nvidia-container-devices"
"""NVIDIA's volume-mounts strategy: one /dev/null mount per device under this directory."""


class AllocationRefused(Exception):
    """The request cannot be served; the message tells the kubelet (and the user) why."""


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
    sharing = view.resource.sharing
    if view.shared and sharing.fail_requests_greater_than_one and len(device_ids) > 1:
        raise AllocationRefused(
            f"request for {len(device_ids)} {view.resource.name} too large: shared resources "
            "(failRequestsGreaterThanOne) allow at most 1 per container"
        )
    uuids = list(dict.fromkeys(view.by_id[i].visible_uuid for i in device_ids))
    response = api_pb2.ContainerAllocateResponse()
    if view.device_list_strategy == "volume-mounts":
        response.envs[VISIBLE_DEVICES_ENV] = VOLUME_MOUNTS_ROOT
        response.mounts.extend(
            api_pb2.Mount(host_path="/dev/null", container_path=f"{VOLUME_MOUNTS_ROOT}/{uuid}")
            for uuid in uuids
        )
    else:
        response.envs[VISIBLE_DEVICES_ENV] = ",".join(uuids)
    if sharing.strategy == "mps":
        _add_mps(response, view, uuids)
    return response


def _add_mps(
    response: api_pb2.ContainerAllocateResponse, view: ResourceView, uuids: list[str]
) -> None:
    sharing = view.resource.sharing
    if sharing.mps_pipe_directory is not None:
        response.envs["CUDA_MPS_PIPE_DIRECTORY"] = sharing.mps_pipe_directory
        response.mounts.append(
            api_pb2.Mount(
                host_path=sharing.mps_pipe_directory, container_path=sharing.mps_pipe_directory
            )
        )
    if sharing.mps_memory_limit_mi_b is not None:
        limit = sharing.mps_memory_limit_mi_b
        response.envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(f"{u}={limit}M" for u in uuids)
    if sharing.mps_active_thread_percentage is not None:
        response.envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(
            sharing.mps_active_thread_percentage
        )
