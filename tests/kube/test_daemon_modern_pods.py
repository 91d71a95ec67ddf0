"""``run`` keeps the promises of modern pods against real 1.26 and 1.32 API servers: scheduling gates
(1.26 with ``PodSchedulingReadiness``; 1.32 keeps them by default), ``preemptionPolicy: Never`` from a
PriorityClass, and ``spec.resourceClaims`` (dynamic resource allocation switched on): refused by name in 1.26's
classic form, allocated on 1.36.

Where a message is at stake, upstream's own 1.26 kube-scheduler runs on the same pods and must say the
same: the gated pod's condition (and no event), the Never pod's FailedScheduling message.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, node, pod, wait_until
from policy_scheduler.kube.client.rest import MERGE_PATCH

from .reference import ReferenceScheduler

#: The apiserver flags that keep the fields: gates (1.26 alpha) and dynamic resource allocation.
MODERN_ARGS: dict[str, tuple[str, ...]] = {
    "1.26": ("--apiserver-arg=--feature-gates=PodSchedulingReadiness=true,DynamicResourceAllocation=true",
             "--apiserver-arg=--runtime-config=resource.k8s.io/v1alpha1=true"),
    "1.32": ("--apiserver-arg=--feature-gates=DynamicResourceAllocation=true",
             "--apiserver-arg=--runtime-config=resource.k8s.io/v1beta1=true"),
    "1.36": (),  # every field is kept at the default flags (DRA is GA and locked on)
}
CLAIMS = {
    "1.26": [{"name": "gpu", "source": {"resourceClaimName": "gpu-claim"}}],
    "1.32": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
    "1.36": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
}
GATED_REASON = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
#: Upstream's message for the Never pod, per line: 1.26 appends the PostFilter message with one more full stop, 1.32
#: without; on 1.36 the default profile's DynamicResources PostFilter speaks before preemption.
NEVER_MESSAGES = {
    "1.26": "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never..",
    "1.32": "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
    "1.36": "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
            "preemption: not eligible due to preemptionPolicy=Never.",
}
PRIORITY = ("--feature-gates", "PodPriority=true")


@pytest.fixture(params=tuple(MODERN_ARGS), ids=lambda v: f"k8s-{v}")
def modern(request, envtest_pool):
    with envtest_pool.leased(request.param, *MODERN_ARGS[request.param]) as server:
        yield server


def gated_pod(name: str, cpu: str, *gates: str) -> dict[str, Any]:
    return pod(name, cpu=cpu, schedulingGates=[{"name": g} for g in gates])


def remove_gates(cluster: Cluster, name: str) -> None:
    """The real update a controller makes: the gates go (the API server allows removing them only)."""
    cluster.rest.patch(f"/api/v1/namespaces/default/pods/{name}", {"spec": {"schedulingGates": None}},
                       content_type=MERGE_PATCH)


def priority_classes(cluster: Cluster) -> None:
    for name, value, policy in (("low", 10, None), ("high", 1000, None), ("high-never", 1000, "Never")):
        body: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                "metadata": {"name": name}, "value": value}
        if policy:
            body["preemptionPolicy"] = policy
        cluster.rest.post("/apis/scheduling.k8s.io/v1/priorityclasses", body)


def observe_gated(cluster: Cluster, name: str, seconds: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """After ``seconds`` with a scheduler running: the gated pod's condition (it must stay unbound and its
    object unwritten all along) and the events about it."""
    rv = cluster.get_pod(name)["metadata"]["resourceVersion"]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current = cluster.get_pod(name)
        assert not current["spec"].get("nodeName"), f"{name} was bound while gated"
        assert current["metadata"]["resourceVersion"] == rv, f"{name} was written while gated: {current['status']}"
        time.sleep(0.25)
    events = [e for e in cluster.events() if e["involvedObject"]["name"] == name]
    return cluster.condition(name), events


def never_scenario(cluster: Cluster) -> None:
    """A full node held by a priority-10 pod, and a priority-1000 pod whose class says Never."""
    priority_classes(cluster)
    cluster.add_node(node("n1", cpu="2"))
    cluster.add_pod(pod("low", cpu="2", node_name="n1", priorityClassName="low"))
    cluster.add_pod(pod("never", cpu="1", priorityClassName="high-never"))
    assert cluster.pods()["never"]["spec"]["preemptionPolicy"] == "Never"


def failed_scheduling(cluster: Cluster, name: str) -> list[str]:
    return [e["message"] for e in cluster.events("FailedScheduling") if e["involvedObject"]["name"] == name]


# -- scheduling gates ----------------------------------------------------------------------------------
def test_a_gated_pod_holds_no_room_and_schedules_once_its_gates_are_removed(modern, tmp_path):
    cluster = Cluster(modern.rest())
    cluster.add_node(node("n1", cpu="2"))
    cluster.add_pod(gated_pod("gated", "2", "example.com/quota", "example.com/team"))  # listed at start
    daemon = DaemonProcess(modern.kubeconfig, tmp_path).start()
    try:
        daemon.wait_healthy()
        cluster.add_pod(gated_pod("gated-late", "1", "example.com/quota"))  # seen through the watch
        cluster.add_pod(pod("plain", cpu="2"))  # needs the room the first gated pod would take
        wait_until(lambda: cluster.placements().get("plain") == "n1", 30, what="plain bound at once")
        for name in ("gated", "gated-late"):
            condition, events = observe_gated(cluster, name, 2)
            assert (condition["status"], condition["reason"], condition["message"]) == ("False", GATED_REASON, GATED_MESSAGE)
            assert events == []

        cluster.delete_pod("plain")
        remove_gates(cluster, "gated")
        wait_until(lambda: cluster.placements().get("gated") == "n1", 30, what="gated bound once ungated")
        assert cluster.condition("gated")["status"] == "True"
        scheduled = wait_until(  # the event is written in the background, after the bind
            lambda: [e["message"] for e in cluster.events("Scheduled") if e["involvedObject"]["name"] == "gated"], 10,
            what="gated's Scheduled event")
        assert scheduled == ["Successfully assigned gated to n1"]
        assert cluster.placements()["gated-late"] == ""
        log = daemon.log()
        assert log.count("gated pod=default/gated gates=example.com/quota,example.com/team") == 1
        assert log.count("gated pod=default/gated-late gates=example.com/quota") == 1
        assert "gates removed pod=default/gated queued=true" in log
    finally:
        assert daemon.stop() == 0, daemon.log()
    assert "Traceback" not in daemon.log()


def test_a_gated_pod_missing_its_condition_gets_it_once(modern, tmp_path):
    """The API server sets the condition at creation; where something overwrote it, run writes it back, once."""
    cluster = Cluster(modern.rest())
    cluster.add_node(node("n1"))
    cluster.add_pod(gated_pod("gated", "1", "example.com/quota"))
    stale = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "stale"}
    cluster.rest.patch("/api/v1/namespaces/default/pods/gated/status", {"status": {"conditions": [stale]}})
    assert cluster.condition("gated")["message"] == "stale"
    daemon = DaemonProcess(modern.kubeconfig, tmp_path).start()
    try:
        wait_until(lambda: (cluster.condition("gated") or {}).get("reason") == GATED_REASON, 30,
                   what="the SchedulingGated condition written")
        condition, events = observe_gated(cluster, "gated", 3)  # and not written again
        assert (condition["status"], condition["message"]) == ("False", GATED_MESSAGE)
        assert events == []
    finally:
        assert daemon.stop() == 0, daemon.log()


def test_rules_1_9_bind_a_gated_pod_as_1_9_would_have(modern, tmp_path):
    cluster = Cluster(modern.rest())
    cluster.add_node(node("n1"))
    cluster.add_pod(gated_pod("gated", "1", "example.com/quota"))
    daemon = DaemonProcess(modern.kubeconfig, tmp_path, "--rules", "1.9").start()
    try:
        # 1.9's decision is made and the bind sent; the 1.26+ API server refuses to bind a gated pod (409).
        wait_until(lambda: "pod gated has non-empty .spec.schedulingGates" in daemon.log(), 30,
                   what="the binding the server refused")
        assert "Attempting to bind gated to n1" in daemon.log()
        assert cluster.placements()["gated"] == ""
        # The refusal is no "already bound": the assumption is forgotten (no phantom room), the pod re-queued.
        wait_until(lambda: "Failed to bind pod: default/gated" in daemon.log(), 30, what="the refusal handled")
        messages = wait_until(lambda: [e["message"] for e in cluster.events("FailedScheduling")
                                       if e["involvedObject"]["name"] == "gated"], 30, what="its event")
        assert all(m.startswith("Binding rejected: ") for m in messages), messages
        cluster.add_pod(pod("ungated", cpu="3500m"))  # needs the room 1.9's decision had assumed for gated
        wait_until(lambda: cluster.placements().get("ungated") == "n1", 30, what="the ungated pod bound")
    finally:
        assert daemon.stop() == 0, daemon.log()


# -- preemptionPolicy: Never -------------------------------------------------------------------------------
def test_a_never_pod_does_not_preempt_and_a_preempting_one_does(modern, tmp_path):
    cluster = Cluster(modern.rest())
    never_scenario(cluster)
    daemon = DaemonProcess(modern.kubeconfig, tmp_path, *PRIORITY).start()
    try:
        messages = wait_until(lambda: failed_scheduling(cluster, "never"), 30, what="never's FailedScheduling")
        never_message = NEVER_MESSAGES[modern.version]
        assert set(messages) == {never_message}  # (two workers may write the same event twice, not correlated)
        condition = cluster.wait_condition("never", "Unschedulable")
        assert condition["message"] == never_message
        time.sleep(2)
        low = cluster.get_pod("low")
        assert low is not None and not low["metadata"].get("deletionTimestamp"), "the low pod was preempted"
        assert cluster.placements()["never"] == ""

        cluster.add_pod(pod("preemptor", cpu="1", priorityClassName="high"))
        wait_until(lambda: (cluster.get_pod("low") or {}).get("metadata", {}).get("deletionTimestamp"), 30,
                   what="low preempted by the preempting class")
        cluster.delete_pod("low")  # play the kubelet
        wait_until(lambda: cluster.placements().get("preemptor") == "n1", 30, what="preemptor bound")
        assert "preempting pod=default/preemptor priority=1000 node=n1 victims=default/low(10)" in daemon.log()
        assert "preempting pod=default/never" not in daemon.log()
    finally:
        assert daemon.stop() == 0, daemon.log()
    assert "Traceback" not in daemon.log()


def test_rules_1_9_let_a_never_pod_preempt(modern, tmp_path):
    cluster = Cluster(modern.rest())
    never_scenario(cluster)
    daemon = DaemonProcess(modern.kubeconfig, tmp_path, *PRIORITY, "--rules", "1.9").start()
    try:
        wait_until(lambda: (cluster.get_pod("low") or {}).get("metadata", {}).get("deletionTimestamp"), 30,
                   what="low preempted by the Never pod under 1.9's rules")
        # The event is recorded asynchronously, maybe after the victim's deletion (and maybe more than once).
        messages = wait_until(lambda: failed_scheduling(cluster, "never"), 30, what="the never pod's FailedScheduling")
        assert set(messages) == {"0/1 nodes are available: 1 Insufficient cpu."}
    finally:
        assert daemon.stop() == 0, daemon.log()


# -- refused fields ---------------------------------------------------------------------------------------
#: What ``run`` says of a pod whose claim ``gpu-claim`` does not exist, by line: 1.26's classic form is refused by
#: name; 1.32 serves ``resource.k8s.io/v1beta1`` only, which ``run`` does not watch: the claim is not found (said
#: in an event, not waited for in silence); 1.36: the pod waits for its claim without an attempt, as upstream's
#: PreEnqueue has it (``tests/kube/test_dra.py``), and is bound once the claim and a device exist.
CLAIMS_MESSAGES = {
    "1.26": "spec.resourceClaims[].source (classic dynamic resource allocation, resource.k8s.io/v1alpha1) is not "
            "supported by this scheduler: the pod's ResourceClaims cannot be allocated",
    "1.32": '0/1 nodes are available: could not find ResourceClaim "default/gpu-claim".',
    "1.36": None,
}


def test_a_pod_with_resource_claims_on_each_line(modern, tmp_path):
    cluster = Cluster(modern.rest())
    cluster.add_node(node("n1"))
    claims = CLAIMS[modern.version]
    dra = pod("dra", cpu="1", resourceClaims=claims)
    dra["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    created = cluster.add_pod(dra)
    assert created["spec"]["resourceClaims"] == claims  # the server kept the field
    expected = CLAIMS_MESSAGES[modern.version]
    resource = "/apis/resource.k8s.io/v1"
    if expected is None:  # the class and the device are there before the daemon (only the claim comes later: its
        # informer is not the class's, so a class created just before the claim may reach the cache after it)
        cluster.rest.post(f"{resource}/deviceclasses", {"metadata": {"name": "gpu"}, "spec": {
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}})
        cluster.rest.post(f"{resource}/resourceslices", {"metadata": {"name": "n1-gpu"}, "spec": {
            "driver": "gpu.example.com", "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}})
    daemon = DaemonProcess(modern.kubeconfig, tmp_path).start()
    try:
        cluster.add_pod(pod("plain", cpu="1"))
        cluster.add_pod(pod("windows", cpu="100m", os={"name": "windows"}))  # not a scheduling constraint upstream
        wait_until(lambda: cluster.placements().get("plain") == "n1", 30, what="plain bound")
        wait_until(lambda: cluster.placements().get("windows") == "n1", 30, what="the spec.os.name pod bound")
        if expected is None:
            wait_until(lambda: "pod=default/dra waits for its claims" in daemon.log(), 10, what="dra held")
            assert failed_scheduling(cluster, "dra") == [] and cluster.condition("dra") is None
            cluster.rest.post(f"{resource}/namespaces/default/resourceclaims", {"metadata": {"name": "gpu-claim"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
            wait_until(lambda: cluster.placements().get("dra") == "n1", 30, what="dra bound once its claim exists")
            assert failed_scheduling(cluster, "dra") == []
            return
        messages = wait_until(lambda: failed_scheduling(cluster, "dra"), 30, what="dra's FailedScheduling")
        assert set(messages) == {expected}
        condition = wait_until(lambda: (c := cluster.condition("dra")) and c.get("reason") == "Unschedulable" and c, 20,
                               what="dra's condition")
        assert (condition["status"], condition["message"]) == ("False", expected)
        time.sleep(1)
        assert cluster.placements()["dra"] == ""
        assert f"unschedulable pod=default/dra reason={expected!r}" in daemon.log()
    finally:
        assert daemon.stop() == 0, daemon.log()
        assert "Traceback" not in daemon.log()


# -- upstream's kube-scheduler of the same line on the same pods ----------------------------------------------
@pytest.mark.parametrize("version", tuple(MODERN_ARGS), ids=lambda v: f"k8s-{v}")
def test_upstream_says_the_same_for_gated_and_never_pods(version, tmp_path_factory, envtest_pool):
    server = envtest_pool.lease(version, *MODERN_ARGS[version])
    upstream = None
    try:
        cluster = Cluster(server.rest())
        never_scenario(cluster)
        cluster.add_pod(gated_pod("gated", "1", "example.com/quota"))
        upstream = ReferenceScheduler(server, tmp_path_factory.mktemp("upstream"), scheduler_name=SCHEDULER,
                                      feature_gates="PodSchedulingReadiness=true" if version == "1.26" else "").start()
        messages = wait_until(lambda: failed_scheduling(cluster, "never"), 60, what="upstream's FailedScheduling")
        assert messages[0] == NEVER_MESSAGES[version], upstream.log()
        condition = cluster.wait_condition("never", "Unschedulable")
        assert condition["message"] == NEVER_MESSAGES[version]
        assert not cluster.get_pod("low")["metadata"].get("deletionTimestamp")
        condition, events = observe_gated(cluster, "gated", 2)
        assert (condition["status"], condition["reason"], condition["message"]) == ("False", GATED_REASON, GATED_MESSAGE)
        assert events == []
        remove_gates(cluster, "gated")
        cluster.delete_pod("never")
        cluster.delete_pod("low")
        wait_until(lambda: cluster.placements().get("gated") == "n1", 30, what="upstream binds the ungated pod")
        # spec.os.name is no scheduling constraint upstream either (run binds the same pod: the DRA test)
        cluster.add_pod(pod("windows", cpu="100m", os={"name": "windows"}))
        wait_until(lambda: cluster.placements().get("windows") == "n1", 30, what="upstream binds the spec.os.name pod")
    finally:
        if upstream is not None:
            upstream.stop()
        envtest_pool.release(server)
