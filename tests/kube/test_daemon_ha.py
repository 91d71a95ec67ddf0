"""Two ``policy-scheduler run`` replicas with leader election against real API servers (1.10 and 1.26):
a killed leader is replaced after the lease expires, a SIGTERMed one hands over at once, a leader that
cannot renew stops scheduling and exits 1 -- and every pod is bound exactly once throughout.

Timing (``--leader-elect-lease-duration 4s --leader-elect-renew-deadline 3s --leader-elect-retry-period 1s``):
a standby polls every retry period and takes a crashed leader's lock as the lease it last saw renewed expires:
at most lease + one retry after the leader's last renewal; a released lock (holder "") at its next retry.
"""

from __future__ import annotations

import itertools
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.daemon import Cluster, DaemonProcess, node, pod, wait_until
from benchmarks.harness.envtest import VERSIONS, EnvtestServer
from benchmarks.harness.faultproxy import BINDING, FaultProxy
from benchmarks.harness.leaderlock import (
    LEASE,
    LOCK_NAME,
    LOCK_NAMESPACE,
    RENEW,
    RETRY,
    LockWatcher,
    current_holder,
    lock_collection,
    lock_flags,
)
from policy_scheduler.cache.scheduler_cache import SchedulerCache
from policy_scheduler.kube.client.rest import ApiError, RestClient
from policy_scheduler.kube.daemon.binder import BindOutcome
from policy_scheduler.kube.daemon.scheduler import SchedulingLoop
from policy_scheduler.kube.metrics import SchedulerMetrics
from policy_scheduler.model.pod import Pod
from policy_scheduler.queue import FIFO

from .test_daemon import logged_binds, successful_binds

PODS, POD_INTERVAL = 30, 0.2

# "I 2024-05-01 10:00:00,123 policy_scheduler.kube.daemon.lifecycle] started leading: scheduling"
LOG_LINE = re.compile(r"^([A-Z]) (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\S+)\] (.*)$")
STARTED = "started leading: scheduling"
LOST = "lost master"  # the daemon's own line, logged once the scheduling loop was told to stop


def lock_cases() -> Iterator[Any]:
    """Every lock kind each server serves (no Leases on 1.10: test_leases_lock_on_1_10_is_a_one_line_error)."""
    for version, lock in itertools.product(VERSIONS, ("endpoints", "configmaps", "leases")):
        if (version, lock) != ("1.10", "leases"):
            yield pytest.param(version, lock, id=f"k8s-{version}-{lock}")


def default_lock(version: str) -> str:
    return "endpoints" if version == "1.10" else "leases"


# -- pods, daemons, logs -----------------------------------------------------------------------------


class PodTrickle:
    """Creates ``count`` pods, one every ``interval`` seconds, in a background thread."""

    def __init__(self, rest: RestClient, count: int = PODS, interval: float = POD_INTERVAL) -> None:
        self.cluster = Cluster(rest)
        self.names = [f"ha-{i:02d}" for i in range(count)]
        self.interval = interval
        self.errors: list[Exception] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-trickle", daemon=True)

    def start(self) -> PodTrickle:
        self._thread.start()
        return self

    def _run(self) -> None:
        for name in self.names:
            if self._stopped.is_set():
                return
            try:
                self.cluster.add_pod(pod(name, cpu="100m"))
            except ApiError as e:
                self.errors.append(e)
            self._stopped.wait(self.interval)

    def join(self) -> None:
        self._thread.join(timeout=len(self.names) * self.interval + 30)
        assert not self._thread.is_alive() and not self.errors, self.errors

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)


def entries(daemon: DaemonProcess) -> list[tuple[float, str]]:
    """(wall time, message) of every log line the daemon wrote through logging, oldest first."""
    out = []
    for line in daemon.log().splitlines():
        match = LOG_LINE.match(line)
        if match:
            at = datetime.strptime(match.group(2), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            out.append((at, match.group(4)))
    return out


def logged_at(daemon: DaemonProcess, message: str) -> float | None:
    """When the daemon first logged exactly ``message`` (None if it has not)."""
    return next((at for at, text in entries(daemon) if text == message), None)


def messages(daemon: DaemonProcess, prefix: str, *, after: str | None = None, before: str | None = None) -> list[str]:
    """The daemon's log messages starting with ``prefix``, optionally only those after / before the first
    message starting with ``after`` / ``before`` (none after a line never logged)."""
    texts = [text for _, text in entries(daemon)]

    def first(start: str) -> int | None:
        return next((i for i, text in enumerate(texts) if text.startswith(start)), None)

    start, end = 0, len(texts)
    if after is not None:
        found = first(after)
        start = len(texts) if found is None else found + 1
    if before is not None:
        found = first(before)
        end = len(texts) if found is None else found
    return [t for t in texts[start:end] if t.startswith(prefix)]


def bind_attempts(daemon: DaemonProcess, **where: str) -> set[str]:
    """Pod names the daemon started binding ("Attempting to bind <pod> to <node>", logged before the POST)."""
    return {text.split()[3] for text in messages(daemon, "Attempting to bind ", **where)}


def scheduled(daemon: DaemonProcess) -> set[str]:
    """Pod names the daemon logged as bound ("scheduled pod=<namespace>/<name> node=<node>")."""
    return {text.split()[1].removeprefix("pod=").rsplit("/", 1)[-1] for text in messages(daemon, "scheduled pod=")}


def stop_all(daemons: list[DaemonProcess]) -> list[int]:
    """SIGTERM the daemons still running; their exit codes. Every log file is closed afterwards."""
    codes = [d.stop() for d in daemons if d.process is not None and not d.exited()]
    for d in daemons:
        d.kill()
    return codes


def wait_for_leader(daemons: list[DaemonProcess], timeout: float = 45.0) -> DaemonProcess:
    def leading() -> DaemonProcess | None:
        for d in daemons:
            assert not d.exited(), d.log()
        return next((d for d in daemons if logged_at(d, STARTED) is not None), None)

    return wait_until(leading, timeout, what="a daemon to start leading")


@contextmanager
def ha_setup(apiserver: EnvtestServer, lock: str, tmp_path: Path) -> Iterator[tuple[Cluster, FaultProxy, LockWatcher]]:
    """Nodes, a fault proxy and a lock watcher on a fresh API server; everything stopped afterwards."""
    admin = apiserver.rest()
    # Right after start-up the API server may not have created kube-system yet.
    wait_until(lambda: _exists(admin, f"/api/v1/namespaces/{LOCK_NAMESPACE}"), 30, what="namespace kube-system")
    cluster = Cluster(admin)
    for i in range(3):
        cluster.add_node(node(f"node-{i}", cpu="16", pods="110"))
    proxy = FaultProxy(apiserver.kubeconfig).start()
    watcher = LockWatcher(apiserver.rest(), lock).start()
    try:
        yield cluster, proxy, watcher
    finally:
        watcher.stop()
        proxy.stop()


def _exists(rest: RestClient, path: str) -> bool:
    try:
        rest.get(path)
        return True
    except ApiError:
        return False


def two_replicas(proxy: FaultProxy, lock: str, tmp_path: Path) -> list[DaemonProcess]:
    """Two daemons with leader election on ``lock``, both through the proxy."""
    kubeconfig = proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig")
    return [DaemonProcess(kubeconfig, tmp_path, *lock_flags(lock), name=n, leader_elect=True).start()
            for n in ("replica-a", "replica-b")]


def leader_and_standby(daemons: list[DaemonProcess], cluster: Cluster, lock: str) -> tuple[DaemonProcess, DaemonProcess, str]:
    """Which replica leads, the other, and the holder identity the lock record names."""
    leader = wait_for_leader(daemons)
    standby = next(d for d in daemons if d is not leader)
    holder = wait_until(lambda: current_holder(cluster.rest, lock), 10, what="a holder in the lock record")
    return leader, standby, holder


def assert_bound_once(cluster: Cluster, proxy: FaultProxy, names: list[str]) -> None:
    wait_until(lambda: len(cluster.bound()) == len(names), 60, what=f"all {len(names)} pods bound")
    binds = logged_binds(proxy, names)
    assert sorted(binds) == sorted(names)
    assert set(binds.values()) == {1}, {n: c for n, c in binds.items() if c != 1}


# -- tests -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("apiserver", "lock"), list(lock_cases()), indirect=["apiserver"])
def test_standby_takes_over_from_a_killed_leader(apiserver, lock, tmp_path):
    with ha_setup(apiserver, lock, tmp_path) as (cluster, proxy, watcher):
        daemons = two_replicas(proxy, lock, tmp_path)
        trickle = PodTrickle(apiserver.rest())
        try:
            leader, standby, holder = leader_and_standby(daemons, cluster, lock)
            wait_until(lambda: f"new leader elected: {holder}" in standby.log(), 15, what="the standby to see the leader")
            # Both serve /healthz 200: standing by is healthy, not a failure.
            standby.wait_healthy()
            leader.wait_healthy()
            assert standby.healthz()[0] == 200 and leader.healthz()[0] == 200

            trickle.start()
            wait_until(lambda: len(successful_binds(proxy)) >= 8, 30, what="the leader to bind some pods")
            killed_at = time.time()
            leader.kill()  # SIGKILL: no release, the lock must expire
            bound_by_leader = set(successful_binds(proxy))

            started = wait_until(lambda: logged_at(standby, STARTED), LEASE + 10, what="the standby to take over")
            takeover = started - killed_at
            # Not before the lease could expire (the leader renewed at most ~1 retry before dying), and
            # within the lease plus one retry (the standby saw the last renewal at most a retry late and
            # tries again as it expires) plus slack for starting to lead.
            assert LEASE - RETRY - 1.0 <= takeover <= LEASE + RETRY + 0.5, takeover
            trickle.join()
            assert_bound_once(cluster, proxy, trickle.names)

            # The standby bound nothing before it led; what the proxy saw bound before the kill, the
            # leader had started binding.
            assert not messages(standby, "Attempting to bind ", before=STARTED)
            assert not messages(standby, "scheduled pod=", before=STARTED)
            assert bound_by_leader <= bind_attempts(leader)
            assert not bound_by_leader & bind_attempts(standby)
            assert bind_attempts(standby), "the standby bound none of the pods created after the kill"
            # The record moved from the leader to the standby, with no one else in between.
            holders = watcher.holders()
            assert len(holders) == 2 and holders[0] == holder and holders[1] not in ("", holder), holders
            assert watcher.first_seen(holders[1]) - killed_at <= LEASE + 2.2 * RETRY + 1.0
            assert standby.healthz()[0] == 200
        finally:
            trickle.stop()
            codes = stop_all(daemons)
        assert codes == [0], standby.log()
        assert "Traceback" not in leader.log() + standby.log()


@pytest.mark.parametrize("apiserver", ["1.10"], indirect=True, ids=["k8s-1.10"])
def test_leases_lock_on_1_10_is_a_one_line_error(apiserver, tmp_path):
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, *lock_flags("leases"), leader_elect=True).start()
    assert daemon.process.wait(30) == 1
    text = daemon.log()
    assert "Traceback" not in text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0] == text.strip().splitlines()[-1], text
    assert errors[0].startswith("error: couldn't create resource lock: ")
    assert "coordination.k8s.io" in errors[0]


def test_sigterm_hands_over_at_once(apiserver, tmp_path):
    lock = default_lock(apiserver.version)
    with ha_setup(apiserver, lock, tmp_path) as (cluster, proxy, watcher):
        daemons = two_replicas(proxy, lock, tmp_path)
        trickle = PodTrickle(apiserver.rest())
        try:
            leader, standby, holder = leader_and_standby(daemons, cluster, lock)
            standby.wait_healthy()
            trickle.start()
            wait_until(lambda: len(successful_binds(proxy)) >= 8, 30, what="the leader to bind some pods")
            terminated_at = time.time()
            leader.signal(signal.SIGTERM)
            assert leader.process.wait(15) == 0, leader.log()
            started = wait_until(lambda: logged_at(standby, STARTED), LEASE + 10, what="the standby to take over")
            trickle.join()
            assert_bound_once(cluster, proxy, trickle.names)
        finally:
            trickle.stop()
            codes = stop_all(daemons)
        assert codes == [0], standby.log()

    assert f"released lease {LOCK_NAMESPACE}/{LOCK_NAME}" in leader.log()
    # The record went leader -> "" (released) -> standby (-> "" when the standby was stopped at the end).
    holders = watcher.holders()
    assert holders[:2] == [holder, ""] and holders[2] not in ("", holder) and holders[3:] == [""], holders
    # No waiting for the lease to expire: the standby takes a released lock at its next retry.
    assert watcher.first_seen(holders[2]) - watcher.first_seen("") <= 2.2 * RETRY + 0.5
    assert started - terminated_at < LEASE, started - terminated_at
    assert not messages(standby, "Attempting to bind ", before=STARTED)
    assert not bind_attempts(leader) & bind_attempts(standby)
    assert "Traceback" not in leader.log() + standby.log()


def test_leader_that_cannot_renew_stops_and_exits_1(apiserver, tmp_path):
    """The leader's lock requests fail (its binds still get through); it stops scheduling, exits 1, and the
    standby (straight to the API server, so the proxy log is the old leader's alone) takes over only after."""
    lock = default_lock(apiserver.version)
    with ha_setup(apiserver, lock, tmp_path) as (cluster, proxy, watcher):
        leader = DaemonProcess(proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig"), tmp_path, *lock_flags(lock),
                               name="leader", leader_elect=True)
        standby = DaemonProcess(apiserver.kubeconfig, tmp_path, *lock_flags(lock), name="standby", leader_elect=True)
        trickle = PodTrickle(apiserver.rest())
        try:
            leader.start()
            wait_for_leader([leader])
            standby.start().wait_healthy()
            trickle.start()
            wait_until(lambda: len(successful_binds(proxy)) >= 5, 30, what="the leader to bind some pods")
            partitioned_at = time.time()
            rule = proxy.fail("*", rf"{re.escape(lock_collection(lock))}/{LOCK_NAME}$", 503, times=-1)
            wait_until(lambda: logged_at(leader, LOST), RETRY + RENEW + 5, interval=0.02, what="the leader to give up")
            binds_at_loss = proxy.count("POST", BINDING)
            assert leader.process.wait(15) == 1, leader.log()
            lost_at = logged_at(leader, LOST)
            started = wait_until(lambda: logged_at(standby, STARTED), LEASE + 10, what="the standby to take over")
            trickle.join()
            wait_until(lambda: len(cluster.bound()) == PODS, 60, what=f"all {PODS} pods bound")
        finally:
            trickle.stop()
            codes = stop_all([leader, standby])
        assert codes == [0], standby.log()

    assert rule.hits >= 2
    log_text = leader.log()
    assert "Traceback" not in log_text
    assert logged_at(leader, "shutting down: lost lease") and logged_at(leader, "lost lease"), log_text
    # It gave up once the renew deadline passed, not before.
    assert RENEW - 0.5 <= lost_at - partitioned_at <= RETRY + RENEW + 2.0, lost_at - partitioned_at
    # Once it said "lost master" it started no scheduling attempt (the loop's stop is set before that line),
    # and after its loop ended and in-flight binds finished it bound nothing.
    settled = "in-flight binds settled in "
    assert not messages(leader, "Attempting to schedule pod: ", after=LOST)
    assert not messages(leader, "Attempting to bind ", after=settled)
    # The proxy log is this leader's alone: it saw exactly the binds the leader logged; at most one, decided
    # before the loss and already on its way, reached the server after the test saw "lost master".
    assert proxy.count("POST", BINDING) == len(bind_attempts(leader))
    assert binds_at_loss <= proxy.count("POST", BINDING) <= binds_at_loss + 1
    # No overlap: the standby started leading only after the old leader had stopped.
    assert started > lost_at
    by_leader, by_standby = set(successful_binds(proxy)), scheduled(standby)
    assert not by_leader & by_standby
    assert by_leader | by_standby == set(trickle.names)
    assert not messages(standby, "Attempting to bind ", before=STARTED)


# -- the scheduling loop's stop, without a cluster -----------------------------------------------------


class _Engine:
    extenders: list = []  # no binding extender: the loop binds through the API server's binder

    def schedule(self, pod: Pod) -> str:
        return "node-0"


class _Binder:
    def __init__(self) -> None:
        self.bound: list[str] = []

    def bind(self, pod: Pod, host: str) -> tuple[BindOutcome, None]:
        self.bound.append(pod.name)
        return BindOutcome.SUCCESS, None


class _Quiet:
    """Event recorder and condition updater that write nothing."""

    def pod_event(self, *args: Any) -> None:
        pass

    def update(self, *args: Any) -> None:
        pass


def test_scheduling_loop_decides_nothing_once_stopped():
    """What _stopped_leading relies on: once the loop's stop event is set, no pod is decided or bound.

    The daemon-level race (the lease is lost while the loop waits for the next pod) made deterministic: the
    loop has just bound a pod and waits up to 0.2 s in pop when stop is set and the next pod arrives.
    """
    queue, binder = FIFO(), _Binder()
    quiet = _Quiet()
    loop = SchedulingLoop(cache=SchedulerCache(), queue=queue, algorithm=_Engine, binder=binder,  # type: ignore[arg-type]
                          recorder=quiet, conditions=quiet, requeuer=None, metrics=SchedulerMetrics(),  # type: ignore[arg-type]
                          bind_workers=1)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()
    try:
        queue.add(Pod(pod("before-stop")))
        wait_until(lambda: binder.bound, 5, interval=0.002, what="the first pod bound")
        time.sleep(0.05)  # the loop is back in pop, with ~0.15 s of its 0.2 s wait left
        stop.set()  # what Daemon._stopped_leading does on "lost master"
        queue.add(Pod(pod("after-stop")))
        thread.join(2)
        assert not thread.is_alive()
        assert loop.wait_for_binds(2)
        assert binder.bound == ["before-stop"]
    finally:
        stop.set()
        queue.close()
        loop.shutdown()
