"""Which device IDs running containers hold, from the kubelet's PodResources API."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from grpclib.client import Channel, UnaryUnaryMethod
from grpclib.exceptions import GRPCError, StreamTerminatedError

from gpuconf.node.kubelet.io_loop import io_loop
from gpuconf.node.kubelet.proto import podresources_pb2

POD_RESOURCES_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
LIST_TIMEOUT_SECONDS = 2.0

HeldDevices = Mapping[str, frozenset[str]]
"""Resource name -> device IDs some running container holds."""


def union_held(*held: HeldDevices) -> HeldDevices:
    """The device IDs any of `held` names, by resource."""
    names = sorted({name for each in held for name in each})
    return {name: frozenset().union(*(each.get(name, ()) for each in held)) for name in names}


class PodResourcesUnavailable(Exception):
    """The kubelet did not say what is held; nothing may be assumed free."""


def held_devices(socket: Path) -> HeldDevices:
    if not socket.exists():
        raise PodResourcesUnavailable(f"{socket} does not exist")
    try:
        response = io_loop().run(_list(socket), LIST_TIMEOUT_SECONDS + 1)
    except GRPCError as error:
        raise PodResourcesUnavailable(f"{error.status.name}: {error.message}") from None
    except (OSError, StreamTerminatedError, TimeoutError) as error:
        raise PodResourcesUnavailable(f"UNAVAILABLE: {error or type(error).__name__}") from None
    held: dict[str, set[str]] = {}
    for pod in response.pod_resources:
        for container in pod.containers:
            for devices in container.devices:
                held.setdefault(devices.resource_name, set()).update(devices.device_ids)
    return {name: frozenset(ids) for name, ids in held.items()}


async def _list(socket: Path) -> podresources_pb2.ListPodResourcesResponse:
    channel = Channel(path=str(socket))
    try:
        call = UnaryUnaryMethod(
            channel,
            "/v1.PodResourcesLister/List",
            podresources_pb2.ListPodResourcesRequest,
            podresources_pb2.ListPodResourcesResponse,
        )
        return await call(podresources_pb2.ListPodResourcesRequest(), timeout=LIST_TIMEOUT_SECONDS)
    finally:
        channel.close()
