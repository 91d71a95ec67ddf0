"""CheckServiceAffinity (policy ``serviceAffinity``): upstream ``TestServiceAffinity``, every row, with and
without the precomputed metadata."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.predicates import new_service_affinity_predicate
from policy_scheduler.predicates.metadata import PredicateMetadataFactory

from .conftest import make_args, make_cluster, make_node, make_node_info, make_pod

SELECTOR = {"foo": "bar"}
LABELS1 = {"region": "r1", "zone": "z11"}
LABELS2 = {"region": "r1", "zone": "z12"}
LABELS3 = {"region": "r2", "zone": "z21"}
LABELS4 = {"region": "r2", "zone": "z22"}
NODES = {
    "machine1": make_node("machine1", LABELS1),
    "machine2": make_node("machine2", LABELS2),
    "machine3": make_node("machine3", LABELS3),
    "machine4": make_node("machine4", LABELS4),
    "machine5": make_node("machine5", LABELS4),
}


def svc(namespace: str = "") -> dict:
    return {"metadata": {"namespace": namespace}, "spec": {"selector": SELECTOR}}


def on(node: str, namespace: str = ""):
    return make_pod(labels=SELECTOR, node_name=node, namespace=namespace)


CASES = [
    ("nothing scheduled", make_pod(), [], "machine1", [], ["region"], True),
    ("pod with region label match", make_pod(nodeSelector={"region": "r1"}), [], "machine1", [], ["region"], True),
    ("pod with region label mismatch", make_pod(nodeSelector={"region": "r2"}), [], "machine1", [], ["region"], False),
    ("service pod on same node", make_pod(labels=SELECTOR), [on("machine1")], "machine1", [svc()], ["region"], True),
    ("service pod on different node, region match", make_pod(labels=SELECTOR), [on("machine2")], "machine1", [svc()], ["region"], True),
    ("service pod on different node, region mismatch", make_pod(labels=SELECTOR), [on("machine3")], "machine1", [svc()], ["region"], False),
    ("service in different namespace, region mismatch", make_pod(labels=SELECTOR, namespace="ns1"), [on("machine3", "ns1")], "machine1",
     [svc("ns2")], ["region"], True),
    ("pod in different namespace, region mismatch", make_pod(labels=SELECTOR, namespace="ns1"), [on("machine3", "ns2")], "machine1",
     [svc("ns1")], ["region"], True),
    ("service and pod in same namespace, region mismatch", make_pod(labels=SELECTOR, namespace="ns1"), [on("machine3", "ns1")], "machine1",
     [svc("ns1")], ["region"], False),
    ("service pod on different node, multiple labels, not all match", make_pod(labels=SELECTOR), [on("machine2")], "machine1", [svc()],
     ["region", "zone"], False),
    ("service pod on different node, multiple labels, all match", make_pod(labels=SELECTOR), [on("machine5")], "machine4", [svc()],
     ["region", "zone"], True),
]


@pytest.mark.parametrize("skip_precompute", [False, True], ids=["precomputed", "computed by the predicate"])
@pytest.mark.parametrize(("name", "pod", "pods", "node", "services", "labels", "fits"), CASES, ids=[c[0] for c in CASES])
def test_service_affinity(name, pod, pods, node, services, labels, fits, skip_precompute) -> None:
    """Upstream TestServiceAffinity (testIt(false) and testIt(true)); the NodeInfo holds no pods."""
    cluster = make_cluster(NODES.values(), pods, services)
    node_info = make_node_info(NODES[node])
    predicate, precompute = new_service_affinity_predicate(make_args(cluster), labels)
    producers = {"ServiceAffinityMetaProducer": (lambda m: None) if skip_precompute else precompute}
    meta = PredicateMetadataFactory(cluster, producers).get_metadata(pod, {node: node_info})
    assert meta is not None
    assert meta.service_affinity_in_use is not skip_precompute
    assert predicate(pod, meta, node_info) == (fits, [] if fits else ["CheckServiceAffinity"])
    assert predicate(pod, None, node_info) == (fits, [] if fits else ["CheckServiceAffinity"])


def test_precompute_fills_metadata() -> None:
    pods = [on("machine2"), on("machine3", "other"), make_pod(labels={"foo": "baz"}, node_name="machine1")]
    cluster = make_cluster(NODES.values(), pods, [svc(), {"metadata": {"namespace": ""}, "spec": {}}])
    _, precompute = new_service_affinity_predicate(make_args(cluster), ["region"])
    meta = PredicateMetadataFactory(cluster, {"sa": precompute}).get_metadata(make_pod(labels=SELECTOR), {})
    assert [p.node_name for p in meta.service_affinity_matching_pods] == ["machine2"]
    assert [s.selector for s in meta.service_affinity_services] == [SELECTOR]


def test_first_pod_decides_in_cache_order() -> None:
    """With two matching pods in different regions, the first one in cache order is used."""
    cluster = make_cluster(NODES.values(), [on("machine3"), on("machine1")], [svc()])
    predicate, _ = new_service_affinity_predicate(make_args(cluster), ["region"])
    pod = make_pod(labels=SELECTOR)
    assert predicate(pod, None, make_node_info(NODES["machine4"])) == (True, [])
    assert predicate(pod, None, make_node_info(NODES["machine1"])) == (False, ["CheckServiceAffinity"])


def test_pods_removed_from_the_node_info_are_ignored() -> None:
    """``FilterOutPods``: a pod of the candidate node missing from its NodeInfo (preemption) is skipped."""
    cluster = make_cluster(NODES.values(), [on("machine3"), on("machine1")], [svc()])
    predicate, _ = new_service_affinity_predicate(make_args(cluster), ["region"])
    pod = make_pod(labels=SELECTOR)
    node3 = cluster.node_infos["machine3"].clone()
    node3.remove_pod(node3.pods[0])
    assert predicate(pod, None, node3) == (False, ["CheckServiceAffinity"])


def test_missing_node_of_first_pod_is_an_error() -> None:
    cluster = make_cluster([NODES["machine1"]], [on("gone")], [svc()])
    predicate, _ = new_service_affinity_predicate(make_args(cluster), ["region"])
    with pytest.raises(PredicateError, match='^node "gone" not found$'):
        predicate(make_pod(labels=SELECTOR), None, make_node_info(NODES["machine1"]))


def test_null_node_is_an_error() -> None:
    predicate, _ = new_service_affinity_predicate(make_args(make_cluster()), ["region"])
    with pytest.raises(PredicateError, match="^node not found$"):
        predicate(make_pod(), None, None)
