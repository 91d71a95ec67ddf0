"""Node-affinity ``matchFields`` in the offline commands: a DaemonSet pod (``metadata.name In [<node>]`` and
the DaemonSet controller's tolerations) lands on its node only, ``NotIn``, a term with expressions AND
fields, preferred terms, preemption on the named node, ``--rules 1.9`` (ignored, as 1.9 ignored it), and
the API server's messages for malformed ``matchFields``."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.offline.report import explain_schema, result_schema

from ..manifests import DAEMONSET_TOLERATIONS
from .cli import run, run_json, write

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def node(name: str, cpu: str = "2", **labels: str) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "4Gi", "pods": "10"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, cpu: str = "100m", created: str = "2024-01-01T00:00:00Z", node_name: str = "",
        owner: str | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": created}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner,
                                    "uid": f"uid-{owner}", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node_name, "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}], **spec}}


def fields(op: str, *values: str) -> list[dict[str, Any]]:
    return [{"key": "metadata.name", "operator": op, "values": list(values)}]


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": list(terms)}}}


def daemon_pod(name: str, target: str, **extra: Any) -> dict[str, Any]:
    """A pod as the DaemonSet controller (1.12+) creates it for ``target``."""
    return pod(name, owner="agent", affinity=required({"matchFields": fields("In", target)}),
               tolerations=DAEMONSET_TOLERATIONS, **extra)





def placements(data: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    return {p["pod"]: (p["node"], p["error"]) for p in data["placements"]}


NODES = (node("n1"), node("n2"), node("n3"))


def test_daemonset_pods_land_on_their_own_node(tmp_path):
    cluster = write(tmp_path, *NODES, *(daemon_pod(f"agent-{n}", n) for n in ("n3", "n1", "n2")))
    data = run_json("simulate", "--cluster", cluster)
    jsonschema.validate(data, result_schema("simulate"))
    assert placements(data) == {"default/agent-n1": ("n1", None), "default/agent-n2": ("n2", None),
                                "default/agent-n3": ("n3", None)}


def test_a_daemonset_pod_whose_node_is_full_stays_pending(tmp_path):
    """Every other node fails MatchNodeSelector (1.9's histogram: upstream 1.26 evaluates only the named node)."""
    cluster = write(tmp_path, *NODES, pod("big", cpu="2", node_name="n2"), daemon_pod("agent-n2", "n2"))
    assert placements(run_json("simulate", "--cluster", cluster)) == {
        "default/agent-n2": (None, "0/3 nodes are available: 1 Insufficient cpu, 2 MatchNodeSelector.")}


def test_explain_gives_the_verdict_per_node(tmp_path):
    cluster = write(tmp_path, *NODES, daemon_pod("agent-n2", "n2"))
    data = run_json("explain", "default/agent-n2", "--cluster", cluster)
    jsonschema.validate(data, explain_schema())
    assert data["host"] == "n2"
    assert {n: v["fit"] for n, v in data["nodes"].items()} == {"n1": False, "n2": True, "n3": False}
    assert data["nodes"]["n1"]["predicates"]["GeneralPredicates"] == {"fit": False, "reasons": ["MatchNodeSelector"]}
    table = run("explain", "default/agent-n2", "--cluster", cluster).stdout
    assert table.startswith("Pod default/agent-n2: scheduled onto n2")
    assert "GeneralPredicates: MatchNodeSelector (node(s) didn't match node selector)" in table


def test_a_daemonset_pod_preempts_on_its_node_only(tmp_path):
    """Node affinity ignores the pods: preemption may free the named node, never another one."""
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value} for name, value in (("critical", 1000), ("low", 10))]
    cluster = write(tmp_path, *NODES, *classes,
                    *(pod(f"low-{n}", cpu="2", node_name=n, priorityClassName="low", priority=10) for n in ("n1", "n2", "n3")),
                    daemon_pod("agent-n2", "n2", priorityClassName="critical"))
    data = run_json("simulate", "--cluster", cluster, "--feature-gates", "PodPriority=true")
    assert placements(data) == {"default/agent-n2": ("n2", None)}
    assert [(p["preemptor"], [v["pod"] for v in p["victims"]]) for p in data["preemptions"]] == [
        ("default/agent-n2", ["default/low-n2"])]


def test_not_in_keeps_the_pod_off_the_named_node(tmp_path):
    cluster = write(tmp_path, node("n1", cpu="4"), node("n2"),
                    pod("elsewhere", affinity=required({"matchFields": fields("NotIn", "n1")})))
    assert placements(run_json("simulate", "--cluster", cluster)) == {"default/elsewhere": ("n2", None)}


def test_a_term_is_its_expressions_and_its_fields(tmp_path):
    ssd = [{"key": "disktype", "operator": "In", "values": ["ssd"]}]
    nodes = (node("n1", disktype="hdd"), node("n2", disktype="ssd"), node("n3", disktype="ssd"))
    both = required({"matchExpressions": ssd, "matchFields": fields("In", "n1")})
    either = required({"matchExpressions": ssd, "matchFields": fields("In", "n1")},
                      {"matchFields": fields("In", "n3")})
    cluster = write(tmp_path, *nodes, pod("both", affinity=both), pod("either", affinity=either, created="2024-01-01T00:00:01Z"))
    assert placements(run_json("simulate", "--cluster", cluster)) == {
        "default/both": (None, "0/3 nodes are available: 3 MatchNodeSelector."), "default/either": ("n3", None)}


def test_an_unparsable_term_matches_nothing_and_the_next_is_tried(tmp_path):
    """Under the cluster's rules (the pod carries matchFields) the next term is tried; 1.9's first unparsable
    term ends the evaluation. The expression's label value cannot be parsed but passes the API server."""
    bad = {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["not a label value"]}]}
    cluster = write(tmp_path, *NODES, pod("p", affinity=required(bad, {"matchFields": fields("In", "n3")})))
    assert placements(run_json("simulate", "--cluster", cluster)) == {"default/p": ("n3", None)}
    assert placements(run_json("simulate", "--cluster", cluster, "--rules", "1.9")) == {
        "default/p": (None, "0/3 nodes are available: 3 MatchNodeSelector.")}


def test_preferred_match_fields_count_on_the_named_node(tmp_path):
    affinity = {"nodeAffinity": {PREFERRED: [{"weight": 10, "preference": {"matchFields": fields("In", "n3")}}]}}
    cluster = write(tmp_path, *NODES, pod("p", affinity=affinity))
    assert placements(run_json("simulate", "--cluster", cluster)) == {"default/p": ("n3", None)}
    explained = run_json("explain", "default/p", "--cluster", cluster)
    assert {n: v["priorities"]["NodeAffinityPriority"]["score"] for n, v in explained["nodes"].items()} == {
        "n1": 0, "n2": 0, "n3": 10}
    # 1.9 read the preference's matchExpressions only: none selects nothing, every node scores 0.
    legacy = run_json("explain", "default/p", "--cluster", cluster, "--rules", "1.9")
    assert {n: v["priorities"]["NodeAffinityPriority"]["score"] for n, v in legacy["nodes"].items()} == {
        "n1": 0, "n2": 0, "n3": 0}


def test_rules_1_9_ignore_match_fields(tmp_path):
    """1.9 read matchExpressions only: a term with matchFields alone has no expressions and selects nothing,
    a term's fields do not narrow its expressions."""
    ssd = [{"key": "disktype", "operator": "In", "values": ["ssd"]}]
    nodes = (node("n1", disktype="ssd"), node("n2", disktype="ssd"))
    cluster = write(tmp_path, *nodes, daemon_pod("agent-n2", "n2"),
                    pod("ssd", affinity=required({"matchExpressions": ssd, "matchFields": fields("In", "n2")})))

    def fitting(*rules: str) -> dict[str, set[str]]:
        return {name: {n for n, v in run_json("explain", f"default/{name}", "--cluster", cluster, *rules)["nodes"].items()
                       if v["fit"]} for name in ("agent-n2", "ssd")}

    assert fitting("--rules", "1.9") == {"agent-n2": set(), "ssd": {"n1", "n2"}}
    assert fitting() == {"agent-n2": {"n2"}, "ssd": {"n2"}}
    assert placements(run_json("simulate", "--cluster", cluster, "--rules", "1.9"))["default/agent-n2"] == (
        None, "0/2 nodes are available: 2 MatchNodeSelector.")


TERM = f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchFields[0]"
PREFERENCE = f"spec.affinity.nodeAffinity.{PREFERRED}[0].preference.matchFields[0]"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


@pytest.mark.parametrize("requirement, preferred, message", [
    ({"key": "metadata.uid", "operator": "In", "values": ["a"]}, False,
     f"{TERM}.key: Invalid value: 'metadata.uid': not a valid field selector key"),
    ({"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}, False,
     f"{TERM}.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
    ({"key": "metadata.name", "operator": "NotIn"}, False,
     f"{TERM}.values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
    ({"key": "metadata.name", "operator": "Exists"}, False,
     f"{TERM}.operator: Invalid value: 'Exists': not a valid selector operator"),
    ({"key": "metadata.name", "operator": "In", "values": ["Node_1"]}, False,
     f"{TERM}.values[0]: Invalid value: 'Node_1': {SUBDOMAIN}"),
    ({"key": "metadata.name", "operator": "Gt", "values": ["1"]}, True,
     f"{PREFERENCE}.operator: Invalid value: 'Gt': not a valid selector operator"),
    ({"key": "spec.unschedulable", "operator": "NotIn", "values": ["n1"]}, True,
     f"{PREFERENCE}.key: Invalid value: 'spec.unschedulable': not a valid field selector key"),
], ids=["key", "two-values", "no-values", "operator", "node-name", "preferred-operator", "preferred-key"])
def test_malformed_match_fields_get_the_api_servers_message_on_one_line(tmp_path, requirement, preferred, message):
    if preferred:
        affinity = {"nodeAffinity": {PREFERRED: [{"weight": 1, "preference": {"matchFields": [requirement]}}]}}
    else:
        affinity = required({"matchFields": [requirement]})
    path = write(tmp_path, node("n1"), pod("bad", affinity=affinity))
    result = CliRunner().invoke(main, ["simulate", "--cluster", path])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0] == f"error: {path}: document 1: Pod default/bad: {message}", lines
