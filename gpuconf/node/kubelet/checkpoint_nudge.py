"""When to have the kubelet rewrite its device checkpoint again, backing off.

A nudge (a device list sent again) frees the entry of a pod that ended within seconds, but some
entries stay as long as their pod lives: a regular init container's devices, which the kubelet
keeps allocated for the pod (devicemanager/manager.go allocateContainerResources) while the
PodResources List leaves the container out (apis/podresources/server_v1.go lists only
restartable init containers), or every entry of a restarted kubelet that cannot reach the API
server and so never prunes (manager.go UpdateAllocatedDevices waits for every pod source).
So each nudge for the same awaited device IDs waits twice as long as the one before, up to a
cap. The schedule starts over whenever that set changes: a pod that just ended (List no longer
names its device, the checkpoint still does) is freed by the next write, whatever entry has kept
the nudges waiting beside it.
"""

from __future__ import annotations

FIRST_SECONDS = 2.0
MAX_SECONDS = 60.0


class NudgeBackoff:
    def __init__(self) -> None:
        self._waiting_for: object = None
        self._interval = FIRST_SECONDS
        self._next = 0.0
        self.round = 0
        """How many nudges this schedule has sent: 1 for the first after it started over."""

    def due(self, waiting_for: object, now: float) -> bool:
        """Whether to nudge now for what is awaited; anything else awaited starts over."""
        if waiting_for != self._waiting_for:
            self._waiting_for = waiting_for
            self._interval = FIRST_SECONDS
            self._next = now
            self.round = 0
        return now >= self._next

    def reset(self) -> None:
        """Start over: a restarted kubelet prunes anew once it has seen its pod sources."""
        self._waiting_for = None

    def nudged(self, now: float) -> float:
        """Record a nudge sent at `now`; the seconds until the next is due."""
        wait = self._interval
        self._next = now + wait
        self._interval = min(wait * 2, MAX_SECONDS)
        self.round += 1
        return wait
