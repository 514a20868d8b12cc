"""What our Allocate handed out, in a file a restarted `gpuconf node run` reads back
(kubelet/handed_out.py says when an ID is held and why the file is written when it is).

The file lives in the runtime's state folder (--state-dir, /run/gpuconf: the DaemonSet's
hostPath, tmpfs, so a reboot, which ends every container, empties it), not in the kubelet's
device-plugins folder: the kubelet leaves regular files there (k8s.io/kubernetes v1.34
pkg/kubelet/cm/devicemanager/manager.go CleanupPluginDirectory removes sockets only), but that
folder is the kubelet's. It is replaced whole (a temporary beside it, renamed over it), so a
reader sees the old list or the new one, also after the writer died mid-write. Nothing is
synced: an Allocate waits on each write, and only a machine crash would need a sync, which
ends every container and, with /run, the file too.

A grant's time is when its answer went out, read on two clocks: the wall clock, which another
process reads the same, and CLOCK_BOOTTIME, which no step of the wall clock moves (a pod's own
time namespace may offset it, and a reboot restarts it: it is trusted only under the same boot
ID). A grant's age is the younger of the two readings, and a time in the future (the wall
clock stepped back) is an age of 0: a step only ever makes a grant held longer, never for
more than a full wait from the load. Under another boot ID the wall clock alone says the age:
a reboot ended every container, so a grant from before it holds nothing the kubelet still
runs. Where either process could not read its boot ID, the age is unknown (0): the wall
clock alone could have stepped forward. A grant whose answer had not gone out when the file was
written has no time: if it went out, it did before this process started, so it is as old as
the load says.
"""

from __future__ import annotations

import errno
import json
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from gpuconf.node import log
from gpuconf.node.atomic_files import remove_temporaries, write_atomically
from gpuconf.node.metrics import Metrics
from gpuconf.node.small_files import NotAStateFile, read_json_state

GRANTS_FILE = "handed-out.json"
FORMAT_VERSION = 1
BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")

_log = log.get("handed-out")


class Moment(NamedTuple):
    wall: float
    """time.time()"""
    boot: float
    """CLOCK_BOOTTIME: seconds since boot, suspend included; the wall clock's steps leave it."""


def moment_now() -> Moment:
    return Moment(time.time(), time.clock_gettime(time.CLOCK_BOOTTIME))


def read_boot_id() -> str | None:
    try:
        return BOOT_ID_FILE.read_text(encoding="ascii").strip() or None
    except (OSError, ValueError):
        return None


class SavedGrant(NamedTuple):
    resource: str
    ids: frozenset[str]
    answered: Moment | None
    """None while the answer has not gone out."""


class LoadedGrant(NamedTuple):
    resource: str
    ids: frozenset[str]
    age: float
    """Seconds since its answer went out, as the safer clock says; 0 for one without a time."""


class GrantsUnreadable(Exception):
    pass


class SavedGrants:
    def __init__(
        self,
        path: Path,
        metrics: Metrics,
        now: Callable[[], Moment] = moment_now,
        boot_id: Callable[[], str | None] = read_boot_id,
    ) -> None:
        self.path = path
        self.now = now
        self._metrics = metrics
        self._boot_id = boot_id()
        self._failing: int | None = None
        """The errno of the last write, while writes fail: logged once, not every Allocate."""

    def load(self, now: Moment) -> list[LoadedGrant]:
        """The grants of the file, with their ages at ``now``; none when there is no file."""
        try:
            data = read_json_state(self.path)
        except NotAStateFile as error:
            raise GrantsUnreadable(str(error)) from None
        if data is None:
            return []
        try:
            grants, saved_boot = _parsed(data)
        except (KeyError, TypeError, ValueError) as error:
            raise GrantsUnreadable(f"{self.path}: {error}") from None
        same_boot = None if None in (saved_boot, self._boot_id) else saved_boot == self._boot_id
        return [
            LoadedGrant(grant.resource, grant.ids, _age(grant.answered, now, same_boot))
            for grant in grants
        ]

    def remove_leftovers(self) -> None:
        """Temporaries a process that died mid-write left beside the file."""
        remove_temporaries(self.path)

    def save(self, grants: Iterable[SavedGrant]) -> bool:
        """Replace the file with these grants; False (logged once) when that fails."""
        document = {
            "version": FORMAT_VERSION,
            "bootId": self._boot_id,
            "grants": [
                {
                    "resource": grant.resource,
                    "ids": sorted(grant.ids),
                    "answered": None if grant.answered is None else grant.answered._asdict(),
                }
                for grant in grants
            ],
        }
        try:
            write_atomically(self.path, (json.dumps(document) + "\n").encode(), sync=False)
        except OSError as error:
            code = error.errno if error.errno is not None else errno.EIO
            if code != self._failing:
                _log.error(
                    "cannot save what Allocate handed out; a restart would forget it",
                    extra=log.kv(path=self.path, error=error.strerror or str(error)),
                )
            self._failing = code
            self._metrics.handed_out_save_failing.set(1)
            return False
        if self._failing is not None:
            _log.info("what Allocate handed out is saved again", extra=log.kv(path=self.path))
            self._failing = None
        self._metrics.handed_out_save_failing.set(0)
        return True


def _age(answered: Moment | None, now: Moment, same_boot: bool | None) -> float:
    """``same_boot`` is None where either process could not read its boot ID: the wall
    clock alone might have stepped forward, so the age is unknown, and 0."""
    if answered is None or same_boot is None:
        return 0.0
    age = now.wall - answered.wall
    if same_boot:
        age = min(age, now.boot - answered.boot)
    return max(age, 0.0)


def _parsed(data: Any) -> tuple[list[SavedGrant], str | None]:
    """The file's grants and boot ID; KeyError, TypeError or ValueError where it is not one
    this version wrote."""
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise ValueError(f"not a version {FORMAT_VERSION} list of grants")
    boot_id = data.get("bootId")
    if boot_id is not None and not isinstance(boot_id, str):
        raise TypeError("bootId is not a string")
    grants = []
    entries = data["grants"]
    if not isinstance(entries, list):
        raise TypeError("grants is not a list")
    for entry in entries:
        resource, ids, answered = entry["resource"], entry["ids"], entry["answered"]
        if not isinstance(resource, str) or not isinstance(ids, list):
            raise TypeError("a grant's resource is not a string or its IDs not a list")
        if not all(isinstance(device_id, str) for device_id in ids):
            raise TypeError("a grant's IDs are not strings")
        moment = None
        if answered is not None:
            moment = Moment(_seconds(answered["wall"]), _seconds(answered["boot"]))
        grants.append(SavedGrant(resource, frozenset(ids), moment))
    return grants, boot_id


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"{value!r} is not a time in seconds")
    return float(value)
