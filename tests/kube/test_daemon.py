"""``policy-scheduler run`` against real API servers (1.10 and 1.26): binding, queue order, capacity,
unschedulable pods, pods of other schedulers, and placements equal to ``simulate``'s."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import pytest

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, node, pod, wait_until
from benchmarks.harness.faultproxy import FaultProxy
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.kube.client.snapshot import read_cluster_snapshot
from policy_scheduler.offline.simulate import simulate


@pytest.fixture
def proxy(apiserver):
    p = FaultProxy(apiserver.kubeconfig).start()
    yield p
    p.stop()


@pytest.fixture
def cluster(apiserver):
    return Cluster(apiserver.rest())


def successful_binds(proxy: FaultProxy) -> Counter[str]:
    """pod name -> number of binds the API server accepted (201) through the proxy."""
    out: Counter[str] = Counter()
    for method, path, status in proxy.requests:
        m = re.search(r"/pods/([^/?]+)/binding", path)
        if method == "POST" and m and status == 201:
            out[m.group(1)] += 1
    return out


def logged_binds(proxy: FaultProxy, names: Iterable[str], timeout: float = 10) -> Counter[str]:
    """:func:`successful_binds` once every pod in ``names`` is in it. The API server commits a binding before it
    answers, and the proxy logs the answer when it reads it: a pod can show bound a moment before its bind is
    in the log (seen on loaded CI machines)."""
    wanted = set(names)
    wait_until(lambda: wanted <= successful_binds(proxy).keys(), timeout, what="the proxy to log every bind")
    return successful_binds(proxy)


def expected_placements(kubeconfig: str) -> dict[str, str | None]:
    """What ``simulate`` predicts for the pending pods, on the snapshot the API server holds now."""
    snapshot = read_cluster_snapshot(kubeconfig=kubeconfig)
    result = simulate(snapshot, lambda c: from_provider("DefaultProvider").build(c), scheduler_name=SCHEDULER)
    return {p.pod.name: p.node for p in result.placements}


def test_binds_each_pod_once_as_simulate_predicts(apiserver, proxy, cluster, tmp_path):
    for i, cpu in enumerate(("4", "4", "2")):
        cluster.add_node(node(f"node-{i}", cpu=cpu, labels={"failure-domain.beta.kubernetes.io/zone": f"z{i % 2}"}))
    for i in range(12):
        cluster.add_pod(pod(f"web-{i:02d}", cpu="1" if i % 3 else "1500m", labels={"app": "web"}))
    cluster.rest.post("/api/v1/namespaces/default/services",
                      {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    expected = expected_placements(apiserver.kubeconfig)
    fitting = sum(1 for n in expected.values() if n)
    assert 0 < fitting < 12  # 13.5 cpu of requests, 10 cpu of nodes

    daemon = DaemonProcess(proxy.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path).start()
    try:
        wait_until(lambda: len(cluster.bound()) == fitting, 60, what=f"{fitting} pods bound")
        unschedulable = [n for n, host in expected.items() if not host]
        wait_until(lambda: all((cluster.condition(n) or {}).get("reason") == "Unschedulable" for n in unschedulable),
                   30, what="Unschedulable conditions")
        assert cluster.bound() == {n: h for n, h in expected.items() if h}
        assert set(logged_binds(proxy, cluster.bound()).values()) == {1}
        condition = cluster.condition(unschedulable[0])
        assert condition["status"] == "False"
        assert condition["message"].startswith("0/3 nodes are available: ")
        assert "Insufficient cpu" in condition["message"]
        wait_until(lambda: cluster.events("FailedScheduling"), 20, what="a FailedScheduling event")
        failed = cluster.events("FailedScheduling")[0]
        assert failed["type"] == "Warning" and failed["source"]["component"] == SCHEDULER
        assert failed["message"].startswith("0/3 nodes are available: ")
        wait_until(lambda: len(cluster.events("Scheduled")) == fitting, 20, what="the Scheduled events")
        scheduled = {e["involvedObject"]["name"]: e for e in cluster.events("Scheduled")}
        name, host = next(iter(cluster.bound().items()))
        assert scheduled[name]["message"] == f"Successfully assigned {name} to {host}"
        assert scheduled[name]["type"] == "Normal"

        # A new node makes room: the unschedulable pods are retried (node add moves them) and bound.
        cluster.add_node(node("node-9", cpu="8"))
        wait_until(lambda: len(cluster.bound()) == 12, 90, what="all 12 pods bound after a node was added")
        assert set(logged_binds(proxy, cluster.bound()).values()) == {1}
        def counted_every_bind() -> str | None:
            # The daemon counts a bind's outcome once it has read the answer, after the API server shows the pod bound.
            metrics = daemon.metrics()
            return metrics if 'scheduler_binding_outcomes_total{outcome="success"} 12.0' in metrics else None

        metrics = wait_until(counted_every_bind, 10, what="the daemon to count 12 successful binds")
        # The API client's own metrics count every request: at least the 12 accepted binds.
        posts = re.search(r'rest_client_requests_total\{code="201",host="[^"]+",method="POST"\} (\S+)', metrics)
        assert posts and float(posts.group(1)) >= 12
        assert 'url="/api/v1/namespaces/{namespace}/pods/{name}/binding",verb="POST"' in metrics
    finally:
        code = daemon.stop()
    assert code == 0, daemon.log()
    assert "Traceback" not in daemon.log()


def test_pods_of_other_schedulers_are_counted_not_scheduled(apiserver, cluster, tmp_path):
    cluster.add_node(node("small-a", cpu="2"))
    cluster.add_node(node("small-b", cpu="2"))
    # Bound by someone else (a DaemonSet-style pod with another scheduler name): it uses small-a's cpu.
    cluster.add_pod(pod("other-bound", cpu="2", scheduler="default-scheduler", node_name="small-a"))
    cluster.add_pod(pod("other-pending", cpu="1", scheduler="default-scheduler"))
    cluster.add_pod(pod("mine-1", cpu="1"))
    cluster.add_pod(pod("mine-2", cpu="1"))
    cluster.add_pod(pod("mine-3", cpu="1"))
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path).start()
    try:
        wait_until(lambda: len(cluster.bound()) == 3, 60, what="two of ours bound")
        wait_until(lambda: (cluster.condition("mine-3") or {}).get("reason") == "Unschedulable", 30,
                   what="mine-3 unschedulable")
        placements = cluster.placements()
        assert placements["mine-1"] == placements["mine-2"] == "small-b"
        assert placements["other-pending"] == ""
        assert cluster.condition("other-pending") is None
        assert "0/2 nodes are available: 2 Insufficient cpu." == cluster.condition("mine-3")["message"]
    finally:
        assert daemon.stop() == 0, daemon.log()


def test_missing_policy_configmap_is_a_one_line_error(apiserver, tmp_path):
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, "--policy-configmap", "nowhere").start()
    assert daemon.process.wait(30) == 1
    lines = daemon.log().strip().splitlines()
    assert lines[-1] == 'error: couldn\'t get policy config map kube-system/nowhere: configmaps "nowhere" not found'
    assert "Traceback" not in daemon.log()


def test_a_pod_being_deleted_is_skipped_with_an_event(apiserver, cluster, tmp_path):
    """A pending pod with a deletionTimestamp (held by a finalizer) gets 1.9's event and no node."""
    cluster.add_node(node("node-0"))
    held = pod("leaving", cpu="100m")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    cluster.add_pod(held)
    cluster.rest.delete("/api/v1/namespaces/default/pods/leaving")
    cluster.add_pod(pod("staying", cpu="100m"))
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path).start()
    try:
        wait_until(lambda: cluster.bound().get("staying"), 30, what="the other pod bound")
        events = wait_until(lambda: cluster.events("FailedScheduling"), 20, what="the skip event")
        assert [(e["involvedObject"]["name"], e["type"], e["message"]) for e in events] == [
            ("leaving", "Warning", "skip schedule deleting pod: default/leaving")]
        assert cluster.placements()["leaving"] == ""
    finally:
        assert daemon.stop() == 0, daemon.log()
        cluster.rest.patch("/api/v1/namespaces/default/pods/leaving", {"metadata": {"finalizers": None}})


@pytest.mark.parametrize("apiserver", ["1.26"], indirect=True, ids=["k8s-1.26"])
@pytest.mark.parametrize("gate", [False, True], ids=["fifo", "PodPriority"])
def test_pod_priority_gate_orders_the_queue(apiserver, cluster, tmp_path, gate):
    """Gate off: 1.9's FIFO, the older low-priority pod takes the only room. Gate on: the priority queue
    pops the high-priority pod first (1.26 sets spec.priority from the PriorityClass)."""
    cluster.rest.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                      {"metadata": {"name": "high"}, "value": 1000})
    cluster.add_node(node("only", cpu="1"))
    # Queue order without priorities: creation time, then name ("a-low" first either way).
    cluster.add_pod(pod("a-low", cpu="1"))
    cluster.add_pod(pod("b-high", cpu="1", priorityClassName="high"))
    assert cluster.pods()["b-high"]["spec"]["priority"] == 1000
    args = ["--feature-gates", "PodPriority=true"] if gate else []
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, *args).start()
    try:
        winner, loser = ("b-high", "a-low") if gate else ("a-low", "b-high")
        wait_until(lambda: cluster.bound() == {winner: "only"}, 30, what=f"{winner} bound")
        wait_until(lambda: (cluster.condition(loser) or {}).get("reason") == "Unschedulable", 30,
                   what=f"{loser} unschedulable")
    finally:
        assert daemon.stop() == 0, daemon.log()


def test_healthz_fails_until_the_informers_have_synced(apiserver, proxy, cluster, tmp_path):
    proxy.refuse(True)  # the API server "is down": nothing can be listed
    daemon = DaemonProcess(proxy.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path).start()
    try:
        status, body = wait_until(lambda: (lambda r: r if r[0] else None)(daemon.healthz()), 30,
                                  what="the HTTP endpoint")
        assert status == 500
        assert "[-]informer-sync failed: informers have not synced" in body
        assert "[+]ping ok" in body and body.rstrip().endswith("healthz check failed")
        proxy.refuse(False)
        daemon.wait_healthy(60)
        cluster.add_node(node("node-0"))
        cluster.add_pod(pod("after", cpu="100m"))
        wait_until(lambda: cluster.bound().get("after"), 30, what="a pod bound once the API server is back")
    finally:
        assert daemon.stop() == 0, daemon.log()
