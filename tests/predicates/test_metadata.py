"""Predicate metadata: upstream ``TestPredicateMetadata_AddRemovePod`` and
``TestPredicateMetadata_ShallowCopy`` (metadata_test.go), every row, plus the null cases of
predicates.md §0.4 and the per-term topology keys."""

from __future__ import annotations

import pytest

from policy_scheduler.model.resources import Resource
from policy_scheduler.predicates import new_service_affinity_predicate
from policy_scheduler.predicates.metadata import (
    MatchingAntiAffinityTerm,
    MetadataError,
    PredicateMetadata,
    PredicateMetadataFactory,
)

from .conftest import (
    affinity,
    expr,
    make_args,
    make_cluster,
    make_node,
    make_node_info,
    make_pod,
    pod_affinity_term,
)

LABEL1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"region": "r1", "zone": "z12"}
LABEL3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
ANTI_FOO_BAR = [pod_affinity_term(expr("foo", "In", "bar"), topology_key="region")]
ANTI_COMPLEX = [
    pod_affinity_term(expr("foo", "In", "bar", "buzz"), topology_key="region"),
    pod_affinity_term(expr("service", "NotIn", "bar", "security", "test"), topology_key="zone"),
]
NODES = [make_node("nodeA", LABEL1), make_node("nodeB", LABEL2), make_node("nodeC", LABEL3)]
SERVICES = [{"spec": {"selector": SELECTOR1}}]


def p(name, node, labels=None, anti=None):
    spec = {"affinity": affinity(anti=anti)} if anti else {}
    return make_pod(name=name, labels=labels, node_name=node, **spec)


PENDING = make_pod(name="pending", labels=SELECTOR1)
ADD_REMOVE = [
    ("no anti-affinity or service affinity exist",
     [p("p1", "nodeA", SELECTOR1), p("p2", "nodeC")], p("addedPod", "nodeB", SELECTOR1), []),
    ("metadata anti-affinity terms are updated correctly after adding and removing a pod",
     [p("p1", "nodeA", SELECTOR1), p("p2", "nodeC", anti=ANTI_FOO_BAR)], p("addedPod", "nodeB", SELECTOR1, ANTI_FOO_BAR), []),
    ("metadata service-affinity data are updated correctly after adding and removing a pod",
     [p("p1", "nodeA", SELECTOR1), p("p2", "nodeC")], p("addedPod", "nodeB", SELECTOR1), SERVICES),
    ("metadata anti-affinity terms and service affinity data are updated correctly after adding and removing a pod",
     [p("p1", "nodeA", SELECTOR1), p("p2", "nodeC", anti=ANTI_FOO_BAR)], p("addedPod", "nodeA", SELECTOR1, ANTI_COMPLEX), SERVICES),
]


def summary(meta: PredicateMetadata):
    """What upstream's ``predicateMetadataEquivalent`` compares (order-insensitive)."""
    terms = {
        name: sorted((t.node.name, len(t.term.namespaces), t.term.topology_key, t.pod.full_name) for t in entries)
        for name, entries in meta.matching_anti_affinity_terms.items()
    }
    pods = sorted((x.namespace, x.name) for x in meta.service_affinity_matching_pods or [])
    services = sorted((s.namespace, s.name) for s in meta.service_affinity_services or [])
    return meta.pod.full_name, meta.pod_best_effort, meta.pod_ports, terms, meta.service_affinity_in_use, pods, services


def get_meta(pods, services):
    cluster = make_cluster(NODES, pods, services)
    _, precompute = new_service_affinity_predicate(make_args(cluster), [])
    factory = PredicateMetadataFactory(cluster, {"ServiceAffinityMetaProducer": precompute})
    return factory.get_metadata(PENDING, cluster.node_infos), cluster


@pytest.mark.parametrize(("name", "existing", "added", "services"), ADD_REMOVE, ids=[c[0] for c in ADD_REMOVE])
def test_add_remove_pod(name, existing, added, services) -> None:
    """Upstream TestPredicateMetadata_AddRemovePod."""
    all_pods_meta, _ = get_meta([*existing, added], services)
    meta, cluster = get_meta(existing, services)
    meta.add_pod(added, cluster.node_infos[added.node_name])
    assert summary(meta) == summary(all_pods_meta)
    existing_meta, _ = get_meta(existing, services)
    meta.remove_pod(added)
    assert summary(meta) == summary(existing_meta)


def test_shallow_copy() -> None:
    """Upstream TestPredicateMetadata_ShallowCopy: the copy equals the source, containers are new."""
    node = make_node("machine1")
    term = make_pod(affinity=affinity(anti=[{"topologyKey": "node"}])).affinity.pod_anti_affinity.required[0]
    source = PredicateMetadata(
        pod=make_pod(name="test", namespace="testns"),
        pod_best_effort=True,
        pod_request=Resource(milli_cpu=1000, memory=300, allowed_pod_number=4),
        pod_ports=frozenset({"1234", "456"}),
        anti_affinity_terms={"term1": [MatchingAntiAffinityTerm(term, node, make_pod(name="e"))]},
        service_affinity_in_use=True,
        service_affinity_matching_pods=[make_pod(name="pod1"), make_pod(name="pod2")],
        service_affinity_services=[],
    )
    copy = source.shallow_copy()
    assert copy == source
    assert copy.matching_anti_affinity_terms is not source.matching_anti_affinity_terms
    assert copy.matching_anti_affinity_terms["term1"] is not source.matching_anti_affinity_terms["term1"]
    assert copy.service_affinity_matching_pods is not source.service_affinity_matching_pods
    copy.matching_anti_affinity_terms["term1"].clear()
    assert len(source.matching_anti_affinity_terms["term1"]) == 1


def test_fields() -> None:
    pod = make_pod(containers=[{"resources": {"requests": {"cpu": "1"}}, "ports": [{"hostPort": 80}]}],
                   initContainers=[{"resources": {"requests": {"cpu": "2"}}}])
    meta = PredicateMetadataFactory(make_cluster()).get_metadata(pod, {})
    assert meta.pod is pod
    assert meta.pod_best_effort is False
    assert meta.pod_request.milli_cpu == 2000
    assert meta.pod_ports == frozenset({"TCP/0.0.0.0/80"})
    assert meta.matching_anti_affinity_terms == {}
    assert meta.service_affinity_in_use is False


def test_null_pod_gives_no_metadata() -> None:
    assert PredicateMetadataFactory(make_cluster()).get_metadata(None, {}) is None


def test_node_info_without_node_gives_no_metadata() -> None:
    infos = {"a": make_node_info(make_node("a")), "b": make_node_info(None, [make_pod(node_name="b")])}
    assert PredicateMetadataFactory(make_cluster()).get_metadata(make_pod(), infos) is None


def test_bad_anti_affinity_selector_gives_no_metadata() -> None:
    bad = p("x", "a", anti=[pod_affinity_term(expr("k", "Exists", "v"), topology_key="zone")])
    infos = {"a": make_node_info(make_node("a"), [bad])}
    assert PredicateMetadataFactory(make_cluster()).get_metadata(make_pod(), infos) is None


def test_terms_are_recorded_per_existing_pod_with_their_own_topology_key() -> None:
    existing = p("e", "a", anti=[
        pod_affinity_term(expr("foo", "In", "bar"), topology_key="zone"),
        pod_affinity_term(expr("other", "Exists"), topology_key="rack"),
        pod_affinity_term(expr("foo", "Exists"), topology_key="region"),
    ])
    node = make_node("a", LABEL1)
    meta = PredicateMetadataFactory(make_cluster()).get_metadata(PENDING, {"a": make_node_info(node, [existing])})
    entries = meta.matching_anti_affinity_terms["e_"]
    assert [e.term.topology_key for e in entries] == ["zone", "region"]
    assert all(e.pod is existing and e.node is node for e in entries)


def test_term_namespaces_default_to_the_existing_pod() -> None:
    existing = make_pod(name="e", namespace="other", node_name="a",
                        affinity=affinity(anti=[pod_affinity_term(expr("foo", "In", "bar"), topology_key="zone")]))
    infos = {"a": make_node_info(make_node("a"), [existing])}
    factory = PredicateMetadataFactory(make_cluster())
    assert factory.get_metadata(PENDING, infos).matching_anti_affinity_terms == {}
    same_ns = make_pod(name="pending", namespace="other", labels=SELECTOR1)
    assert list(factory.get_metadata(same_ns, infos).matching_anti_affinity_terms) == ["e_other"]


def test_producers_run_on_every_metadata_and_late_registrations_count() -> None:
    calls = []
    producers = {}
    factory = PredicateMetadataFactory(make_cluster(), producers)
    factory.get_metadata(make_pod(), {})
    producers["late"] = lambda meta: calls.append(meta.pod.name)
    factory.get_metadata(make_pod(name="x"), {})
    assert calls == ["x"]


def test_add_and_remove_errors() -> None:
    meta = PredicateMetadataFactory(make_cluster()).get_metadata(PENDING, {})
    with pytest.raises(MetadataError, match="^addedPod and meta.pod must not be the same.$"):
        meta.add_pod(PENDING, make_node_info(make_node("a")))
    with pytest.raises(MetadataError, match="^Invalid node in nodeInfo.$"):
        meta.add_pod(make_pod(name="other"), make_node_info())
    with pytest.raises(MetadataError, match="^deletedPod and meta.pod must not be the same.$"):
        meta.remove_pod(PENDING)


def test_add_pod_appends_to_existing_entries() -> None:
    existing = p("e", "a", anti=ANTI_FOO_BAR)
    info = make_node_info(make_node("a", LABEL1), [existing])
    meta = PredicateMetadataFactory(make_cluster()).get_metadata(PENDING, {"a": info})
    meta.add_pod(existing, info)
    assert len(meta.matching_anti_affinity_terms["e_"]) == 2
    meta.remove_pod(existing)
    assert meta.matching_anti_affinity_terms == {}


def test_the_cluster_wide_terms_check_follows_every_change_it_reads():
    """The check that no NodeInfo lacks its node and no existing anti-affinity term is unparsable walks the
    cluster's own NodeInfos only when the cluster has seen such a thing: adding and removing a pod with a bad
    term, a pod on an unknown node and a node removed under its pods each change the answer at once."""
    cluster = make_cluster(NODES, [p("p1", "nodeA", SELECTOR1)])
    factory = PredicateMetadataFactory(cluster)
    assert factory.get_metadata(PENDING, cluster.node_infos) is not None
    bad = p("bad", "nodeB", anti=[pod_affinity_term(expr("foo", "Bogus", "bar"), topology_key="region")])
    cluster.add_pod(bad)
    assert factory.get_metadata(PENDING, cluster.node_infos) is None
    cluster.remove_pod(bad)
    assert factory.get_metadata(PENDING, cluster.node_infos) is not None
    stray = p("stray", "nodeZ")  # a pod on a node the cache does not have: a NodeInfo without a node
    cluster.add_pod(stray)
    assert factory.get_metadata(PENDING, cluster.node_infos) is None
    cluster.remove_pod(stray)
    assert factory.get_metadata(PENDING, cluster.node_infos) is not None
    cluster.remove_node("nodeA")  # its pod p1 stays: its NodeInfo has no node
    assert factory.get_metadata(PENDING, cluster.node_infos) is None
    cluster.add_node(NODES[0])
    assert factory.get_metadata(PENDING, cluster.node_infos) is not None
