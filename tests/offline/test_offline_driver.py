"""``simulate`` runs ``run``'s loop (``offline/driver.py``): failed pods are retried as the daemon retries them,
on a virtual clock, under each scheduling queue, and each pod reports its attempts and when it was placed."""

from __future__ import annotations

import pytest

from tests.offline.test_preemption_cli import GATE, _class, _node, _pod, _write, run, run_json

NEEDS_DB = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}}


def _affinity_cluster(tmp_path) -> str:
    """``web`` comes first and needs a ``db`` pod in its zone; ``db`` comes second."""
    return _write(tmp_path, [
        _node("n1", "2"),
        _pod("web", "100m", ts="2018-01-01T00:00:01Z", extra=NEEDS_DB),
        _pod("db", "100m", labels={"app": "db"}, ts="2018-01-01T00:00:02Z"),
    ])


@pytest.mark.parametrize("args, queue, attempts, placed_at", [
    # 1.9: the daemon's own PodScheduled=False update re-adds web at once (behind db in the FIFO): placed then.
    ((), "fifo", 2, 0.0),
    # 1.9's PriorityQueue: the same update puts web back first (first arrival), it fails again before db is
    # placed; db's bind is a move request, so its re-queue after the 1-s back-off goes to activeQ.
    (GATE, "priority", 3, 1.0),
    # 1.20: re-queued at once (before the update event), moved by db's bind to podBackoffQ, flushed after 1 s.
    (("--scheduling-queue", "three-queue"), "three-queue", 2, 1.0),
])
def test_a_pod_that_fits_after_a_later_placement_is_retried_as_run_retries_it(tmp_path, args, queue, attempts,
                                                                               placed_at):
    data = run_json("simulate", "--cluster", _affinity_cluster(tmp_path), *args)
    placements = {p["pod"]: p for p in data["placements"]}
    assert (placements["default/web"]["node"], placements["default/web"]["attempts"]) == ("n1", attempts)
    assert placements["default/web"]["placedAt"] == placed_at
    assert (placements["default/db"]["attempts"], placements["default/db"]["placedAt"]) == (1, 0.0)
    assert data["schedulingQueue"] == queue


def test_the_table_shows_attempts_and_times_once_a_pod_was_retried(tmp_path):
    table = run("simulate", "--cluster", _affinity_cluster(tmp_path), *GATE).stdout
    header, web = table.splitlines()[:2]
    assert header.split() == ["POD", "NODE", "ATTEMPTS", "PLACED", "AT", "REASON"]
    assert web.split() == ["default/web", "n1", "3", "1s"]


def test_a_pod_that_never_fits_ends_the_simulation_with_its_last_verdict(tmp_path):
    """Nothing changes after its failure: retrying cannot help, so the loop stops (no virtual hour of
    back-offs), and the pod reports the attempts it had."""
    cluster = _write(tmp_path, [_node("n1", "1"), _pod("big", "2", ts="2018-01-01T00:00:01Z"),
                                _pod("small", "100m", ts="2018-01-01T00:00:02Z")])
    # FIFO: its own condition update re-queues it behind small, then nothing changes; 1.9's PriorityQueue: that
    # update puts it back first (it fails again), small's bind is a move request, its re-queue one more try;
    # the three-queue form: small's bind moves it to podBackoffQ, one more try after its back-off.
    for args, attempts in (((), 2), (GATE, 3), (("--scheduling-queue", "three-queue"), 2)):
        placements = {p["pod"]: p for p in run_json("simulate", "--cluster", cluster, *args)["placements"]}
        big = placements["default/big"]
        assert big["node"] is None and big["placedAt"] is None
        assert big["error"] == "0/1 nodes are available: 1 Insufficient cpu."
        assert big["attempts"] == attempts, args
        assert placements["default/small"]["node"] == "n1"


def test_preemption_under_the_three_queue_form(tmp_path):
    """The gate on and the three-queue form: the preemptor evicts; its nomination's update event puts it back
    in activeQ at once (1.20's Update of a pod in no sub-queue; in run that event arrives while the preemption's
    API calls are in flight), and it is placed with no virtual time gone by."""
    cluster = _write(tmp_path, [
        _node("n1", "1"), _class("high", 1000), _class("low", 10),
        _pod("low", "800m", node="n1", cls="low"),
        _pod("high", "800m", cls="high", ts="2018-01-01T00:00:01Z"),
    ])
    data = run_json("simulate", "--cluster", cluster, *GATE, "--scheduling-queue", "three-queue")
    (high,) = data["placements"]
    assert (high["node"], high["attempts"], high["placedAt"]) == ("n1", 2, 0.0)
    assert [v["pod"] for v in data["preemptions"][0]["victims"]] == ["default/low"]
