"""MatchInterPodAffinity: upstream ``TestInterPodAffinity`` and ``TestInterPodAffinityWithMultipleNodes``,
every row (with metadata as upstream, and without it), plus errors, the per-term topology key and the
preemption filter."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.predicates import new_pod_affinity_predicate, pod_match_node_selector
from policy_scheduler.predicates.inter_pod_affinity import format_term

from .conftest import (
    affinity,
    expr,
    make_args,
    make_cluster,
    make_node,
    make_pod,
    metadata,
    node_affinity_terms,
    pod_affinity_term,
)

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = make_node("machine1", {"region": "r1", "zone": "z11"})

PAIR_AFFINITY = ["MatchInterPodAffinity", "PodAffinityRulesNotMatch"]
PAIR_ANTI = ["MatchInterPodAffinity", "PodAntiAffinityRulesNotMatch"]
PAIR_EXISTING = ["MatchInterPodAffinity", "ExistingPodsAntiAffinityRulesNotMatch"]

T = pod_affinity_term


def apod(labels=None, namespace="", node_name="", **aff):
    spec = {"affinity": affinity(**aff)} if aff else {}
    return make_pod(labels=labels, namespace=namespace, node_name=node_name, **spec)


SCAN_REGION = T(expr("service", "In", "securityscan", "value2"), topology_key="region")
ANTIVIRUS_NODE = T(expr("service", "In", "antivirusscan", "value2"), topology_key="node")

# (test, pod, existing pods, fits, reasons, error raised)
SINGLE_NODE = [
    ("A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
     make_pod(), [], True, [], False),
    ("satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
     apod(POD_LABEL2, required=[SCAN_REGION]), [apod(POD_LABEL, node_name="machine1")], True, [], False),
    ("satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
     apod(POD_LABEL2, required=[T(expr("service", "NotIn", "securityscan3", "value3"), topology_key="region")]),
     [apod(POD_LABEL, node_name="machine1")], True, [], False),
    ("Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
     apod(POD_LABEL2, required=[T(expr("service", "In", "securityscan", "value2"), namespaces=["DiffNameSpace"])]),
     [apod(POD_LABEL, namespace="ns", node_name="machine1")], False, PAIR_AFFINITY, True),
    ("Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
     apod(POD_LABEL, required=[T(expr("service", "In", "antivirusscan", "value2"))]),
     [apod(POD_LABEL, node_name="machine1")], False, PAIR_AFFINITY, True),
    ("satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
     apod(POD_LABEL2, required=[
         T(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), topology_key="region"),
         T(expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue"), topology_key="region")]),
     [apod(POD_LABEL, node_name="machine1")], True, [], False),
    ("The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
     apod(POD_LABEL2, required=[
         T(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), topology_key="region"),
         T(expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue"), topology_key="region")]),
     [apod(POD_LABEL, node_name="machine1")], False, PAIR_AFFINITY, False),
    ("satisfies the PodAffinity and PodAntiAffinity with the existing pod",
     apod(POD_LABEL2, required=[SCAN_REGION], anti=[ANTIVIRUS_NODE]),
     [apod(POD_LABEL, node_name="machine1")], True, [], False),
    ("satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
     apod(POD_LABEL2, required=[SCAN_REGION], anti=[ANTIVIRUS_NODE]),
     [apod(POD_LABEL, node_name="machine1", anti=[ANTIVIRUS_NODE])], True, [], False),
    ("satisfies the PodAffinity but doesn't satisfies the PodAntiAffinity with the existing pod",
     apod(POD_LABEL2, required=[SCAN_REGION], anti=[T(expr("service", "In", "securityscan", "value2"), topology_key="zone")]),
     [apod(POD_LABEL, node_name="machine1")], False, PAIR_ANTI, False),
    ("satisfies the PodAffinity and PodAntiAffinity but doesn't satisfies PodAntiAffinity symmetry with the existing pod",
     apod(POD_LABEL, required=[SCAN_REGION], anti=[ANTIVIRUS_NODE]),
     [apod(POD_LABEL, node_name="machine1", anti=[T(expr("service", "In", "securityscan", "value2"), topology_key="zone")])],
     False, PAIR_EXISTING, False),
    ("pod matches its own Label in PodAffinity and that matches the existing pod Labels",
     apod(POD_LABEL, required=[T(expr("service", "NotIn", "securityscan", "value2"), topology_key="region")]),
     [apod(POD_LABEL, node_name="machine2")], False, PAIR_AFFINITY, False),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
     apod(POD_LABEL),
     [apod(POD_LABEL, node_name="machine1", anti=[T(expr("service", "In", "securityscan", "value2"), topology_key="zone")])],
     False, PAIR_EXISTING, False),
    ("verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
     apod(POD_LABEL),
     [apod(POD_LABEL, node_name="machine1", anti=[T(expr("service", "NotIn", "securityscan", "value2"), topology_key="zone")])],
     True, [], False),
]


@pytest.mark.parametrize("with_meta", [True, False], ids=["metadata", "no metadata"])
@pytest.mark.parametrize(("name", "pod", "pods", "fits", "reasons", "error"), SINGLE_NODE, ids=[c[0][:80] for c in SINGLE_NODE])
def test_inter_pod_affinity(name, pod, pods, fits, reasons, error, with_meta) -> None:
    """Upstream TestInterPodAffinity; rows whose term has no topologyKey also return an error upstream."""
    cluster = make_cluster([NODE1], pods)
    node_info = cluster.node_infos["machine1"]
    meta = metadata(pod, {"machine1": node_info}, cluster) if with_meta else None
    predicate = new_pod_affinity_predicate(make_args(cluster))
    if error:
        with pytest.raises(PredicateError) as e:
            predicate(pod, meta, node_info)
        assert e.value.reasons == reasons
    else:
        assert predicate(pod, meta, node_info) == (fits, reasons)


def test_empty_topology_key_error_text() -> None:
    """The (c) error names the pod, the node and the term as Go's %v prints it."""
    name, pod, pods, *_ = SINGLE_NODE[3]
    cluster = make_cluster([NODE1], pods)
    with pytest.raises(PredicateError) as e:
        new_pod_affinity_predicate(make_args(cluster))(pod, None, cluster.node_infos["machine1"])
    assert str(e.value) == (
        "Cannot schedule pod / onto node machine1, because of PodAffinityTerm "
        "{&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[{service In [securityscan value2]}],} [DiffNameSpace] }, "
        "err: empty topologyKey is not allowed except for PreferredDuringScheduling pod anti-affinity"
    )


CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
US = {"region": "US"}
FOO_BAR_REGION = T(expr("foo", "In", "bar"), topology_key="region")
FOO_ABC_REGION = T(expr("foo", "In", "abc"), topology_key="region")

# (test, pod, existing pods, nodes [(name, labels)], {node: (fits, reasons)}, use metadata)
MULTI_NODE = [
    ("A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules",
     apod(required=[FOO_BAR_REGION]), [apod({"foo": "bar"}, node_name="machine1")],
     [("machine1", CHINA), ("machine2", CHINA_AZ1), ("machine3", INDIA)],
     {"machine1": (True, []), "machine2": (True, []), "machine3": (False, PAIR_AFFINITY)}, True),
    ("NodeA and nodeB have same topologyKey and label value. NodeA does not satisfy node affinity rule, but has an existing pod that match the inter pod affinity rule. The pod can be scheduled onto nodeB.",
     make_pod(affinity=affinity(required=[FOO_ABC_REGION], node=node_affinity_terms([expr("hostname", "NotIn", "h1")]))),
     [apod({"foo": "abc"}, node_name="nodeA"), apod({"foo": "def"}, node_name="nodeB")],
     [("nodeA", {"region": "r1", "hostname": "h1"}), ("nodeB", {"region": "r1", "hostname": "h2"})],
     {"nodeA": (False, []), "nodeB": (True, [])}, True),
    ("The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that match the rule anywhere.",
     apod({"foo": "bar"}, required=[T(expr("foo", "In", "bar"), topology_key="zone")]), [],
     [("nodeA", {"zone": "az1", "hostname": "h1"}), ("nodeB", {"zone": "az2", "hostname": "h2"})],
     {"nodeA": (True, []), "nodeB": (True, [])}, True),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that match the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
     apod(anti=[FOO_ABC_REGION]), [apod({"foo": "abc"}, node_name="nodeA")],
     [("nodeA", {"region": "r1", "hostname": "nodeA"}), ("nodeB", {"region": "r1", "hostname": "nodeB"})],
     {"nodeA": (False, PAIR_ANTI), "nodeB": (False, PAIR_ANTI)}, True),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that match the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be schedulerd onto nodeC",
     apod(anti=[FOO_ABC_REGION]), [apod({"foo": "abc"}, node_name="nodeA")],
     [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)],
     {"nodeA": (False, PAIR_ANTI), "nodeB": (False, PAIR_ANTI), "nodeC": (True, [])}, True),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that match the inter pod affinity rule. NodeC has an existing pod that match the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB and nodeC but can be schedulerd onto nodeD",
     apod({"foo": "123"}, anti=[FOO_BAR_REGION]),
     [apod({"foo": "bar"}, node_name="nodeA"), apod(node_name="nodeC", anti=[T(expr("foo", "In", "123"), topology_key="region")])],
     [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA), ("nodeD", US)],
     {"nodeA": (False, PAIR_ANTI), "nodeB": (False, PAIR_ANTI), "nodeC": (False, PAIR_EXISTING), "nodeD": (True, [])}, False),
    ("NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that match the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be schedulerd onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
     apod({"foo": "123"}, namespace="NS1", anti=[FOO_BAR_REGION]),
     [apod({"foo": "bar"}, namespace="NS1", node_name="nodeA"),
      apod(namespace="NS2", node_name="nodeC", anti=[T(expr("foo", "In", "123"), topology_key="region")])],
     [("nodeA", CHINA), ("nodeB", CHINA_AZ1), ("nodeC", INDIA)],
     {"nodeA": (False, PAIR_ANTI), "nodeB": (False, PAIR_ANTI), "nodeC": (True, [])}, True),
]


@pytest.mark.parametrize(("name", "pod", "pods", "nodes", "expected", "use_meta"), MULTI_NODE, ids=[c[0][:80] for c in MULTI_NODE])
def test_inter_pod_affinity_with_multiple_nodes(name, pod, pods, nodes, expected, use_meta) -> None:
    """Upstream TestInterPodAffinityWithMultipleNodes: per node, metadata built from that node only
    (none for the ``nometa`` row); node affinity checked with PodMatchNodeSelector as upstream does."""
    cluster = make_cluster([make_node(n, labels) for n, labels in nodes], pods)
    predicate = new_pod_affinity_predicate(make_args(cluster))
    for node_name, (fits, reasons) in expected.items():
        node_info = cluster.node_infos[node_name]
        meta = metadata(pod, {node_name: node_info}, cluster) if use_meta else None
        got_fits, got_reasons = predicate(pod, meta, node_info)
        if not got_fits:
            assert got_reasons == reasons, node_name
        if pod.affinity is not None and pod.affinity.node_affinity is not None:
            selector_fits, selector_reasons = pod_match_node_selector(pod, meta, node_info)
            assert selector_fits or selector_reasons == ["MatchNodeSelector"]
            got_fits = got_fits and selector_fits
        assert got_fits is fits, node_name
        assert predicate(pod, None, node_info)[0] is predicate(pod, meta, node_info)[0]


def test_each_anti_affinity_term_keeps_its_topology_key() -> None:
    """An existing pod with two matching anti-affinity terms: the first term's key (zone) rejects the
    node. Upstream 1.9 would use the last term's key (rack) for both (loop-variable aliasing)."""
    existing = apod(node_name="n1", anti=[
        T(expr("app", "In", "web"), topology_key="zone"),
        T(expr("app", "Exists"), topology_key="rack"),
    ])
    nodes = [make_node("n1", {"zone": "z1", "rack": "r1"}), make_node("n2", {"zone": "z1", "rack": "r2"})]
    cluster = make_cluster(nodes, [existing])
    pod = make_pod(labels={"app": "web"})
    meta = metadata(pod, cluster.node_infos, cluster)
    assert [t.term.topology_key for t in meta.matching_anti_affinity_term_list] == ["zone", "rack"]
    predicate = new_pod_affinity_predicate(make_args(cluster))
    assert predicate(pod, meta, cluster.node_infos["n2"]) == (False, PAIR_EXISTING)
    assert predicate(pod, None, cluster.node_infos["n2"]) == (False, PAIR_EXISTING)


def test_existing_pod_with_empty_topology_key_is_an_error() -> None:
    existing = apod(node_name="n1", anti=[T(expr("app", "Exists"))])
    cluster = make_cluster([make_node("n1", {"zone": "z"})], [existing])
    pod = make_pod(labels={"app": "x"})
    predicate = new_pod_affinity_predicate(make_args(cluster))
    for meta in (metadata(pod, cluster.node_infos, cluster), None):
        with pytest.raises(PredicateError) as e:
            predicate(pod, meta, cluster.node_infos["n1"])
        assert str(e.value) == "Empty topologyKey is not allowed except for PreferredDuringScheduling pod anti-affinity"
        assert e.value.reasons == PAIR_EXISTING


def test_fallback_reports_bad_selectors_of_existing_pods() -> None:
    existing = apod(node_name="n1", anti=[T(expr("app", "In"), topology_key="zone")])
    cluster = make_cluster([make_node("n1", {"zone": "z"})], [existing])
    pod = make_pod(name="p", namespace="ns")
    assert metadata(pod, cluster.node_infos, cluster) is None
    with pytest.raises(PredicateError) as e:
        new_pod_affinity_predicate(make_args(cluster))(pod, None, cluster.node_infos["n1"])
    assert str(e.value) == (
        "Failed to get all terms that pod ns/p matches, err: for 'in', 'notin' operators, values set can't be empty"
    )
    assert e.value.reasons == PAIR_EXISTING


def test_fallback_skips_existing_pods_on_unknown_nodes() -> None:
    existing = apod(node_name="gone", anti=[T(expr("app", "Exists"), topology_key="zone")])
    cluster = make_cluster([make_node("n1", {"zone": "z"})], [existing])
    assert new_pod_affinity_predicate(make_args(cluster))(make_pod(labels={"app": "x"}), None, cluster.node_infos["n1"]) == (True, [])


def test_affinity_node_lookup_failure_is_an_error() -> None:
    cluster = make_cluster([make_node("n1", {"zone": "z"})], [apod({"app": "db"}, node_name="gone")])
    pod = apod(required=[T(expr("app", "In", "db"), topology_key="zone")])
    with pytest.raises(PredicateError) as e:
        new_pod_affinity_predicate(make_args(cluster))(pod, None, cluster.node_infos["n1"])
    assert str(e.value).endswith(', err: node "gone" not found')
    assert e.value.reasons == PAIR_AFFINITY


def test_anti_affinity_errors_become_reasons() -> None:
    cluster = make_cluster([make_node("n1", {"zone": "z"})], [apod({"app": "db"}, node_name="gone")])
    predicate = new_pod_affinity_predicate(make_args(cluster))
    no_key = apod(anti=[T(expr("app", "In", "db"))])
    lookup = apod(anti=[T(expr("app", "In", "db"), topology_key="zone")])
    bad_selector = apod(anti=[T(expr("app", "Bogus"), topology_key="zone")])
    for pod in (no_key, lookup, bad_selector):
        assert predicate(pod, None, cluster.node_infos["n1"]) == (False, PAIR_ANTI)


def test_pods_missing_from_the_node_info_are_ignored() -> None:
    """Preemption removes pods from a NodeInfo clone; the predicate must not see them on that node."""
    nodes = [make_node("n1", {"zone": "z1"}), make_node("n2", {"zone": "z1"})]
    victim = apod({"app": "db"}, node_name="n1")
    cluster = make_cluster(nodes, [victim])
    predicate = new_pod_affinity_predicate(make_args(cluster))
    anti = apod(anti=[T(expr("app", "In", "db"), topology_key="zone")])
    clone = cluster.node_infos["n1"].clone()
    clone.remove_pod(clone.pods[0])
    meta = metadata(anti, cluster.node_infos, cluster)
    assert predicate(anti, meta, cluster.node_infos["n1"]) == (False, PAIR_ANTI)
    assert predicate(anti, meta, clone) == (True, [])
    # Other nodes still see the pod.
    assert predicate(anti, meta, cluster.node_infos["n2"]) == (False, PAIR_ANTI)
    aff = apod({"app": "web"}, required=[T(expr("app", "In", "db"), topology_key="zone")])
    assert predicate(aff, None, clone) == (False, PAIR_AFFINITY)


def test_metadata_caches_candidates_per_pod() -> None:
    cluster = make_cluster([make_node("n1", {"zone": "z1"})], [apod({"app": "db"}, node_name="n1")])
    pod = apod(required=[T(expr("app", "In", "db"), topology_key="zone")])
    meta = metadata(pod, cluster.node_infos, cluster)
    predicate = new_pod_affinity_predicate(make_args(cluster))
    assert predicate(pod, meta, cluster.node_infos["n1"]) == (True, [])
    cached = meta.precomputed["MatchInterPodAffinity"][2]
    assert [p.labels for p in cached.affinity[0].pods] == [{"app": "db"}]
    assert predicate(pod, meta, cluster.node_infos["n1"]) == (True, [])
    assert meta.precomputed["MatchInterPodAffinity"][2] is cached


def test_null_node_is_an_error() -> None:
    with pytest.raises(PredicateError, match="^node not found$"):
        new_pod_affinity_predicate(make_args())(make_pod(), None, None)


def test_format_term() -> None:
    term = make_pod(affinity=affinity(anti=[{
        "labelSelector": {"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [{"key": "k", "operator": "Exists"}]},
        "namespaces": ["x", "y"], "topologyKey": "zone"}])).affinity.pod_anti_affinity.required[0]
    assert format_term(term) == "{&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[{k Exists []}],} [x y] zone}"
    no_selector = make_pod(affinity=affinity(anti=[{"topologyKey": "zone"}])).affinity.pod_anti_affinity.required[0]
    assert format_term(no_selector) == "{nil [] zone}"
