"""In-place pod resize under the cluster's rules: a bound pod counts what the kubelet reports of its resources
(``status.containerStatuses[].resources`` / ``allocatedResources``, pod-level ``status.resources`` /
``status.allocatedResources``, the ``PodResizePending`` condition) as upstream's 1.36 scheduler counts them.

Rows of upstream's tests (1.36.3): ``k8s.io/component-helpers/resource/helpers_test.go`` (TestPodResourceRequests'
``resized ...`` rows, TestAggregateContainerRequestsAndLimits' status rows) and
``pkg/scheduler/framework/types_test.go`` (TestCalculatePodResourcesWithResize, with the non-zero form). Upstream's
``UseStatusResources: false`` is the pod being placed here (``computePodResourceRequest``): a pod without
``spec.nodeName`` counts its spec."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.errors import ObjectError
from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.quantity import milli_value, value

INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
DEFERRED = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}
IN_PROGRESS = {"type": "PodResizeInProgress", "status": "True"}


def c(name: str, sidecar: bool = False, **requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": dict(requests)}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def cs(name: str, requests: dict[str, str] | None = None, allocated: dict[str, str] | None = None) -> dict[str, Any]:
    """A container status; ``requests`` None: no ``resources`` at all (``cs.Resources == nil``)."""
    out: dict[str, Any] = {"name": name}
    if requests is not None:
        out["resources"] = {"requests": requests}
    if allocated is not None:
        out["allocatedResources"] = allocated
    return out


def make(containers=(), init=(), statuses=(), init_statuses=(), conditions=(), pod_requests=None,
         pod_status=None, pod_allocated=None, node: str = "n1") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers), "initContainers": list(init)}
    if node:
        spec["nodeName"] = node
    if pod_requests is not None:
        spec["resources"] = {"requests": pod_requests}
    status: dict[str, Any] = {"phase": "Running", "containerStatuses": list(statuses),
                              "initContainerStatuses": list(init_statuses), "conditions": list(conditions)}
    if pod_status is not None:
        status["resources"] = {"requests": pod_status}
    if pod_allocated is not None:
        status["allocatedResources"] = pod_allocated
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec, "status": status}


def cpu(pod: Pod) -> int:
    return pod.request.milli_cpu


# name -> (pod, expected cpu request); helpers_test.go TestPodResourceRequests / TestAggregateContainerRequests.
HELPERS_ROWS: dict[str, tuple[dict[str, Any], str]] = {
    "resized, infeasible": (
        make([c("container-1", cpu="4")], statuses=[cs("container-1", {"cpu": "2"})], conditions=[INFEASIBLE]), "2"),
    "resized, infeasible & in-progress": (
        make([c("container-1", cpu="6")], statuses=[cs("container-1", {"cpu": "2"}, {"cpu": "4"})],
             conditions=[INFEASIBLE]), "4"),
    "resized, no resize status": (
        make([c("container-1", cpu="4")], statuses=[cs("container-1", {"cpu": "2"})]), "4"),
    "resized, infeasible, but don't use status": (
        make([c("container-1", cpu="4")], statuses=[cs("container-1", {"cpu": "2"})], conditions=[INFEASIBLE],
             node=""), "4"),
    "resized, restartable init container, infeasible": (
        make(init=[c("restartable-init-1", sidecar=True, cpu="4")],
             init_statuses=[cs("restartable-init-1", {"cpu": "2"})], conditions=[INFEASIBLE]), "2"),
    "resized, restartable init container, no resize status": (
        make(init=[c("restartable-init-1", sidecar=True, cpu="4")],
             init_statuses=[cs("restartable-init-1", {"cpu": "2"})]), "4"),
    "resized, restartable init container, infeasible, but don't use status": (
        make(init=[c("restartable-init-1", sidecar=True, cpu="4")],
             init_statuses=[cs("restartable-init-1", {"cpu": "2"})], conditions=[INFEASIBLE], node=""), "4"),
    "regularcontainers with empty requests, but status with non-empty requests": (
        make([{"name": "container-1", "resources": {}}], statuses=[cs("container-1", {"cpu": "2"})]), "2"),
    "always-restart init containers with empty requests, but status with non-empty requests": (
        make(init=[{"name": "container-1", "restartPolicy": "Always", "resources": {}}],
             init_statuses=[cs("container-1", {"cpu": "2"})]), "2"),
}


@pytest.mark.parametrize("row", HELPERS_ROWS, ids=HELPERS_ROWS)
def test_helpers_rows(row: str) -> None:
    raw, expected = HELPERS_ROWS[row]
    pod = Pod(raw)
    assert cpu(pod) == milli_value(expected)
    assert pod.container_request.milli_cpu == milli_value(expected)  # what the node adds


def test_per_resource_three_way_maximum() -> None:
    """helpers_test.go ``resized: per-resource 3-way maximum``."""
    pod = Pod(make([c("container-1", cpu="30m", memory="20M", **{"ephemeral-storage": "10G"})],
                   statuses=[cs("container-1", {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                                {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"})]))
    assert (pod.request.milli_cpu, pod.request.memory, pod.request.ephemeral_storage) == (
        30, value("30M"), value("30G"))


CPU500, CPU700, MEM500, MEM800 = "500m", "700m", "500M", "800M"


def resize_row(requests, status, *, pod_requests=None, pod_status=None, init=None, init_status=None,
               sidecar=None, sidecar_status=None, conditions=()) -> dict[str, Any]:
    """types_test.go ``preparePodInfo``: container c1, init container i1, sidecar s1."""
    init_containers, init_statuses = [], []
    if init is not None:
        init_containers.append(c("i1", **init))
    if init_status is not None:
        init_statuses.append(cs("i1", init_status))
    if sidecar is not None:
        init_containers.append(c("s1", sidecar=True, **sidecar))
    if sidecar_status is not None:
        init_statuses.append(cs("s1", sidecar_status))
    return make([c("c1", **requests)], init_containers, [cs("c1", status)], init_statuses, conditions,
                pod_requests=pod_requests, pod_status=pod_status)


# name -> (pod, (cpu, memory) = (non-zero cpu, non-zero memory)); types_test.go TestCalculatePodResourcesWithResize.
CALCULATE_ROWS: dict[str, tuple[dict[str, Any], tuple[str, str]]] = {
    "Pod with no pending resize": (
        resize_row({"cpu": CPU500, "memory": MEM500}, {"cpu": CPU500, "memory": MEM500}), (CPU500, MEM500)),
    "Pod with pod-level resources no pending resize": (
        resize_row({"cpu": CPU500, "memory": MEM500}, {"cpu": CPU700, "memory": MEM500},
                   pod_requests={"cpu": CPU700, "memory": MEM500}, pod_status={"cpu": CPU500, "memory": MEM500}),
        (CPU700, MEM500)),
    "Pod with resize in progress": (
        resize_row({"cpu": CPU500, "memory": MEM500}, {"cpu": CPU500, "memory": MEM500}, conditions=[IN_PROGRESS]),
        (CPU500, MEM500)),
    "Pod with pod-level resources and resize in progress": (
        resize_row({"cpu": CPU500, "memory": MEM500}, {"cpu": CPU700, "memory": MEM500},
                   pod_requests={"cpu": CPU700, "memory": MEM500}, pod_status={"cpu": CPU500, "memory": MEM500},
                   conditions=[IN_PROGRESS]),
        (CPU700, MEM500)),
    "Pod with deferred resize": (
        resize_row({"cpu": CPU700, "memory": MEM800}, {"cpu": CPU500, "memory": MEM500}, conditions=[DEFERRED]),
        (CPU700, MEM800)),
    "Pod with pod-level resources and with deferred resize": (
        resize_row({"cpu": CPU500, "memory": MEM500}, {"cpu": CPU500, "memory": MEM500},
                   pod_requests={"cpu": CPU700, "memory": MEM800}, pod_status={"cpu": CPU500, "memory": MEM500},
                   conditions=[DEFERRED]),
        (CPU700, MEM800)),
    "Pod with infeasible resize": (
        resize_row({"cpu": CPU700, "memory": MEM800}, {"cpu": CPU500, "memory": MEM500}, conditions=[INFEASIBLE]),
        (CPU500, MEM500)),
    "Pod with init container and no pending resize": (
        resize_row({"cpu": CPU500, "memory": MEM500}, {"cpu": CPU500, "memory": MEM500},
                   init={"cpu": CPU700, "memory": MEM800}, init_status={"cpu": CPU700, "memory": MEM800}),
        (CPU700, MEM800)),
    "Pod with sider container and no pending resize": (
        resize_row({"cpu": CPU500, "memory": MEM500}, {"cpu": CPU500, "memory": MEM500},
                   init={"cpu": CPU700, "memory": MEM800}, init_status={"cpu": CPU700, "memory": MEM800},
                   sidecar={"cpu": CPU700, "memory": MEM800}, sidecar_status={"cpu": CPU700, "memory": MEM800}),
        ("1200m", "1300M")),
}


@pytest.mark.parametrize("row", CALCULATE_ROWS, ids=CALCULATE_ROWS)
def test_calculate_pod_resources_with_resize_rows(row: str) -> None:
    raw, (want_cpu, want_memory) = CALCULATE_ROWS[row]
    pod = Pod(raw)
    assert (pod.request.milli_cpu, pod.request.memory) == (milli_value(want_cpu), value(want_memory))
    assert (pod.nonzero_milli_cpu, pod.nonzero_memory) == (milli_value(want_cpu), value(want_memory))


# -- the three cases measured on a 1.36 cluster (tests/kube/test_daemon_resize.py) -----------------------------

def test_shrink_admitted_but_not_actuated_counts_what_still_runs() -> None:
    spec = [c("c", cpu="500m")]
    running = Pod(make(spec, statuses=[cs("c", {"cpu": "1500m"}, {"cpu": "500m"})], conditions=[IN_PROGRESS]))
    assert cpu(running) == 1500
    assert running.nonzero_milli_cpu == 1500
    done = Pod(make(spec, statuses=[cs("c", {"cpu": "500m"}, {"cpu": "500m"})]))
    assert cpu(done) == 500


def test_pod_level_shrink_counts_what_still_runs() -> None:
    raw = make([{"name": "c", "resources": {}}], statuses=[cs("c", {}, {})], pod_requests={"cpu": "500m"},
               pod_status={"cpu": "1500m"}, pod_allocated={"cpu": "500m"}, conditions=[IN_PROGRESS])
    assert cpu(Pod(raw)) == 1500
    raw["status"]["resources"]["requests"]["cpu"] = "500m"
    assert cpu(Pod(raw)) == 500


def test_pod_level_without_status_resources_counts_the_spec() -> None:
    """``pod.Status.Resources != nil`` is needed: status.allocatedResources alone is not read."""
    raw = make([c("c")], pod_requests={"cpu": "500m"}, pod_allocated={"cpu": "1500m"})
    assert cpu(Pod(raw)) == 500


def test_pod_level_infeasible_counts_actuated_and_allocated() -> None:
    raw = make([c("c")], pod_requests={"cpu": "2500m"}, pod_status={"cpu": "1"}, pod_allocated={"cpu": "1"},
               conditions=[INFEASIBLE])
    assert cpu(Pod(raw)) == 1000
    raw["status"]["conditions"] = [DEFERRED]
    assert cpu(Pod(raw)) == 2500


def test_resize_up_counts_the_spec_until_infeasible() -> None:
    spec = [c("c", cpu="2500m")]
    undecided = make(spec, statuses=[cs("c", {"cpu": "1"}, {"cpu": "1"})])
    assert cpu(Pod(undecided)) == 2500
    infeasible = make(spec, statuses=[cs("c", {"cpu": "1"}, {"cpu": "1"})], conditions=[IN_PROGRESS, INFEASIBLE])
    assert cpu(Pod(infeasible)) == 1000
    # Only the first PodResizePending condition is read (``IsPodResizeInfeasible``).
    first_deferred = make(spec, statuses=[cs("c", {"cpu": "1"}, {"cpu": "1"})], conditions=[DEFERRED, INFEASIBLE])
    assert cpu(Pod(first_deferred)) == 2500


def test_regular_init_containers_do_not_read_status() -> None:
    raw = make([c("c", cpu="100m")], [c("i", cpu="1")], statuses=[cs("c", {"cpu": "200m"}, {"cpu": "100m"})],
               init_statuses=[cs("i", {"cpu": "3"}, {"cpu": "3"})])
    assert cpu(Pod(raw)) == 1000  # max(the app container's 200m, the init container's spec)
    raw["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = "1500m"
    assert cpu(Pod(raw)) == 1500


def test_a_status_without_resources_is_not_read() -> None:
    """events_test.go's pods: ``allocatedResources`` without ``resources`` (``cs.Resources == nil``)."""
    raw = make([c("app", cpu="100m")], statuses=[cs("app", None, {"cpu": "101m"})])
    assert cpu(Pod(raw)) == 100


def test_status_of_another_container_is_not_read() -> None:
    raw = make([c("a", cpu="100m"), c("b", cpu="200m")], statuses=[cs("b", {"cpu": "1"})])
    assert cpu(Pod(raw)) == 100 + 1000


def test_pending_pod_counts_its_spec_and_the_assumed_copy_too() -> None:
    raw = make([c("c", cpu="500m")], statuses=[cs("c", {"cpu": "1500m"})], node="")
    pod = Pod(raw)
    assert cpu(pod) == 500
    assert cpu(pod.with_node_name("n1")) == 500


def test_status_missing_cpu_keeps_the_non_zero_default() -> None:
    raw = make([c("c", memory="10Mi")], statuses=[cs("c", {"memory": "20Mi"}, {"memory": "10Mi"})])
    pod = Pod(raw)
    assert (pod.request.milli_cpu, pod.request.memory) == (0, 20 * 2**20)
    assert (pod.nonzero_milli_cpu, pod.nonzero_memory) == (100, 20 * 2**20)
    # A cpu the status names (even if the spec does not) is no longer missing.
    raw["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = "2m"
    assert Pod(raw).nonzero_milli_cpu == 2


def test_pod_level_non_zero_defaults_only_what_the_total_misses() -> None:
    """``getNonMissingContainerRequests`` with pod-level requests: a resource some container (or the pod
    level, or the overhead) names is not defaulted in the containers that miss it."""
    pod = Pod(make([c("a", memory="10Mi"), c("b")], pod_requests={"cpu": "50m"}))
    assert (pod.nonzero_milli_cpu, pod.nonzero_memory) == (50, 10 * 2**20)
    pod = Pod(make([c("a"), c("b")], pod_requests={"cpu": "50m"}))
    assert (pod.nonzero_milli_cpu, pod.nonzero_memory) == (50, 2 * 200 * 2**20)


def test_rules_1_9_read_no_status() -> None:
    raw = make([c("c", cpu="500m")], statuses=[cs("c", {"cpu": "1500m"}, {"cpu": "x"})])
    pod = Pod(raw, Rules.V1_9)
    assert (pod.request.milli_cpu, pod.resize) == (500, None)


def test_ordinary_running_pod_has_the_same_accounting_with_or_without_status() -> None:
    spec = [c("c", cpu="250m", memory="64Mi")]
    bare = Pod(make(spec))
    running = Pod(make(spec, statuses=[cs("c", {"cpu": "250m", "memory": "64Mi"}, {"cpu": "250m", "memory": "64Mi"})]))
    assert running.request == bare.request
    assert (running.nonzero_milli_cpu, running.nonzero_memory) == (bare.nonzero_milli_cpu, bare.nonzero_memory)


BAD: dict[str, tuple[Any, str]] = {
    "allocated cpu": ({"containerStatuses": [{"name": "c", "allocatedResources": {"cpu": "lots"}}]},
                      "status.containerStatuses[0].allocatedResources.cpu"),
    "actuated": ({"containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": "1x"}}}]},
                 "status.containerStatuses[0].resources.requests.cpu"),
    "resources not an object": ({"containerStatuses": [{"name": "c", "resources": []}]},
                                "status.containerStatuses[0].resources"),
    "statuses not a list": ({"containerStatuses": {"name": "c"}}, "status.containerStatuses"),
    "status name": ({"containerStatuses": [{"name": 3}]}, "status.containerStatuses[0].name"),
    "init status": ({"initContainerStatuses": [{"name": "s", "allocatedResources": {"memory": "-"}}]},
                    "status.initContainerStatuses[0].allocatedResources.memory"),
    "pod-level actuated": ({"resources": {"requests": {"cpu": "?"}}}, "status.resources.requests.cpu"),
    "pod-level allocated": ({"allocatedResources": {"cpu": True}}, "status.allocatedResources.cpu"),
    "condition type": ({"conditions": [{"type": 1}]}, "status.conditions[0].type"),
    "condition reason": ({"conditions": [{"type": "PodResizePending", "reason": ["Infeasible"]}]},
                         "status.conditions[0].reason"),
}


@pytest.mark.parametrize("row", BAD, ids=BAD)
def test_malformed_status_names_the_field(row: str) -> None:
    status, field = BAD[row]
    raw = {"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [c("c")]}, "status": status}
    with pytest.raises(ObjectError) as exc:
        Pod(raw)
    assert exc.value.field == field
    assert str(exc.value).startswith(f"Pod default/p: {field}: ")
    assert "\n" not in str(exc.value)
    Pod(raw, Rules.V1_9)  # 1.9 read none of it
