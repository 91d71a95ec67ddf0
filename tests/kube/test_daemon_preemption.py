"""Preemption in ``run --feature-gates PodPriority=true`` against real API servers (1.10 with its alpha
priority API switched on, 1.26): victims deleted with their grace period, ``Preempted`` events, the
preemptor's ``NominatedNodeName`` set and lower nominations cleared, the preemptor bound only once its
victims are gone, PodDisruptionBudgets steering the choice of node, no victim where preemption cannot
help, and a failed DELETE stopping a preemption that a retry then completes.

The API servers run no kubelet: a pod deleted with its grace period stays ``Terminating``. The tests play
the kubelet: once they see a victim's ``deletionTimestamp`` they delete it with grace 0.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, node, pod, wait_until
from benchmarks.harness.envtest import EnvtestServer
from benchmarks.harness.faultproxy import FaultProxy
from policy_scheduler.kube.client.rest import RestClient

GATE = ("--feature-gates", "PodPriority=true")


def priority_class(rest: RestClient, version: str, name: str, value: int) -> None:
    group_version = "scheduling.k8s.io/v1" if version == "1.26" else "scheduling.k8s.io/v1alpha1"
    rest.post(f"/apis/{group_version}/priorityclasses",
              {"apiVersion": group_version, "kind": "PriorityClass", "metadata": {"name": name}, "value": value})


def disruption_budget(rest: RestClient, version: str, name: str, labels: dict[str, str], min_available: int) -> None:
    """A PDB (no disruption controller runs: its status allows no disruption)."""
    group_version = "policy/v1" if version == "1.26" else "policy/v1beta1"
    rest.post(f"/apis/{group_version}/namespaces/default/poddisruptionbudgets", {
        "apiVersion": group_version, "kind": "PodDisruptionBudget", "metadata": {"name": name},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": labels}}})


def terminating(cluster: Cluster, name: str) -> bool:
    p = cluster.get_pod(name)
    return p is not None and bool(p["metadata"].get("deletionTimestamp"))


def nomination(cluster: Cluster, name: str) -> tuple[str | None, str | None]:
    """(the NominatedNodeName annotation, status.nominatedNodeName) of a pod."""
    p = cluster.get_pod(name) or {}
    annotations = (p.get("metadata") or {}).get("annotations") or {}
    return annotations.get("NominatedNodeName"), (p.get("status") or {}).get("nominatedNodeName")


def play_kubelet(cluster: Cluster, name: str) -> None:
    """The victim's containers have stopped: remove it for good."""
    cluster.rest.delete(f"/api/v1/namespaces/default/pods/{name}", {"gracePeriodSeconds": 0})
    wait_until(lambda: cluster.get_pod(name) is None, 20, what=f"{name} gone")


def assert_stays_unbound(cluster: Cluster, name: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert cluster.placements().get(name) == "", f"{name} was bound while its victims still existed"
        time.sleep(0.2)


def one_full_node_behind_a_proxy(server: EnvtestServer, cluster: Cluster, tmp_path: Path) -> tuple[FaultProxy, DaemonProcess]:
    """Node ``only`` (1 cpu) full with priority-100 pod ``low``; a daemon with the gate, healthy, talking to the
    server through a fault proxy."""
    for name, value in (("p100", 100), ("p1000", 1000)):
        priority_class(cluster.rest, server.version, name, value)
    cluster.add_node(node("only", cpu="1"))
    cluster.add_pod(pod("low", cpu="1", node_name="only", priorityClassName="p100"))
    proxy = FaultProxy(server.kubeconfig).start()
    daemon = DaemonProcess(proxy.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path, *GATE).start()
    daemon.wait_healthy()
    return proxy, daemon


@pytest.fixture
def cluster(priority_apiserver):
    return Cluster(priority_apiserver.rest())


def test_preemption_deletes_the_victim_nominates_and_binds_once_it_is_gone(priority_apiserver, cluster, tmp_path):
    """One node full of priority-100 pods, another held by a pod as important as the preemptor, and a
    priority-50 pod nominated to the full node by an earlier preemption. The priority-1000 pod preempts one
    victim (the other is reprieved), is nominated there, clears the lower nomination, waits while its victim
    terminates and is bound once it is gone."""
    version = priority_apiserver.version
    for name, value in (("p50", 50), ("p100", 100), ("p1000", 1000)):
        priority_class(cluster.rest, version, name, value)
    cluster.add_node(node("full", cpu="2"))
    cluster.add_node(node("busy", cpu="2"))
    cluster.add_pod(pod("low-1", cpu="1", node_name="full", priorityClassName="p100"))
    cluster.add_pod(pod("low-2", cpu="1", node_name="full", priorityClassName="p100"))
    cluster.add_pod(pod("vip", cpu="2", node_name="busy", priorityClassName="p1000"))
    waiting = pod("waiting", cpu="1", priorityClassName="p50")
    waiting["metadata"]["annotations"] = {"NominatedNodeName": "full"}
    cluster.add_pod(waiting)
    assert cluster.pods()["low-1"]["spec"]["priority"] == 100

    daemon = DaemonProcess(priority_apiserver.kubeconfig, tmp_path, *GATE).start()
    try:
        # "waiting" cannot preempt anything (every pod has a higher priority): it keeps its nomination.
        wait_until(lambda: (cluster.condition("waiting") or {}).get("reason") == "Unschedulable", 30,
                   what="waiting unschedulable")
        assert nomination(cluster, "waiting")[0] == "full"

        cluster.add_pod(pod("high", cpu="1", priorityClassName="p1000"))
        wait_until(lambda: terminating(cluster, "low-2"), 30, what="the victim low-2 terminating")
        assert not terminating(cluster, "low-1") and not terminating(cluster, "vip")
        assert nomination(cluster, "high") == ("full", "full")
        wait_until(lambda: nomination(cluster, "waiting") == ("", None), 20, what="waiting's nomination cleared")
        events = wait_until(lambda: cluster.events("Preempted"), 20, what="the Preempted event")
        assert [(e["involvedObject"]["name"], e["type"], e["message"], e["source"]["component"], e["count"])
                for e in events] == [("low-2", "Normal", "by default/high on node full", SCHEDULER, 1)]

        # Not bound while its victim still exists (terminating, it still holds its cpu).
        assert_stays_unbound(cluster, "high", 3)
        play_kubelet(cluster, "low-2")
        wait_until(lambda: cluster.placements().get("high") == "full", 30, what="high bound to full")

        assert cluster.bound() == {"low-1": "full", "vip": "busy", "high": "full"}
        assert not terminating(cluster, "low-1")
        log = daemon.log()
        assert ("preempting pod=default/high priority=1000 node=full victims=default/low-2(100) pdb_violations=0 "
                "nominations_cleared=default/waiting") in log
        assert daemon.metric('scheduler_preemption_attempts_total{result="nominated"}') == 1.0
        assert len(cluster.events("Preempted")) == 1
    finally:
        assert daemon.stop() == 0, daemon.log()
    assert "Traceback" not in daemon.log()


def test_a_disruption_budget_steers_preemption_to_another_node(priority_apiserver, cluster, tmp_path):
    """Without budgets node-a (priority-100 victims) beats node-b (priority-200 victims); a PDB covering
    node-a's pods makes node-b the node without violations."""
    version = priority_apiserver.version
    for name, value in (("p100", 100), ("p200", 200), ("p1000", 1000)):
        priority_class(cluster.rest, version, name, value)
    disruption_budget(cluster.rest, version, "guard", {"app": "guarded"}, min_available=2)
    cluster.add_node(node("node-a", cpu="2"))
    cluster.add_node(node("node-b", cpu="2"))
    for i in (1, 2):
        cluster.add_pod(pod(f"a-{i}", cpu="1", node_name="node-a", labels={"app": "guarded"}, priorityClassName="p100"))
        cluster.add_pod(pod(f"b-{i}", cpu="1", node_name="node-b", labels={"app": "plain"}, priorityClassName="p200"))
    daemon = DaemonProcess(priority_apiserver.kubeconfig, tmp_path, *GATE).start()
    try:
        daemon.wait_healthy()
        cluster.add_pod(pod("high", cpu="1", priorityClassName="p1000"))
        wait_until(lambda: terminating(cluster, "b-2"), 30, what="the victim b-2 terminating")
        assert nomination(cluster, "high") == ("node-b", "node-b")
        assert [n for n in ("a-1", "a-2", "b-1") if terminating(cluster, n)] == []
        assert "node=node-b victims=default/b-2(200) pdb_violations=0" in daemon.log()
        play_kubelet(cluster, "b-2")
        wait_until(lambda: cluster.placements().get("high") == "node-b", 30, what="high bound to node-b")
    finally:
        assert daemon.stop() == 0, daemon.log()


def test_no_victim_where_preemption_cannot_help_and_the_stale_nomination_is_cleared(priority_apiserver, cluster,
                                                                                     tmp_path):
    """A node selector no node matches: evicting pods cannot help, nothing is deleted, and the pod's own
    nomination (left by an earlier preemption) is cleared (``generic_scheduler.md`` §7 step 4)."""
    version = priority_apiserver.version
    for name, value in (("p100", 100), ("p1000", 1000)):
        priority_class(cluster.rest, version, name, value)
    cluster.add_node(node("full", cpu="2"))
    cluster.add_pod(pod("low-1", cpu="1", node_name="full", priorityClassName="p100"))
    cluster.add_pod(pod("low-2", cpu="1", node_name="full", priorityClassName="p100"))
    picky = pod("picky", cpu="1", priorityClassName="p1000", nodeSelector={"disk": "nvme"})
    picky["metadata"]["annotations"] = {"NominatedNodeName": "full"}
    cluster.add_pod(picky)
    daemon = DaemonProcess(priority_apiserver.kubeconfig, tmp_path, *GATE).start()
    try:
        wait_until(lambda: (cluster.condition("picky") or {}).get("reason") == "Unschedulable", 30,
                   what="picky unschedulable")
        wait_until(lambda: nomination(cluster, "picky") == ("", None), 20, what="picky's nomination cleared")
        time.sleep(1)
        assert [n for n in ("low-1", "low-2") if terminating(cluster, n)] == []
        assert cluster.events("Preempted") == []
        assert cluster.bound() == {"low-1": "full", "low-2": "full"}
        assert daemon.metric('scheduler_preemption_attempts_total{result="nominated"}') == 0.0
        assert daemon.metric('scheduler_preemption_attempts_total{result="no_node"}') >= 1.0
        assert "preempting" not in daemon.log()
    finally:
        assert daemon.stop() == 0, daemon.log()


def test_a_refused_delete_stops_the_preemption_and_a_retry_completes_it(priority_apiserver, cluster, tmp_path):
    """The first DELETE of the victim is refused (403): that preemption stops, logged, no event; the pod is
    retried after its back-off, preempts again and the victim is deleted once."""
    proxy, daemon = one_full_node_behind_a_proxy(priority_apiserver, cluster, tmp_path)
    try:
        failed = proxy.fail("DELETE", r"/namespaces/default/pods/low$", 403)
        cluster.add_pod(pod("high", cpu="1", priorityClassName="p1000"))
        wait_until(lambda: terminating(cluster, "low") and 200 in deletes_of(proxy, "low"), 30,
                   what="the victim terminating after a retry (and the proxy's log of its DELETE)")
        assert failed.hits == 1
        assert deletes_of(proxy, "low") == [403, 200]
        log = daemon.log()
        assert "Error preempting pod default/low: 403" in log
        assert "preemption for pod=default/high node=only stopped; retrying the pod in 1s" in log
        assert log.count("preempting pod=default/high") == 2
        events = wait_until(lambda: cluster.events("Preempted"), 20, what="the Preempted event")
        assert [(e["involvedObject"]["name"], e["count"]) for e in events] == [("low", 1)]
        high_bound_once_low_is_gone(cluster)
    finally:
        code = daemon.stop()
        proxy.stop()
    assert code == 0, daemon.log()


@pytest.mark.parametrize("fault", ["500", "no reply, not forwarded"])
def test_a_delete_that_never_took_effect_is_sent_again_in_the_same_preemption(priority_apiserver, cluster, tmp_path,
                                                                              fault):
    """The victim's DELETE gets a 500, or its connection drops before it reaches the server: the outcome is
    unknown, so the worker reads the victim back; it is still
    there and not terminating, so the DELETE never took effect and is sent again, within the same
    preemption (an API server restarting under the scheduler does this)."""
    proxy, daemon = one_full_node_behind_a_proxy(priority_apiserver, cluster, tmp_path)
    try:
        if fault == "500":
            rule, lost = proxy.fail("DELETE", r"/namespaces/default/pods/low$", 500), [500]
        else:  # a write is sent once (client-go resends only GETs; Go's transport replays no DELETE)
            rule, lost = proxy.drop_reply("DELETE", r"/namespaces/default/pods/low$", times=1, forward=False), [0]
        cluster.add_pod(pod("high", cpu="1", priorityClassName="p1000"))
        # The API server marks the victim before it answers; the proxy logs the answer when it reads it.
        wait_until(lambda: terminating(cluster, "low") and 200 in deletes_of(proxy, "low"), 30,
                   what="the victim terminating (and the proxy's log of its DELETE)")
        assert rule.hits == len(lost)
        assert deletes_of(proxy, "low") == [*lost, 200]
        log = daemon.log()
        assert "deleting victim pod=default/low: outcome unknown" in log
        assert "victim pod=default/low: still there, not terminating; deleting it again" in log
        assert "Error preempting pod" not in log and "stopped; retrying" not in log
        assert log.count("preempting pod=default/high") == 1
        high_bound_once_low_is_gone(cluster)
    finally:
        code = daemon.stop()
        proxy.stop()
    assert code == 0, daemon.log()


def high_bound_once_low_is_gone(cluster: Cluster) -> None:
    play_kubelet(cluster, "low")
    wait_until(lambda: cluster.placements().get("high") == "only", 30, what="high bound")


def deletes_of(proxy, name: str) -> list[int]:
    """The statuses of the DELETEs of pod ``name`` the proxy saw (0: not forwarded)."""
    return [status for method, path, status in proxy.requests
            if method == "DELETE" and path.startswith(f"/api/v1/namespaces/default/pods/{name}")]


def test_a_victim_deletion_whose_reply_is_lost_is_re_checked_not_failed(priority_apiserver, cluster, tmp_path):
    """The server deletes the victim (it starts terminating), but the DELETE's reply is lost: the preemption worker
    reads the victim back, sees it terminating and carries on; one preemption, one Preempted event, and the
    preemptor is bound once the victim is gone."""
    proxy, daemon = one_full_node_behind_a_proxy(priority_apiserver, cluster, tmp_path)
    try:
        lost = proxy.drop_reply("DELETE", r"/namespaces/default/pods/low$", times=-1)
        cluster.add_pod(pod("high", cpu="1", priorityClassName="p1000"))
        wait_until(lambda: terminating(cluster, "low"), 30, what="the victim terminating")
        events = wait_until(lambda: cluster.events("Preempted"), 20, what="the Preempted event")
        assert [(e["involvedObject"]["name"], e["count"]) for e in events] == [("low", 1)]
        log = daemon.log()
        assert "deleting victim pod=default/low: outcome unknown" in log
        assert "victim pod=default/low: deleted" in log
        assert "Error preempting pod" not in log
        high_bound_once_low_is_gone(cluster)
        assert log.count("preempting pod=default/high") == 1
        deletes = deletes_of(proxy, "low")
        assert lost.hits == len(deletes) == 1 and deletes == [200]  # carried out once; its reply never reached us
    finally:
        code = daemon.stop()
        proxy.stop()
    assert code == 0, daemon.log()
    assert "Traceback" not in daemon.log()
