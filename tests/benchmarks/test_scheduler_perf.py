"""``benchmarks/scheduler_perf.py``: its placement checks on made-up final states, the volume workload's objects
through the offline engine, the DaemonSet and namespaceSelector workloads' objects, and the script itself at a
tiny size against the real API server (envtest 1.26), for ours and the modern kube-scheduler, both modes."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from benchmarks.faults import Bind, NodeState
from benchmarks.harness.envtest import require_assets
from benchmarks.perf_workloads import (
    CSI_DRIVER,
    DAEMON_TOLERATIONS,
    DAEMONSETS,
    DRA_WORKLOADS,
    HOSTNAME_KEY,
    MODERN_FIELD_WORKLOADS,
    POD_AFFINITY_NS_SELECTOR,
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
from benchmarks.scheduler_perf import (
    CHECKS,
    PERF_WORKLOADS,
    Cell,
    Daemons,
    Volumes,
    dra_checks,
    main,
    parse_args,
    placement_checks,
    runs,
    table,
)
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.model.openapi import OpenAPIValidator, resolve_version
from policy_scheduler.offline.simulate import simulate
from policy_scheduler.offline.snapshot import Checks, load_objects
from policy_scheduler.registry import DEFAULT_PROVIDER

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


def test_daemonset_workload_objects() -> None:
    """SchedulingDaemonSets: 5 DaemonSets, one pod of each per node, DaemonSet by DaemonSet, as the controller
    makes them: owner reference (uid), matchFields on the node's name, the 6 daemon tolerations."""
    w = MODERN_FIELD_WORKLOADS["SchedulingDaemonSets"]
    assert w.sizes[500] == (500, 500, 2500) and len(w.daemonsets) == 5 and w.name not in WORKLOADS
    objects = w.daemonset_objects("s")
    assert [o["metadata"]["name"] for o in objects] == [d.name for d in DAEMONSETS]
    for o in objects:
        assert o["apiVersion"] == "apps/v1" and o["kind"] == "DaemonSet"
        assert o["spec"]["selector"]["matchLabels"].items() <= o["spec"]["template"]["metadata"]["labels"].items()
    uids = {d.name: f"uid-{d.name}" for d in DAEMONSETS}
    pods = w.measured_pods(40, "s", nodes=8, owners=uids)
    assert len({p["metadata"]["name"] for p in pods}) == 40
    pairs = [(p["metadata"]["ownerReferences"][0]["name"], Daemons.named_node(p)) for p in pods]
    assert pairs == [(d.name, f"node-{i:05d}") for d in DAEMONSETS for i in range(8)]
    for pod in pods:
        (ref,) = pod["metadata"]["ownerReferences"]
        assert ref == {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ref["name"], "uid": uids[ref["name"]],
                       "controller": True, "blockOwnerDeletion": True}
        assert pod["spec"]["tolerations"] == list(DAEMON_TOLERATIONS) and len(DAEMON_TOLERATIONS) == 6
        assert pod["metadata"]["labels"]["app"] == ref["name"]
    assert {t["key"].rsplit("/", 1)[1]: t["effect"] for t in DAEMON_TOLERATIONS} == {
        "not-ready": "NoExecute", "unreachable": "NoExecute", "disk-pressure": "NoSchedule",
        "memory-pressure": "NoSchedule", "pid-pressure": "NoSchedule", "unschedulable": "NoSchedule"}
    assert Cell(w, 8, 8, 40).expected_bound == 40 and Cell(w, 8, 8, 50).expected_bound == 40
    with pytest.raises(ValueError):
        w.measured_pods(41, "s", nodes=8)


def test_daemonset_checks_count_misplaced_and_missing_pods() -> None:
    """Of 3 DaemonSet pods for nodes a and b: one on its node, one on the other node (node affinity, and its
    pair missing), one bound where it belongs but owned by a stale uid (missing); one pair never created."""
    w = MODERN_FIELD_WORKLOADS["SchedulingDaemonSets"]
    ds = DAEMONSETS[0]
    right = ds.pod("pod-000000", "a", "uid-0", "s")
    wrong = DAEMONSETS[1].pod("pod-000001", "a", "uid-1", "s")
    stale = DAEMONSETS[2].pod("pod-000002", "b", "uid-old", "s")
    expected = Daemons.of([right, wrong, stale, DAEMONSETS[3].pod("pod-000003", "b", "uid-3", "s")],
                          {d.name: f"uid-{i}" for i, d in enumerate(DAEMONSETS)})
    assert expected.expected == {("daemonset-0", "a"), ("daemonset-1", "a"), ("daemonset-2", "b"),
                                 ("daemonset-3", "b")}
    pods, nodes = _cluster([(right, "a"), (wrong, "b"), (stale, "b")], {"a": "z", "b": "z"})
    out = placement_checks(w, pods, nodes, {}, [], daemons=expected)
    assert out["node_affinity_violations"] == 1 and out["daemon_pods_missing"] == 3
    assert out["daemon_pods_expected"] == 4 and out["overcommitted_nodes"] == 0
    assert out["failed_checks"] == ["node_affinity_violations", "daemon_pods_missing"]
    out = placement_checks(w, pods, nodes, {}, [])  # no DaemonSets: no figure
    assert out["daemon_pods_missing"] == 0 and out["daemon_pods_expected"] is None


@pytest.mark.parametrize("name", sorted(MODERN_FIELD_WORKLOADS))
def test_modern_field_workloads_through_the_offline_engine(name: str) -> None:
    """The workloads' objects load as ``simulate`` loads them (the DaemonSets themselves skipped: the engine reads
    no DaemonSet), every pod is scheduled, each DaemonSet pod on the node its matchFields names."""
    w = MODERN_FIELD_WORKLOADS[name]
    init, measured = (8, 40) if w.daemonsets else (10, 20)
    snapshot = load_objects(w.snapshot_objects(8, init, measured, "s"), "scheduler_perf",
                            Checks(OpenAPIValidator(resolve_version(None))))
    assert snapshot.warnings == [] and dict(snapshot.skipped) == ({"DaemonSet": 5} if w.daemonsets else {})
    source = from_provider(DEFAULT_PROVIDER)
    result = simulate(snapshot, lambda cluster: source.build(cluster, vectorized=True), scheduler_name="s")
    assert result.scheduled == init + measured, Counter(p.error for p in result.placements if p.node is None)
    if w.daemonsets:
        named = {p["metadata"]["name"]: Daemons.named_node(p) for p in w.measured_pods(measured, "s", nodes=8)}
        placed = {p.pod.name: p.node for p in result.placements if p.pod.name in named}
        assert placed == named


def test_namespace_selector_workload_objects() -> None:
    """Upstream's ns-selector shape: 10 labelled init namespaces filled in blocks of 4, a labelled measured
    namespace, terms with a namespaceSelector and no namespaces."""
    w = MODERN_FIELD_WORKLOADS["SchedulingNamespaceSelectorAffinity"]
    assert w.sizes[500] == (500, 40, 100) and w.zones == ("zone1",)
    namespaces = w.init_namespaces(500)
    assert namespaces == tuple(f"init-ns-{j}" for j in range(10)) and len(w.init_namespaces(5000)) == 100
    assert Counter(p["metadata"]["namespace"] for p in w.init_pods(40, "s", namespaces=namespaces)) == dict.fromkeys(
        namespaces, 4)
    assert {n["metadata"]["name"]: n["metadata"]["labels"] for n in w.namespace_objects()} == {
        **{n: {"team": "devops"} for n in namespaces}, "measure-ns-0": {"team": "devops"}}
    (pod,) = w.measured_pods(1, "s")
    (term,) = pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert pod["metadata"]["namespace"] == "measure-ns-0" and "namespaces" not in term
    assert term["namespaceSelector"] == {"matchLabels": {"team": "devops"}} and term["topologyKey"] == ZONE_KEY
    preferred = MODERN_FIELD_WORKLOADS["SchedulingPreferredNamespaceSelectorAffinity"].measured_pods(1, "s")[0]
    (weighted,) = preferred["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert weighted["weight"] == 1 and weighted["podAffinityTerm"]["namespaceSelector"] == term["namespaceSelector"]


def test_pod_affinity_check_follows_the_namespace_selector() -> None:
    """A blue pod of a devops namespace in zone1 satisfies the measured pods there; in zone2 the only other blue
    pod is in an unlabelled namespace, so the measured pod there is alone (the first pod of its term is bound
    first, in zone1); an empty namespaceSelector takes every namespace."""
    zones = {"a": "zone1", "b": "zone1", "c": "zone2"}
    init = POD_AFFINITY_NS_SELECTOR.pod("init-000000", "init-ns-0", "s")
    near = POD_AFFINITY_NS_SELECTOR.pod("pod-000000", "measure-ns-0", "s")
    far = POD_AFFINITY_NS_SELECTOR.pod("pod-000001", "measure-ns-0", "s")
    decoy = POD_DEFAULT.pod("decoy", "other", "s")
    decoy["metadata"]["labels"] = {"color": "blue"}
    pods, nodes = _cluster([(init, "a"), (near, "b"), (far, "c"), (decoy, "c")], zones)
    binds = {name: Bind(float(i), 0.0, i, pods[name]["spec"]["nodeName"], True) for i, name in enumerate(pods)}
    labels = {"init-ns-0": {"team": "devops"}, "measure-ns-0": {"team": "devops"}, "other": {}}
    out = placement_checks(MODERN_FIELD_WORKLOADS["SchedulingNamespaceSelectorAffinity"], pods, nodes, binds, [],
                           namespace_labels=labels)
    assert out["pod_affinity_violations"] == 1 and out["failed_checks"] == ["pod_affinity_violations"]
    for pod in (init, near, far):
        pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
            "namespaceSelector"] = {}
    out = placement_checks(WORKLOADS["SchedulingBasic"], pods, nodes, binds, [], namespace_labels=labels)
    assert out["pod_affinity_violations"] == 0


def test_dra_workload_objects_are_upstreams_shape() -> None:
    """createResourceDriver's slice per node (pool = node, 10 devices with upstream's attributes), the CEL class, a
    template per namespace; the shared-claim workload: claim i // 5 per pod, 2 devices per node."""
    w = PERF_WORKLOADS["SchedulingWithResourceClaimTemplate"]
    pods = w.init_pods(3, "s") + w.measured_pods(3, "s")
    objects = w.dra.objects(w.node_names(2), pods)
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objects] == [
        ("DeviceClass", None), ("ResourceSlice", None), ("ResourceSlice", None),
        ("ResourceClaimTemplate", "init"), ("ResourceClaimTemplate", "test")]
    slice_spec = objects[1]["spec"]
    assert slice_spec["pool"] == {"name": "node-00000", "generation": 0, "resourceSliceCount": 1}
    assert slice_spec["nodeName"] == "node-00000" and len(slice_spec["devices"]) == 10
    assert slice_spec["devices"][3]["attributes"]["dra.example.com/numa"] == {"int": 3}
    assert objects[0]["spec"]["selectors"][0]["cel"]["expression"] == 'device.driver == "test-driver.cdi.k8s.io"'
    assert pods[0]["spec"]["resourceClaims"] == [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}]
    assert pods[0]["spec"]["containers"][0]["resources"] == {"claims": [{"name": "resource"}]}
    shared = PERF_WORKLOADS["SchedulingWithResourceClaim"]
    names = [p["spec"]["resourceClaims"][0]["resourceClaimName"] for p in shared.measured_pods(11, "s")]
    assert names == ["test-claim-0"] * 5 + ["test-claim-1"] * 5 + ["test-claim-2"]
    assert Cell(shared, 500, 2500, 2500).expected_bound == 2500  # 500 nodes x 2 devices x 5 pods, half for init


def _claim(name: str, results: list[tuple[str, str]], reserved: list[str]) -> dict:
    return {"metadata": {"name": name, "namespace": "test"}, "status": {
        "allocation": {"devices": {"results": [
            {"request": "req-0", "driver": "d", "pool": pool, "device": device} for pool, device in results]}},
        "reservedFor": [{"resource": "pods", "name": u, "uid": u} for u in reserved]}}


def test_dra_check_counts_unallocated_misplaced_unreserved_and_doubly_allocated() -> None:
    def pod(name: str, node: str, claim: str) -> dict:
        return {"metadata": {"name": name, "namespace": "test", "uid": name},
                "spec": {"nodeName": node, "resourceClaims": [{"name": "resource", "resourceClaimName": claim}]}}

    claims = {("test", c["metadata"]["name"]): c for c in (
        _claim("good", [("n1", "a")], ["p1"]), _claim("elsewhere", [("n2", "a")], ["p2"]),
        _claim("unreserved", [("n1", "b")], []), _claim("twice", [("n1", "a")], ["p4"]),
        {"metadata": {"name": "pending", "namespace": "test"}})}
    bound = [pod("p1", "n1", "good"), pod("p2", "n1", "elsewhere"), pod("p3", "n1", "unreserved"),
             pod("p4", "n1", "twice"), pod("p5", "n1", "pending"), pod("p6", "n1", "missing")]
    out = dra_checks(bound, claims)
    # p2 (another node's pool), p3 (not reserved), p5 (unallocated), p6 (no claim); device n1/a held twice
    assert out == {"dra_violations": 5, "dra_devices_allocated": 3}
    assert dra_checks(bound[:1], claims) == {"dra_violations": 1, "dra_devices_allocated": 3}
    assert dra_checks(bound, None) == {"dra_violations": 0, "dra_devices_allocated": None}


#: The tiny runs, one test per workload and mode (each runs both schedulers, each on a fresh API server), so that
#: a parallel run spreads them: preemption and required anti-affinity in both modes, DoNotSchedule spread in
#: stream mode, CSI volumes at upstream's limit (39: 3 pods per node) and at a limit of 2 that binds (the 8
#: init pods and 8 of the 16 measured pods fill the 8 nodes' 2 volumes each; 8 stay pending).
#: The DaemonSet runs: 8 nodes, 8 init pods, 40 DaemonSet pods (5 per node); the namespaceSelector ones: 10 init
#: pods over the 10 labelled namespaces and 20 measured pods (upstream's 10-node case has 4 and 6). The DRA runs (on
#: the 1.36 line): 8 nodes of 10 devices (of 2, shared by 5 pods a claim), 20 init and 20 measured pods.
_NS_TINY = ("--init-pods", "10", "--measured-pods", "20")
_DRA_TINY = ("--version", "1.36", "--init-pods", "20", "--measured-pods", "20")  # 1.36's resourceclaim controller
TINY_RUNS = [("PreemptionBasic", "backlog", ()), ("PreemptionBasic", "stream", ()),
             ("SchedulingPodAntiAffinity", "backlog", ()), ("SchedulingPodAntiAffinity", "stream", ()),
             ("TopologySpreading", "stream", ()), ("SchedulingCSIVolumes", "backlog", ()),
             ("SchedulingCSIVolumes", "stream", ("--csi-limit", "2")),
             ("SchedulingDaemonSets", "backlog", ()), ("SchedulingDaemonSets", "stream", ()),
             ("SchedulingNamespaceSelectorAffinity", "backlog", _NS_TINY),
             ("SchedulingNamespaceSelectorAffinity", "stream", _NS_TINY),
             ("SchedulingPreferredNamespaceSelectorAffinity", "stream", _NS_TINY),
             ("SchedulingWithResourceClaimTemplate", "backlog", _DRA_TINY),
             ("SchedulingWithResourceClaim", "stream", _DRA_TINY)]


@pytest.mark.parametrize(("workload", "mode", "extra"), TINY_RUNS,
                         ids=[f"{w}-{m}" + "".join("-" + a.lstrip("-") for a in e) for w, m, e in TINY_RUNS])
def test_scheduler_perf_tiny(workload: str, mode: str, extra: tuple[str, ...], capsys) -> None:
    """One workload in one mode at 8 nodes, for both schedulers: every field there, every pod bound (that has
    room), every check 0."""
    version = extra[extra.index("--version") + 1] if "--version" in extra else "1.26"  # (1.26 starts fastest)
    require_assets(version)
    tiny = ["--nodes", "8", "--creators", "2", "--creator-threads", "2", "--timeout", "60", "--version", version,
            *extra]
    assert main(["--workload", workload, "--mode", mode, *tiny]) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines() if s.startswith("{")]
    assert sorted((r["workload"], r["mode"], r["scheduler"]) for r in lines) == [
        (workload, mode, "modern"), (workload, mode, "ours")]
    for r in lines:
        assert "error" not in r, r
        for field in ("pods_per_second", "pods_per_second_from_start", "seconds_to_first_bind",
                      "creator_pods_per_second", "peak_rss_mb", "commit", "version", "scale", "victims",
                      "cpu_seconds", "server_cpu_seconds"):
            assert r[field] is not None, (field, r)
        limited = "--csi-limit" in extra
        assert r["bound"] == r["expected_bound"] == (8 if limited else r["created"]), r
        assert r["created"] == r["measured_pods"], r
        assert r["ended"] == "bound"
        assert r["cpu_seconds"] > 0 and r["server_cpu_seconds"] > 0, r
        assert all(r[check] == 0 for check in CHECKS) and r["failed_checks"] == [], r
        assert (r["p50_ms"] is not None) == (mode == "stream")
        for phase in ("decision_ms_mean", "bind_ms_mean", "e2e_ms_mean"):  # ours' own histograms
            assert (r[phase] is not None and r[phase] > 0) == (r["scheduler"] == "ours"), (phase, r)
        if r["scheduler"] == "ours":
            assert r["decision_ms_mean"] < r["e2e_ms_mean"] and r["bind_ms_mean"] < r["e2e_ms_mean"], r
        if workload == "PreemptionBasic":
            assert r["victims"] == 3 * r["measured_pods"], r  # 4 low pods per node, 3 make room
        if workload in DRA_WORKLOADS:  # every measured and init pod's claim allocated, reserved, on its node
            expected = (r["bound"] + r["init_bound"]) // (DRA_WORKLOADS[workload].dra.pods_per_claim or 1)
            assert r["dra_devices_allocated"] == expected, r
        if workload == "TopologySpreading":
            assert r["spread_skew"] is not None, r
        if workload == "SchedulingCSIVolumes":  # every pod's volume counted, none over the CSINode's count
            assert r["csi_limit"] == (2 if limited else 39) and r["csi_volumes_unresolved"] == 0, r
            assert r["csi_volumes_max"] == (2 if limited else 3), r
        if workload == "SchedulingDaemonSets":  # a pod of each DaemonSet on every node, owned by it
            assert r["measured_pods"] == r["daemon_pods_expected"] == 40 and r["init_bound"] == 8, r
        else:
            assert r["daemon_pods_expected"] is None, r
        if "NamespaceSelector" in workload:
            assert (r["init_pods"], r["measured_pods"], r["init_bound"]) == (10, 20, 10), r


def test_the_baseline_line_runs_after_each_pair_and_gets_its_own_columns() -> None:
    """``--baseline 1.26``: after each interleaved pair on the 1.36 line, 1.26's modern scheduler on a 1.26 server
    (never for a DRA workload, which 1.26 cannot serve); the table compares ours with both."""
    args = parse_args(["--workload", "SchedulingBasic,SchedulingWithResourceClaim", "--mode", "backlog",
                       "--repeat", "2", "--baseline", "1.26"])
    assert args.version == "1.36"
    planned = [(cell.name, repeat, kind, version) for cell, _, repeat, kind, version in runs(args)]
    assert planned == [
        ("SchedulingBasic", 1, "ours", "1.36"), ("SchedulingBasic", 1, "modern", "1.36"),
        ("SchedulingBasic", 1, "modern", "1.26"),
        ("SchedulingBasic", 2, "modern", "1.36"), ("SchedulingBasic", 2, "ours", "1.36"),
        ("SchedulingBasic", 2, "modern", "1.26"),
        ("SchedulingWithResourceClaim", 1, "ours", "1.36"), ("SchedulingWithResourceClaim", 1, "modern", "1.36"),
        ("SchedulingWithResourceClaim", 2, "modern", "1.36"), ("SchedulingWithResourceClaim", 2, "ours", "1.36")]
    assert parse_args(["--baseline", "1.36"]).baseline is None  # the line itself is no baseline

    def line(kind: str, version: str, from_start: float) -> dict:
        return {"workload": "SchedulingBasic", "mode": "backlog", "scheduler": kind, "version": version, "repeat": 1,
                "pods_per_second": from_start * 2, "pods_per_second_from_start": from_start,
                "seconds_to_first_bind": 0.5, "bound": 10, "expected_bound": 10, "failed_checks": [],
                "nodes": 500, "init_pods": 500, "measured_pods": 1000}

    out = table([line("ours", "1.36", 600.0), line("modern", "1.36", 400.0), line("modern", "1.26", 300.0)])
    head, _, row = out.splitlines()[:3]
    cells = dict(zip([h.strip() for h in head.split("|")], [c.strip() for c in row.split("|")]))
    assert cells["ours/modern from start"] == "1.50"
    assert cells["modern 1.26 from start"] == "300.0" and cells["ours/modern 1.26 from start"] == "2.00"
    assert "versions ['1.26', '1.36']" in out
