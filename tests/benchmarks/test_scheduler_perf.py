"""``benchmarks/scheduler_perf.py``: its placement checks on made-up final states, and the script itself at a
tiny size against the real API server (envtest 1.26), for ours and the modern kube-scheduler, both modes."""

from __future__ import annotations

import json

import pytest

from benchmarks.faults import Bind, NodeState
from benchmarks.perf_workloads import (
    HOSTNAME_KEY,
    POD_DEFAULT,
    POD_HIGH_PRIORITY,
    POD_LOW_PRIORITY,
    POD_WITH_NODE_AFFINITY,
    POD_WITH_POD_AFFINITY,
    POD_WITH_POD_ANTI_AFFINITY,
    POD_WITH_TOPOLOGY_SPREADING,
    WORKLOADS,
    ZONE_KEY,
)
from benchmarks.scheduler_perf import CHECKS, main, placement_checks
from tests.kube.envtest import require_assets

GIB = 2.0**30


def _node(name: str, zone: str) -> NodeState:
    return NodeState(4.0, 32 * GIB, 110, labels={HOSTNAME_KEY: name, ZONE_KEY: zone})


def _cluster(placed: list[tuple[dict, str]], zones: dict[str, str]) -> tuple[dict, dict[str, NodeState]]:
    """The pods (by name) bound as ``placed`` says, and the nodes with their requests, as final_state gives them."""
    nodes = {name: _node(name, zone) for name, zone in zones.items()}
    pods = {}
    for pod, node in placed:
        pod["spec"]["nodeName"] = node
        pods[pod["metadata"]["name"]] = pod
        requests = pod["spec"]["containers"][0]["resources"]["requests"]
        cpu = float(requests["cpu"][:-1]) / 1000 if requests["cpu"].endswith("m") else float(requests["cpu"])
        nodes[node].add(int(pod["spec"].get("priority") or 0), cpu, 500 * 2.0**20)
    return pods, nodes


def test_checks_count_violations() -> None:
    zones = {"a": "zone1", "b": "zone1", "c": "zone2", "d": "moon-1"}
    placed = [
        (POD_WITH_POD_ANTI_AFFINITY.pod("anti-1", "sched-0", "s"), "a"),
        (POD_WITH_POD_ANTI_AFFINITY.pod("anti-2", "sched-1", "s"), "a"),  # both on a: each sees the other
        (POD_WITH_POD_ANTI_AFFINITY.pod("anti-3", "sched-1", "s"), "b"),
        (POD_WITH_NODE_AFFINITY.pod("node-aff", "default", "s"), "d"),  # zone not in [zone1, zone2]
        (POD_WITH_POD_AFFINITY.pod("aff-1", "sched-0", "s"), "a"),
        (POD_WITH_POD_AFFINITY.pod("aff-2", "sched-1", "s"), "b"),  # zone1 with aff-1: fine
        (POD_WITH_POD_AFFINITY.pod("aff-3", "sched-1", "s"), "c"),  # alone in zone2, not the first
        *((POD_WITH_TOPOLOGY_SPREADING.pod(f"spread-{i}", "default", "s"), "c") for i in range(6)),
    ]
    pods, nodes = _cluster(placed, zones)
    binds = {name: Bind(float(i), 0.0, i, pods[name]["spec"]["nodeName"], True) for i, name in enumerate(pods)}
    out = placement_checks(WORKLOADS["SchedulingBasic"], pods, nodes, binds, [])
    assert out["anti_affinity_violations"] == 2
    assert out["node_affinity_violations"] == 1
    assert out["pod_affinity_violations"] == 1
    assert out["spread_skew"] == 6 and out["spread_violations"] == 1  # zone2 6, zone1 and moon-1 0; maxSkew 5
    assert out["overcommitted_nodes"] == out["unfit_bound"] == out["victims"] == 0
    assert out["failed_checks"] == ["node_affinity_violations", "anti_affinity_violations",
                                    "pod_affinity_violations", "spread_violations"]


def test_checks_count_victims_and_overcommit() -> None:
    high = POD_HIGH_PRIORITY.pod("pod-000000", "default", "s", literal_priority=True)
    big = POD_DEFAULT.pod("big", "default", "s")
    big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "9"
    # a: the preemptor and one low-priority pod left; b: one low-priority pod, no preemptor; c: a pod that
    # fits nowhere. The watch saw five init pods bound, 0 to 2 on a, 3 and 4 on b: 1, 2 and 4 are gone.
    placed = [(high, "a"), (POD_LOW_PRIORITY.pod("init-000000", "default", "s"), "a"),
              (POD_LOW_PRIORITY.pod("init-000003", "default", "s"), "b"), (big, "c")]
    pods, nodes = _cluster(placed, {"a": "z", "b": "z", "c": "z"})
    binds = {f"init-{i:06d}": Bind(0.0, 0.0, i, node, True) for i, node in enumerate(["a", "a", "a", "b", "b"])}
    out = placement_checks(WORKLOADS["PreemptionBasic"], pods, nodes, binds, list(binds))
    assert out["victims"] == 3
    assert out["victim_nodes_without_preemptor"] == 1  # b
    assert out["unneeded_victims"] == 1  # init-000004 fits back on b; neither of a's beside 3.9 cpu
    assert out["overcommitted_nodes"] == 1 and out["unfit_bound"] == 1


#: The tiny runs, one test per workload and mode (each runs both schedulers, each on a fresh API server), so that
#: a parallel run spreads them: preemption and required anti-affinity in both modes, DoNotSchedule spread in
#: stream mode.
TINY_RUNS = [("PreemptionBasic", "backlog"), ("PreemptionBasic", "stream"), ("SchedulingPodAntiAffinity", "backlog"),
             ("SchedulingPodAntiAffinity", "stream"), ("TopologySpreading", "stream")]


@pytest.mark.parametrize(("workload", "mode"), TINY_RUNS, ids=[f"{w}-{m}" for w, m in TINY_RUNS])
def test_scheduler_perf_tiny(workload: str, mode: str, capsys) -> None:
    """One workload in one mode at 8 nodes, for both schedulers: every field there, every pod bound, every
    check 0."""
    require_assets("1.26")
    tiny = ["--nodes", "8", "--creators", "2", "--creator-threads", "2", "--timeout", "60"]
    assert main(["--workload", workload, "--mode", mode, *tiny]) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines() if s.startswith("{")]
    assert sorted((r["workload"], r["mode"], r["scheduler"]) for r in lines) == [
        (workload, mode, "modern"), (workload, mode, "ours")]
    for r in lines:
        assert "error" not in r, r
        for field in ("pods_per_second", "pods_per_second_from_start", "seconds_to_first_bind",
                      "creator_pods_per_second", "peak_rss_mb", "commit", "version", "scale", "victims"):
            assert r[field] is not None, (field, r)
        assert r["bound"] == r["expected_bound"] == r["created"] == r["measured_pods"], r
        assert r["ended"] == "bound"
        assert all(r[check] == 0 for check in CHECKS) and r["failed_checks"] == [], r
        assert (r["p50_ms"] is not None) == (mode == "stream")
        if workload == "PreemptionBasic":
            assert r["victims"] == 3 * r["measured_pods"], r  # 4 low pods per node, 3 make room
        if workload == "TopologySpreading":
            assert r["spread_skew"] is not None, r
