"""The MPS supervisor says a resource is up only while a daemon for its current spec runs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gpuconf.node import mps_supervisor
from gpuconf.node.metrics import Metrics
from gpuconf.node.mps import MpsDaemonSpec


class _Daemon:
    def __init__(self, spec: MpsDaemonSpec) -> None:
        self.spec = spec

    def start(self) -> None:
        pass

    def answers(self) -> bool:
        return True

    def stop(self) -> None:
        pass


def _spec(*gpus: int) -> MpsDaemonSpec:
    return MpsDaemonSpec(
        "gpuconf.dev/mps",
        Path("/run/mps/pipe"),
        Path("/run/mps/log"),
        tuple((i, f"GPU-{i}") for i in gpus),
        None,
        100,
    )


def test_a_changed_spec_is_down_at_once_and_up_once_its_daemon_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mps_supervisor, "MpsDaemon", _Daemon)
    supervisor = mps_supervisor.MpsSupervisor(Metrics(), threading.Event())
    supervisor.want({"gpuconf.dev/mps": _spec(0)})
    supervisor._reconcile()
    assert supervisor.is_up("gpuconf.dev/mps")
    supervisor.want({"gpuconf.dev/mps": _spec(0, 1)})
    # GPU 1 is not MPS-served until the MPS thread has restarted the daemon.
    assert not supervisor.is_up("gpuconf.dev/mps")
    supervisor._reconcile()
    assert supervisor.is_up("gpuconf.dev/mps")
