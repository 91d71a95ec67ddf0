"""A DaemonSet pod is decided on the node its ``matchFields`` names, only where that cannot change the decision
(``fastpath/narrowing.py``); the equivalence tests draw the other shapes of these terms at random."""

from __future__ import annotations

import copy

import pytest

from policy_scheduler.api.loader import load_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.generic_scheduler import FitError
from policy_scheduler.factory import create_from_policy, create_from_provider
from policy_scheduler.fastpath.narrowing import named_node_rows, required_node_names
from policy_scheduler.features import Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from tests.manifests import DAEMONSET_TOLERATIONS

NODES = ["node-a", "node-b", "node-c"]


def node(name: str, cpu: str = "2") -> dict:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": {"cpu": cpu, "memory": "4Gi", "pods": "110"},
                       "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def daemon_pod(name: str, target: str, cpu: str = "500m", **spec: object) -> dict:
    return {"metadata": {"name": name, "namespace": "kube-system", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                     "tolerations": DAEMONSET_TOLERATIONS,
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchFields": [
                             {"key": "metadata.name", "operator": "In", "values": [target]}]}]}}},
                     **spec}}


def cluster(cpu: dict[str, str] | None = None) -> ClusterState:
    state = ClusterState()
    for name in NODES:
        state.add_node(Node(node(name, (cpu or {}).get(name, "2"))))
    return state


def rows(scheduler, raw: dict, rules: Rules = Rules.CLUSTER):
    pod = Pod(raw, rules)
    scheduler.fast_path.columns.refresh()
    meta = scheduler.predicate_metadata_producer(pod, scheduler.cluster.node_infos)
    predicates = scheduler.fast_path.plan(scheduler.algorithms_for(pod)).predicates
    found = named_node_rows(pod, meta, scheduler.fast_path.columns, predicates)
    return None if found is None else [scheduler.fast_path.columns.names[i] for i in found]


def test_a_daemonset_pod_is_narrowed_to_its_node():
    scheduler = create_from_provider("DefaultProvider", cluster=cluster())
    assert rows(scheduler, daemon_pod("ds-1", "node-b")) == ["node-b"]
    assert rows(scheduler, daemon_pod("ds-2", "node-z")) == []  # no such node: the full evaluation explains


def test_terms_that_do_not_name_nodes_are_not_narrowed():
    raw = daemon_pod("ds", "node-b")
    terms = raw["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert required_node_names(Pod(raw, Rules.CLUSTER)) == {"node-b"}
    assert required_node_names(Pod(raw, Rules.V1_9)) is None  # 1.9 never read matchFields
    with_expressions_only = copy.deepcopy(raw)
    with_expressions_only["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"].append({"matchExpressions": [{"key": "zone", "operator": "Exists"}]})
    assert required_node_names(Pod(with_expressions_only, Rules.CLUSTER)) is None
    not_in = copy.deepcopy(raw)
    not_in["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchFields"][0]["operator"] = "NotIn"
    assert required_node_names(Pod(not_in, Rules.CLUSTER)) is None
    unparsable = copy.deepcopy(raw)  # a term that cannot be parsed matches nothing: the other term names the node
    unparsable["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"].insert(0, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]})
    assert required_node_names(Pod(unparsable, Rules.CLUSTER)) == {"node-b"}
    assert terms  # the fixture's own term is untouched


@pytest.mark.parametrize("spec, why", [
    ({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]}, "volume predicates may err per node"),
    ({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}, "host ports read the pods"),
])
def test_pods_whose_predicates_read_more_than_their_node_are_not_narrowed(spec, why):
    scheduler = create_from_provider("DefaultProvider", cluster=cluster())
    assert rows(scheduler, daemon_pod("ds", "node-b", **spec)) is None, why


def test_a_policy_without_a_node_affinity_predicate_is_not_narrowed():
    policy = load_policy('{"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsResources"}], '
                         '"priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}')
    scheduler = create_from_policy(policy, cluster=cluster())
    assert rows(scheduler, daemon_pod("ds", "node-b")) is None  # every node may fit: the policy never checks it


def test_the_decision_and_the_failure_reasons_are_the_reference_paths():
    """node-c has no room: the narrowed look finds nothing, and the FitError names every node's reasons."""
    outcomes = []
    for vectorized in (True, False):
        scheduler = create_from_provider("DefaultProvider", cluster=cluster({"node-c": "100m"}), vectorized=vectorized)
        host = scheduler.schedule(Pod(daemon_pod("ds-a", "node-a"), Rules.CLUSTER))
        with pytest.raises(FitError) as failed:
            scheduler.schedule(Pod(daemon_pod("ds-c", "node-c"), Rules.CLUSTER))
        outcomes.append((host, str(failed.value),
                         {n: [str(r) for r in rs] for n, rs in failed.value.failed_predicates.items()}))
    assert outcomes[0] == outcomes[1]
    host, message, reasons = outcomes[0]
    assert host == "node-a"
    assert message == "0/3 nodes are available: 1 Insufficient cpu, 2 MatchNodeSelector."
    assert sorted(reasons) == NODES
