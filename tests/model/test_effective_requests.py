"""The cluster's resource accounting (``Rules.CLUSTER``): rows of upstream's ``PodRequests`` tests
(``k8s.io/component-helpers/resource/helpers_test.go``: TestPodRequestsAndLimits, TestPodResourceRequests,
TestPodLevelResourceRequests; the status-resize rows are in ``test_resize_requests.py``) with their
expected requests, and the non-zero form the scheduler uses for scores and node totals."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.quantity import milli_value, value


def c(name: str = "c", sidecar: bool = False, **requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": dict(requests)}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def make(containers=(), init=(), overhead=None, pod_requests=None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers), "initContainers": list(init)}
    if overhead:
        spec["overhead"] = overhead
    if pod_requests:
        spec["resources"] = {"requests": pod_requests}
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}


# name -> (pod, expected {cpu, memory}) ; quantities as upstream wrote them.
ROWS: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "just-overhead": (make(overhead={"cpu": "5", "memory": "5"}), {"cpu": "5", "memory": "5"}),
    "req-and-overhead": (make([c(cpu="1", memory="10")], overhead={"cpu": "5", "memory": "5"}),
                         {"cpu": "6", "memory": "15"}),
    "nil options, larger init container": (make([c(cpu="1")], [c(cpu="4")]), {"cpu": "4"}),
    "nil options, larger containers": (make([c(cpu="2"), c(cpu="3")], [c(cpu="2")]), {"cpu": "5"}),
    "pod overhead included": (make([c(cpu="2"), c(cpu="3")], [c(cpu="2")], {"cpu": "1", "memory": "1Gi"}),
                              {"cpu": "6", "memory": "1Gi"}),
    "restartable init container": (make([c(cpu="1")], [c(sidecar=True, cpu="1")]), {"cpu": "2"}),
    "multiple restartable init containers": (
        make([c(cpu="1")], [c(cpu="5"), c(sidecar=True, cpu="1"), c(sidecar=True, cpu="2"), c(sidecar=True, cpu="3")]),
        {"cpu": "7"}),
    "multiple restartable and regular init containers": (
        make([c(cpu="1")], [c(cpu="5"), c(sidecar=True, cpu="1"), c(sidecar=True, cpu="2"), c(cpu="5"),
                            c(sidecar=True, cpu="3")]),
        {"cpu": "8"}),
    "restartable-init, init and regular": (make([c(cpu="100")], [c(sidecar=True, cpu="10"), c(cpu="200")]),
                                           {"cpu": "210"}),
    "pod level memory resource": (make(pod_requests={"memory": "2Mi"}), {"memory": "2Mi"}),
    "pod level memory and container level cpu": (make([c(cpu="2m")], pod_requests={"memory": "2Mi"}),
                                                 {"memory": "2Mi", "cpu": "2m"}),
    "pod level unsupported resources set at pod-level": (
        make([c(memory="3Mi")], pod_requests={"storage": "2Mi"}), {"memory": "3Mi"}),
    "both container-level and pod-level resources set": (
        make([c(memory="3Mi", cpu="2m")], pod_requests={"memory": "6Mi", "cpu": "8m"}), {"memory": "6Mi", "cpu": "8m"}),
    "container-level resources and init container set": (
        make([c(memory="3Mi", cpu="2m")], [c(memory="5Mi", cpu="4m")]), {"memory": "5Mi", "cpu": "4m"}),
    "container-level resources and sidecar container set": (
        make([c(memory="3Mi", cpu="2m")], [c(sidecar=True, memory="5Mi", cpu="4m")]), {"memory": "8Mi", "cpu": "6m"}),
    "container-level resources, init and sidecar container set": (
        make([c(memory="3Mi", cpu="2m")], [c(sidecar=True, memory="5Mi", cpu="4m"), c(memory="6Mi", cpu="8m")]),
        {"memory": "11Mi", "cpu": "12m"}),
    "pod-level resources, container-level resources, init and sidecar container set": (
        make([c(memory="3Mi", cpu="2m")], [c(sidecar=True, memory="5Mi", cpu="4m"), c(memory="6Mi", cpu="8m")],
             pod_requests={"memory": "15Mi", "cpu": "18m"}),
        {"memory": "15Mi", "cpu": "18m"}),
}


@pytest.mark.parametrize("row", ROWS, ids=ROWS)
def test_pod_requests_rows(row: str) -> None:
    raw, expected = ROWS[row]
    pod = Pod(raw)
    want_cpu = milli_value(expected["cpu"]) if "cpu" in expected else 0
    want_memory = value(expected["memory"]) if "memory" in expected else 0
    assert (pod.request.milli_cpu, pod.request.memory) == (want_cpu, want_memory)
    # The node holds what the pod was admitted with.
    assert (pod.container_request.milli_cpu, pod.container_request.memory) == (want_cpu, want_memory)


def test_non_zero_requests_default_each_container_and_add_overhead() -> None:
    """Upstream's ``calculateResource``: missing cpu/memory count 100m / 200Mi per container, init
    containers (and sidecars) included, then overhead."""
    pod = Pod(make([c(), c(cpu="300m")], [c(sidecar=True, memory="1Mi"), c(cpu="2")], {"cpu": "10m", "memory": "1Mi"}))
    # containers: cpu 100m + 300m, memory 200Mi + 200Mi; sidecar adds cpu 100m, memory 1Mi -> 500m, 401Mi
    # init: the regular one 2 cpu + sidecar 100m = 2100m, memory 200Mi + 1Mi -> max: 2100m, 401Mi
    assert pod.nonzero_milli_cpu == 2100 + 10
    assert pod.nonzero_memory == 401 * 2**20 + 2**20


def test_pod_level_requests_replace_the_non_zero_default() -> None:
    pod = Pod(make([c(), c()], pod_requests={"cpu": "50m"}))
    assert pod.nonzero_milli_cpu == 50
    assert pod.nonzero_memory == 2 * 200 * 2**20


def test_under_1_9_rules_overhead_and_sidecars_count_as_1_9_counted_them() -> None:
    raw = make([c(cpu="1")], [c(sidecar=True, cpu="1")], {"cpu": "5"})
    assert Pod(raw).request.milli_cpu == 2000 + 5000
    legacy = Pod(raw, Rules.V1_9)
    assert legacy.request.milli_cpu == 1000  # an init container like any other; no overhead
    assert legacy.container_request.milli_cpu == 1000
