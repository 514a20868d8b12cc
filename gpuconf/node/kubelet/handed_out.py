"""Device IDs our plugins handed out in Allocate that no PodResources poll has named yet.

A poll is up to a second old, so a pod admitted just before a config change is read would be
missed by it; every Allocate the kubelet sends comes through our own plugins, so they say what
they handed out instead, and it counts as held until a poll shows the kubelet's record of it.
Where that record shows (k8s.io/kubernetes v1.34 pkg/kubelet/cm/devicemanager/manager.go):
Allocate calls allocateContainerResources, which calls the plugin's Allocate and, once the
answer is back, puts it in podDevices (podDevices.insert), then writes the checkpoint
(writeCheckpoint: a snapshot of podDevices under the manager's mutex, then the file, with an
fsync: pkg/kubelet/util/store/filestore.go writeFile). List
(pkg/kubelet/apis/podresources/server_v1.go) names an app container's or a restartable init
container's devices from podDevices once the insert is done, but skips plain init containers
(``if !podutil.IsRestartableInitContainer(&container) { continue }``), though the kubelet
calls Allocate for them too (manager.go Allocate); those are seen only on the checkpoint, after
a disk write with no time bound. So no time after the answer says the kubelet's record shows.

The rule goes by what polls name instead. A grant (one Allocate's IDs) lets go of an ID once
a stored poll that started after the answer was sent names it, in List or on the checkpoint;
from then on each poll itself holds it, for as long as it names it. A grant for several
containers may be named in parts: each ID goes as it is named. A poll that started before the
answer was sent read the kubelet's record from before it, so it frees nothing; nor does a
failed poll, which names nothing.

An ID no such poll names is let go of once a poll that started RECORD_WAIT_SECONDS after the
answer has been stored. That frees only IDs the kubelet never recorded: an answer lost on the
way, a pod whose admission failed after the Allocate (another resource refused it) or that
ended before any poll saw it. It must exceed any plausible delay between the answer and the
checkpoint write that records a plain init container: a small file and an fsync, milliseconds
on a healthy disk, seconds on a struggling one. A longer wait only keeps such a GPU's change
waiting longer.

A checkpoint entry an earlier pod left for the same ID (the pod ended; the file is rewritten
only on the kubelet's next write) also counts as naming it, and that is still safe: the file
names the ID until the kubelet writes it again, and the new allocation is in podDevices from
the insert on, before the write that follows it in allocateContainerResources takes its
snapshot; every write whose snapshot is taken after the insert names the ID, and List does
too for an app container. What is left is the kubelet's own race: writeCheckpoint lets go of
the mutex between the snapshot and the file, so a write whose snapshot predates the insert
(a device-list update on another goroutine: genericDeviceUpdateCallback) can land after the
poll, or after the allocation's own write; the file lacks the new allocation until the next
write, and a plain init container's ID, which only the file shows, looks free meanwhile
(docs/isolation.md, Limits).

Allocate checks its view and records what it hands out under ``decision``; the supervisor
reads what is held, decides and publishes the new views under it too, so an Allocate is either
recorded before the decision (the change waits) or checked against the new views (a withdrawn
ID is refused). Neither side does I/O under it, nor waits for the kubelet.

The record survives a restart (a new image and a new config rolled out together, moments
after an Allocate the kubelet has not recorded yet): kubelet/saved_grants.py keeps it in a
file in the state folder. Allocate writes it after recording, outside ``decision``, and
answers only once the write is done (off the I/O loop, on a worker thread): a process that
dies between the record and the write never answers, so the kubelet never has a grant the
file lacks. Writes are serialised and each takes the grants as they stand when it starts, so
Allocates that wait on one write go with the next, and the file never goes back to an older
list. The answer's time reaches the file with the next write after it (the next poll's, or
the last at shutdown), and what polls let go of leaves it with their writes. A new process
loads the grants whose wait has not passed and holds each until a poll of its own names it
or what is left of its wait passes, exactly as here; a grant without a time is held a full
wait from the start (its answer, if it went out, went out before), and a clock step only
ever holds longer (saved_grants.py). A file that cannot be read (not this version's, cut,
unreadable) says nothing of what was handed out: what is held is unknown, so every move
waits, until a poll begun RECORD_WAIT_SECONDS after the start; a file that cannot be written
is logged and counted (gpuconf_node_handed_out_save_failing), and Allocate answers anyway:
this process still holds the grant, and pods keep starting.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpuconf.node import log
from gpuconf.node.kubelet.pod_resources import HeldDevices, union_held
from gpuconf.node.kubelet.saved_grants import GrantsUnreadable, Moment, SavedGrant, SavedGrants

RECORD_WAIT_SECONDS = 30.0

_log = log.get("handed-out")


@dataclass
class Grant:
    """One Allocate's device IDs not named by a poll yet; ``sent_at`` is infinite until the
    answer has gone out, and ``answered`` says when on clocks another process can read."""

    resource: str
    ids: frozenset[str]
    sent_at: float = math.inf
    answered: Moment | None = None
    change: int = 0
    """The record's change number: on disk once a write has a snapshot this late."""


class HandedOut:
    """``saved``: the file a restarted process reads back (None: kept in memory only)."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, saved: SavedGrants | None = None
    ) -> None:
        self.decision = threading.Lock()
        self.clock = clock
        self._saved = saved
        self._lock = threading.Lock()
        self._grants: list[Grant] = []
        self._changes = 0
        """Counts every change to the grants: a save with nothing new writes nothing."""
        self._unknown_until: float | None = None
        """Set when the file could not be read: what is held is unknown until a poll begun
        this late has been stored."""
        self._save_lock = threading.Lock()
        self._saved_changes = 0

    def restore(self) -> None:
        """Count held what the previous process saved, as if this process had handed it out
        (call before the first decision)."""
        if self._saved is None:
            return
        self._saved.remove_leftovers()
        now, moment = self.clock(), self._saved.now()
        try:
            loaded = self._saved.load(moment)
        except GrantsUnreadable as error:
            _log.error(
                "cannot read what Allocate handed out before this start; "
                f"GPU moves wait {RECORD_WAIT_SECONDS:g} s",
                extra=log.kv(error=str(error)),
            )
            with self._lock:
                self._unknown_until = now + RECORD_WAIT_SECONDS
            return
        restored = [
            Grant(
                grant.resource,
                grant.ids,
                now - grant.age,
                Moment(moment.wall - grant.age, moment.boot - grant.age),
            )
            for grant in loaded
            if grant.age < RECORD_WAIT_SECONDS and grant.ids
        ]
        if restored:
            _log.warning(
                "devices handed out before this start count as held until a poll names them",
                extra=log.kv(
                    devices=",".join(
                        f"{grant.resource}/{device}"
                        for grant in restored
                        for device in sorted(grant.ids)
                    )
                ),
            )
        with self._lock:
            self._grants.extend(restored)
            self._changes += bool(loaded)  # written again with the times this process gave

    def record(self, resource: str, ids: Iterable[str]) -> Grant:
        """Count these IDs held from now on (call holding ``decision``; then save() before
        answering)."""
        grant = Grant(resource, frozenset(ids))
        with self._lock:
            self._changes += 1
            grant.change = self._changes
            self._grants.append(grant)
        return grant

    def sent(self, grant: Grant) -> None:
        """The answer has gone out (or failed to): polls that start from now on count. Its
        time reaches the file with the next write (the next poll's): until then a restart
        holds the grant a full wait from its start. An earlier answer's IDs this one hands
        out again are this one's to hold alone: whatever would let go of them here (a poll
        begun after this answer, this answer's wait) lets go of them there first."""
        answered = self._saved.now() if self._saved is not None else None
        with self._lock:
            grant.sent_at = self.clock()
            grant.answered = answered
            self._changes += 1
            for earlier in self._grants:
                same = earlier is not grant and earlier.resource == grant.resource
                if same and earlier.sent_at <= grant.sent_at:
                    earlier.ids -= grant.ids
            self._grants = [g for g in self._grants if g.ids]

    def save(self, grant: Grant | None = None) -> None:
        """Write the grants to the file if anything changed since the last write, or, given
        a grant, if no write has it yet: Allocates waiting on one write all go with the next
        (never under ``decision``: it is I/O). Writes are serialised, each with the grants as
        they stand when it starts, so the file never goes back to an older list."""
        if self._saved is None:
            return
        with self._save_lock:
            with self._lock:
                changes = self._changes
                grants = [SavedGrant(g.resource, g.ids, g.answered) for g in self._grants]
            written = self._saved_changes
            if (written < grant.change if grant is not None else written != changes) and (
                self._saved.save(grants)
            ):
                self._saved_changes = changes

    def held(self) -> HeldDevices | None:
        """None while what the previous process handed out is unknown (its file unreadable)."""
        with self._lock:
            if self._unknown_until is not None:
                return None
            return union_held(*({grant.resource: grant.ids} for grant in self._grants))

    def seen_by_poll(self, started: float, named: HeldDevices) -> None:
        """A poll that started at ``started`` and found ``named`` held has been stored: let go
        of what it names of the answers sent before it began, and of everything of those sent
        RECORD_WAIT_SECONDS before."""
        with self._lock:
            if self._unknown_until is not None and started >= self._unknown_until:
                self._unknown_until = None
                self._changes += 1  # the unreadable file is replaced at the next save
            kept = []
            for grant in self._grants:
                before = grant.ids
                if started > grant.sent_at:
                    grant.ids -= named.get(grant.resource, frozenset())
                if grant.ids and started < grant.sent_at + RECORD_WAIT_SECONDS:
                    kept.append(grant)
                    self._changes += grant.ids != before
                else:
                    self._changes += 1
            self._grants = kept
