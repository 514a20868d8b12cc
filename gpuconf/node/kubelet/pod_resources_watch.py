"""Poll the kubelet's PodResources API on a thread of its own (a hung kubelet stalls only it).

Held is what List names plus what the kubelet's device checkpoint has on record: right after a
kubelet restart List answers from a pod manager still filling (pkg/kubelet/kubelet.go
ListenAndServePodResources walks podManager; cmd/kubelet/app/server.go startKubelet serves it
beside Run, before the pod sources are seen), while the device manager still counts every
checkpointed allocation as taken. An entry for a pod that ended stays in the file until the
kubelet next writes it; Supervisor has it written (a ListAndWatch update makes the kubelet write
its checkpoint: manager.go genericDeviceUpdateCallback) when such an entry holds a change up.

A checkpoint whose content the kubelet could not read either adds nothing: held is what List
names, as before gpuconf read the file. The kubelet reads the file only at its start and goes on
with an empty allocation record when it cannot (manager.go Start: "Continue after failing to
read checkpoint file"), so it hands those devices out again itself and rewrites the file with
the next device list; waiting on them would only stop every change for good. A read that fails
here instead (permission, not a file, I/O) says nothing of the kubelet's record, which is
likely whole: held is unknown, as when List fails, and every move waits.

Held also has what our plugins handed out that no stored poll has named yet
(kubelet/handed_out.py): each poll notes when it started, and once stored lets go of the IDs
it names (in List or on the checkpoint) that were handed out before it began, and writes
what it let go of (and the times of the answers sent since) to the record's file.
"""

from __future__ import annotations

import threading
from pathlib import Path

from gpuconf.node import log
from gpuconf.node.kubelet.device_checkpoint import (
    CheckpointCorrupt,
    CheckpointUnreadable,
    checkpointed_devices,
)
from gpuconf.node.kubelet.handed_out import HandedOut
from gpuconf.node.kubelet.pod_resources import (
    HeldDevices,
    PodResourcesUnavailable,
    held_devices,
    union_held,
)
from gpuconf.node.metrics import Metrics

POLL_SECONDS = 1.0

_log = log.get("pod-resources")


class PodResourcesWatch:
    def __init__(
        self,
        socket: Path,
        checkpoint: Path,
        metrics: Metrics,
        changed: threading.Event,
        handed_out: HandedOut,
    ) -> None:
        self._socket = socket
        self._checkpoint = checkpoint
        self._metrics = metrics
        self._changed = changed
        self._handed_out = handed_out
        self._lock = threading.Lock()
        self._held: HeldDevices | None = None
        self._unconfirmed: frozenset[tuple[str, str]] = frozenset()
        self._checkpoint_problem: type[CheckpointUnreadable] | None = None
        self._down = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-resources", daemon=True)

    def start(self) -> None:
        self.poll_once()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=POLL_SECONDS + 3)

    def held(self) -> HeldDevices | None:
        """Device IDs held by running containers or handed out to them and not named by a poll
        since; None while the kubelet cannot say."""
        with self._lock:
            return self._with_handed_out(self._held)

    def _with_handed_out(self, polled: HeldDevices | None) -> HeldDevices | None:
        handed_out = self._handed_out.held()
        return None if polled is None or handed_out is None else union_held(polled, handed_out)

    def awaits_checkpoint(self, held: set[tuple[str, str]]) -> frozenset[tuple[str, str]]:
        """Those of these (resource, device ID) held only because the kubelet's checkpoint lists
        them: a fresh write may free them."""
        with self._lock:
            return self._unconfirmed & held

    def poll_once(self) -> None:
        started = self._handed_out.clock()
        try:
            listed: HeldDevices | None = held_devices(self._socket)
        except PodResourcesUnavailable as error:
            listed = None
            if not self._down:
                _log.warning(
                    "cannot list held devices; GPU moves wait",
                    extra=log.kv(socket=self._socket, error=str(error)),
                )
        if self._down and listed is not None:
            _log.info("the kubelet lists held devices again")
        self._down = listed is None
        self._metrics.pod_resources_up.set(int(listed is not None))
        # Read after List: List has the kubelet drop the allocations of pods that ended
        # (server_v1.go List calls UpdateAllocatedDevices), so a write after it is current.
        checkpointed = self._read_checkpoint()
        if listed is None or checkpointed is None:  # nothing is known free
            self._store(None, frozenset(), started)
            return
        self._store(
            union_held(listed, checkpointed),
            frozenset(
                (name, device_id)
                for name, ids in checkpointed.items()
                for device_id in ids - listed.get(name, frozenset())
            ),
            started,
        )

    def _store(
        self,
        held: HeldDevices | None,
        unconfirmed: frozenset[tuple[str, str]],
        started: float,
    ) -> None:
        """Store the answer of a poll that began at ``started``."""
        with self._lock:
            before = self._with_handed_out(self._held)
            self._held = held
            self._unconfirmed = unconfirmed
            if held is not None:  # in one step: held() never sees neither poll nor grant
                self._handed_out.seen_by_poll(started, held)
            changed = self._with_handed_out(held) != before
        if changed:
            self._changed.set()
        self._handed_out.save()  # what the poll let go of leaves the file too

    def _read_checkpoint(self) -> HeldDevices | None:
        """What the checkpoint holds: nothing when the kubelet could not read its content either,
        None (unknown) when reading it fails here."""
        try:
            checkpointed = checkpointed_devices(self._checkpoint)
        except CheckpointUnreadable as error:
            corrupt = isinstance(error, CheckpointCorrupt)
            if type(error) is not self._checkpoint_problem:
                _log.warning(
                    "cannot read the kubelet's device checkpoint; "
                    + ("going by PodResources List alone" if corrupt else "GPU moves wait"),
                    extra=log.kv(error=str(error)),
                )
            self._checkpoint_problem = type(error)
            self._metrics.device_checkpoint_readable.set(0)
            return {} if corrupt else None
        if self._checkpoint_problem is not None:
            _log.info("the kubelet's device checkpoint reads again")
        self._checkpoint_problem = None
        self._metrics.device_checkpoint_readable.set(1)
        return checkpointed

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.poll_once()
