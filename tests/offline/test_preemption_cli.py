"""Pod priority and preemption in the offline commands (``--feature-gates PodPriority=true``), and the two
``explain`` gaps of issue 10: a predicate's reasons kept beside its error, and pods bound by ``spec.nodeName``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml
from click.testing import CliRunner

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.cli import main
from policy_scheduler.factory import create_from_keys
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.offline.examples import priority_cluster_path
from policy_scheduler.offline.report import explain_schema, explanation_table, explanation_to_dict
from policy_scheduler.registry import REGISTRY

EXAMPLE = str(priority_cluster_path())
GATE = ("--feature-gates", "PodPriority=true")


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def run_json(*args: str) -> dict:
    result = run(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- the bundled example ------------------------------------------------------------------------------
def test_gate_off_keeps_fifo_order_and_preempts_nothing():
    data = run_json("simulate", "--cluster", EXAMPLE)
    assert [(p["pod"], p["node"]) for p in data["placements"]] == [
        ("batch/report-3cpu", None), ("shop/web-2", "node-b"), ("payments/ledger-0", None), ("payments/ledger-1", None)]
    assert "preemptions" not in data and "priority" not in data["placements"][0]


def test_gate_on_pops_by_priority_preempts_and_retries():
    data = run_json("simulate", "--cluster", EXAMPLE, *GATE)
    placements = {p["pod"]: p for p in data["placements"]}
    assert list(placements) == ["payments/ledger-0", "payments/ledger-1", "shop/web-2", "batch/report-3cpu"]
    assert [(p["node"], p["priority"], p["attempts"]) for p in placements.values()] == [
        ("node-b", 1000000, 2), ("node-a", 1000000, 2), ("node-a", 1000, 1),
        (None, 100, 2)]  # its own PodScheduled=False update puts it back once, as in run (1.9's Update)
    assert placements["batch/report-3cpu"]["preemption"] == "no node where evicting lower-priority pods makes room"
    first, second = data["preemptions"]
    assert (first["preemptor"], first["node"], first["pdbViolations"]) == ("payments/ledger-0", "node-b", 0)
    assert first["victims"] == [{"pod": "batch/batch-b2", "priority": 100, "node": "node-b", "pdb": None, "simulated": False}]
    # node-a and node-c both need a PDB-protected web pod gone: tied on every criterion, the first name wins
    assert (second["preemptor"], second["node"], second["pdbViolations"]) == ("payments/ledger-1", "node-a", 1)
    assert [(v["pod"], v["priority"], v["pdb"]) for v in second["victims"]] == [
        ("shop/web-0", 1000, "shop/web"), ("batch/batch-a1", 100, None)]
    assert second["pdbsViolated"] == ["shop/web"]
    usage = {n["node"]: n["requestedAfter"]["cpu"] for n in data["nodes"]}
    assert usage["node-a"] == "4000m" and usage["node-b"] == "4000m"


def test_gate_on_table_lists_each_preemption():
    result = run("simulate", "--cluster", EXAMPLE, *GATE)
    assert result.exit_code == 0
    out = result.stdout
    assert "3/4 pending pods scheduled." in out
    assert "Preemptions (PodPriority):" in out
    line = next(line for line in out.splitlines() if line.startswith("payments/ledger-1  1000000"))
    assert "shop/web-0 (1000), batch/batch-a1 (100)" in line and line.rstrip().endswith("shop/web")


def test_write_placements_leaves_out_nothing_placed(tmp_path):
    out = tmp_path / "placed.yaml"
    assert run("simulate", "--cluster", EXAMPLE, *GATE, "--write-placements", str(out)).exit_code == 0
    items = yaml.safe_load(out.read_text())["items"]
    assert sorted(i["metadata"]["name"] for i in items) == ["ledger-0", "ledger-1", "web-2"]
    assert all("priority" not in i["spec"] for i in items)  # the admission plugin refuses spec.priority


def test_explain_shows_what_preemption_would_do_and_why_each_node_was_rejected():
    data = run_json("explain", "payments/ledger-0", "--cluster", EXAMPLE, *GATE)
    jsonschema.validate(data, explain_schema())
    pre = data["preemption"]
    assert (pre["eligible"], pre["node"], pre["pdbViolations"]) == (True, "node-b", 0)
    assert [v["pod"] for v in pre["victims"]] == ["batch/batch-b2"]
    outcomes = {n: (e["outcome"], e["reasons"], e["detail"]) for n, e in pre["nodes"].items()}
    assert outcomes == {
        "gpu-1": ("preemption would not help", ["PodToleratesNodeTaints"], "evicting pods cannot cure this"),
        "node-a": ("not chosen", [], "more PDB violations (1 > 0)"),
        "node-b": ("chosen", [], ""),
        "node-c": ("not chosen", [], "more PDB violations (1 > 0)"),
        "node-cordoned": ("preemption would not help", ["NodeUnschedulable"], "evicting pods cannot cure this"),
        "node-small": ("does not fit", ["Insufficient cpu"], "does not fit even with its 0 lower-priority pod(s) removed"),
    }
    assert [v["pdb"] for v in pre["nodes"]["node-a"]["victims"]] == ["shop/web", None]
    table = run("explain", "payments/ledger-0", "--cluster", EXAMPLE, *GATE).stdout
    assert "Preemption (PodPriority): preempt 1 pod(s) on node-b." in table
    assert "nominate node-b, delete: batch/batch-b2 (priority 100)" in table


def test_explain_without_the_gate_shows_no_preemption():
    data = run_json("explain", "payments/ledger-0", "--cluster", EXAMPLE)
    assert "preemption" not in data and data["host"] is None


def test_compare_gate_off_against_gate_on():
    data = run_json("compare", "DefaultProvider", "DefaultProvider", "--cluster", EXAMPLE, "--feature-gates-b", "PodPriority=true")
    assert (data["a"], data["b"]) == ("DefaultProvider [no gates]", "DefaultProvider [PodPriority=true]")
    assert {d["pod"]: (d["a"]["node"], d["b"]["node"]) for d in data["differences"]} == {
        "shop/web-2": ("node-b", "node-a"), "payments/ledger-0": (None, "node-b"), "payments/ledger-1": (None, "node-a")}
    assert data["preemptions"]["a"] is None
    assert [p["preemptor"] for p in data["preemptions"]["b"]] == ["payments/ledger-0", "payments/ledger-1"]
    table = run("compare", "DefaultProvider", "DefaultProvider", "--cluster", EXAMPLE, "--feature-gates-b", "PodPriority=true").stdout
    assert "3 of 4 pending pods land differently." in table
    assert "Preemptions under B (DefaultProvider [PodPriority=true]):" in table


def test_gate_on_without_priorities_places_the_default_example_as_gate_off():
    """No PriorityClass, no spec.priority: every pod has priority 0, nothing can be preempted, and the
    priority queue keeps the FIFO order, so the bundled example lands exactly as with the gate off."""
    off = run_json("simulate")
    on = run_json("simulate", *GATE)
    # Messages may differ: the FIFO retries a failed pod after its back-off (here after later pods were
    # placed), the PriorityQueue keeps it in unschedulableQ until an event moves it, as run does.
    assert [(p["pod"], p["node"]) for p in on["placements"]] == [(p["pod"], p["node"]) for p in off["placements"]]
    assert on["preemptions"] == []
    assert {p["priority"] for p in on["placements"]} == {0}


# -- manifests of our own -------------------------------------------------------------------------------
def _node(name: str, cpu: str, zone: str = "z1") -> dict:
    resources = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": zone}},
            "status": {"capacity": resources, "allocatable": resources, "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, cpu: str, *, node: str = "", cls: str = "", labels: dict | None = None, ts: str = "2018-01-01T00:00:00Z",
         extra: dict | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}
    if node:
        spec["nodeName"] = node
    if cls:
        spec["priorityClassName"] = cls
    spec.update(extra or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {}, "creationTimestamp": ts},
            "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _class(name: str, value: int, default: bool = False) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": default}


def _write(tmp_path: Path, objects: list[dict]) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_a_pod_placed_by_the_simulation_can_become_a_victim(tmp_path):
    """``high`` waits for a pod matching its zone affinity; ``helper`` arriving moves it back (1.9's
    AssignedPodAdded); it then evicts ``filler``, which the simulation had placed, and is retried."""
    affinity = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "helper"}}, "topologyKey": "zone"}]}}}
    cluster = _write(tmp_path, [
        _node("n1", "2"), _node("n2", "2"),
        _class("top", 2000), _class("high", 1000), _class("low", 10), _class("lowest", 5),
        _pod("fixed", "1600m", node="n2", cls="top"),
        _pod("high", "1", cls="high", extra=affinity, ts="2018-01-01T00:00:01Z"),
        _pod("filler", "1700m", cls="low", ts="2018-01-01T00:00:02Z"),
        _pod("helper", "100m", cls="lowest", labels={"app": "helper"}, ts="2018-01-01T00:00:03Z",
             extra={"nodeSelector": {"kubernetes.io/hostname": "n2"}}),
    ])
    data = run_json("simulate", "--cluster", cluster, *GATE)
    placements = {p["pod"]: p for p in data["placements"]}
    # 4 attempts: failed, back at once by its own PodScheduled=False update (failed again, same message), moved
    # by helper's bind (preempts filler), then placed
    assert placements["default/high"]["node"] == "n1" and placements["default/high"]["attempts"] == 4
    assert placements["default/filler"]["node"] is None
    assert placements["default/filler"]["error"] == "preempted by default/high on node n1"
    assert placements["default/filler"]["preemptedBy"] == "default/high"
    assert placements["default/helper"]["node"] == "n2"
    (preemption,) = data["preemptions"]
    assert preemption["victims"] == [{"pod": "default/filler", "priority": 10, "node": "n1", "pdb": None, "simulated": True}]
    assert "2/3 pending pods scheduled." in run("simulate", "--cluster", cluster, *GATE).stdout


def test_global_default_class_applies_to_pods_without_a_class(tmp_path):
    cluster = _write(tmp_path, [_node("n1", "1"), _class("base", 7, default=True), _class("other", 3),
                                _pod("plain", "100m"), _pod("named", "100m", cls="other"),
                                _pod("critical", "100m", cls="system-node-critical")])
    priorities = {p["pod"]: p["priority"] for p in run_json("simulate", "--cluster", cluster, *GATE)["placements"]}
    assert priorities == {"default/critical": 2000001000, "default/plain": 7, "default/named": 3}


def test_unknown_priority_class_is_a_one_line_error(tmp_path):
    cluster = _write(tmp_path, [_node("n1", "1"), _pod("p", "100m", cls="missing")])
    result = run("simulate", "--cluster", cluster, *GATE)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f'error: {cluster}: document 1: Pod default/p: spec.priorityClassName: no PriorityClass with name "missing" was found']
    assert run("simulate", "--cluster", cluster).exit_code == 0  # the gate off does not look at classes


def test_unknown_priority_class_of_an_explained_pod_file(tmp_path):
    cluster = _write(tmp_path, [_node("n1", "1")])
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_text(yaml.safe_dump(_pod("q", "100m", cls="nope")))
    result = run("explain", str(pod_file), "--cluster", cluster, *GATE)
    assert result.exit_code == 2
    assert result.output.strip() == f'error: {pod_file}: Pod default/q: spec.priorityClassName: no PriorityClass with name "nope" was found'


def test_two_default_classes_are_refused(tmp_path):
    cluster = _write(tmp_path, [_node("n1", "1"), _class("a", 1, default=True), _class("b", 2, default=True)])
    result = run("simulate", "--cluster", cluster, *GATE)
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: {cluster}: document 2: PriorityClass b: globalDefault: "
                                     "PriorityClass a is already marked as default. Only one default can exist")


def test_bad_pdb_fields_name_file_object_and_field(tmp_path):
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "x", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "a"}}}, "status": {"disruptionsAllowed": "one"}}
    cluster = _write(tmp_path, [_node("n1", "1"), pdb])
    result = run("simulate", "--cluster", cluster, "--no-validate")
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: {cluster}: document 1: PodDisruptionBudget default/x: "
                                     'status.disruptionsAllowed: expected an integer, got "one"')


# -- explain: reasons beside an error, pods bound by name ----------------------------------------------
def test_explain_json_keeps_a_predicates_reasons_beside_its_error():
    """1.9's MatchInterPodAffinity returns its reasons *and* an error for an empty topologyKey."""
    cluster = ClusterState()
    cluster.add_node(Node({"metadata": {"name": "n1", "labels": {"zone": "a"}}}))
    cluster.add_pod(Pod({"metadata": {"name": "db", "namespace": "default", "labels": {"app": "db"}},
                         "spec": {"nodeName": "n1"}}))
    pod = Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ""}]}}}})
    scheduler = create_from_keys(["MatchInterPodAffinity"], ["EqualPriority"], cluster=cluster, registry=REGISTRY)
    data = explanation_to_dict(scheduler.explain(pod))
    jsonschema.validate(data, explain_schema())
    verdict = data["nodes"]["n1"]["predicates"]["MatchInterPodAffinity"]
    assert verdict["fit"] is False
    assert verdict["reasons"] == ["MatchInterPodAffinity", "PodAffinityRulesNotMatch"]
    assert verdict["error"].startswith("Cannot schedule pod default/p onto node n1, because of PodAffinityTerm")
    assert "(reasons: MatchInterPodAffinity, PodAffinityRulesNotMatch)" in explanation_table(scheduler.explain(pod))


def test_explain_a_pod_bound_by_name(tmp_path):
    cluster = _write(tmp_path, [_node("n1", "2"), _node("n2", "2")])
    pod_file = tmp_path / "pinned.yaml"
    pod_file.write_text(yaml.safe_dump(_pod("pinned", "100m", node="n2")))
    data = run_json("explain", str(pod_file), "--cluster", cluster)
    jsonschema.validate(data, explain_schema())
    assert data["nodeName"] == "n2" and data["host"] == "n2"
    assert data["nodes"]["n1"]["fit"] is False
    assert "HostName" in data["nodes"]["n1"]["predicates"]["GeneralPredicates"]["reasons"]
    assert data["nodes"]["n2"]["fit"] is True
    table = run("explain", str(pod_file), "--cluster", cluster).stdout
    assert "The scheduler would not schedule this pod: it is bound by name" in table
    assert "admits it by running GeneralPredicates" in table


def test_explain_a_running_pod_of_the_snapshot_keeps_its_node():
    data = run_json("explain", "shop/web-0", "--cluster", EXAMPLE)
    assert data["nodeName"] == "node-a" and data["host"] == "node-a"
    assert all("HostName" in n["predicates"]["GeneralPredicates"]["reasons"]
               for name, n in data["nodes"].items() if name != "node-a")


def test_a_nomination_in_the_snapshot_keeps_room_for_its_pod(tmp_path):
    """A pending pod nominated by a live scheduler (1.9's annotation) holds its node against lower pods."""
    waiting = _pod("waiting", "2", cls="high", ts="2018-01-01T00:00:05Z")
    waiting["metadata"]["annotations"] = {"NominatedNodeName": "n1"}
    cluster = _write(tmp_path, [_node("n1", "2"), _class("high", 1000), _class("low", 1), waiting,
                                _pod("small", "1", cls="low", ts="2018-01-01T00:00:01Z")])
    assert run_json("explain", "default/small", "--cluster", cluster)["host"] == "n1"
    data = run_json("explain", "default/small", "--cluster", cluster, *GATE)
    assert data["host"] is None and data["nodes"]["n1"]["nominatedPods"] == ["default/waiting"]
    assert data["preemption"]["node"] is None
    table = run("explain", "default/small", "--cluster", cluster, *GATE).stdout
    assert "  n1: default/waiting" in table
    placements = {p["pod"]: p["node"] for p in run_json("simulate", "--cluster", cluster, *GATE)["placements"]}
    assert placements == {"default/waiting": "n1", "default/small": None}
