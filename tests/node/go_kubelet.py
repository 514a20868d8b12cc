"""The kubelet's own device-manager code as a stand-in: kubelet_go/ (Go, k8s.io/kubernetes
v1.34.4), built once per machine from the Go modules pinned there, driven over its stdin and
stdout (JSON lines; main.go says which)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

from go_program import build_program, prebuilt_or_built
from kubelet_stub import Devices
from plugin_process import NodeProcess

SOURCE = Path(__file__).with_name("kubelet_go")
ENV = "GPUCONF_KUBELET_GO_BIN"
T = TypeVar("T")


class KubeletRefused(Exception):
    """A command the kubelet's code answered with an error; the message is its own."""


def build() -> Path:
    """The built program, building it first when these sources have none yet. Raises
    control_plane.cluster.ControlPlaneError when no Go can be found or fetched."""
    return build_program(SOURCE, "kubelet-go", "kubelet-devices")


def prebuilt_or_installed() -> Path:
    return prebuilt_or_built(ENV, "Go kubelet stand-in", SOURCE, "kubelet-go", "kubelet-devices")


def devices_of(response: dict[str, Any]) -> Devices:
    """A ListAndWatchResponse as proto3 JSON -> device ID: (health, NUMA nodes), the form
    kubelet_stub.KubeletStub keeps (an ID of 0 is left out of proto3 JSON)."""
    return {
        d["ID"]: (
            d["health"],
            tuple(int(n.get("ID", 0)) for n in d.get("topology", {}).get("nodes", [])),
        )
        for d in response.get("devices", [])
    }


def kubelet_for(binary: Path, process: NodeProcess, sources_late: bool = False) -> GoKubelet:
    """A kubelet whose device-plugin folder and pod-resources socket are the process's."""
    return GoKubelet(
        binary,
        process.plugin_dir,
        process.pod_resources_socket,
        process.files / "kubelet.log",
        sources_late,
    )


class GoKubelet:
    """One run of the program: the kubelet serving kubelet.sock in plugin_dir and the
    pod-resources API, its device manager's checkpoint beside kubelet.sock (kept across runs,
    like the kubelet's). sources_late: a restarted kubelet that has not seen its pod sources
    yet, until `learn` and `sources-ready` (main.go)."""

    def __init__(
        self,
        binary: Path,
        plugin_dir: Path,
        pod_resources: Path,
        log: Path,
        sources_late: bool = False,
    ) -> None:
        self.binary = binary
        self.plugin_dir = plugin_dir
        self.pod_resources = pod_resources
        self.sources_late = sources_late
        self.log_path = log
        self.events: list[dict[str, Any]] = []
        self._replies: dict[int, dict[str, Any]] = {}
        self._changed = threading.Condition()
        self._next_id = 0
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> GoKubelet:
        with self.log_path.open("a") as log:
            self._process = subprocess.Popen(
                [
                    self.binary,
                    f"--plugin-dir={self.plugin_dir}",
                    f"--pod-resources-socket={self.pod_resources}",
                    f"--sources-late={str(self.sources_late).lower()}",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert self._process.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self._process.stdout,), daemon=True
        )
        self._reader.start()
        self.wait(lambda: self.event("ready"), what="kubelet.sock served")
        return self

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            message = json.loads(line)
            with self._changed:
                if "id" in message:
                    self._replies[message["id"]] = message
                else:
                    self.events.append(message)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """End the process as systemd ends the kubelet: its sockets stay behind."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.send_signal(sig)
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)
        if self._reader is not None:
            self._reader.join(5)
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                pipe.close()

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait(self, check: Callable[[], T | None], timeout: float = 10.0, what: str = "") -> T:
        found: list[T] = []

        def ready() -> bool:
            value = check()
            if value is not None and value is not False:
                found.append(value)
                return True
            if self._process is not None and self._process.poll() is not None:
                raise AssertionError(
                    f"the Go kubelet exited ({self._process.returncode}):\n{self.log()}"
                )
            return False

        with self._changed:
            if not self._changed.wait_for(ready, timeout):
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what}:\n{self.log()}"
                )
        return found[-1]

    def event(
        self, kind: str, resource: str | None = None, after: int = 0
    ) -> dict[str, Any] | None:
        """The latest event of a kind (for a resource), among events[after:]."""
        for event in reversed(self.events[after:]):
            if event["event"] == kind and resource in (None, event.get("resource")):
                return event
        return None

    def wait_connected(
        self, resource: str, after: int = 0, timeout: float = 10.0
    ) -> dict[str, Any]:
        """The plugin's connection (registration accepted, dialled back, options read), the
        first one from events[after:]."""

        def connected() -> dict[str, Any] | None:
            return next(
                (
                    e
                    for e in self.events[after:]
                    if e["event"] == "connected" and e["resource"] == resource
                ),
                None,
            )

        return self.wait(connected, timeout, f"{resource} connected")

    def wait_devices(
        self,
        resource: str,
        check: Callable[[Devices], bool] = lambda _: True,
        timeout: float = 10.0,
        after: int = 0,
    ) -> Devices:
        """The latest device list of a resource among events[after:], once check passes."""

        def latest() -> Devices | None:
            event = self.event("devices", resource, after)
            devices = devices_of(event["response"]) if event else None
            return devices if devices is not None and check(devices) else None

        return self.wait(latest, timeout, f"a matching device list of {resource}")

    def call(self, op: str, **fields: Any) -> Any:
        """Run a command; its result, or KubeletRefused with the kubelet code's error."""
        assert self._process is not None
        assert self._process.stdin is not None
        with self._changed:
            self._next_id += 1
            ident = self._next_id
        self._process.stdin.write(json.dumps({"id": ident, "op": op, **fields}) + "\n")
        self._process.stdin.flush()
        reply = self.wait(lambda: self._replies.pop(ident, None), what=f"the reply to {op}")
        if "error" in reply:
            raise KubeletRefused(reply["error"])
        return reply["result"]
