"""One resource's DevicePlugin gRPC service on its own unix socket (grpclib, on the I/O loop)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from grpclib.const import Cardinality, Handler, Status
from grpclib.exceptions import GRPCError
from grpclib.server import Server, Stream

from gpuconf.errors import UserError
from gpuconf.node import log
from gpuconf.node.kubelet.allocation import (
    AllocationRefused,
    UnhealthyDevices,
    container_allocation,
)
from gpuconf.node.kubelet.handed_out import HandedOut
from gpuconf.node.kubelet.io_loop import io_loop
from gpuconf.node.kubelet.preferred import preferred_ids
from gpuconf.node.kubelet.proto import api_pb2
from gpuconf.node.latest import Latest
from gpuconf.node.metrics import Metrics
from gpuconf.node.resource_view import ResourceView

SERVICE = "/v1beta1.DevicePlugin"
MAX_STREAMS = 32
"""Open ListAndWatch streams per socket."""
START_TIMEOUT_SECONDS = 5.0
STREAMS_END_SECONDS = 1.0
"""How long stop() waits for the ListAndWatch streams to send their last status."""

_log = log.get("plugin")


def _device_message(view: ResourceView) -> api_pb2.ListAndWatchResponse:
    devices = []
    for device in view.devices:
        topology = (
            api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=device.numa_node)])
            if device.numa_node is not None
            else None
        )
        devices.append(
            api_pb2.Device(ID=device.id, health=view.health_of(device), topology=topology)
        )
    return api_pb2.ListAndWatchResponse(devices=devices)


class DevicePluginService:
    def __init__(
        self, views: Latest[ResourceView], metrics: Metrics, handed_out: HandedOut
    ) -> None:
        self._views = views
        self._metrics = metrics
        self._handed_out = handed_out
        self._ending = False
        self._wakers: set[asyncio.Event] = set()
        """One per ListAndWatch call, from the moment it is entered until it has ended."""

    @property
    def streams(self) -> int:
        """ListAndWatch calls not yet ended, those still reading their request included."""
        return len(self._wakers)

    def end_streams(self) -> None:
        """Make every ListAndWatch call end with UNAVAILABLE (call on the loop).

        The kubelet learns that a plugin has gone only when its ListAndWatch stream ends
        (k8s.io/kubernetes pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go Run, then
        handler.go runClient → ManagerImpl.PluginDisconnected, which marks the devices
        unhealthy). grpclib's Server.close() only cancels the handlers, and a cancelled handler
        sends the client nothing: the kubelet would go on advertising a removed resource."""
        self._ending = True
        for waker in self._wakers:
            waker.set()

    def __mapping__(self) -> Mapping[str, Handler]:
        unary = Cardinality.UNARY_UNARY
        return {
            f"{SERVICE}/GetDevicePluginOptions": Handler(
                self.GetDevicePluginOptions, unary, api_pb2.Empty, api_pb2.DevicePluginOptions
            ),
            f"{SERVICE}/ListAndWatch": Handler(
                self.ListAndWatch,
                Cardinality.UNARY_STREAM,
                api_pb2.Empty,
                api_pb2.ListAndWatchResponse,
            ),
            f"{SERVICE}/GetPreferredAllocation": Handler(
                self.GetPreferredAllocation,
                unary,
                api_pb2.PreferredAllocationRequest,
                api_pb2.PreferredAllocationResponse,
            ),
            f"{SERVICE}/Allocate": Handler(
                self.Allocate, unary, api_pb2.AllocateRequest, api_pb2.AllocateResponse
            ),
            f"{SERVICE}/PreStartContainer": Handler(
                self.PreStartContainer,
                unary,
                api_pb2.PreStartContainerRequest,
                api_pb2.PreStartContainerResponse,
            ),
        }

    async def GetDevicePluginOptions(self, stream: Stream[Any, Any]) -> None:
        await stream.recv_message()
        await stream.send_message(
            api_pb2.DevicePluginOptions(get_preferred_allocation_available=True)
        )

    async def ListAndWatch(self, stream: Stream[Any, Any]) -> None:
        if len(self._wakers) >= MAX_STREAMS:
            raise GRPCError(
                Status.RESOURCE_EXHAUSTED,
                f"{MAX_STREAMS} ListAndWatch streams are open on this socket already",
            )
        # Counted before any await: a call the kubelet opened just before a stop (it opens one
        # right after Register returns) is waited for and ended, not cancelled unanswered.
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        self._wakers.add(changed)
        stop_watching: Callable[[], None] | None = None
        try:
            await stream.recv_message()
            _, view = self._views.current()
            if not self._ending:

                def wake() -> None:
                    loop.call_soon_threadsafe(changed.set)

                stop_watching = self._views.watch(wake)
                version, view = self._views.current()
                await stream.send_message(_device_message(view))
            while not self._ending:
                await changed.wait()
                changed.clear()
                newest, view = self._views.current()
                if not self._ending and newest != version:
                    version = newest
                    await stream.send_message(_device_message(view))
            # Sent here rather than raised, so that `streams` counts it sent.
            await stream.send_trailing_metadata(
                status=Status.UNAVAILABLE,
                status_message=f"the {view.resource.name} plugin stopped serving",
            )
        finally:
            if stop_watching is not None:
                stop_watching()
            self._wakers.discard(changed)

    async def GetPreferredAllocation(self, stream: Stream[Any, Any]) -> None:
        request = await _request(stream)
        _, view = self._views.current()
        response = api_pb2.PreferredAllocationResponse()
        for container in request.container_requests:
            chosen = preferred_ids(
                view,
                list(container.available_deviceIDs),
                list(container.must_include_deviceIDs),
                container.allocation_size,
            )
            response.container_responses.append(
                api_pb2.ContainerPreferredAllocationResponse(deviceIDs=chosen)
            )
        await stream.send_message(response)

    async def Allocate(self, stream: Stream[Any, Any]) -> None:
        """Checked against the current view and recorded as handed out in one step, under the
        supervisor's decision lock (kubelet/handed_out.py): the loop waits here for no more than
        a decision's in-memory work."""
        request = await _request(stream)
        asked = [list(container.devices_ids) for container in request.container_requests]
        try:
            with self._handed_out.decision:
                _, view = self._views.current()
                response = api_pb2.AllocateResponse(
                    container_responses=[container_allocation(view, ids) for ids in asked]
                )
                handed = (device for ids in asked for device in ids)
                grant = self._handed_out.record(view.resource.name, handed)
        except AllocationRefused as refused:
            name = view.resource.name
            self._metrics.allocate_errors.labels(name).inc()
            _log.warning("allocation refused", extra=log.kv(resource=name, reason=str(refused)))
            code = (
                Status.FAILED_PRECONDITION
                if isinstance(refused, UnhealthyDevices)
                else Status.INVALID_ARGUMENT
            )
            raise GRPCError(code, str(refused)) from None
        self._metrics.allocations.labels(view.resource.name).inc(len(asked))
        try:
            # On disk before the kubelet has the answer: a process that dies before the write
            # never answers, so no grant the kubelet received is missing from the file.
            await asyncio.to_thread(self._handed_out.save, grant)
            await stream.send_message(response)
        finally:
            self._handed_out.sent(grant)

    async def PreStartContainer(self, stream: Stream[Any, Any]) -> None:
        await stream.recv_message()
        await stream.send_message(api_pb2.PreStartContainerResponse())


class PluginSocketUnavailable(UserError):
    """Something in the plugin directory stands where the socket goes (a folder, say)."""


class PluginServer:
    """Serve a resource's views on ``plugin_dir/socket_name``; restartable after stop()."""

    def __init__(
        self,
        socket_path: Path,
        views: Latest[ResourceView],
        metrics: Metrics,
        handed_out: HandedOut,
    ) -> None:
        self.socket_path = socket_path
        self._views = views
        self._metrics = metrics
        self._handed_out = handed_out
        self._server: tuple[Server, DevicePluginService] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Raises PluginSocketUnavailable when the socket cannot be made there."""
        self.stop()
        service = DevicePluginService(self._views, self._metrics, self._handed_out)
        try:
            self.socket_path.unlink(missing_ok=True)
            server = io_loop().run(_started(service, self.socket_path), START_TIMEOUT_SECONDS)
        except OSError as error:
            raise PluginSocketUnavailable(
                f"{self.socket_path}: cannot serve the device plugin here: "
                f"{error.strerror or error}"
            ) from None
        with self._lock:
            self._server = (server, service)

    def stop(self) -> None:
        with self._lock:
            serving, self._server = self._server, None
        if serving is None:
            return
        with contextlib.suppress(TimeoutError):
            io_loop().run(_closed(*serving), START_TIMEOUT_SECONDS)
        if self.socket_path.is_socket():  # anything else put there since is not ours to remove
            self.socket_path.unlink(missing_ok=True)

    @property
    def serving(self) -> bool:
        with self._lock:
            return self._server is not None and self.socket_path.exists()


async def _request(stream: Stream[Any, Any]) -> Any:
    request = await stream.recv_message()
    if request is None:
        raise GRPCError(Status.INVALID_ARGUMENT, "no request message")
    return request


async def _started(service: DevicePluginService, socket_path: Path) -> Server:
    server = Server([service])  # made on the loop it serves from
    await server.start(path=str(socket_path))
    return server


async def _closed(server: Server, service: DevicePluginService) -> None:
    """End the ListAndWatch streams with a status the client sees, then stop listening and
    cancel whatever call is left."""
    service.end_streams()
    deadline = asyncio.get_running_loop().time() + STREAMS_END_SECONDS
    while service.streams and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    server.close()
    await server.wait_closed()
