"""A kubelet stand-in: serves Registration on kubelet.sock and dials every plugin back.

Like the real kubelet it calls GetDevicePluginOptions inside Register, then keeps a
ListAndWatch stream open per resource and remembers the latest device list. It also serves
PodResourcesLister/List on its own socket, saying which device IDs a test's "pods" hold.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any, TypeVar

import grpc

from gpuconf.node.kubelet.proto import (
    api_pb2,
    api_pb2_grpc,
    podresources_pb2,
    podresources_pb2_grpc,
)

T = TypeVar("T")
Devices = dict[str, tuple[str, tuple[int, ...]]]
"""Device ID -> (health, NUMA nodes)."""


class PodResourcesStub(podresources_pb2_grpc.PodResourcesListerServicer):
    """One pod per held resource, one container holding the IDs; change with hold/release."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, list[str]] = {}
        self.calls = 0

    def hold(self, resource: str, *device_ids: str) -> None:
        with self._lock:
            self._held.setdefault(resource, []).extend(device_ids)

    def release_all(self) -> None:
        with self._lock:
            self._held.clear()

    def List(
        self, request: podresources_pb2.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> podresources_pb2.ListPodResourcesResponse:
        response = podresources_pb2.ListPodResourcesResponse()
        with self._lock:
            self.calls += 1
            for n, (resource, ids) in enumerate(sorted(self._held.items())):
                devices = podresources_pb2.ContainerDevices(resource_name=resource, device_ids=ids)
                container = podresources_pb2.ContainerResources(name="main", devices=[devices])
                response.pod_resources.append(
                    podresources_pb2.PodResources(
                        name=f"pod-{n}", namespace="default", containers=[container]
                    )
                )
        return response


class KubeletStub(api_pb2_grpc.RegistrationServicer):
    def __init__(self, plugin_dir: Path, pod_resources_socket: Path | None = None) -> None:
        self.plugin_dir = plugin_dir
        self.socket = plugin_dir / "kubelet.sock"
        self.pod_resources_socket = pod_resources_socket
        self.pod_resources = PodResourcesStub()
        self.answer_registrations = threading.Event()
        self.answer_registrations.set()
        self.registrations: list[tuple[float, api_pb2.RegisterRequest]] = []
        self.options: dict[str, api_pb2.DevicePluginOptions] = {}
        self.lists: dict[str, list[Devices]] = {}
        self.list_times: dict[str, list[float]] = {}
        """When each of ``lists`` came (time.monotonic)."""
        self._changed = threading.Condition()
        self._streams: list[Any] = []
        self._channels: list[grpc.Channel] = []
        self._server: grpc.Server | None = None

    def start(self) -> KubeletStub:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        api_pb2_grpc.add_RegistrationServicer_to_server(self, self._server)  # type: ignore[no-untyped-call]
        self._server.add_insecure_port(f"unix://{self.socket}")
        if self.pod_resources_socket is not None:
            podresources_pb2_grpc.add_PodResourcesListerServicer_to_server(  # type: ignore[no-untyped-call]
                self.pod_resources, self._server
            )
            self._server.add_insecure_port(f"unix://{self.pod_resources_socket}")
        self._server.start()
        return self

    def stop(self) -> None:
        for stream in self._streams:
            stream.cancel()
        for channel in self._channels:
            channel.close()
        self.answer_registrations.set()
        if self._server is not None:
            self._server.stop(grace=0).wait(5)
        self.socket.unlink(missing_ok=True)
        if self.pod_resources_socket is not None:
            self.pod_resources_socket.unlink(missing_ok=True)

    def Register(
        self, request: api_pb2.RegisterRequest, context: grpc.ServicerContext
    ) -> api_pb2.Empty:
        """While ``answer_registrations`` is clear, hang like a stuck kubelet (past the
        plugin's timeout) before doing anything."""
        if not self.answer_registrations.is_set():
            self.answer_registrations.wait(30)
            context.abort(grpc.StatusCode.UNAVAILABLE, "this kubelet was hung")
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
                    self.list_times.setdefault(resource, []).append(time.monotonic())
                    self._changed.notify_all()
        except grpc.RpcError:
            return  # the plugin or this stand-in went away

    def timed_lists(self, resource: str) -> list[tuple[float, Devices]]:
        """Each device list of `resource` with when it arrived (time.monotonic), read at once:
        the two records grow together on the watching thread."""
        with self._changed:
            return list(
                zip(self.list_times.get(resource, []), self.lists.get(resource, []), strict=True)
            )

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
