"""Which device IDs running containers hold, from the kubelet's PodResources API."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import grpc

from gpuconf.node.kubelet.proto import podresources_pb2, podresources_pb2_grpc
from gpuconf.node.kubelet.registration import unix_target

POD_RESOURCES_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
LIST_TIMEOUT_SECONDS = 2.0

HeldDevices = Mapping[str, frozenset[str]]
"""Resource name -> device IDs some running container holds."""


class PodResourcesUnavailable(Exception):
    """The kubelet did not say what is held; nothing may be assumed free."""


def held_devices(socket: Path) -> HeldDevices:
    if not socket.exists():
        raise PodResourcesUnavailable(f"{socket} does not exist")
    try:
        with grpc.insecure_channel(unix_target(socket)) as channel:
            lister = podresources_pb2_grpc.PodResourcesListerStub(channel)  # type: ignore[no-untyped-call]
            response = lister.List(
                podresources_pb2.ListPodResourcesRequest(), timeout=LIST_TIMEOUT_SECONDS
            )
    except grpc.RpcError as error:
        raise PodResourcesUnavailable(f"{error.code().name}: {error.details()}") from None
    held: dict[str, set[str]] = {}
    for pod in response.pod_resources:
        for container in pod.containers:
            for devices in container.devices:
                held.setdefault(devices.resource_name, set()).update(devices.device_ids)
    return {name: frozenset(ids) for name, ids in held.items()}
