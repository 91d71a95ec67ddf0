"""Each scenario kind on the bundled example cluster (and a few handmade objects): what it changes, what it
leaves alone, and that the snapshot it was given is never changed."""

from __future__ import annotations

import pytest

from policy_scheduler.offline.results import node_zone, workload_of
from policy_scheduler.offline.snapshot import load_snapshot
from policy_scheduler.sweep.scenarios import AddNodes, AsIs, Drain, Scale, ScenarioError, selector_text

from .conftest import DEFAULT_CLUSTER, node, pod, write_manifests

SCHEDULER = "default-scheduler"


@pytest.fixture(scope="module")
def example():
    return load_snapshot([DEFAULT_CLUSTER])


def _fingerprint(snapshot):
    return ([(n.name, n.unschedulable) for n in snapshot.nodes], [(p.key, p.node_name) for p in snapshot.pods])


def _queue(snapshot):
    return snapshot.pending_pods(SCHEDULER)


def _per_workload(pods):
    """Pods per workload; a copy of a pod without a controller counts with the pod it copies."""
    out = {}
    for p in pods:
        key = workload_of(p) or f"Pod {p.ref.split('-scale-')[0]}"
        out[key] = out.get(key, 0) + 1
    return out


def test_as_is_is_the_snapshot(example):
    assert AsIs("as-is").apply(example, SCHEDULER) is example


@pytest.mark.parametrize("factor", [1.5, 1.2, 2.0, 0.5])
def test_scale_each_workload_rounded_half_up(example, factor):
    before = _fingerprint(example)
    scaled = Scale(f"scale x{factor:g}", factor=factor).apply(example, SCHEDULER)
    assert _fingerprint(example) == before  # the cached snapshot is never changed
    was, now = _per_workload(_queue(example)), _per_workload(_queue(scaled))
    assert now == {w: int(n * factor + 0.5) for w, n in was.items() if int(n * factor + 0.5)}
    assert scaled.bound_pods() == example.bound_pods() and scaled.nodes == example.nodes
    queue = [p.name for p in _queue(scaled)]
    originals = {p.name: p for p in example.pods}
    for i, name in enumerate(queue):
        if "-scale-" not in name:
            continue
        source = originals[name.split("-scale-")[0]]
        copy = next(p for p in scaled.pods if p.name == name)
        # a copy of its pod: same workload, labels, requests and time; its own name and uid
        assert (workload_of(copy), copy.labels, copy.request, copy.creation_timestamp) == (
            workload_of(source), source.labels, source.request, source.creation_timestamp)
        assert copy.uid != source.uid and copy.node_name == ""
        assert queue.index(source.name) < i  # queued after the pod it copies


def test_scale_copies_in_turn_and_keeps_the_first_pods(example):
    frontend = "ReplicaSet shop/frontend-5c9b7f5d4d"
    pods = [p.name for p in _queue(example) if workload_of(p) == frontend]
    doubled = [p.name for p in _queue(Scale("x", factor=2.2).apply(example, SCHEDULER)) if workload_of(p) == frontend]
    assert sorted(doubled) == sorted(pods + [f"{n}-scale-1" for n in pods] + [f"{pods[0]}-scale-2"])  # 3 * 2.2 = 6.6 -> 7
    halved = [p.name for p in _queue(Scale("x", factor=0.5).apply(example, SCHEDULER)) if workload_of(p) == frontend]
    assert halved == pods[:2]  # 1.5 -> 2: the last in queue order leaves


def test_drain_by_name_cordons_and_requeues_after_every_pod(example):
    drained = Drain("drain worker-1a-01", nodes=("worker-1a-01",)).apply(example, SCHEDULER)
    assert [n.name for n in drained.nodes if n.unschedulable] == ["worker-1a-01", "worker-1b-04"]  # 1b-04 was cordoned
    on_it = {p.ref for p in example.bound_pods() if p.node_name == "worker-1a-01"}
    assert on_it == {"shop/frontend-5c9b7f5d4d-2xkqp", "shop/redis-1"}
    assert not any(p.node_name == "worker-1a-01" for p in drained.bound_pods())
    queue = _queue(drained)
    assert [p.ref for p in queue[-2:]] == ["shop/frontend-5c9b7f5d4d-2xkqp", "shop/redis-1"]  # after every other pod
    assert queue[:-2] == _queue(example)
    requeued = queue[-1]
    latest = max(p.creation_timestamp for p in example.pods)
    assert latest == "2018-02-01T10:02:55Z" and requeued.creation_timestamp == "2018-02-01T10:02:56Z"  # + 1 s
    assert requeued.phase == "Pending"
    assert requeued.uid == next(p.uid for p in example.pods if p.ref == "shop/redis-1")  # the same pod, again
    assert not any(n.unschedulable for n in example.nodes if n.name == "worker-1a-01")


def test_drain_leaves_daemonset_and_mirror_pods(tmp_path, example):
    extra = write_manifests(tmp_path, pod("log-agent-x", node_name="worker-1a-01", owner=("DaemonSet", "log-agent")))
    snapshot = load_snapshot([DEFAULT_CLUSTER, extra])
    drained = Drain("d", nodes=("worker-1a-01", "master-1a")).apply(snapshot, SCHEDULER)
    stayed = {p.ref for p in drained.bound_pods() if p.node_name in ("worker-1a-01", "master-1a")}
    assert stayed == {"default/log-agent-x", "kube-system/kube-apiserver-master-1a",
                      "kube-system/kube-controller-manager-master-1a", "kube-system/kube-scheduler-master-1a",
                      "kube-system/etcd-server-master-1a"}


def test_drain_by_zone_and_by_selector(example):
    zone = Drain("z", zone="eu-west-1c").apply(example, SCHEDULER)
    assert {n.name for n in zone.nodes if n.unschedulable} == {
        n.name for n in example.nodes if node_zone(n.labels) == "eu-west-1c"} | {"worker-1b-04"}
    selector = {"matchLabels": {"disktype": "ssd"}, "matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}
    assert selector_text(selector) == "disktype=ssd,!gpu"
    ssd = Drain("s", selector=selector).apply(example, SCHEDULER)
    assert {n.name for n in ssd.nodes if n.unschedulable} == {
        "worker-1a-01", "worker-1b-01", "worker-1b-04", "worker-1c-01", "worker-1c-03"}


@pytest.mark.parametrize("scenario,message", [
    (Drain("drain x", nodes=("worker-1a-01", "nope")), "scenario 'drain x': drain: no node nope in the snapshot"),
    (Drain("drain zone q", zone="q"), "scenario 'drain zone q': drain: no node in zone q in the snapshot"),
    (Drain("s", selector={"matchLabels": {"disktype": "nvme"}}), "scenario 's': drain: the selector matches no node in the snapshot"),
    (AddNodes("a", like="nope", count=2), "scenario 'a': add-nodes: no node nope in the snapshot"),
])
def test_a_scenario_that_does_not_apply_to_a_snapshot_is_an_error(example, scenario, message):
    with pytest.raises(ScenarioError) as e:
        scenario.apply(example, SCHEDULER)
    assert str(e.value) == message


def test_add_nodes_copies_the_node_without_its_images(tmp_path):
    csi = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
           "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}}]}}
    model = node("n1", "zone-a", cpu="8", memory="16Gi", labels={"disktype": "ssd"})
    model["spec"]["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    model["status"]["images"] = [{"names": ["nginx:1.25"], "sizeBytes": 100_000_000}]
    snapshot = load_snapshot([write_manifests(tmp_path, model, node("n1-added-1"), csi, pod("p"))])
    grown = AddNodes("add 2 x n1", like="n1", count=2).apply(snapshot, SCHEDULER)
    names = [n.name for n in grown.nodes]
    assert names == ["n1", "n1-added-1", "n1-added-1-x", "n1-added-2"]  # a taken name is not reused
    for copy in grown.nodes[2:]:
        assert copy.labels == {**model["metadata"]["labels"], "kubernetes.io/hostname": copy.name}
        assert copy.taints == grown.nodes[0].taints and copy.allocatable == grown.nodes[0].allocatable
        assert copy.images == ()
    assert [(c.name, c.drivers) for c in grown.csi_nodes] == [
        ("n1", snapshot.csi_nodes[0].drivers), ("n1-added-1-x", snapshot.csi_nodes[0].drivers),
        ("n1-added-2", snapshot.csi_nodes[0].drivers)]
    assert len(snapshot.nodes) == 2 and len(snapshot.csi_nodes) == 1 and grown.pods == snapshot.pods
