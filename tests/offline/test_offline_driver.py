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


@pytest.mark.parametrize("args, queue, placed_at", [
    ((), "fifo", 1.0),  # 1.9's requeuer: back after its 1-s back-off; the FIFO then pops it
    (GATE, "priority", 1.0),  # the same back-off; db's bind was a move request: to activeQ
    (("--scheduling-queue", "three-queue"), "fifo-three-queue", 1.0),  # 1.20: podBackoffQ, flushed after 1 s
])
def test_a_pod_that_fits_after_a_later_placement_is_retried_as_run_retries_it(tmp_path, args, queue, placed_at):
    data = run_json("simulate", "--cluster", _affinity_cluster(tmp_path), *args)
    placements = {p["pod"]: p for p in data["placements"]}
    assert (placements["default/web"]["node"], placements["default/web"]["attempts"]) == ("n1", 2)
    assert placements["default/web"]["placedAt"] == placed_at
    assert (placements["default/db"]["attempts"], placements["default/db"]["placedAt"]) == (1, 0.0)
    assert data["schedulingQueue"] == ("three-queue" if "three-queue" in queue else queue)


def test_the_table_shows_attempts_and_times_once_a_pod_was_retried(tmp_path):
    table = run("simulate", "--cluster", _affinity_cluster(tmp_path)).stdout
    header, web = table.splitlines()[:2]
    assert header.split() == ["POD", "NODE", "ATTEMPTS", "PLACED", "AT", "REASON"]
    assert web.split() == ["default/web", "n1", "2", "1s"]


def test_a_pod_that_never_fits_ends_the_simulation_with_its_last_verdict(tmp_path):
    """Nothing changes after its failure: retrying cannot help, so the loop stops (no virtual hour of
    back-offs), and the pod reports the attempts it had."""
    cluster = _write(tmp_path, [_node("n1", "1"), _pod("big", "2", ts="2018-01-01T00:00:01Z"),
                                _pod("small", "100m", ts="2018-01-01T00:00:02Z")])
    for args in ((), GATE, ("--scheduling-queue", "three-queue")):
        placements = {p["pod"]: p for p in run_json("simulate", "--cluster", cluster, *args)["placements"]}
        big = placements["default/big"]
        assert big["node"] is None and big["placedAt"] is None
        assert big["error"] == "0/1 nodes are available: 1 Insufficient cpu."
        # FIFO and 1.9's PriorityQueue: retried once after small's placement changed the cluster (a move
        # request for the PriorityQueue); the three-queue form: small's bind moved it out of unschedulableQ.
        assert big["attempts"] == 2, args
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
