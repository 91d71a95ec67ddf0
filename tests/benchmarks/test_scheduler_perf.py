"""``benchmarks/scheduler_perf.py``: its placement checks on made-up final states, the volume workload's objects
through the offline engine, and the script itself at a tiny size against the real API server (envtest 1.26),
for ours and the modern kube-scheduler, both modes."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from benchmarks.faults import Bind, NodeState
from benchmarks.perf_workloads import (
    CSI_DRIVER,
    HOSTNAME_KEY,
    POD_DEFAULT,
    POD_HIGH_PRIORITY,
    POD_LOW_PRIORITY,
    POD_WITH_NODE_AFFINITY,
    POD_WITH_POD_AFFINITY,
    POD_WITH_POD_ANTI_AFFINITY,
    POD_WITH_TOPOLOGY_SPREADING,
    VOLUME_WORKLOADS,
    WORKLOADS,
    ZONE_KEY,
    CSIVolumes,
)
from benchmarks.scheduler_perf import CHECKS, PERF_WORKLOADS, Cell, Volumes, main, placement_checks
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.model.openapi import OpenAPIValidator, resolve_version
from policy_scheduler.offline.simulate import simulate
from policy_scheduler.offline.snapshot import Checks, load_objects
from policy_scheduler.registry import DEFAULT_PROVIDER
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


def test_csi_check_counts_distinct_volumes_per_driver_against_the_csinode() -> None:
    """a: 3 volumes of the driver (one shared by two pods) under a limit of 2; b: 2 under 2; c: 3 with no
    CSINode (not limited); d: another driver's 3 volumes under a limit of the driver only; one pod on b whose
    claim is unbound."""
    csi = CSIVolumes(limit=2)
    pods, claims, pvs = {}, {}, {}

    def place(name: str, node: str, handle: str, driver: str = CSI_DRIVER, bound: bool = True) -> None:
        pod = POD_DEFAULT.pod(name, "default", "s", claim=csi.claim_name(name))
        pod["spec"]["nodeName"] = node
        pods[name] = pod
        pv, claim = csi.persistent_volume("default", name), csi.claim("default", name)
        pv["spec"]["csi"] = {"driver": driver, "volumeHandle": handle}
        if not bound:
            del claim["spec"]["volumeName"]
        pvs[pv["metadata"]["name"]] = pv
        claims[("default", claim["metadata"]["name"])] = claim

    for i, handle in enumerate(["v1", "v2", "v3", "v3"]):
        place(f"a-{i}", "a", handle)
    place("b-0", "b", "v4")
    place("b-1", "b", "v5")
    place("b-2", "b", "v6", bound=False)
    for i in range(3):
        place(f"c-{i}", "c", f"v{7 + i}")
        place(f"d-{i}", "d", f"w{i}", driver="other.csi.example.com")
    csinodes = {n: csi.csinode(n) for n in ("a", "b", "d")}
    nodes = {n: _node(n, "z") for n in "abcd"}
    out = placement_checks(VOLUME_WORKLOADS["SchedulingCSIVolumes"], pods, nodes, {}, [],
                           Volumes(claims, pvs, csinodes))
    assert out["csi_limit_violations"] == 1 and out["failed_checks"] == ["csi_limit_violations"]
    assert out["csi_volumes_max"] == 3 and out["csi_volumes_unresolved"] == 1
    # without volumes (the other workloads) the figures are empty
    out = placement_checks(WORKLOADS["SchedulingBasic"], pods, nodes, {}, [])
    assert out["csi_limit_violations"] == 0 and out["csi_volumes_max"] is None


def test_csi_workload_is_upstreams_shape() -> None:
    """SchedulingCSIPVs' sizes and objects; the CSI limit caps the room per node."""
    w = PERF_WORKLOADS["SchedulingCSIVolumes"]
    assert w.sizes == {500: (500, 500, 1000), 5000: (5000, 5000, 1000)} and w.init == w.measured == POD_DEFAULT
    (node,) = w.nodes(1)
    assert node["status"]["allocatable"]["attachable-volumes-csi-ebs.csi.aws.com"] == "39"
    (csinode,) = w.csinodes(1)
    assert csinode["spec"]["drivers"] == [
        {"name": "ebs.csi.aws.com", "nodeID": "node-00000", "allocatable": {"count": 39}}]
    pods = w.init_pods(1, "s") + w.measured_pods(1, "s")
    pairs = w.volume_objects(pods)
    assert [p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] for p in pods] == [
        c["metadata"]["name"] for _, c in pairs] == ["pvc-init-000000", "pvc-pod-000000"]
    assert [pv["spec"]["csi"]["volumeHandle"] for pv, _ in pairs] == ["vol-init-000000", "vol-pod-000000"]
    assert all(c["spec"]["volumeName"] == pv["metadata"]["name"]
               and pv["spec"]["claimRef"]["name"] == c["metadata"]["name"] for pv, c in pairs)
    assert Cell(w, 500, 500, 1000, 39).expected_bound == 1000
    assert Cell(w, 8, 8, 16, 2).expected_init == 8 and Cell(w, 8, 8, 16, 2).expected_bound == 8


def test_csi_workload_objects_through_the_offline_engine() -> None:
    """The workload's objects load as ``simulate`` loads them, and the engine keeps to the CSINodes' count."""
    w = VOLUME_WORKLOADS["SchedulingCSIVolumes"]
    source = from_provider(DEFAULT_PROVIDER)
    for limit, scheduled in ((None, 24), (2, 16)):
        snapshot = load_objects(w.snapshot_objects(8, 8, 16, "s", csi_limit=limit), "scheduler_perf",
                                Checks(OpenAPIValidator(resolve_version(None))))
        assert snapshot.warnings == []
        result = simulate(snapshot, lambda cluster: source.build(cluster, vectorized=True), scheduler_name="s")
        assert result.scheduled == scheduled
        assert max(Counter(p.node for p in result.placements if p.node).values()) == (3 if limit is None else limit)
        failed = {p.error for p in result.placements if p.node is None}
        assert failed <= {"0/8 nodes are available: 8 MaxVolumeCount."}


#: The tiny runs, one test per workload and mode (each runs both schedulers, each on a fresh API server), so that
#: a parallel run spreads them: preemption and required anti-affinity in both modes, DoNotSchedule spread in
#: stream mode, CSI volumes at upstream's limit (39: 3 pods per node) and at a limit of 2 that binds (the 8
#: init pods and 8 of the 16 measured pods fill the 8 nodes' 2 volumes each; 8 stay pending).
TINY_RUNS = [("PreemptionBasic", "backlog", ()), ("PreemptionBasic", "stream", ()),
             ("SchedulingPodAntiAffinity", "backlog", ()), ("SchedulingPodAntiAffinity", "stream", ()),
             ("TopologySpreading", "stream", ()), ("SchedulingCSIVolumes", "backlog", ()),
             ("SchedulingCSIVolumes", "stream", ("--csi-limit", "2"))]


@pytest.mark.parametrize(("workload", "mode", "extra"), TINY_RUNS,
                         ids=[f"{w}-{m}" + "".join("-" + a.lstrip("-") for a in e) for w, m, e in TINY_RUNS])
def test_scheduler_perf_tiny(workload: str, mode: str, extra: tuple[str, ...], capsys) -> None:
    """One workload in one mode at 8 nodes, for both schedulers: every field there, every pod bound (that has
    room), every check 0."""
    require_assets("1.26")
    tiny = ["--nodes", "8", "--creators", "2", "--creator-threads", "2", "--timeout", "60", *extra]
    assert main(["--workload", workload, "--mode", mode, *tiny]) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines() if s.startswith("{")]
    assert sorted((r["workload"], r["mode"], r["scheduler"]) for r in lines) == [
        (workload, mode, "modern"), (workload, mode, "ours")]
    for r in lines:
        assert "error" not in r, r
        for field in ("pods_per_second", "pods_per_second_from_start", "seconds_to_first_bind",
                      "creator_pods_per_second", "peak_rss_mb", "commit", "version", "scale", "victims"):
            assert r[field] is not None, (field, r)
        limited = "--csi-limit" in extra
        assert r["bound"] == r["expected_bound"] == (8 if limited else r["created"]), r
        assert r["created"] == r["measured_pods"], r
        assert r["ended"] == "bound"
        assert all(r[check] == 0 for check in CHECKS) and r["failed_checks"] == [], r
        assert (r["p50_ms"] is not None) == (mode == "stream")
        if workload == "PreemptionBasic":
            assert r["victims"] == 3 * r["measured_pods"], r  # 4 low pods per node, 3 make room
        if workload == "TopologySpreading":
            assert r["spread_skew"] is not None, r
        if workload == "SchedulingCSIVolumes":  # every pod's volume counted, none over the CSINode's count
            assert r["csi_limit"] == (2 if limited else 39) and r["csi_volumes_unresolved"] == 0, r
            assert r["csi_volumes_max"] == (2 if limited else 3), r
