"""``policy-scheduler run`` under faults, against real API servers (1.10 and 1.26).

The daemon talks to the API server through a :class:`FaultProxy` that cuts watches, answers 410 Gone,
fails or delays binds, or refuses everything for a while; some tests restart the API server itself or
compact etcd. Whatever happens, the invariant is the same: **no pod lost, none bound twice** — every
pod ends up bound (within its nodes' capacity), and the API server accepted exactly one bind for it.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks.harness.daemon import Cluster, DaemonProcess, node, pod, wait_until
from benchmarks.harness.envtest import VERSIONS, EnvtestServer, start_server
from benchmarks.harness.faultproxy import BINDING, FaultProxy

from .test_daemon import logged_binds, successful_binds

PODS_WATCH = r"^/api/v1/pods$"  # the daemon's pod reflector: lists and watches all namespaces' pods
Spawn = Callable[..., DaemonProcess]


@pytest.fixture
def cluster(apiserver: EnvtestServer) -> Cluster:
    return Cluster(apiserver.rest())


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    """Start ``policy-scheduler run`` through a proxy and wait until its informers have synced and are watching
    (the faults below cut, refuse and expire watches); every daemon still running at the end of the test is
    killed."""
    started: list[DaemonProcess] = []

    def start(proxy: FaultProxy, *args: str, name: str = "daemon") -> DaemonProcess:
        kubeconfig = proxy.write_kubeconfig(tmp_path / f"{name}.kubeconfig")
        daemon = DaemonProcess(kubeconfig, tmp_path, *args, name=name).start()
        started.append(daemon)
        daemon.wait_healthy()
        wait_until(proxy.informers_watching, 10, interval=0.02, what=f"{name}'s informers watching")
        return daemon

    yield start
    for daemon in started:
        daemon.kill()


# -- what the API server says ------------------------------------------------------------------------
def cpu_millis(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def assert_within_capacity(cluster: Cluster) -> None:
    """No node holds more cpu requests than it has allocatable."""
    allocatable = {n["metadata"]["name"]: cpu_millis(n["status"]["allocatable"]["cpu"])
                   for n in cluster.rest.get("/api/v1/nodes")["items"]}
    used: Counter[str] = Counter()
    for p in cluster.pods().values():
        if p["spec"].get("nodeName"):
            used[p["spec"]["nodeName"]] += sum(cpu_millis(c["resources"]["requests"]["cpu"])
                                               for c in p["spec"]["containers"])
    over = {n: f"{m}m of {allocatable.get(n, 0)}m" for n, m in used.items() if m > allocatable.get(n, 0)}
    assert not over, f"nodes over capacity: {over}"


def assert_each_bound_once(proxy: FaultProxy, cluster: Cluster, names: list[str]) -> None:
    """Every pod in ``names`` is bound, the API server accepted exactly one bind for it (and for every
    other pod the daemon bound), and no node is over capacity."""
    bound = cluster.bound()
    assert sorted(set(names) - bound.keys()) == []
    binds = logged_binds(proxy, names)
    assert {name: n for name, n in binds.items() if n != 1} == {}, "pods bound more than once"
    assert sorted(set(names) - binds.keys()) == [], "pods bound, but not by the daemon's accepted bind"
    assert_within_capacity(cluster)


def binds_of(proxy: FaultProxy, name: str) -> list[int]:
    """The statuses the proxy returned to the daemon's binds of pod ``name``, oldest first."""
    return [status for method, path, status in proxy.requests
            if method == "POST" and re.search(rf"/pods/{name}/binding$", path)]


def pod_lists(proxy: FaultProxy) -> list[int]:
    """The statuses of the pod reflector's lists (not watches), oldest first."""
    return [status for method, path, status in proxy.requests
            if method == "GET" and re.match(r"/api/v1/pods\?", path) and "watch=true" not in path]


def pod_watches(proxy: FaultProxy) -> int:
    return proxy.count("GET", r"^/api/v1/pods\?.*watch=true")


def disconnect_after_a_first_bind(proxy: FaultProxy, cluster: Cluster, spawn: Spawn, cpu: str) -> DaemonProcess:
    """A daemon that has bound pod ``before`` on node-0 (4 cpu), then loses the API server: every request
    refused (503) and its watches cut."""
    cluster.add_node(node("node-0", cpu="4"))
    daemon = spawn(proxy)
    cluster.add_pod(pod("before", cpu=cpu))
    wait_until(lambda: "before" in cluster.bound(), 30, what="before bound")
    proxy.refuse(True)
    proxy.cut_watches()
    return daemon


def finished_cleanly(daemon: DaemonProcess) -> None:
    code = daemon.stop()
    assert code == 0, daemon.log()
    assert "Traceback" not in daemon.log()


# -- 1. watches cut mid-stream -------------------------------------------------------------------------
def test_watch_cuts_during_a_burst_lose_no_pod(proxy, cluster, spawn):
    for i in range(3):
        cluster.add_node(node(f"node-{i}", cpu="4"))
    daemon = spawn(proxy)
    names = [f"burst-{i:02d}" for i in range(30)]
    cuts: Counter[str] = Counter()
    for i, name in enumerate(names):
        cluster.add_pod(pod(name, cpu="300m"))
        if i % 10 == 5:
            # Break the pod and node watches mid-burst, then let the daemon reconnect before the next cut.
            watches = pod_watches(proxy)
            cuts["pods"] += proxy.cut_watches(PODS_WATCH)
            cuts["nodes"] += proxy.cut_watches(r"^/api/v1/nodes$")  # none open while it backs off
            wait_until(lambda w=watches: pod_watches(proxy) > w, 15, what="the pod watch reopened")
    assert cuts["pods"] == 3 and cuts["nodes"] >= 1

    wait_until(lambda: len(cluster.bound()) == len(names), 60, what="all 30 pods bound")
    assert_each_bound_once(proxy, cluster, names)
    log = daemon.log()
    assert len(re.findall(r"pods: watch of /api/v1/pods failed: watch stream broken: .*; retrying in", log)) >= 3
    assert re.search(r"nodes: watch of /api/v1/nodes failed: watch stream broken: .*; retrying in", log)
    # Each reconnect resumed the watch from the last resourceVersion seen: no re-list was needed.
    assert pod_lists(proxy) == [200]
    finished_cleanly(daemon)


# -- 2. 410 Gone: re-list and reconcile ---------------------------------------------------------------
def test_gone_on_the_pod_watch_relists_and_binds_every_pod(proxy, cluster, spawn):
    cluster.add_node(node("node-0", cpu="4"))
    cluster.add_node(node("node-1", cpu="4"))
    daemon = spawn(proxy)
    names = [f"gone-{i:02d}" for i in range(16)]
    for name in names[:8]:
        cluster.add_pod(pod(name, cpu="500m"))
    # The next pod watch is told its resourceVersion is too old, and so is the first re-list after it.
    gone_watch = proxy.gone_on_watch(PODS_WATCH, times=1)
    gone_list = proxy.gone_on_list(PODS_WATCH, times=1)
    assert proxy.cut_watches(PODS_WATCH) == 1
    for name in names[8:]:
        cluster.add_pod(pod(name, cpu="500m"))

    wait_until(lambda: len(cluster.bound()) == len(names), 60, what="all 16 pods bound")
    assert gone_watch.hits == 1 and gone_list.hits == 1
    assert pod_lists(proxy) == [200, 410, 200]
    assert_each_bound_once(proxy, cluster, names)
    assert re.search(r"pods: watch of /api/v1/pods from resourceVersion \d+ expired .*; re-listing", daemon.log())
    finished_cleanly(daemon)


def test_pod_deleted_while_the_watch_was_down_leaves_the_queue(proxy, cluster, spawn):
    cluster.add_node(node("small", cpu="2"))
    daemon = spawn(proxy)
    cluster.add_pod(pod("stuck", cpu="8"))
    wait_until(lambda: (cluster.condition("stuck") or {}).get("reason") == "Unschedulable", 30,
               what="stuck unschedulable")

    # The daemon loses the API server; meanwhile the pending pod is deleted and another one created.
    proxy.refuse(True)
    proxy.cut_watches()
    cluster.delete_pod("stuck")
    cluster.add_pod(pod("late", cpu="1"))
    # It comes back to a pod watch that has expired, so it must re-list to learn of the deletion.
    gone = proxy.gone_on_watch(PODS_WATCH, times=1)
    proxy.refuse(False)

    wait_until(lambda: cluster.bound().get("late") == "small", 30, what="late bound after the re-list")
    assert gone.hits == 1
    assert pod_lists(proxy) == [200, 200]
    # Room for the deleted pod: had it stayed in the queue, its next retry would fit and be bound.
    cluster.add_node(node("big", cpu="16"))
    cluster.add_pod(pod("probe", cpu="4"))
    wait_until(lambda: cluster.bound().get("probe") == "big", 30, what="probe bound to the new node")
    # The back-off wait that was pending for the deleted pod ends; its re-queue finds nothing to do.
    forgotten = "A pod default/stuck no longer needs scheduling"
    wait_until(lambda: forgotten in daemon.log(), 20, what="the deleted pod's retry dropped")
    time.sleep(1.0)
    after = daemon.log().split(forgotten, 1)[1]
    assert "Attempting to schedule pod: default/stuck" not in after
    assert "unschedulable pod=default/stuck" not in after
    assert binds_of(proxy, "stuck") == []
    assert_each_bound_once(proxy, cluster, ["late", "probe"])
    finished_cleanly(daemon)


def test_pod_recreated_elsewhere_while_the_watch_was_down_is_accounted(proxy, cluster, spawn):
    cluster.add_node(node("node-a", cpu="2"))
    cluster.add_node(node("node-b", cpu="2"))
    # A StatefulSet-style pod, placed by someone else, fills node-a.
    cluster.add_pod(pod("db-0", cpu="2", scheduler="default-scheduler", node_name="node-a"))
    daemon = spawn(proxy)

    # While the daemon cannot watch, db-0 is deleted and re-created under the same name on node-b.
    proxy.refuse(True)
    proxy.cut_watches()
    cluster.delete_pod("db-0")
    cluster.add_pod(pod("db-0", cpu="2", scheduler="default-scheduler", node_name="node-b"))
    proxy.gone_on_watch(PODS_WATCH, times=1)
    proxy.refuse(False)
    wait_until(lambda: len(pod_lists(proxy)) == 2, 30, what="the re-list")

    # node-b is full now, node-a empty: a pod needing a whole node must go to node-a.
    cluster.add_pod(pod("web", cpu="2"))
    wait_until(lambda: cluster.bound().get("web") or cluster.condition("web"), 30, what="web scheduled or failed")
    assert cluster.bound().get("web") == "node-a", cluster.condition("web")
    assert_within_capacity(cluster)
    finished_cleanly(daemon)


# -- 3. a real 410: watch cache off, etcd compacted ---------------------------------------------------
def compact_etcd(server: EnvtestServer) -> int:
    """Compact etcd (physically) at its current revision through the JSON gateway; the revision."""
    revision = server.etcd_request("/kv/range", {"key": "AA=="})["header"]["revision"]
    server.etcd_request("/kv/compaction", {"revision": str(revision), "physical": True})
    return int(revision)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"k8s-{v}")
def test_real_410_after_etcd_compaction_relists(version, tmp_path_factory, spawn):
    server = start_server(version, tmp_path_factory.mktemp(f"envtest-nocache-{version}"),
                          "--apiserver-arg=--watch-cache=false")
    proxy = FaultProxy(server.kubeconfig).start()
    try:
        cluster = Cluster(server.rest())
        # Disconnected, the daemon misses these writes; the compaction then drops the history it would
        # need to resume its watches.
        daemon = disconnect_after_a_first_bind(proxy, cluster, spawn, cpu="1")
        names = [f"after-{i}" for i in range(4)]
        for name in names:
            cluster.add_pod(pod(name, cpu="500m"))
        compact_etcd(server)
        proxy.refuse(False)

        wait_until(lambda: len(cluster.bound()) == 5, 60, what="the pods created while disconnected bound")
        assert_each_bound_once(proxy, cluster, ["before", *names])
        assert re.search(r"pods: watch of /api/v1/pods from resourceVersion \d+ expired", daemon.log())
        assert pod_lists(proxy) == [200, 200]
        finished_cleanly(daemon)
    finally:
        proxy.stop()
        server.stop()


# -- 4. a bind answered 500 ---------------------------------------------------------------------------
def test_bind_rejected_with_500_is_retried_and_bound_once(proxy, cluster, spawn):
    cluster.add_node(node("node-0", cpu="4"))
    flaky = r"/pods/flaky/binding$"
    # flaky's first bind is answered 500; each of its first two binds waits 2 s at the proxy, long
    # enough to see the BindingRejected condition before the retry goes through.
    proxy.delay("POST", flaky, 2.0, times=2)
    proxy.fail("POST", flaky, 500, times=1)
    daemon = spawn(proxy)
    names = ["flaky", "steady-0", "steady-1", "steady-2"]
    for name in names:
        cluster.add_pod(pod(name, cpu="500m"))

    wait_until(lambda: binds_of(proxy, "flaky") == [500], 30, what="flaky's bind answered 500")
    wait_until(lambda: (cluster.condition("flaky") or {}).get("reason") == "BindingRejected", 5,
               what="flaky's BindingRejected condition")
    condition = cluster.condition("flaky")
    assert condition["status"] == "False" and "message" not in condition
    wait_until(lambda: "flaky" in cluster.bound() and 201 in binds_of(proxy, "flaky"), 30,
               what="flaky bound on retry (and the proxy's log of it)")
    assert binds_of(proxy, "flaky") == [500, 201]
    wait_until(lambda: len(cluster.bound()) == len(names), 30, what="all pods bound")
    assert_each_bound_once(proxy, cluster, names)

    rejected = [e for e in cluster.events("FailedScheduling") if e["involvedObject"]["name"] == "flaky"]
    assert len(rejected) == 1 and rejected[0]["type"] == "Warning"
    assert rejected[0]["message"].startswith("Binding rejected: 500 InternalError: ")
    assert "Failed to bind pod: default/flaky" in daemon.log()
    finished_cleanly(daemon)


# -- 5. a real 409: someone else bound the pod first ----------------------------------------------------
def test_bind_conflict_keeps_the_other_binding_and_the_cache_follows(apiserver, proxy, cluster, spawn):
    cluster.add_node(node("node-a", cpu="2"))
    cluster.add_node(node("node-b", cpu="2"))
    cluster.add_node(node("node-c", cpu="1"))
    proxy.delay("POST", r"/pods/victim/binding$", 3.0, times=1)
    daemon = spawn(proxy)
    cluster.add_pod(pod("victim", cpu="2"))

    chosen = wait_until(lambda: re.search(r"Attempting to bind victim to (\S+)", daemon.log()), 30,
                        what="the daemon binding victim").group(1)
    other = {"node-a": "node-b", "node-b": "node-a"}[chosen]
    # While the daemon's bind waits at the proxy, the test binds victim elsewhere, directly.
    cluster.rest.post("/api/v1/namespaces/default/pods/victim/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "victim"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": other}})
    # The loop is not blocked by the bind in flight.
    cluster.add_pod(pod("meanwhile", cpu="1", nodeSelector={"kubernetes.io/hostname": "node-c"}))
    wait_until(lambda: cluster.bound().get("meanwhile") == "node-c", 10, what="meanwhile bound")
    assert binds_of(proxy, "victim") == []  # still held at the proxy

    wait_until(lambda: binds_of(proxy, "victim") == [409], 10, what="the daemon's bind answered 409")
    wait_until(lambda: "pod default/victim was already bound" in daemon.log(), 5, what="the conflict logged")
    assert cluster.bound()["victim"] == other
    # The cache follows the API server: victim fills `other`, so the next two pods go to `chosen`,
    # and a third one fits nowhere.
    for name in ("after-0", "after-1", "after-2"):
        cluster.add_pod(pod(name, cpu="1"))
    wait_until(lambda: len(cluster.bound()) == 4, 30, what="after-0 and after-1 bound")
    wait_until(lambda: (cluster.condition("after-2") or {}).get("reason") == "Unschedulable", 30,
               what="after-2 unschedulable")
    placements = cluster.placements()
    assert placements["victim"] == other and placements["after-2"] == ""
    assert placements["after-0"] == placements["after-1"] == chosen
    assert binds_of(proxy, "victim") == [409] and binds_of(proxy, "after-2") == []
    assert_each_bound_once(proxy, cluster, ["meanwhile", "after-0", "after-1"])
    assert "victim" not in [e["involvedObject"]["name"] for e in cluster.events("Scheduled")]
    assert daemon.healthz()[0] == 200
    finished_cleanly(daemon)


# -- 6. the API server goes away and comes back ---------------------------------------------------------
def test_api_server_restart_loses_no_pod(apiserver, proxy, cluster, spawn):
    cluster.add_node(node("node-0", cpu="4"))
    cluster.add_node(node("node-1", cpu="4"))
    proxy.delay("POST", BINDING, 0.5, times=-1)  # keep some binds in flight when the server stops
    daemon = spawn(proxy)
    before = [f"before-{i}" for i in range(10)]
    for name in before:
        cluster.add_pod(pod(name, cpu="200m"))
    wait_until(lambda: successful_binds(proxy), 10, what="a first bind")

    apiserver.stop(keep_data=True)
    time.sleep(4.0)
    apiserver.start(reuse=True)
    cluster = Cluster(apiserver.rest())
    after = [f"after-{i}" for i in range(5)]
    for name in after:
        cluster.add_pod(pod(name, cpu="200m"))

    # The proxy logs a bind's 201 as it relays it, just after the server stored the binding: wait for both.
    wait_until(lambda: len(cluster.bound()) == 15 and set(after) <= successful_binds(proxy).keys(), 90,
               what="all 15 pods bound after the restart")
    binds = successful_binds(proxy)
    assert {name: n for name, n in binds.items() if n != 1} == {}, "pods bound more than once"
    # A bind the server applied just as it went down may have reached the daemon as a 502; its retry
    # then met a 409. Every pod is bound either way, and the server never accepted two binds.
    assert set(after) <= binds.keys()
    assert_within_capacity(cluster)
    assert daemon.healthz()[0] == 200 and not daemon.exited()
    log = daemon.log()  # the proxy answers 502 while its upstream is down: the probe finds the outage
    assert "unreachable (GET /readyz: 502): scheduling paused" in log
    assert "reachable again after" in log
    finished_cleanly(daemon)


# -- 7. slow binds: the bounded pool, and SIGTERM with binds in flight --------------------------------
def test_slow_binds_run_in_parallel_and_sigterm_settles_them(proxy, cluster, spawn):
    cluster.add_node(node("node-0", cpu="8"))
    cluster.add_node(node("node-1", cpu="8"))
    slow = proxy.delay("POST", BINDING, 1.0, times=-1)
    daemon = spawn(proxy)

    # 20 binds of 1 s each finish well within 20 s: they run side by side.
    first = [f"first-{i:02d}" for i in range(20)]
    started = time.monotonic()
    for name in first:
        cluster.add_pod(pod(name, cpu="100m"))
    wait_until(lambda: len(cluster.bound()) == 20, 30, what="the first 20 pods bound")
    assert time.monotonic() - started < 12
    assert_each_bound_once(proxy, cluster, first)

    # SIGTERM in the middle of a burst of 40, whose binds are held 0.6 s: the binds on the wire have 1.3 s from the
    # signal to finish (lifecycle.SHUTDOWN_BIND_GRACE), the decided ones not yet sent are not sent.
    slow.seconds = 0.6
    burst = [f"burst-{i:02d}" for i in range(40)]
    for name in burst:
        cluster.add_pod(pod(name, cpu="100m"))
    # As soon as the first burst binds are on the wire: 32 binds may be in flight at once, the rest wait.
    wait_until(lambda: "Attempting to bind burst-" in daemon.log(), 20, what="a burst bind sent")
    finished_cleanly(daemon)
    log = daemon.log()
    assert "in-flight binds settled" in log
    assert "in-flight binds did not finish" not in log

    # Every bind the daemon sent completed, and it saw each outcome: no half-done bind.
    sent = [(m, p, s) for m, p, s in proxy.requests if m == "POST" and re.search(BINDING, p)]
    assert {s for _, _, s in sent} == {201}
    bound = cluster.bound()
    for _, path, _ in sent:
        assert re.search(r"/pods/([^/]+)/binding$", path).group(1) in bound
    assert len(re.findall(r"scheduled pod=default/", log)) == len(sent)
    left = [n for n in burst if n not in bound]
    assert left, "the burst finished before SIGTERM: nothing was in the middle"

    second = spawn(proxy, name="daemon-2")
    wait_until(lambda: len(cluster.bound()) == 60, 30, what="the second daemon binding the rest")
    assert_each_bound_once(proxy, cluster, first + burst)
    assert sorted(re.findall(r"scheduled pod=default/(\S+)", second.log())) == sorted(left)
    finished_cleanly(second)


# -- 8. a bind whose outcome is unknown -----------------------------------------------------------------
def test_a_bind_whose_reply_is_lost_keeps_its_room_until_the_server_answers(proxy, cluster, spawn):
    """The server stores first's binding, then the connection drops before the reply. first keeps node-0's
    only cpu until the server settles it (here the watch, showing it bound, usually comes before the read
    back): second, which needs the cpu too, is never bound there, and first is not bound twice (no 409)."""
    cluster.add_node(node("node-0", cpu="1"))
    proxy.drop_reply("POST", r"/pods/first/binding$")
    daemon = spawn(proxy)
    cluster.add_pod(pod("first", cpu="1"))
    wait_until(lambda: binds_of(proxy, "first") == [201], 30, what="first's binding stored, its reply lost")
    cluster.add_pod(pod("second", cpu="1"))
    wait_until(lambda: (cluster.condition("second") or {}).get("reason") == "Unschedulable", 30,
               what="second unschedulable")
    wait_until(lambda: "bind of pod=default/first node=node-0 settled: success" in daemon.log(), 30,
               what="first's bind settled")
    assert "bind of pod=default/first node=node-0: outcome unknown" in daemon.log()
    assert cluster.bound() == {"first": "node-0"}
    assert binds_of(proxy, "first") == [201] and binds_of(proxy, "second") == []
    scheduled = wait_until(lambda: [e["involvedObject"]["name"] for e in cluster.events("Scheduled")], 20,
                           what="the Scheduled event")  # written after the bind settled
    assert scheduled == ["first"]
    assert daemon.metric("scheduler_binding_unknown_outcomes_total") == 1.0
    assert daemon.metric('scheduler_binding_outcomes_total{outcome="success"}') == 1.0
    assert daemon.metric('scheduler_binding_outcomes_total{outcome="conflict"}') == 0.0
    assert_within_capacity(cluster)
    finished_cleanly(daemon)


def test_a_bind_lost_before_it_reached_the_server_is_retried(proxy, cluster, spawn):
    """The connection drops before the binding reaches the server, and the first reads of the pod fail (500):
    the pod stays assumed until a read says not bound; then it is forgotten, re-queued with BindingRejected,
    and bound on its retry."""
    cluster.add_node(node("node-0", cpu="1"))
    proxy.drop_reply("POST", r"/pods/lost/binding$", forward=False)
    unanswered = proxy.fail("GET", r"/namespaces/default/pods/lost$", 500, times=2)
    daemon = spawn(proxy)
    cluster.add_pod(pod("lost", cpu="1"))
    wait_until(lambda: cluster.bound().get("lost") == "node-0" and 201 in binds_of(proxy, "lost"), 30,
               what="lost bound on its retry (and the proxy's log of it)")
    assert binds_of(proxy, "lost") == [0, 201] and unanswered.hits == 2
    log = daemon.log()
    assert "bind of pod=default/lost node=node-0 settled: unbound (read back)" in log
    rejected = [e for e in cluster.events("FailedScheduling") if e["involvedObject"]["name"] == "lost"]
    assert len(rejected) == 1 and rejected[0]["message"].startswith("Binding rejected: POST ")
    assert daemon.metric('scheduler_binding_outcomes_total{outcome="unbound"}') == 1.0
    assert_each_bound_once(proxy, cluster, ["lost"])
    finished_cleanly(daemon)


def test_an_outage_pauses_scheduling_and_the_daemon_resumes_when_the_server_answers(proxy, cluster, spawn):
    """Every request refused (503) for a few seconds: the daemon says once that the server is unreachable,
    sends no bind while it is, and binds the pods created meanwhile once the server answers again."""
    daemon = disconnect_after_a_first_bind(proxy, cluster, spawn, cpu="100m")
    wait_until(lambda: "scheduling paused" in daemon.log(), 10, what="the outage logged")
    assert daemon.metric("scheduler_api_server_reachable") == 0.0
    during = [f"during-{i}" for i in range(5)]
    for name in during:
        cluster.add_pod(pod(name, cpu="100m"))
    time.sleep(2.0)
    proxy.refuse(False)
    wait_until(lambda: len(cluster.bound()) == 6, 30, what="the pods created during the outage bound")
    log = daemon.log()
    assert log.count("scheduling paused") == 1 and log.count("reachable again after") == 1
    assert daemon.metric("scheduler_api_server_reachable") == 1.0
    assert daemon.metric("scheduler_api_server_outages_total") == 1.0
    assert [s for m, p, s in proxy.requests if m == "POST" and re.search(BINDING, p)] == [201] * 6
    assert_each_bound_once(proxy, cluster, ["before", *during])
    finished_cleanly(daemon)


# -- 9. under load: the API server restarted in place, capacity tight ----------------------------------
def test_restart_under_load_with_tight_capacity_overcommits_no_node(apiserver, cluster, tmp_path):
    """SchedulingBasic's tight-capacity fault at CI size: 10 nodes with room for 200 pods, 10 already placed,
    300 pending; the API server is restarted in place just after the first bind. Every room is filled and
    none twice: no node over capacity, no bind refused with 409, every pod still there."""
    for i in range(10):
        cluster.add_node(node(f"node-{i}", cpu="2", pods="110"))
    for i in range(10):
        cluster.add_pod(pod(f"placed-{i}", cpu="100m", node_name=f"node-{i}"))
    pending = [f"pending-{i:03d}" for i in range(300)]
    with ThreadPoolExecutor(8) as creators:
        list(creators.map(lambda name: cluster.add_pod(pod(name, cpu="100m")), pending))
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path).start()
    try:
        wait_until(lambda: "scheduled pod=" in daemon.log(), 60, interval=0.01, what="the first bind")
        apiserver.stop(keep_data=True)
        time.sleep(3.0)
        apiserver.start(reuse=True)
        cluster = Cluster(apiserver.rest())
        wait_until(lambda: len(cluster.bound()) == 200, 120, what="every room filled")
        wait_until(lambda: daemon.log().count("unschedulable pod=") >= 100, 60, what="the rest found unschedulable")
        time.sleep(2.0)  # anything still in flight would land now
        pods = cluster.pods()
        assert len(pods) == 310, "a pod vanished"
        assert len(cluster.bound()) == 200
        assert_within_capacity(cluster)
        assert daemon.metric('scheduler_binding_outcomes_total{outcome="conflict"}') == 0.0
        assert "reachable again after" in daemon.log()
        assert daemon.healthz()[0] == 200 and not daemon.exited()
    finally:
        code = daemon.stop()
    assert code == 0, daemon.log()
    assert "Traceback" not in daemon.log()
