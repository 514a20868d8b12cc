"""A kubelet stand-in: serves Registration on kubelet.sock and dials every plugin back.

Like the real kubelet it calls GetDevicePluginOptions inside Register, then keeps a
ListAndWatch stream open per resource and remembers the latest device list.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any, TypeVar

import grpc

from gpuconf.node.kubelet.proto import api_pb2, api_pb2_grpc

T = TypeVar("T")
Devices = dict[str, tuple[str, tuple[int, ...]]]
"""Device ID -> (health, NUMA nodes)."""


class KubeletStub(api_pb2_grpc.RegistrationServicer):
    def __init__(self, plugin_dir: Path) -> None:
        self.plugin_dir = plugin_dir
        self.socket = plugin_dir / "kubelet.sock"
        self.registrations: list[tuple[float, api_pb2.RegisterRequest]] = []
        self.options: dict[str, api_pb2.DevicePluginOptions] = {}
        self.lists: dict[str, list[Devices]] = {}
        self._changed = threading.Condition()
        self._streams: list[Any] = []
        self._channels: list[grpc.Channel] = []
        self._server: grpc.Server | None = None

    def start(self) -> KubeletStub:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        api_pb2_grpc.add_RegistrationServicer_to_server(self, self._server)  # type: ignore[no-untyped-call]
        self._server.add_insecure_port(f"unix://{self.socket}")
        self._server.start()
        return self

    def stop(self) -> None:
        for stream in self._streams:
            stream.cancel()
        for channel in self._channels:
            channel.close()
        if self._server is not None:
            self._server.stop(grace=0).wait(5)
        self.socket.unlink(missing_ok=True)

    def Register(
        self, request: api_pb2.RegisterRequest, context: grpc.ServicerContext
    ) -> api_pb2.Empty:
        channel = grpc.insecure_channel(f"unix://{self.plugin_dir / request.endpoint}")
        self._channels.append(channel)
        plugin = api_pb2_grpc.DevicePluginStub(channel)  # type: ignore[no-untyped-call]
        options = plugin.GetDevicePluginOptions(api_pb2.Empty(), timeout=5)
        stream = plugin.ListAndWatch(api_pb2.Empty())
        self._streams.append(stream)
        with self._changed:
            self.registrations.append((time.monotonic(), request))
            self.options[request.resource_name] = options
            self._changed.notify_all()
        threading.Thread(
            target=self._watch, args=(request.resource_name, stream), daemon=True
        ).start()
        return api_pb2.Empty()

    def _watch(self, resource: str, stream: Any) -> None:
        try:
            for response in stream:
                devices = {
                    d.ID: (d.health, tuple(n.ID for n in d.topology.nodes))
                    for d in response.devices
                }
                with self._changed:
                    self.lists.setdefault(resource, []).append(devices)
                    self._changed.notify_all()
        except grpc.RpcError:
            return  # the plugin or this stand-in went away

    def wait(self, check: Callable[[], T | None], timeout: float = 5.0, what: str = "") -> T:
        with self._changed:
            result: list[T] = []

            def ready() -> bool:
                value = check()
                if value is None or value is False:
                    return False
                result.append(value)
                return True

            if not self._changed.wait_for(ready, timeout):
                raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
            return result[-1]

    def wait_registered(self, resource: str, timeout: float = 5.0) -> api_pb2.RegisterRequest:
        def found() -> api_pb2.RegisterRequest | None:
            matching = [r for _, r in self.registrations if r.resource_name == resource]
            return matching[-1] if matching else None

        return self.wait(found, timeout, f"registration of {resource}")

    def wait_devices(
        self, resource: str, check: Callable[[Devices], bool] = lambda _: True, timeout: float = 5.0
    ) -> Devices:
        def latest() -> Devices | None:
            lists = self.lists.get(resource)
            return lists[-1] if lists and check(lists[-1]) else None

        return self.wait(latest, timeout, f"a matching device list of {resource}")
