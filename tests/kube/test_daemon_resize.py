"""In-place pod resize on a real 1.36 API server, side by side with upstream's 1.36 kube-scheduler: while a bound pod
is being resized, what it holds on its node is what upstream's ``PodInfo.CalculateResource`` counts (per resource the
largest of its spec, what it runs with and what the kubelet admitted; its spec left out once the kubelet found the
resize infeasible), so a waiting pod that needs the room a resize frees is held (``Insufficient cpu``) until the
kubelet reports it freed, then bound.

There is no kubelet: the test writes the status a kubelet writes (``pods/status``: ``containerStatuses[].resources``
and ``allocatedResources``, pod-level ``status.resources`` and ``status.allocatedResources``, the
``PodResizeInProgress`` / ``PodResizePending`` conditions), and resizes through the ``pods/resize`` subresource
(1.36 refuses a resource change through a plain pod update). Each scheduler gets a pool of its own
(``tests/kube/side_by_side.py``): a 2-cpu node, the resized pod bound to it, the waiting pod selecting it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.harness.daemon import DaemonProcess, pod
from benchmarks.harness.envtest import EnvtestServer

from .side_by_side import (  # noqa: F401 - the *_fixture names: for pytest to find
    Pool,
    cluster_fixture,
    expect_bound,
    expect_pending,
    pools_fixture,
    running,
    schedulers,
)

LINE = "1.36"
INSUFFICIENT_CPU = "Insufficient cpu"
IN_PROGRESS = {"type": "PodResizeInProgress", "status": "True"}
INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible",
              "message": "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000"}


@pytest.fixture
def server(envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased(LINE) as s:
        yield s


@pytest.fixture
def pool_class() -> type[Pool]:
    return ResizePool


def two_cpus(obj: dict[str, Any]) -> dict[str, Any]:
    for key in ("capacity", "allocatable"):
        obj["status"][key]["cpu"] = "2"
    return obj


class ResizePool(Pool):
    """A pool whose pods the test resizes, playing the kubelet of its node."""

    def path(self, suffix: str, sub: str = "") -> str:
        return f"/api/v1/namespaces/default/pods/{self.n(suffix)}{sub}"

    def add_running(self, suffix: str, node: str, cpu: str, pod_level: bool = False) -> None:
        """A pod bound to ``node`` and running with ``cpu`` (its container's request, or the pod-level request with
        no container request), as its kubelet reports it once admitted."""
        obj = pod(self.n(suffix), cpu=cpu, memory="10Mi", scheduler=self.scheduler, node_name=node)
        if pod_level:
            obj["spec"]["resources"] = obj["spec"]["containers"][0].pop("resources")
        self.cluster.add_pod(obj)
        self.kubelet_reports(suffix, cpu, cpu, pod_level=pod_level)

    def kubelet_reports(self, suffix: str, actuated: str, allocated: str, *conditions: dict[str, Any],
                        pod_level: bool = False) -> None:
        """The kubelet's status: the container (or the pod) runs with ``actuated`` cpu and was admitted with
        ``allocated``; ``conditions`` are the resize conditions it sets (none: the resize is done)."""
        container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.9", "imageID": "", "ready": True,
                                     "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
        status: dict[str, Any] = {"phase": "Running", "containerStatuses": [container],
                                  "conditions": [{"type": "Ready", "status": "True"}, *conditions]}
        if pod_level:
            container.update(resources={}, allocatedResources={})
            status.update(resources={"requests": {"cpu": actuated, "memory": "10Mi"}},
                          allocatedResources={"cpu": allocated, "memory": "10Mi"})
        else:
            container.update(resources={"requests": {"cpu": actuated, "memory": "10Mi"}},
                             allocatedResources={"cpu": allocated, "memory": "10Mi"})
        # A JSON merge patch replaces the lists whole, as the kubelet's own status writes set them.
        self.cluster.rest.patch(self.path(suffix, "/status"), {"status": status},
                                content_type="application/merge-patch+json")

    def resize(self, suffix: str, cpu: str, pod_level: bool = False) -> None:
        """``kubectl patch --subresource resize``: the spec's cpu request becomes ``cpu``."""
        resources = {"requests": {"cpu": cpu}}
        body = ({"spec": {"resources": resources}} if pod_level
                else {"spec": {"containers": [{"name": "c", "resources": resources}]}})
        got = self.cluster.rest.patch(self.path(suffix, "/resize"), body)
        spec = got["spec"] if pod_level else got["spec"]["containers"][0]
        assert spec["resources"]["requests"]["cpu"] == cpu, got["spec"]


def shrink(pools: dict[str, ResizePool], pod_level: bool) -> None:
    """1500m -> 500m: the kubelet admitted 500m, the container still runs at 1500m."""
    for pool in pools.values():
        node = pool.add_node("node", two_cpus)
        pool.add_running("big", node, "1500m", pod_level)
        pool.resize("big", "500m", pod_level)
        pool.kubelet_reports("big", "1500m", "500m", IN_PROGRESS, pod_level=pod_level)


def held_then_bound(pools: dict[str, ResizePool], procs, freed) -> None:
    """A 1-cpu pod is held by both schedulers, for cpu; once ``freed`` wrote the kubelet's status, both bind it."""
    for pool in pools.values():
        pool.add_pod("wait", cpu="1")
    for name, pool in pools.items():
        expect_pending(pool, "wait", procs[name], INSUFFICIENT_CPU)
    for pool in pools.values():
        freed(pool)
    for name, pool in pools.items():
        assert expect_bound(pool, "wait", procs[name]) == pool.n("node")


@pytest.mark.parametrize("pod_level", [False, True], ids=["container", "pod-level"])
def test_a_shrink_not_yet_actuated_holds_the_room_until_the_kubelet_reports_it(server, tmp_path, pools, pod_level):
    """Scenario 1 (container requests) and 2 (pod-level ``spec.resources``, InPlacePodLevelResourcesVerticalScaling
    beta in 1.36): the pod counts 1500m while it runs at 1500m, 500m once the kubelet reports 500m."""
    shrink(pools, pod_level)
    with schedulers(server, tmp_path) as procs:
        held_then_bound(pools, procs, lambda pool: pool.kubelet_reports("big", "500m", "500m", pod_level=pod_level))


def test_an_infeasible_resize_no_longer_counts_its_spec(server, tmp_path, pools):
    """Scenario 3: resized up to 2500m on a 2-cpu node, the kubelet undecided: the spec counts (2500m, the node is
    full); once the kubelet sets ``PodResizePending`` / ``Infeasible`` the pod counts what it runs with (1 cpu)."""
    for pool in pools.values():
        node = pool.add_node("node", two_cpus)
        pool.add_running("big", node, "1")
        pool.resize("big", "2500m")
    with schedulers(server, tmp_path) as procs:
        held_then_bound(pools, procs, lambda pool: pool.kubelet_reports("big", "1", "1", INFEASIBLE))


def test_the_priority_queue_retries_the_held_pod_when_the_kubelet_frees_the_room(server, tmp_path, pools):
    """With 1.9's PriorityQueue (``PodPriority=true``) a pod that failed waits in unschedulableQ for a move request,
    with no back-off to retry it: the bound pod's status update that lowers its requests is that move (upstream's
    ``UpdatePodScaleDown``), logged at INFO."""
    ours = pools["ours"]
    node = ours.add_node("node", two_cpus)
    ours.add_running("big", node, "1500m")
    ours.resize("big", "500m")
    ours.kubelet_reports("big", "1500m", "500m", IN_PROGRESS)
    daemon = DaemonProcess(server.kubeconfig, tmp_path, "--feature-gates=PodPriority=true")
    with running(daemon):
        ours.add_pod("wait", cpu="1")
        expect_pending(ours, "wait", daemon, INSUFFICIENT_CPU)
        ours.kubelet_reports("big", "500m", "500m")
        assert expect_bound(ours, "wait", daemon, timeout=10) == node
        assert f"requests scaled down pod=default/{ours.n('big')} node={node} cpu=1500m->500m" in daemon.log()
