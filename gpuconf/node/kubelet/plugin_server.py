"""One resource's DevicePlugin gRPC service on its own unix socket."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc

from gpuconf.node import log
from gpuconf.node.kubelet.allocation import (
    AllocationRefused,
    UnhealthyDevices,
    container_allocation,
)
from gpuconf.node.kubelet.preferred import preferred_ids
from gpuconf.node.kubelet.proto import api_pb2, api_pb2_grpc
from gpuconf.node.kubelet.registration import unix_target
from gpuconf.node.latest import Latest
from gpuconf.node.metrics import Metrics
from gpuconf.node.resource_view import ResourceView

STREAM_CHECK_SECONDS = 0.5
"""How often an idle ListAndWatch stream looks whether its client or server went away."""
MAX_STREAMS = 32
"""Open ListAndWatch streams per socket; each holds a worker thread for its whole life."""
UNARY_WORKERS = 8
"""Threads left for Allocate and the other short calls however many streams are open."""

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


class DevicePluginService(api_pb2_grpc.DevicePluginServicer):
    def __init__(
        self, views: Latest[ResourceView], metrics: Metrics, stopping: threading.Event
    ) -> None:
        self._views = views
        self._metrics = metrics
        self._stopping = stopping
        self._stream_slots = threading.BoundedSemaphore(MAX_STREAMS)

    def GetDevicePluginOptions(
        self, request: api_pb2.Empty, context: grpc.ServicerContext
    ) -> api_pb2.DevicePluginOptions:
        return api_pb2.DevicePluginOptions(get_preferred_allocation_available=True)

    def ListAndWatch(
        self, request: api_pb2.Empty, context: grpc.ServicerContext
    ) -> Iterator[api_pb2.ListAndWatchResponse]:
        if not self._stream_slots.acquire(blocking=False):
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{MAX_STREAMS} ListAndWatch streams are open on this socket already",
            )
        try:
            yield from self._watch(context)
        finally:
            self._stream_slots.release()

    def _watch(self, context: grpc.ServicerContext) -> Iterator[api_pb2.ListAndWatchResponse]:
        version, view = self._views.current()
        yield _device_message(view)
        while context.is_active() and not self._stopping.is_set():
            newer = self._views.wait_newer(version, STREAM_CHECK_SECONDS)
            if newer is not None:
                version, view = newer
                yield _device_message(view)

    def GetPreferredAllocation(
        self, request: api_pb2.PreferredAllocationRequest, context: grpc.ServicerContext
    ) -> api_pb2.PreferredAllocationResponse:
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
        return response

    def Allocate(
        self, request: api_pb2.AllocateRequest, context: grpc.ServicerContext
    ) -> api_pb2.AllocateResponse:
        _, view = self._views.current()
        name = view.resource.name
        response = api_pb2.AllocateResponse()
        try:
            for container in request.container_requests:
                response.container_responses.append(
                    container_allocation(view, list(container.devices_ids))
                )
        except AllocationRefused as refused:
            self._metrics.allocate_errors.labels(name).inc()
            _log.warning("allocation refused", extra=log.kv(resource=name, reason=str(refused)))
            code = (
                grpc.StatusCode.FAILED_PRECONDITION
                if isinstance(refused, UnhealthyDevices)
                else grpc.StatusCode.INVALID_ARGUMENT
            )
            context.abort(code, str(refused))
        self._metrics.allocations.labels(name).inc(len(request.container_requests))
        return response

    def PreStartContainer(
        self, request: api_pb2.PreStartContainerRequest, context: grpc.ServicerContext
    ) -> api_pb2.PreStartContainerResponse:
        return api_pb2.PreStartContainerResponse()


class PluginServer:
    """Serve a resource's views on ``plugin_dir/socket_name``; restartable after stop()."""

    def __init__(self, socket_path: Path, views: Latest[ResourceView], metrics: Metrics) -> None:
        self.socket_path = socket_path
        self._views = views
        self._metrics = metrics
        self._server: grpc.Server | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        self.stop()
        self.socket_path.unlink(missing_ok=True)
        self._stopping = threading.Event()
        server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=MAX_STREAMS + UNARY_WORKERS, thread_name_prefix="grpc"
            ),
            options=[("grpc.so_reuseport", 0)],
        )
        service = DevicePluginService(self._views, self._metrics, self._stopping)
        api_pb2_grpc.add_DevicePluginServicer_to_server(  # type: ignore[no-untyped-call]
            service, server
        )
        server.add_insecure_port(unix_target(self.socket_path))
        server.start()
        self._server = server

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._views.wake_all()
        self._server.stop(grace=0.2).wait(timeout=2)
        self._server = None
        self.socket_path.unlink(missing_ok=True)

    @property
    def serving(self) -> bool:
        return self._server is not None and self.socket_path.exists()
