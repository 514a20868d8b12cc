"""Register a resource with the kubelet (which dials the plugin back inside the call)."""

from __future__ import annotations

from pathlib import Path

from grpclib.client import Channel, UnaryUnaryMethod
from grpclib.exceptions import GRPCError, StreamTerminatedError

from gpuconf.node.kubelet.io_loop import io_loop
from gpuconf.node.kubelet.proto import api_pb2

API_VERSION = "v1beta1"
KUBELET_SOCKET = "kubelet.sock"
REGISTER_TIMEOUT_SECONDS = 5.0


class RegistrationFailed(Exception):
    pass


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
        io_loop().run(_register(kubelet, request), REGISTER_TIMEOUT_SECONDS + 1)
    except GRPCError as error:
        raise RegistrationFailed(f"{error.status.name}: {error.message}") from None
    except (OSError, StreamTerminatedError, TimeoutError) as error:
        raise RegistrationFailed(f"UNAVAILABLE: {error or type(error).__name__}") from None


async def _register(kubelet: Path, request: api_pb2.RegisterRequest) -> None:
    channel = Channel(path=str(kubelet))
    try:
        call = UnaryUnaryMethod(
            channel, "/v1beta1.Registration/Register", api_pb2.RegisterRequest, api_pb2.Empty
        )
        await call(request, timeout=REGISTER_TIMEOUT_SECONDS)
    finally:
        channel.close()
