"""MatchInterPodAffinity with ``namespaceSelector`` (the cluster's rules): upstream 1.26's
``TestRequiredAffinitySingleNode`` rows with a NamespaceSelector (interpodaffinity/filtering_test.go, its four
namespaces ``subteam{1,2}.team{1,2}`` labelled ``team``), then the rules around them: the union with
``namespaces``, ``{}``, namespaces without a Namespace object, existing pods' anti-affinity, a relabelled
namespace and ``--rules 1.9``. Every row is decided with metadata, without it, and by the vectorised form."""

from __future__ import annotations

import pytest

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.fastpath.columns import NodeColumns
from policy_scheduler.fastpath.predicates import inter_pod_affinity as vectorised
from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.predicates import new_pod_affinity_predicate

from .conftest import expr, make_args, make_cluster, make_node, metadata

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = make_node("node1", {"region": "r1", "zone": "z11"})
NAMESPACES = {"subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
              "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"}}

PAIR_AFFINITY = ["MatchInterPodAffinity", "PodAffinityRulesNotMatch"]
PAIR_ANTI = ["MatchInterPodAffinity", "PodAntiAffinityRulesNotMatch"]
PAIR_EXISTING = ["MatchInterPodAffinity", "ExistingPodsAntiAffinityRulesNotMatch"]

TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}
SCAN = expr("service", "In", "securityscan", "value2")


def term(*exprs, topology_key="region", namespaces=None, namespace_selector=None) -> dict:
    t = {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": topology_key}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if namespace_selector is not None:
        t["namespaceSelector"] = namespace_selector
    return t


def pod(labels=None, namespace="", node_name="", required=(), anti=(), name="p", rules=Rules.CLUSTER) -> Pod:
    affinity = {}
    if required:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(required)}
    if anti:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    spec = {"nodeName": node_name, **({"affinity": affinity} if affinity else {})}
    meta = {"name": name, "namespace": namespace, "uid": f"{namespace}/{name}", "labels": dict(labels or {})}
    return Pod({"metadata": meta, "spec": spec}, rules)  # a uid: make_cluster keeps the pod (and its rules)


def cluster_of(pods, nodes=(NODE1,), namespaces=NAMESPACES) -> ClusterState:
    cluster = make_cluster(nodes, pods)
    for name, labels in namespaces.items():
        cluster.put_namespace(name, labels)
    return cluster


def decide(incoming: Pod, cluster: ClusterState) -> dict[str, tuple[bool, list[str]]]:
    """Per node: the verdict with metadata; the same without metadata and from the vectorised form."""
    checker = new_pod_affinity_predicate(make_args(cluster))
    meta = metadata(incoming, cluster.node_infos, cluster)
    with_meta = {n: checker(incoming, meta, info) for n, info in cluster.node_infos.items()}
    without = {n: checker(incoming, None, info) for n, info in cluster.node_infos.items()}
    assert with_meta == without
    cols = NodeColumns(cluster)
    mask = vectorised(checker)(incoming, meta, cols)
    assert mask is not None
    assert {n: bool(mask[i]) for i, n in enumerate(cols.names)} == {n: fits for n, (fits, _) in with_meta.items()}
    return with_meta


# (name, incoming pod, existing pods, fits, reasons): upstream's rows, node1 {region: r1, zone: z11}.
UPSTREAM = [
    ("affinity with NamespaceSelector",
     pod(POD_LABEL2, required=[term(SCAN, namespace_selector=TEAM1)]),
     [pod(POD_LABEL, "subteam1.team1", "node1")], True, []),
    ("affinity with non-matching NamespaceSelector",
     pod(POD_LABEL2, required=[term(SCAN, namespace_selector=TEAM1)]),
     [pod(POD_LABEL, "subteam1.team2", "node1")], False, PAIR_AFFINITY),
    ("anti-affinity with matching NamespaceSelector",
     pod(POD_LABEL2, "subteam1.team1", anti=[term(SCAN, topology_key="zone", namespace_selector=TEAM1)]),
     [pod(POD_LABEL, "subteam2.team1", "node1")], False, PAIR_ANTI),
    ("anti-affinity with matching all NamespaceSelector",
     pod(POD_LABEL2, "subteam1.team1", anti=[term(SCAN, topology_key="zone", namespace_selector={})]),
     [pod(POD_LABEL, "subteam2.team1", "node1")], False, PAIR_ANTI),
    ("anti-affinity with non-matching NamespaceSelector",
     pod(POD_LABEL2, "subteam1.team1", anti=[term(SCAN, topology_key="zone", namespace_selector=TEAM1)]),
     [pod(POD_LABEL, "subteam1.team2", "node1")], True, []),
]


@pytest.mark.parametrize("name,incoming,pods,fits,reasons", UPSTREAM, ids=[r[0] for r in UPSTREAM])
def test_upstream_rows(name, incoming, pods, fits, reasons):
    assert decide(incoming, cluster_of(pods))["node1"] == (fits, reasons)


def test_namespaces_and_the_selector_are_a_union_and_the_own_namespace_is_not_implied():
    incoming = pod(POD_LABEL2, "web", required=[term(SCAN, namespaces=["subteam2.team2"], namespace_selector=TEAM1)])
    assert decide(incoming, cluster_of([pod(POD_LABEL, "subteam2.team2", "node1")]))["node1"] == (True, [])
    assert decide(incoming, cluster_of([pod(POD_LABEL, "subteam2.team1", "node1")]))["node1"] == (True, [])
    # The pod's own namespace "web" is neither listed nor selected: its pods do not count.
    assert decide(incoming, cluster_of([pod(POD_LABEL, "web", "node1")]))["node1"] == (False, PAIR_AFFINITY)


def test_required_affinity_to_app_db_in_the_namespaces_of_team_b():
    """Two zones; the db pods of team b run in zone a only, team c's in zone b: a web pod with required
    affinity to app=db in the namespaces {team: b} selects goes to zone a."""
    nodes = [make_node(n, {"zone": z}) for n, z in (("a1", "a"), ("a2", "a"), ("b1", "b"))]
    db = {"app": "db"}
    existing = [pod(db, "db-b", "a1", name="db-0"), pod(db, "db-c", "b1", name="db-1")]
    namespaces = {"db-b": {"team": "b"}, "db-c": {"team": "c"}, "web": {}}
    web = pod({"app": "web"}, "web", required=[term(expr("app", "In", "db"), topology_key="zone",
                                                    namespace_selector={"matchLabels": {"team": "b"}})])
    verdicts = decide(web, cluster_of(existing, nodes, namespaces))
    assert verdicts == {"a1": (True, []), "a2": (True, []), "b1": (False, PAIR_AFFINITY)}


def test_an_empty_selector_is_every_namespace_even_one_without_a_namespace_object():
    """``{}`` is left unmerged upstream and matches any namespace labels, none included."""
    incoming = pod(POD_LABEL2, "subteam1.team1", anti=[term(SCAN, topology_key="zone", namespace_selector={})])
    verdict = decide(incoming, cluster_of([pod(POD_LABEL, "no-such-namespace", "node1")]))
    assert verdict["node1"] == (False, PAIR_ANTI)


def test_the_incoming_pods_selector_lists_the_namespace_objects():
    """A selector matching empty labels (``DoesNotExist``) selects the Namespace objects without the label, not a
    namespace that has no object: upstream merges ``nsLister.List(selector)`` into the term."""
    no_team = {"matchExpressions": [expr("team", "DoesNotExist")]}
    incoming = pod(POD_LABEL2, "subteam1.team1", anti=[term(SCAN, topology_key="zone", namespace_selector=no_team)])
    namespaces = {**NAMESPACES, "plain": {}}
    assert decide(incoming, cluster_of([pod(POD_LABEL, "plain", "node1")], namespaces=namespaces))["node1"] == (
        False, PAIR_ANTI)
    assert decide(incoming, cluster_of([pod(POD_LABEL, "ghost", "node1")], namespaces=namespaces))["node1"] == (
        True, [])


def test_an_existing_pods_anti_affinity_selects_the_incoming_pods_namespace_by_its_labels():
    """``AffinityTerm.Matches(pod, nsLabels)`` with the labels of the incoming pod's namespace; a namespace
    without a Namespace object has none (``GetNamespaceLabelsSnapshot``)."""
    guard = pod({"app": "guard"}, "ops", "node1", name="guard",
                anti=[term(expr("app", "In", "db"), topology_key="zone", namespace_selector=TEAM1)])
    cluster = cluster_of([guard])
    assert decide(pod({"app": "db"}, "subteam2.team1"), cluster)["node1"] == (False, PAIR_EXISTING)
    assert decide(pod({"app": "db"}, "subteam1.team2"), cluster)["node1"] == (True, [])
    assert decide(pod({"app": "web"}, "subteam2.team1"), cluster)["node1"] == (True, [])
    no_team = {"matchExpressions": [expr("team", "DoesNotExist")]}
    ghost_guard = pod({"app": "guard"}, "ops", "node1", name="guard",
                      anti=[term(expr("app", "In", "db"), topology_key="zone", namespace_selector=no_team)])
    assert decide(pod({"app": "db"}, "ghost"), cluster_of([ghost_guard]))["node1"] == (False, PAIR_EXISTING)
    assert decide(pod({"app": "db"}, "subteam1.team1"), cluster_of([ghost_guard]))["node1"] == (True, [])


def test_a_namespace_relabelled_between_two_decisions():
    incoming = pod(POD_LABEL2, required=[term(SCAN, namespace_selector={"matchLabels": {"team": "b"}})])
    cluster = cluster_of([pod(POD_LABEL, "db", "node1")], namespaces={"db": {"team": "a"}})
    assert decide(incoming, cluster)["node1"] == (False, PAIR_AFFINITY)
    cluster.put_namespace("db", {"team": "b"})
    assert decide(incoming, cluster)["node1"] == (True, [])
    cluster.remove_namespace("db")
    assert decide(incoming, cluster)["node1"] == (False, PAIR_AFFINITY)


def test_the_first_pod_of_a_group_must_be_in_a_namespace_its_term_selects():
    """No pod matches anywhere: the pod may go where the topology is when it matches its own term, its own
    namespace included in the resolved namespaces (``podMatchesAllAffinityTerms`` on the merged terms)."""
    own = term(expr("security", "In", "S1"), namespace_selector=TEAM1)
    assert decide(pod(POD_LABEL2, "subteam1.team1", required=[own]), cluster_of([]))["node1"] == (True, [])
    assert decide(pod(POD_LABEL2, "subteam1.team2", required=[own]), cluster_of([]))["node1"] == (False, PAIR_AFFINITY)


def test_rules_1_9_ignore_the_selector():
    """1.9 read ``namespaces`` only: with none listed the term is the pod's own namespace."""
    rows = [r for r in UPSTREAM if r[0] in ("affinity with NamespaceSelector", "anti-affinity with matching NamespaceSelector")]
    for _, incoming, pods, _, _ in rows:
        old = Pod(incoming.raw, Rules.V1_9)
        old_pods = [Pod(p.raw, Rules.V1_9) for p in pods]
        verdict = decide(old, cluster_of(old_pods))["node1"]
        assert verdict == ((False, PAIR_AFFINITY) if old.affinity.pod_affinity else (True, []))
    guard = pod({"app": "guard"}, "ops", "node1", name="guard", rules=Rules.V1_9,
                anti=[term(expr("app", "In", "db"), topology_key="zone", namespace_selector=TEAM1)])
    assert decide(pod({"app": "db"}, "subteam2.team1", rules=Rules.V1_9), cluster_of([guard]))["node1"] == (True, [])
