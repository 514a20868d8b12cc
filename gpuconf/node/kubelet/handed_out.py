"""Device IDs our plugins handed out in Allocate that no PodResources poll can have seen yet.

A poll is up to a second old, so a pod admitted just before a config change is read would be
missed by it; every Allocate the kubelet sends comes through our own plugins, so they say what
they handed out instead, and it counts as held until a poll that can have seen it says
otherwise. When the kubelet's record of an allocation is visible: the kubelet's device manager
(k8s.io/kubernetes 1.34 pkg/kubelet/cm/devicemanager/manager.go allocateContainerResources)
calls the plugin's Allocate, and once the answer is back records it (podDevices.insert) after
in-memory work only under its mutex (writeCheckpoint, which follows, writes the file after
letting go of it); the pod itself is in the pod manager from before its admission
(pkg/kubelet/kubelet.go HandlePodAdditions: podManager.AddPod, then the admit handlers). List
(pkg/kubelet/apis/podresources/server_v1.go) reads the pods and then each container's devices
(GetDevices: podDevices) when it is called. So a List that starts once the answer has reached
the kubelet and it has been scheduled to record it names the devices for as long as the pod
is active, and one that names them no longer means the pod is gone or was refused admission.
An allocation is held until a poll that started SEEN_MARGIN_SECONDS after our answer was sent
has been stored: the margin covers the answer's way to the kubelet and the scheduling of the
goroutine that records it, with room for a starved kubelet; a longer one would only delay a
change after an admission that failed (a held GPU is held by the poll itself).

Allocate checks its view and records what it hands out under ``decision``; the supervisor
reads what is held, decides and publishes the new views under it too, so an Allocate is either
recorded before the decision (the change waits) or checked against the new views (a withdrawn
ID is refused). Neither side does I/O under it, nor waits for the kubelet.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpuconf.node.kubelet.pod_resources import HeldDevices

SEEN_MARGIN_SECONDS = 2.0


@dataclass
class Grant:
    """One Allocate's device IDs; ``sent_at`` is infinite until the answer has gone out."""

    resource: str
    ids: frozenset[str]
    sent_at: float = math.inf


class HandedOut:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.decision = threading.Lock()
        self.clock = clock
        self._lock = threading.Lock()
        self._grants: list[Grant] = []

    def record(self, resource: str, ids: Iterable[str]) -> Grant:
        """Count these IDs held from now on (call holding ``decision``)."""
        grant = Grant(resource, frozenset(ids))
        with self._lock:
            self._grants.append(grant)
        return grant

    def sent(self, grant: Grant) -> None:
        """The answer has gone out (or failed to): its margin starts now."""
        with self._lock:
            grant.sent_at = self.clock()

    def held(self) -> HeldDevices:
        with self._lock:
            held: dict[str, frozenset[str]] = {}
            for grant in self._grants:
                held[grant.resource] = held.get(grant.resource, frozenset()) | grant.ids
            return held

    def seen_by_poll(self, started: float) -> None:
        """A poll that started at ``started`` has been stored: forget what it can have seen."""
        with self._lock:
            self._grants = [g for g in self._grants if g.sent_at + SEEN_MARGIN_SECONDS > started]
