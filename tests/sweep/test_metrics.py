"""Each measure on a handmade cluster whose numbers are known, and the rows a cell gives (including a failed one)."""

from __future__ import annotations

import pytest

from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.features import FeatureGates
from policy_scheduler.model.pod import Pod
from policy_scheduler.offline.results import Placement
from policy_scheduler.offline.simulate import capacity, simulate
from policy_scheduler.offline.snapshot import load_snapshot
from policy_scheduler.sweep import cells as cells_module
from policy_scheduler.sweep.cells import plan, run_cell
from policy_scheduler.sweep.metrics import (
    by_reason,
    capacity_metrics,
    cluster_metrics,
    distribution,
    simulation_metrics,
    zone_skew,
)
from policy_scheduler.sweep.spec import METRICS, load_spec

from .conftest import PRIORITY_CLUSTER, node, pod, write_manifests, write_spec

GI = 2**30
WEB = ("ReplicaSet", "web")


@pytest.fixture
def small(tmp_path):
    """Six nodes (zones a, a, b, b cordoned, c NotReady, none); web pods 2 in a, 1 in b; a DaemonSet pod alone on n2."""
    return load_snapshot([write_manifests(
        tmp_path,
        node("n1", "a"), node("n2", "a"), node("n3", "b", cpu="2", memory="4Gi"),
        node("n4", "b", unschedulable=True), node("n5", "c", ready="False"), node("n6", None, cpu="1", memory="2Gi"),
        pod("web-0", "1", "2Gi", node_name="n1", owner=WEB), pod("web-1", "1", "1Gi", node_name="n1", owner=WEB),
        pod("web-2", "500m", "1Gi", node_name="n3", owner=WEB),
        pod("agent-n2", "200m", "256Mi", node_name="n2", owner=("DaemonSet", "agent")),
        pod("batch", "3", "128Mi", node_name="n4"),
    )])


def test_distribution_nearest_rank():
    assert distribution([]) == {"mean": None, "p90": None, "max": None}
    assert distribution([0.3]) == {"mean": 0.3, "p90": 0.3, "max": 0.3}
    assert distribution([i / 10 for i in range(10, 0, -1)]) == {"mean": 0.55, "p90": 0.9, "max": 1.0}
    assert distribution([1 / 3, 2 / 3]) == {"mean": 0.5, "p90": 0.6667, "max": 0.6667}


def test_cluster_measures(small):
    got = cluster_metrics(small.cluster_state(), METRICS)
    assert got["cpu"] == {"mean": 0.2583, "p90": 0.75, "max": 0.75}  # 0.5, .05, .25, .75, 0, 0 of allocatable
    assert got["memory"] == {"mean": 0.112, "p90": 0.375, "max": 0.375}  # 3/8, 1/32, 1/4, 1/64, 0, 0
    assert (got["nodes"], got["nodesUsed"]) == (6, 3)  # n2 runs only a DaemonSet pod; n4 counts (it runs batch)
    # n4 (cordoned, 1 cpu free) and n5 (NotReady, 4 free) cannot take a pod: n2 has the most room
    assert got["largestFree"] == {"cpu": "3800m", "cpuNode": "n2", "memory": 8 * GI - 256 * 2**20, "memoryNode": "n2"}
    assert cluster_metrics(small.cluster_state(), ["cpu"]).keys() == {"cpu"}


def test_zone_skew_counts_zones_without_pods(small):
    cluster = small.cluster_state()
    assert zone_skew(cluster, {"ReplicaSet default/web", "DaemonSet default/agent"}) == {
        "max": 2, "workloads": {"DaemonSet default/agent": 1, "ReplicaSet default/web": 2}}  # a 2, b 1, c 0
    assert zone_skew(cluster, set()) == {"max": None, "workloads": {}}


def test_zone_skew_without_zones(tmp_path):
    snapshot = load_snapshot([write_manifests(tmp_path, node("x"), pod("w", node_name="x", owner=WEB))])
    assert zone_skew(snapshot.cluster_state(), {"ReplicaSet default/web"}) == {"max": None, "workloads": {}}


def _failed(failed=None, error=None) -> Placement:
    return Placement(Pod(pod("p")), None, error, failed=failed)


def test_unschedulable_pods_by_their_main_reason():
    most_nodes = _failed({"n1": ["Insufficient cpu"], "n2": ["Insufficient cpu", "MatchNodeSelector"],
                          "n3": ["MatchNodeSelector"], "n4": ["MatchNodeSelector"]})
    tie = _failed({"a": ["B reason"], "b": ["A reason"]})
    other = _failed(error="pod has unbound immediate PersistentVolumeClaims\n(more)")
    preempted = _failed(error="preempted by default/high on node n1")
    assert by_reason([most_nodes, tie, other, preempted, most_nodes]) == {
        "MatchNodeSelector": 2, "A reason": 1, "pod has unbound immediate PersistentVolumeClaims": 1, "preempted": 1}


def test_simulation_measures_of_a_queue(small, tmp_path):
    source = from_provider("DefaultProvider")
    extra = write_manifests(tmp_path / "more", pod("web-3", "500m", "1Gi", owner=WEB, created="2024-01-02T00:00:00Z"),
                            pod("huge", "64", created="2024-01-03T00:00:00Z"),
                            pod("gated", created="2024-01-04T00:00:00Z", schedulingGates=[{"name": "wait"}]))
    snapshot = load_snapshot([*small.sources, extra])
    result = simulate(snapshot, lambda c: source.build(c))
    got = simulation_metrics(result, METRICS)
    assert (got["pending"], got["placed"], got["gated"]) == (3, 1, 1)
    assert got["unschedulable"] == {"total": 1, "byReason": {"Insufficient cpu": 1}}
    assert got["preemptions"] == {"count": 0, "victims": 0}
    assert got["zoneSkew"]["workloads"].keys() == {"ReplicaSet default/web"}  # the queued pods' workloads only
    assert list(got) == ["pending", "placed", "gated", "unschedulable", "cpu", "memory", "nodes", "nodesUsed",
                         "largestFree", "zoneSkew", "preemptions"]


def test_preemptions_are_counted(tmp_path):
    """The bundled priority example with PodPriority on: the row counts what simulate's preemptions say."""
    snapshot = load_snapshot([PRIORITY_CLUSTER])
    gates = FeatureGates.parse("PodPriority=true")
    source = from_provider("DefaultProvider")
    result = simulate(snapshot, lambda c: source.build(c, feature_gates=gates), pod_priority=True)
    preemptions = result.pod_priority.preemptions
    assert preemptions
    spec = write_spec(tmp_path, {"snapshots": [PRIORITY_CLUSTER], "scenarios": ["as-is"],
                                 "algorithms": [{"provider": "DefaultProvider", "featureGates": "PodPriority=true"},
                                                {"provider": "DefaultProvider", "label": "no-priority"}]})
    with_gate, without = (run_cell(c) for c in plan(load_spec(spec)))
    assert with_gate["preemptions"] == {"count": len(preemptions), "victims": sum(len(p.victims) for p in preemptions)}
    assert without["preemptions"] == {"count": 0, "victims": 0}


def test_capacity_measures(small):
    template = Pod(pod("probe", "1", "1Gi"))
    source = from_provider("DefaultProvider")
    result = capacity(small, template.raw, lambda c: source.build(c))
    got = capacity_metrics(result, template, METRICS)
    assert got["capacity"] == {"replicas": result.replicas, "stopReason": result.stop_reason, "limitedByMax": False}
    assert (got["pending"], got["placed"], got["unschedulable"]["total"]) == (0, result.replicas, 0)
    per_zone = {"a": 0, "b": 0, "c": 0}
    for name, count in result.placements.items():
        if result.zones[name] is not None:  # n6 has no zone: its copies are in none
            per_zone[result.zones[name]] += count
    assert "n6" in result.placements
    skew = max(per_zone.values()) - min(per_zone.values())
    assert got["zoneSkew"] == {"max": skew, "workloads": {"copies of Pod default/probe": skew}}
    assert got["cpu"]["max"] == 1.0  # copies until no usable node has a core left


def test_a_cell_that_fails_is_a_row_with_its_error(tmp_path, monkeypatch):
    spec = write_spec(tmp_path, {"snapshots": [PRIORITY_CLUSTER], "algorithms": [{"provider": "DefaultProvider"}],
                                 "scenarios": [{"drain": {"nodes": ["nope"]}}, "as-is"], "metrics": ["placed"]})
    bad, good = (run_cell(c) for c in plan(load_spec(spec)))
    assert bad == {"snapshot": PRIORITY_CLUSTER, "algorithm": "DefaultProvider", "scenario": "drain nope",
                   "cell": bad["cell"], "error": "scenario 'drain nope': drain: no node nope in the snapshot"}
    assert good["error"] is None and set(good) == {"snapshot", "algorithm", "scenario", "cell", "error", "pending",
                                                   "placed", "gated"}

    def broken(cell, shipped=None):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cells_module, "evaluate", broken)
    assert run_cell(plan(load_spec(spec))[1])["error"] == "internal error: RuntimeError: a bug"
