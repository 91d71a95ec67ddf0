"""The three promises of modern pods in the offline commands: scheduling gates, ``preemptionPolicy: Never``
and the refused fields, each under the cluster's rules and (``--rules 1.9``) ignored as 1.9 ignored them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.offline.report import result_schema

from .cli import run, run_json, write

PRIORITY = ("--feature-gates", "PodPriority=true")
#: A snapshot of no known line is read as the newest (1.36): its wording.
NEVER_MESSAGE = ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
                 "preemption: not eligible due to preemptionPolicy=Never.")


def node(name: str, cpu: str = "2") -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "4Gi", "pods": "10"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, cpu: str = "1", created: str = "2024-01-01T00:00:00Z", node_name: str = "", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": created},
            "spec": {"nodeName": node_name, "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}], **spec}}


def priority_class(name: str, value: int, policy: str | None = None) -> dict[str, Any]:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    if policy:
        pc["preemptionPolicy"] = policy
    return pc





GATES = [{"name": "example.com/quota"}, {"name": "b"}]
GATED_MESSAGE = "waiting for scheduling gates: [example.com/quota b]"


@pytest.fixture
def gated_cluster(tmp_path) -> str:
    # The gated pod is first in the queue and needs the whole node: an ungated pod needing the same room
    # must get it (the gated pod holds nothing).
    return write(tmp_path, node("n1"),
                 pod("gated", cpu="2", created="2024-01-01T00:00:00Z", schedulingGates=GATES),
                 pod("plain", cpu="2", created="2024-01-01T00:00:01Z"))


# -- scheduling gates ----------------------------------------------------------------------------------
@pytest.mark.parametrize("gates", [(), PRIORITY], ids=["fifo", "priority-queue"])
def test_simulate_reports_a_gated_pod_as_gated_and_it_holds_no_room(gated_cluster, gates):
    data = run_json("simulate", "--cluster", gated_cluster, *gates)
    jsonschema.validate(data, result_schema("simulate"))
    assert [(p["pod"], p["node"], p["error"]) for p in data["placements"]] == [("default/plain", "n1", None)]
    assert data["gated"] == [{"pod": "default/gated", "gates": ["example.com/quota", "b"], "message": GATED_MESSAGE,
                              "requests": {"cpu": "2000m", "memory": 104857600}, "workload": None}]
    table = run("simulate", "--cluster", gated_cluster, *gates).stdout
    assert "1/1 pending pods scheduled; 1 more gated (not queued until their scheduling gates are removed)." in table
    gated_rows = table.split("GATED POD")[1].splitlines()
    assert gated_rows[1].split() == ["default/gated", "example.com/quota,", "b"]
    placement_rows = table.split("\n\n")[0]
    assert "default/gated" not in placement_rows  # not listed as unschedulable


def test_rules_1_9_schedule_a_gated_pod_as_1_9_did(gated_cluster):
    data = run_json("simulate", "--cluster", gated_cluster, "--rules", "1.9")
    assert [(p["pod"], p["node"]) for p in data["placements"]] == [("default/gated", "n1"), ("default/plain", None)]
    assert "gated" not in data
    assert "1/2 pending pods scheduled." in run("simulate", "--cluster", gated_cluster, "--rules", "1.9").stdout


def test_explain_of_a_gated_pod_says_it_is_gated(gated_cluster):
    result = run("explain", "default/gated", "--cluster", gated_cluster)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"Pod default/gated: gated: {GATED_MESSAGE}. It is not queued, so no node is considered, until its "
        "scheduling gates are removed.")
    for gates in ((), PRIORITY):
        data = run_json("explain", "default/gated", "--cluster", gated_cluster, *gates)
        jsonschema.validate(data, result_schema("explain"))
        assert (data["host"], data["error"], data["nodes"], data["gated"]) == (
            None, GATED_MESSAGE, {}, ["example.com/quota", "b"])
    data = run_json("explain", "default/gated", "--cluster", gated_cluster, "--rules", "1.9")
    assert data["host"] == "n1" and "gated" not in data


def test_capacity_of_a_gated_template_counts_nothing_and_says_why(tmp_path, gated_cluster):
    template = write(tmp_path, pod("t", cpu="500m", schedulingGates=GATES), name="template.yaml")
    result = run("capacity", template, "--cluster", gated_cluster)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"The pod is gated ({GATED_MESSAGE}): no copy of it would be scheduled while its scheduling gates "
        "remain, so none is counted.")
    data = run_json("capacity", template, "--cluster", gated_cluster)
    jsonschema.validate(data, result_schema("capacity"))
    assert (data["replicas"], data["stopReason"], data["gated"], data["placements"]) == (
        0, GATED_MESSAGE, ["example.com/quota", "b"], {})
    assert run_json("capacity", template, "--cluster", gated_cluster, "--rules", "1.9")["replicas"] == 4


def test_compare_lists_a_pod_gated_on_one_side_only(gated_cluster):
    data = run_json("compare", "DefaultProvider", "DefaultProvider", "--cluster", gated_cluster, "--rules-b", "1.9")
    diffs = {d["pod"]: d for d in data["differences"]}
    assert diffs["default/gated"]["a"] == {"node": None, "error": f"gated: {GATED_MESSAGE}"}
    assert diffs["default/gated"]["b"]["node"] == "n1"
    assert diffs["default/plain"]["a"]["node"] == "n1" and diffs["default/plain"]["b"]["node"] is None
    assert data["pods"] == 2
    table = run("compare", "DefaultProvider", "DefaultProvider", "--cluster", gated_cluster, "--rules-b", "1.9").stdout
    assert f"default/gated  gated: {GATED_MESSAGE}" in table


@pytest.mark.parametrize("gates, message", [
    ([{"name": "a"}, {"name": "a"}], 'spec.schedulingGates[1]: Duplicate value: "a"'),
    ([{"name": "a"}, {}], "spec.schedulingGates[1]: Required value: must not be empty"),
    ([{"name": ""}], "spec.schedulingGates[0]: Required value: must not be empty"),
    ("a", "spec.schedulingGates: expected"),
    (["a"], "spec.schedulingGates[0]: expected"),
])
def test_malformed_gates_get_the_api_servers_message_on_one_line(tmp_path, gates, message):
    path = write(tmp_path, node("n1"), pod("bad", schedulingGates=gates))
    result = CliRunner().invoke(main, ["simulate", "--cluster", path])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: document 1: Pod default/bad: {message}"), lines


# -- preemptionPolicy: Never ------------------------------------------------------------------------------
def never_cluster(tmp_path: Path, policy: str | None) -> str:
    return write(tmp_path, node("n1"), priority_class("high", 1000, policy), priority_class("low", 10),
                 pod("low-0", cpu="2", node_name="n1", priorityClassName="low", priority=10),
                 pod("high-0", cpu="1", priorityClassName="high"))


def test_never_does_not_preempt_and_says_so(tmp_path):
    cluster = never_cluster(tmp_path, "Never")
    data = run_json("simulate", "--cluster", cluster, *PRIORITY)
    assert [(p["pod"], p["node"], p["error"]) for p in data["placements"]] == [("default/high-0", None, NEVER_MESSAGE)]
    assert data["preemptions"] == []
    assert data["placements"][0]["preemption"] == "not eligible due to preemptionPolicy=Never."
    explained = run_json("explain", "default/high-0", "--cluster", cluster, *PRIORITY)
    assert explained["error"] == NEVER_MESSAGE
    assert explained["preemption"]["eligible"] is False and explained["preemption"]["node"] is None
    table = run("explain", "default/high-0", "--cluster", cluster, *PRIORITY).stdout
    assert table.startswith(f"Pod default/high-0: unschedulable: {NEVER_MESSAGE}")


def test_the_same_pod_with_a_preempting_class_preempts(tmp_path):
    data = run_json("simulate", "--cluster", never_cluster(tmp_path, None), *PRIORITY)
    assert data["placements"][0]["node"] == "n1"
    assert [(p["preemptor"], [v["pod"] for v in p["victims"]]) for p in data["preemptions"]] == [
        ("default/high-0", ["default/low-0"])]


def test_rules_1_9_let_a_never_pod_preempt(tmp_path):
    data = run_json("simulate", "--cluster", never_cluster(tmp_path, "Never"), *PRIORITY, "--rules", "1.9")
    assert data["placements"][0]["node"] == "n1"
    assert [p["preemptor"] for p in data["preemptions"]] == ["default/high-0"]


def test_a_never_pod_is_still_popped_by_its_priority(tmp_path):
    """Never changes preemption only: the higher-priority Never pod, created last, gets the room first."""
    cluster = write(tmp_path, node("n1"), priority_class("high", 1000, "Never"), priority_class("mid", 500),
                    pod("mid-0", cpu="2", created="2024-01-01T00:00:00Z", priorityClassName="mid"),
                    pod("high-0", cpu="2", created="2024-01-01T00:00:05Z", priorityClassName="high"))
    data = run_json("simulate", "--cluster", cluster, *PRIORITY)
    assert [(p["pod"], p["node"]) for p in data["placements"]] == [("default/high-0", "n1"), ("default/mid-0", None)]
    # mid-0 may preempt, but not a pod of higher priority
    assert data["placements"][1]["error"] == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_pod_read_back_from_a_cluster_keeps_its_preemption_policy(tmp_path):
    """spec.preemptionPolicy already set (the admission plugin ran when it was created) wins over the class."""
    cluster = write(tmp_path, node("n1"), priority_class("high", 1000), priority_class("low", 10),
                    pod("low-0", cpu="2", node_name="n1", priorityClassName="low", priority=10),
                    pod("high-0", cpu="1", priorityClassName="high", priority=1000, preemptionPolicy="Never"))
    data = run_json("simulate", "--cluster", cluster, *PRIORITY)
    assert data["placements"][0]["error"] == NEVER_MESSAGE


def test_an_unknown_preemption_policy_on_a_class_is_refused(tmp_path):
    cluster = write(tmp_path, node("n1"), priority_class("high", 1000, "Sometimes"), pod("high-0", priorityClassName="high"))
    result = CliRunner().invoke(main, ["simulate", "--cluster", cluster, *PRIORITY])
    assert result.exit_code == 2
    assert 'PriorityClass high: preemptionPolicy: Unsupported value: "Sometimes"' in result.output


# -- refused fields ----------------------------------------------------------------------------------------
CLAIMS_126 = [{"name": "gpu", "source": {"resourceClaimName": "my-claim"}}]
CLAIMS_132 = [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
CLAIMS_MESSAGE = ("spec.resourceClaims[].source (classic dynamic resource allocation, resource.k8s.io/v1alpha1) is "
                  "not supported by this scheduler: the pod's ResourceClaims cannot be allocated")


@pytest.mark.parametrize("claims", [CLAIMS_126], ids=["1.26-shape"])
def test_a_pod_with_classic_resource_claims_is_unschedulable_naming_the_field(tmp_path, claims):
    cluster = write(tmp_path, node("n1"), pod("dra", resourceClaims=claims), pod("plain", created="2024-01-01T00:00:01Z"))
    for gates in ((), PRIORITY):
        data = run_json("simulate", "--cluster", cluster, *gates)
        outcome = {p["pod"]: (p["node"], p["error"]) for p in data["placements"]}
        assert outcome == {"default/dra": (None, CLAIMS_MESSAGE), "default/plain": ("n1", None)}
    explained = run_json("explain", "default/dra", "--cluster", cluster)
    assert (explained["host"], explained["error"], explained["nodes"]) == (None, CLAIMS_MESSAGE, {})
    assert f"unschedulable: {CLAIMS_MESSAGE}" in run("explain", "default/dra", "--cluster", cluster).stdout
    template = write(tmp_path, pod("t", resourceClaims=claims), name="template.yaml")
    counted = run_json("capacity", template, "--cluster", cluster)
    assert (counted["replicas"], counted["stopReason"]) == (0, CLAIMS_MESSAGE)
    legacy = run_json("simulate", "--cluster", cluster, "--rules", "1.9")
    assert {p["pod"]: p["node"] for p in legacy["placements"]} == {"default/dra": "n1", "default/plain": "n1"}


def test_a_pod_with_structured_resource_claims_waits_for_its_claim(tmp_path):
    """The 1.32+ shape is DynamicResources' (tests/dra): without the template, no claim is made for the pod, and it
    waits with upstream's PreFilter message on every node; 1.9's rules ignore the claim."""
    cluster = write(tmp_path, node("n1"), pod("dra", resourceClaims=CLAIMS_132),
                    pod("plain", created="2024-01-01T00:00:01Z"))
    waiting = '0/1 nodes are available: pod "default/dra": ResourceClaim not created yet.'
    data = run_json("simulate", "--cluster", cluster)
    assert {p["pod"]: (p["node"], p["error"]) for p in data["placements"]} == {
        "default/dra": (None, waiting), "default/plain": ("n1", None)}
    legacy = run_json("simulate", "--cluster", cluster, "--rules", "1.9")
    assert {p["pod"]: p["node"] for p in legacy["placements"]} == {"default/dra": "n1", "default/plain": "n1"}


def test_two_refused_fields_are_both_named(tmp_path):
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"tier": "db"}}, "topologyKey": "kubernetes.io/hostname",
         "matchLabelKeys": ["app"]}]}}
    both = pod("both", resourceClaims=CLAIMS_126, affinity=affinity)
    both["metadata"]["labels"] = {"app": "web"}
    data = run_json("simulate", "--cluster", write(tmp_path, node("n1"), both))
    assert data["placements"][0]["error"] == (
        f"{CLAIMS_MESSAGE}; spec.affinity pod (anti-)affinity matchLabelKeys / mismatchLabelKeys not merged into "
        "the labelSelector are not supported by this scheduler")


def test_a_pod_with_os_name_is_scheduled(tmp_path):
    """spec.os.name is not a scheduling constraint upstream (tests/kube/test_daemon_modern_pods.py has
    upstream's 1.26 kube-scheduler bind such a pod, and run bind it too)."""
    data = run_json("simulate", "--cluster", write(tmp_path, node("n1"), pod("win", os={"name": "windows"})))
    assert [(p["pod"], p["node"]) for p in data["placements"]] == [("default/win", "n1")]
