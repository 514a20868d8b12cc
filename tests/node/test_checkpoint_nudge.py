"""How often the runtime has the kubelet rewrite its device checkpoint
(gpuconf/node/kubelet/checkpoint_nudge.py)."""

from __future__ import annotations

from gpuconf.node.kubelet.checkpoint_nudge import NudgeBackoff


def nudge_times(
    backoff: NudgeBackoff, waiting_for: object, start: float, until: float
) -> list[float]:
    """The seconds, on a 1 s tick from ``start``, at which a nudge goes out."""
    sent = []
    for now in range(int(start), int(until)):
        if backoff.due(waiting_for, float(now)):
            backoff.nudged(float(now))
            sent.append(float(now))
    return sent


def test_nudges_for_the_same_changes_double_their_wait_up_to_a_minute() -> None:
    times = nudge_times(NudgeBackoff(), ("GPU 1",), 0, 300)
    assert times == [0, 2, 6, 14, 30, 62, 122, 182, 242]


def test_other_pending_changes_start_over_at_two_seconds() -> None:
    backoff = NudgeBackoff()
    assert nudge_times(backoff, ("GPU 1",), 0, 40) == [0, 2, 6, 14, 30]
    assert nudge_times(backoff, ("GPU 1", "GPU 2"), 40, 50) == [40, 42, 46]


def test_no_pending_change_between_two_spells_starts_the_next_over() -> None:
    backoff = NudgeBackoff()
    assert nudge_times(backoff, ("GPU 1",), 0, 40) == [0, 2, 6, 14, 30]
    backoff.due((), 40.0)  # the change applied
    assert nudge_times(backoff, ("GPU 1",), 41, 45) == [41, 43]


def test_a_change_that_needs_no_nudge_does_not_back_off() -> None:
    backoff = NudgeBackoff()
    assert backoff.due(("GPU 1",), 0.0)
    assert backoff.due(("GPU 1",), 10.0)  # asked, never nudged: still due


def test_a_kubelet_restart_starts_the_same_changes_over() -> None:
    backoff = NudgeBackoff()
    assert nudge_times(backoff, ("GPU 1",), 0, 100) == [0, 2, 6, 14, 30, 62]
    backoff.reset()
    assert nudge_times(backoff, ("GPU 1",), 100, 105) == [100, 102]


def test_each_nudge_knows_its_round_and_the_wait_before_the_next() -> None:
    backoff = NudgeBackoff()
    waits = []
    for now in (0.0, 2.0, 6.0):
        assert backoff.due(("GPU 1",), now)
        waits.append((backoff.nudged(now), backoff.round))
    assert waits == [(2.0, 1), (4.0, 2), (8.0, 3)]
    backoff.reset()
    assert backoff.due(("GPU 1",), 7.0)
    assert (backoff.nudged(7.0), backoff.round) == (2.0, 1)
