"""In-place pod resize in a snapshot: ``simulate`` and ``explain`` count a bound pod's resize status as ``run`` does
(the same Pod model), ``--rules 1.9`` reads none of it, and a malformed status field ends in one line, exit 2."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main

from .cli import run_json, write


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "2", "memory": "4Gi", "pods": "10"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, cpu: str, node_name: str = "", status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"nodeName": node_name, "containers": [
            {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]}}
    if status is not None:
        obj["status"] = status
    return obj


def running(actuated: str, allocated: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    """What the kubelet reports of container ``c`` (``kubectl get pods -o yaml`` of a 1.36 cluster)."""
    return {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}, *conditions],
            "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "pause", "imageID": "",
                                   "resources": {"requests": {"cpu": actuated, "memory": "100Mi"}},
                                   "allocatedResources": {"cpu": allocated, "memory": "100Mi"}}]}


SHRINKING = running("1500m", "500m", {"type": "PodResizeInProgress", "status": "True"})
INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}


def placements(data: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    return {p["pod"]: (p.get("node"), p.get("error")) for p in data["placements"]}


@pytest.mark.parametrize("spec_cpu, status, fits", [
    ("500m", SHRINKING, False),  # shrunk 1500m -> 500m, still running at 1500m
    ("500m", running("500m", "500m"), True),  # the shrink done
    ("2500m", running("1", "1"), False),  # grown to 2500m, the kubelet undecided: the spec counts
    ("2500m", running("1", "1", INFEASIBLE), True),  # ... found infeasible: what runs counts
])
def test_simulate_counts_what_the_kubelet_reports(tmp_path, spec_cpu, status, fits):
    cluster = write(tmp_path, node("n1"), pod("big", spec_cpu, "n1", status), pod("wait", "1"))
    got = placements(run_json("simulate", "--cluster", cluster))["default/wait"]
    if fits:
        assert got == ("n1", None)
    else:
        assert got == (None, "0/1 nodes are available: 1 Insufficient cpu.")


def test_explain_counts_the_larger_size_and_rules_1_9_the_spec(tmp_path):
    cluster = write(tmp_path, node("n1"), pod("big", "500m", "n1", SHRINKING), pod("wait", "1"))
    data = run_json("explain", "default/wait", "--cluster", cluster)
    assert data["host"] is None
    assert data["nodes"]["n1"]["fit"] is False
    legacy = run_json("explain", "default/wait", "--cluster", cluster, "--rules", "1.9")
    assert legacy["host"] == "n1"


@pytest.mark.parametrize("rules", ["cluster", "1.9"])
def test_a_malformed_allocated_cpu_is_one_line_exit_2(tmp_path, rules):
    status = running("1500m", "500m")
    status["containerStatuses"][0]["allocatedResources"]["cpu"] = "lots"
    cluster = write(tmp_path, node("n1"), pod("big", "500m", "n1", status), pod("wait", "1"))
    result = CliRunner().invoke(main, ["simulate", "--cluster", cluster, "--rules", rules])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"error: {cluster}: document 1: Pod default/big: status.containerStatuses[0].allocatedResources.cpu: "), lines
