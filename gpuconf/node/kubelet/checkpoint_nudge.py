"""When to have the kubelet rewrite its device checkpoint again, backing off.

A nudge (a device list sent again) frees the entry of a pod that ended within seconds, but some
entries stay as long as their pod lives: a regular init container's devices, which the kubelet
keeps allocated for the pod (devicemanager/manager.go allocateContainerResources) while the
PodResources List leaves the container out (apis/podresources/server_v1.go lists only
restartable init containers), or every entry of a restarted kubelet that cannot reach the API
server and so never prunes (manager.go UpdateAllocatedDevices waits for every pod source).
So each nudge for the same pending changes waits twice as long as the one before, up to a cap.
"""

from __future__ import annotations

FIRST_SECONDS = 2.0
MAX_SECONDS = 60.0


class NudgeBackoff:
    def __init__(self, first: float = FIRST_SECONDS, cap: float = MAX_SECONDS) -> None:
        self._first = first
        self._cap = cap
        self._waiting_for: object = None
        self._interval = first
        self._next = 0.0

    def due(self, waiting_for: object, now: float) -> bool:
        """Whether to nudge now for these pending changes; other changes start over."""
        if waiting_for != self._waiting_for:
            self._waiting_for = waiting_for
            self._interval = self._first
            self._next = now
        return now >= self._next

    def reset(self) -> None:
        """Start over: a restarted kubelet prunes anew once it has seen its pod sources."""
        self._waiting_for = None

    def nudged(self, now: float) -> None:
        self._next = now + self._interval
        self._interval = min(self._interval * 2, self._cap)
