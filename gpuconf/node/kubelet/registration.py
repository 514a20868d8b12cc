"""Register a resource with the kubelet (which dials the plugin back inside the call)."""

from __future__ import annotations

from pathlib import Path

import grpc

from gpuconf.node.kubelet.proto import api_pb2, api_pb2_grpc

API_VERSION = "v1beta1"
KUBELET_SOCKET = "kubelet.sock"
REGISTER_TIMEOUT_SECONDS = 5.0


class RegistrationFailed(Exception):
    pass


def unix_target(path: Path) -> str:
    return f"unix://{path.absolute()}"


def register(plugin_dir: Path, endpoint: str, resource_name: str) -> None:
    request = api_pb2.RegisterRequest(
        version=API_VERSION,
        endpoint=endpoint,
        resource_name=resource_name,
        options=api_pb2.DevicePluginOptions(get_preferred_allocation_available=True),
    )
    kubelet = plugin_dir / KUBELET_SOCKET
    if not kubelet.exists():
        raise RegistrationFailed(f"{kubelet} does not exist (is the kubelet running?)")
    try:
        with grpc.insecure_channel(unix_target(kubelet)) as channel:
            stub = api_pb2_grpc.RegistrationStub(channel)  # type: ignore[no-untyped-call]
            stub.Register(request, timeout=REGISTER_TIMEOUT_SECONDS)
    except grpc.RpcError as error:
        raise RegistrationFailed(f"{error.code().name}: {error.details()}") from None
