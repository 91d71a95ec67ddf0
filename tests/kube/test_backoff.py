"""The informers' back-off (client-go's ``NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)``)."""

from __future__ import annotations

import pytest

from policy_scheduler.kube.client.backoff import Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_doubles_from_0_8_to_the_30_s_cap():
    clock = Clock()
    backoff = Backoff(clock=clock, rand=lambda: 0.0)
    delays = []
    for _ in range(9):
        delays.append(backoff.next())
        clock.now += 1
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])


def test_jitter_draws_up_to_twice_the_step():
    clock = Clock()
    low = Backoff(clock=clock, rand=lambda: 0.0)
    high = Backoff(clock=clock, rand=lambda: 0.999999)
    for step in (0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0):
        assert low.next() == pytest.approx(step)
        assert high.next() == pytest.approx(2 * step, rel=1e-5)


def test_starts_again_after_two_quiet_minutes_not_before():
    clock = Clock()
    backoff = Backoff(clock=clock, rand=lambda: 0.0)
    for _ in range(4):
        backoff.next()
    clock.now += 119.0  # within the 2 minutes since the last back-off started: the next step
    assert backoff.next() == pytest.approx(12.8)
    clock.now += 120.5  # a good period: from the start
    assert backoff.next() == pytest.approx(0.8)
    assert backoff.next() == pytest.approx(1.6)
