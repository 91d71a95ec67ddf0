"""Pod (anti-)affinity ``namespaceSelector`` offline: snapshots carry ``Namespace`` objects (their labels are what
the selectors select), ``simulate`` and ``explain`` decide with them under the cluster's rules, ``--rules 1.9``
ignores the selector as 1.9 did, and malformed selectors or namespaces get the API server's messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.cli import main
from policy_scheduler.core.fit_error import FitError
from policy_scheduler.factory import create_from_provider
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.offline.snapshot import CLUSTER_SCOPED, load_snapshot

from .cli import run, write

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str = "a", cpu: str = "4") -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "8Gi", "pods": "20"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: zone}},
            "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]}}


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(name: str, ns: str, labels: dict[str, str], node_name: str = "", created: str = "2024-01-01T00:00:00Z",
        cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels,
                         "creationTimestamp": created},
            "spec": {"nodeName": node_name, "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}], **spec}}


def term(app: str, key: str = HOSTNAME, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


TEAM_B = {"matchLabels": {"team": "b"}}




def placements(*args: str) -> dict[str, tuple[str | None, str | None]]:
    result = run("simulate", *args, "-o", "json")
    assert result.exit_code == 0, result.output
    return {p["pod"]: (p["node"], p["error"]) for p in json.loads(result.stdout)["placements"]}


@pytest.fixture
def teams(tmp_path) -> str:
    """Zone a holds team b's database, zone b team c's; the web pods want a database of team b."""
    web_affinity = required("podAffinity", term("db", ZONE, namespaceSelector=TEAM_B))
    return write(tmp_path,
                 node("a1", "a"), node("a2", "a"), node("b1", "b"), node("b2", "b"),
                 namespace("db-b", team="b"), namespace("db-c", team="c"), namespace("web"),
                 pod("db-0", "db-b", {"app": "db"}, "a1"), pod("db-0", "db-c", {"app": "db"}, "b1"),
                 *(pod(f"web-{i}", "web", {"app": "web"}, created=f"2024-01-01T00:00:0{i}Z", affinity=web_affinity)
                   for i in range(3)))


def test_required_affinity_to_a_database_in_the_namespaces_of_team_b(teams):
    outcome = placements("--cluster", teams)
    assert {p: where[0][0] for p, where in outcome.items()} == {f"web/web-{i}": "a" for i in range(3)}
    # 1.9 read `namespaces` only: none listed is the pod's own namespace, where no database runs.
    legacy = placements("--cluster", teams, "--rules", "1.9")
    assert {p: node for p, (node, _) in legacy.items()} == {f"web/web-{i}": None for i in range(3)}
    assert all("PodAffinityRulesNotMatch" in error for _, error in legacy.values())


def test_explain_names_the_nodes_a_selected_namespace_makes_fit(teams):
    result = run("explain", "web/web-0", "--cluster", teams, "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["host"] in ("a1", "a2")
    assert sorted(n for n, v in data["nodes"].items() if not v["fit"]) == ["b1", "b2"]
    assert data["nodes"]["b1"]["predicates"]["MatchInterPodAffinity"] == {
        "fit": False, "reasons": ["MatchInterPodAffinity", "PodAffinityRulesNotMatch"]}


def test_required_anti_affinity_with_an_empty_selector_avoids_every_namespace(tmp_path):
    """``namespaceSelector: {}``: every namespace, one without a Namespace object included."""
    solo = pod("solo", "apps", {"app": "solo"}, affinity=required("podAntiAffinity", term("batch", namespaceSelector={})))
    cluster = write(tmp_path, node("n1"), node("n2"), node("n3"), namespace("apps"), namespace("jobs"),
                    pod("batch-0", "jobs", {"app": "batch"}, "n1"), pod("batch-1", "no-namespace-object", {"app": "batch"}, "n2"),
                    solo)
    assert placements("--cluster", cluster) == {"apps/solo": ("n3", None)}
    assert placements("--cluster", cluster, "--rules", "1.9")["apps/solo"][0] in ("n1", "n2", "n3")


def test_namespaces_and_the_selector_are_a_union(tmp_path):
    cache = required("podAffinity", term("cache", namespaces=["legacy"], namespaceSelector=TEAM_B))
    cluster = write(tmp_path, node("n1"), node("n2"), node("n3"), namespace("tb", team="b"), namespace("web"),
                    pod("cache-0", "legacy", {"app": "cache"}, "n2"),  # listed, no Namespace object needed
                    pod("cache-1", "tb", {"app": "cache"}, "n3"),  # selected
                    pod("cache-2", "web", {"app": "cache"}, "n1"),  # its own namespace: neither
                    pod("w", "web", {"app": "w"}, affinity=cache))
    assert placements("--cluster", cluster)["web/w"][0] in ("n2", "n3")
    only_own = write(tmp_path, node("n1"), namespace("tb", team="b"), namespace("web"),
                     pod("cache-2", "web", {"app": "cache"}, "n1"), pod("w", "web", {"app": "w"}, affinity=cache),
                     name="own.yaml")
    assert placements("--cluster", only_own)["web/w"][0] is None


def test_preferred_affinity_with_a_namespace_selector_weighs_in_the_priority(tmp_path):
    """Two nodes alike but for the database: the preferred term (weight 100) takes the pod to it; 1.9 counts the
    pod's own namespace only and LeastRequested sends it to the emptier node."""
    preferred = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term("db", namespaceSelector=TEAM_B)}]}}
    cluster = write(tmp_path, node("n1"), node("n2"), namespace("db-b", team="b"), namespace("web"),
                    pod("db-0", "db-b", {"app": "db"}, "n2", cpu="1"),
                    pod("w", "web", {"app": "w"}, affinity=preferred))
    assert placements("--cluster", cluster) == {"web/w": ("n2", None)}
    assert placements("--cluster", cluster, "--rules", "1.9") == {"web/w": ("n1", None)}


def test_an_existing_pods_anti_affinity_selects_the_incoming_pods_namespace(tmp_path):
    guard = pod("guard", "ops", {"app": "guard"}, "n1",
                affinity=required("podAntiAffinity", term("db", namespaceSelector=TEAM_B)))
    cluster = write(tmp_path, node("n1"), namespace("ops"), namespace("db-b", team="b"), namespace("db-c", team="c"),
                    guard, pod("db-0", "db-b", {"app": "db"}), pod("db-0", "db-c", {"app": "db"}))
    outcome = placements("--cluster", cluster)
    assert outcome["db-c/db-0"] == ("n1", None)
    assert outcome["db-b/db-0"][0] is None
    assert "ExistingPodsAntiAffinityRulesNotMatch" in outcome["db-b/db-0"][1]
    legacy = placements("--cluster", cluster, "--rules", "1.9")
    assert legacy == {"db-b/db-0": ("n1", None), "db-c/db-0": ("n1", None)}


def test_a_snapshot_without_namespace_objects_gives_namespaces_no_labels(tmp_path):
    """Without Namespace objects nothing is selected by labels (the rows above with their objects place)."""
    web_affinity = required("podAffinity", term("db", ZONE, namespaceSelector=TEAM_B))
    cluster = write(tmp_path, node("a1", "a"), node("b1", "b"), pod("db-0", "db-b", {"app": "db"}, "a1"),
                    pod("web-0", "web", {"app": "web"}, affinity=web_affinity))
    assert placements("--cluster", cluster)["web/web-0"][0] is None


@pytest.mark.parametrize("vectorized", [True, False])
def test_a_namespace_relabelled_between_two_decisions(vectorized):
    cluster = ClusterState()
    for n in (node("a1", "a"), node("b1", "b")):
        cluster.add_node(Node(n))
    cluster.add_pod(Pod(pod("db-0", "db", {"app": "db"}, "a1")))
    cluster.put_namespace("db", {"team": "c"})
    scheduler = create_from_provider("DefaultProvider", cluster=cluster, vectorized=vectorized)
    wants = Pod(pod("web-0", "web", {"app": "web"}, affinity=required("podAffinity", term("db", ZONE, namespaceSelector=TEAM_B))))
    avoids = Pod(pod("solo", "web", {"app": "solo"}, affinity=required("podAntiAffinity", term("db", ZONE, namespaceSelector=TEAM_B))))
    with pytest.raises(FitError, match="PodAffinityRulesNotMatch"):
        scheduler.schedule(wants)
    assert scheduler.schedule(avoids) in ("a1", "b1")
    cluster.put_namespace("db", {"team": "b"})  # relabelled: the next decision sees it
    assert scheduler.schedule(wants) == "a1"
    assert scheduler.schedule(avoids) == "b1"


def test_snapshots_read_namespace_objects_cluster_scoped(tmp_path):
    path = write(tmp_path, namespace("team-b", team="b"),
                 {"apiVersion": "v1", "kind": "NamespaceList", "items": [
                     {"metadata": {"name": "kube-system", "labels": {"kubernetes.io/metadata.name": "kube-system"}}},
                     {"metadata": {"name": "plain"}}]})
    snapshot = load_snapshot([path])
    assert "Namespace" in CLUSTER_SCOPED and not snapshot.skipped
    assert [(n.name, n.labels) for n in snapshot.namespaces] == [
        ("team-b", {"team": "b"}), ("kube-system", {"kubernetes.io/metadata.name": "kube-system"}), ("plain", {})]
    cluster = snapshot.cluster_state()
    assert cluster.namespace_labels("team-b") == {"team": "b"} and cluster.namespace_labels("ghost") == {}


BASE = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector"
PREFERRED_BASE = ("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm."
                  "namespaceSelector")


@pytest.mark.parametrize("selector, where, message", [
    ({"matchExpressions": [{"key": "team", "operator": "In"}]}, BASE,
     f"{BASE}.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    ({"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["b"]}]}, BASE,
     f"{BASE}.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    ({"matchExpressions": [{"key": "team", "operator": "Equals", "values": ["b"]}]}, BASE,
     f"{BASE}.matchExpressions[0].operator: Unsupported value: 'Equals'"),
    ({"matchLabels": {"team": "b c"}}, PREFERRED_BASE, f"{PREFERRED_BASE}.matchLabels.team: Invalid value: 'b c'"),
    ({"matchLabels": {"-team": "b"}}, BASE, f"{BASE}.matchLabels: Invalid value: '-team'"),
    ("team-b", BASE, f"{BASE}: expected"),
])
def test_malformed_namespace_selectors_get_the_api_servers_message_on_one_line(tmp_path, selector, where, message):
    t = term("db", namespaceSelector=selector)
    if where == BASE:
        affinity = required("podAffinity", t)
    else:
        affinity = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": t}]}}
    path = write(tmp_path, node("n1"), pod("bad", "default", {"app": "x"}, affinity=affinity))
    # A wrong type is refused by the schema check and, without it (--no-validate), by the typed reader.
    for extra in ((), ("--no-validate",)) if isinstance(selector, str) else ((),):
        result = CliRunner().invoke(main, ["simulate", "--cluster", path, *extra])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {path}: document 1: Pod default/bad: "), lines
        assert message in lines[0], lines


def test_malformed_namespace_labels_are_refused(tmp_path):
    path = write(tmp_path, node("n1"), namespace("team-b", team="b c"))
    result = CliRunner().invoke(main, ["simulate", "--cluster", path])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: {path}: document 1: Namespace team-b: metadata.labels.team: Invalid value: 'b c'")
