"""Preemption counts a pod being resized in place at its larger size (under the cluster's rules): what it holds on
its node is what upstream's ``PodInfo.CalculateResource`` counts (the larger of its spec, what it runs with and what
the kubelet admitted), and removing it as a victim frees that much. The reference (every predicate on a copy of the
NodeInfo) and the arithmetic form agree."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.generic_scheduler import FitError
from policy_scheduler.core.preemption import preempt
from policy_scheduler.factory import create_from_keys
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from tests.conformance.harness import conformance_registry


def pod(name: str, priority: int, cpu: str, node: str = "", status: dict[str, Any] | None = None) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": node, "priority": priority,
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "10Mi"}}}]},
                "status": status or ({"phase": "Running"} if node else {})})


def resizing(actuated: str, allocated: str, conditions: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"phase": "Running", "conditions": list(conditions), "containerStatuses": [
        {"name": "c", "resources": {"requests": {"cpu": actuated, "memory": "10Mi"}},
         "allocatedResources": {"cpu": allocated, "memory": "10Mi"}}]}


def node(name: str, cpu: str) -> Node:
    resources = {"cpu": cpu, "memory": "1Gi", "pods": "100"}
    return Node({"metadata": {"name": name, "labels": {"hostname": name}},
                 "status": {"capacity": resources, "allocatable": resources}})


def scheduler_for(nodes: list[Node], pods: list[Pod], vectorized: bool):
    cluster = ClusterState()
    for n in nodes:
        cluster.add_node(n)
    for p in pods:
        cluster.add_pod(p)
    return create_from_keys(["PodFitsResources"], ["EqualPriority"], cluster=cluster,
                            registry=conformance_registry(), vectorized=vectorized)


@pytest.mark.parametrize("vectorized", [True, False], ids=["arithmetic", "reference"])
@pytest.mark.parametrize("spec_cpu, status", [
    ("500m", resizing("1500m", "500m")),  # shrunk 1500m -> 500m: admitted, still running at 1500m
    ("1500m", resizing("500m", "500m")),  # grown 500m -> 1500m: the kubelet has not decided yet
], ids=["shrink-not-actuated", "grow-undecided"])
def test_a_resizing_victim_counts_and_frees_its_larger_size(vectorized, spec_cpu, status):
    """Node of 2 cpu: ``resizing`` (priority 1, 1500m as counted) and ``small`` (priority 0, 500m). A 1-cpu pod of
    priority 10 does not fit; with both removed it does; re-added highest priority first, ``resizing`` leaves
    500m, so it is the victim, and ``small`` stays. Counted at its spec (500m), nothing would need preempting."""
    pods = [pod("resizing", 1, spec_cpu, "machine1", status), pod("small", 0, "500m", "machine1")]
    scheduler = scheduler_for([node("machine1", "2")], pods, vectorized)
    preemptor = pod("preemptor", 10, "1")
    with pytest.raises(FitError) as error:
        scheduler.schedule(preemptor)
    assert "Insufficient cpu" in str(error.value)
    result = preempt(scheduler, preemptor, error.value)
    assert result.node == "machine1"
    assert [v.name for v in result.victims] == ["resizing"]


@pytest.mark.parametrize("vectorized", [True, False], ids=["arithmetic", "reference"])
def test_an_infeasible_resize_frees_its_spec(vectorized):
    """Grown 500m -> 1500m and found infeasible: it holds 500m, and the 1-cpu pod fits without preempting."""
    infeasible = resizing("500m", "500m", ({"type": "PodResizePending", "status": "True", "reason": "Infeasible"},))
    pods = [pod("resizing", 1, "1500m", "machine1", infeasible), pod("small", 0, "500m", "machine1")]
    scheduler = scheduler_for([node("machine1", "2")], pods, vectorized)
    assert scheduler.schedule(pod("preemptor", 10, "1")) == "machine1"
