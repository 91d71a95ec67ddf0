"""The vectorised path decides as the reference while a bound pod is resized in place (cluster rules): its columns
count what the pod holds as the NodeInfos do, and a status update that re-accounts the pod (the scheduler cache
removes the old object and adds the new one) moves the columns with it, incrementally."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from policy_scheduler.model.pod import Pod

from .test_vectorized_equivalence import (
    build,
    build_cluster,
    check_forms_against_reference,
    check_priority_forms,
    outcome,
)

INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}


def raw_node(name: str, cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": str(2**33), "pods": "20"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def raw_pod(name: str, cpu: str | None, node: str | None = None, status: dict[str, Any] | None = None,
            memory: str | None = None) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx:1", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": "a"}},
            "spec": spec, "status": status or {}}


def resizing(actuated: dict[str, str], allocated: dict[str, str], *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"phase": "Running", "conditions": list(conditions), "containerStatuses": [
        {"name": "c", "resources": {"requests": actuated}, "allocatedResources": allocated}]}


# name -> (spec cpu of the resized pod, its status while resizing, its status after)
STEPS = {
    "shrink": ("500m", resizing({"cpu": "1500m"}, {"cpu": "500m"}), resizing({"cpu": "500m"}, {"cpu": "500m"})),
    "grow-infeasible": ("2500m", resizing({"cpu": "1"}, {"cpu": "1"}), resizing({"cpu": "1"}, {"cpu": "1"}, INFEASIBLE)),
    "memory-shrink": ("500m", resizing({"cpu": "500m", "memory": "3Gi"}, {"cpu": "500m", "memory": "1Gi"}),
                      resizing({"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"})),
}


def decide_both(fast, reference, pod: Pod) -> tuple:
    fast.fast_path.columns.refresh()
    check_forms_against_reference(fast, pod)
    rows = len(fast.fast_path.columns.names)
    check_priority_forms(fast, pod, np.arange(rows, dtype=np.int64))
    got = outcome(fast, pod)
    assert got == outcome(reference, copy.copy(pod)), pod.ref
    return got


@pytest.mark.parametrize("kind", ["DefaultProvider", "all"])
@pytest.mark.parametrize("step", STEPS, ids=STEPS)
def test_vectorized_path_matches_reference_through_a_resize(kind, step):
    spec_cpu, during, after = STEPS[step]
    nodes = [raw_node("node-0", "3"), raw_node("node-1", "3")]
    existing = [raw_pod("resized", spec_cpu, "node-0", during, memory="1Gi"), raw_pod("filler", "1", "node-1")]
    fast = build(kind, build_cluster(nodes, existing), vectorized=True)
    reference = build(kind, build_cluster(nodes, existing), vectorized=False)
    fast.fast_path.columns.refresh()
    # The resized pod holds its larger size: node-0 has less room than node-1 (or none).
    decide_both(fast, reference, Pod(raw_pod("first", "100m")))
    for scheduler in (fast, reference):  # what the scheduler cache does with the status update
        old = next(p for p in scheduler.cluster.list_pods() if p.name == "resized")
        scheduler.cluster.remove_pod(old)
        scheduler.cluster.add_pod(Pod(raw_pod("resized", spec_cpu, "node-0", after, memory="1Gi")))
    for i in range(3):
        decide_both(fast, reference, Pod(raw_pod(f"next-{i}", "1", memory="512Mi")))
        decide_both(fast, reference, Pod(raw_pod(f"small-{i}", None)))


def test_the_columns_count_the_larger_size():
    nodes = [raw_node("node-0", "2")]
    fast = build("DefaultProvider", build_cluster(nodes, [raw_pod("resized", "500m", "node-0", STEPS["shrink"][1])]),
                 vectorized=True)
    fast.fast_path.columns.refresh()
    assert int(fast.fast_path.columns.req_cpu[0]) == 1500
    assert int(fast.fast_path.columns.nonzero_cpu[0]) == 1500
