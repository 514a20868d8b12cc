"""Restart a host's systemd unit and wait for it, without ever restarting it twice for one config.

systemd's documented semantics this relies on:

- `systemctl restart UNIT` without `--no-block`: "the job will be verified, enqueued and
  systemctl will wait until the unit's start-up is completed"; with `--no-block` "it is only
  verified and enqueued" (systemctl(1)). Killing a waiting client does not cancel the job:
  systemd goes on restarting the unit. So setup enqueues with `--no-block` and waits itself,
  under RESTART_TIMEOUT_SECONDS, rather than under the 60 s every host command gets.
- `systemctl show -p PROPERTY` prints `PROPERTY=value` (systemctl(1)); ActiveState is active,
  activating, deactivating, reloading, inactive or failed; ActiveEnterTimestampMonotonic,
  InactiveExitTimestampMonotonic and InactiveEnterTimestampMonotonic are the CLOCK_MONOTONIC
  microseconds at which the unit last became active, began starting, and stopped or failed
  (0: never) (org.freedesktop.systemd1(5)). CLOCK_MONOTONIC is the kernel's, the same in the
  setup pod as in systemd.
- A unit with `Restart=` whose start fails is not left "failed": it waits RestartSec= in
  ActiveState=activating, SubState=auto-restart, Result naming the failure (systemd.service(5),
  org.freedesktop.systemd1(5)), then starts again. containerd's unit (containerd/containerd
  containerd.service: Restart=always, RestartSec=5), docker's (moby/moby
  contrib/init/systemd/docker.service: Restart=always, RestartSec=2) and k3s's (written by
  k3s-io/k3s install.sh: Restart=always, RestartSec=5s) all say so: a config the engine
  refuses shows only as auto-restart, and setup fails on it rather than waiting out its timeout.
- k3s's units say `TimeoutStartSec=0` (systemd.service(5): no time-out), so systemd itself
  never gives up on a slow k3s start.

A later run that still owes the reload (its marker records when the config was written) does
not restart a unit that came up, or began coming up, after that: the config is loaded, or
about to be.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpuconf.errors import UserError
from gpuconf.node.runtimes.host import Host

RESTART_TIMEOUT_SECONDS = 300.0
"""How long setup waits for a restarted unit to be active again before it fails (the restart
goes on in systemd; the next run waits for it instead of restarting again)."""
POLL_SECONDS = 1.0
_PROPERTIES = (
    "ActiveState",
    "SubState",
    "Result",
    "ActiveEnterTimestampMonotonic",
    "InactiveExitTimestampMonotonic",
    "InactiveEnterTimestampMonotonic",
)
_UP = ("active", "activating", "reloading")
_BEFORE_AUTO_RESTART = (
    "dead-before-auto-restart",
    "failed-before-auto-restart",
    "auto-restart",
    "auto-restart-queued",
)
"""A Restart= service's sub-states between the end of a run (here: a failed start) and systemd's
next try; the first two and the last are systemd >= 254's. systemd's own wait for units lists
the same four as a service about to be restarted (src/shared/bus-wait-for-units.c)."""


class UnitRestartFailed(UserError):
    """A unit could not be restarted, or did not come up in time; the config files are written."""


@dataclass(frozen=True)
class UnitState:
    active_state: str
    sub_state: str
    result: str
    active_since: float
    """CLOCK_MONOTONIC seconds when it last became active; 0 for never."""
    starting_since: float
    stopped_since: float

    @property
    def up(self) -> bool:
        """Running or on its way up: a unit setup should restart, of several (k3s, k3s-agent)."""
        return self.active_state in _UP

    def active_after(self, moment: float) -> bool:
        return self.active_state == "active" and self.active_since >= moment

    def starting_after(self, moment: float) -> bool:
        return self.active_state == "activating" and self.starting_since >= moment

    def start_failed_after(self, moment: float) -> bool:
        """Whether a start begun, or a stop ended, after ``moment`` ended in failure: "failed",
        or, for a unit with Restart=, "auto-restart" (activating: the wait before systemd starts
        it again, entered only after a failure; a restart's stop and start never pass it).
        systemd >= 254 marks the failure in InactiveEnterTimestamp, older ones leave the
        unit's timestamps at its stop and start; either is after ``moment`` for a start that
        followed it, neither for a failure left from before."""
        if self.active_state == "failed":
            return self.stopped_since >= moment
        return (
            self.sub_state in _BEFORE_AUTO_RESTART
            and max(self.stopped_since, self.starting_since) >= moment
        )


def _systemctl(host: Host, *args: str) -> str:
    """systemctl's output for ``args`` on the host; UnitRestartFailed where it is missing or
    fails."""
    result = host.run(["systemctl", *args])
    if result is None:
        raise UnitRestartFailed("systemctl is not on the host; use restart: signal or none")
    if result.returncode != 0:
        raise UnitRestartFailed(
            f"systemctl {' '.join(a for a in args if not a.startswith('--property='))} failed "
            f"(exit {result.returncode}): "
            f"{result.stderr.strip()[-300:]}"
        )
    return result.stdout


def unit_state(host: Host, unit: str) -> UnitState:
    output = _systemctl(host, "show", *(f"--property={p}" for p in _PROPERTIES), unit)
    values = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)

    def seconds(name: str) -> float:
        text = values.get(name, "0")
        return int(text) / 1e6 if text.isdigit() else 0.0

    return UnitState(
        values.get("ActiveState", "unknown"),
        values.get("SubState", "unknown"),
        values.get("Result", "unknown"),
        seconds("ActiveEnterTimestampMonotonic"),
        seconds("InactiveExitTimestampMonotonic"),
        seconds("InactiveEnterTimestampMonotonic"),
    )


def restart_unit(host: Host, unit: str, owed_since: float | None) -> str:
    """Restart ``unit`` and wait until it is active again; returns what was done, in words.
    ``owed_since``: when an earlier run wrote the config it did not get to load (CLOCK_MONOTONIC
    seconds), or None when this run wrote it."""
    if owed_since is not None:
        current = unit_state(host, unit)
        if current.active_after(owed_since):
            return f"{unit} came up after the config was written; not restarted again"
        if current.starting_after(owed_since):
            wait_active(host, unit, current.starting_since)
            return f"{unit} finished the start begun after the config was written; not restarted"
    queued_at = time.monotonic()
    _systemctl(host, "restart", "--no-block", unit)
    wait_active(host, unit, queued_at)
    return f"restarted {unit} (systemctl restart --no-block {unit}, then active)"


def wait_active(host: Host, unit: str, since: float) -> None:
    """Wait until ``unit`` became active after ``since``; raises if it fails or takes longer than
    RESTART_TIMEOUT_SECONDS."""
    deadline = time.monotonic() + RESTART_TIMEOUT_SECONDS
    while True:
        current = unit_state(host, unit)
        if current.active_after(since):
            return
        # Not "inactive": a restart job passes through it between stop and start.
        if current.start_failed_after(since):
            retried = ", systemd retries it" if current.sub_state in _BEFORE_AUTO_RESTART else ""
            raise UnitRestartFailed(
                f"{unit} did not come back after its restart: {current.sub_state} "
                f"(result {current.result}{retried}); see `journalctl -u {unit}` on the host"
            )
        if time.monotonic() >= deadline:
            raise UnitRestartFailed(
                f"{unit} is still {current.active_state} ({current.sub_state}) "
                f"{RESTART_TIMEOUT_SECONDS:g} s after its restart was queued; systemd goes on "
                "with it, and the next setup run waits for it instead of restarting it again"
            )
        time.sleep(POLL_SECONDS)
