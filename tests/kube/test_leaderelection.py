"""Leader election against real API servers (1.10 and 1.26): locks, contention, takeover, release, loss."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from policy_scheduler.errors import UserError
from policy_scheduler.kube.client.rest import ApiError
from policy_scheduler.kube.daemon.leaderelection import (
    LEADER_ANNOTATION,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    decode_annotation,
    encode_annotation,
    make_lock,
    validate,
)

# Short durations: a lost leader is replaced after ~3 s; renewals every 0.5 s, given up after 2 s.
FAST = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}
LEASE, RENEW, RETRY = FAST["lease_duration"], FAST["renew_deadline"], FAST["retry_period"]
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
ANNOTATION_KEYS = ["holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaderTransitions"]
LEASE_KEYS = {"holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions"}


def lock_types(version: str) -> tuple[str, ...]:
    return ("endpoints", "configmaps") if version == "1.10" else ("endpoints", "configmaps", "leases")


def object_path(lock_type: str, name: str, namespace: str = "default") -> str:
    if lock_type == "leases":
        return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
    return f"/api/v1/namespaces/{namespace}/{lock_type}/{name}"


def stored_record(rest, lock_type: str, name: str) -> dict:
    """The record as it is stored in the lock object, checked against upstream's exact format."""
    obj = rest.get(object_path(lock_type, name))
    if lock_type == "leases":
        spec = obj["spec"]
        assert set(spec) == LEASE_KEYS, spec
        assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"]), spec
        assert isinstance(spec["leaseDurationSeconds"], int) and isinstance(spec["leaseTransitions"], int)
        return {
            "holderIdentity": spec["holderIdentity"],
            "leaseDurationSeconds": spec["leaseDurationSeconds"],
            "leaderTransitions": spec["leaseTransitions"],
        }
    text = obj["metadata"]["annotations"][LEADER_ANNOTATION]
    record = json.loads(text)
    assert list(record) == ANNOTATION_KEYS, text
    assert RFC3339.match(record["acquireTime"]) and RFC3339.match(record["renewTime"]), text
    assert isinstance(record["leaseDurationSeconds"], int) and isinstance(record["leaderTransitions"], int)
    return record


def wait_until(condition, timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


class Candidate:
    """One elector in its own thread, recording when its callbacks ran (monotonic seconds)."""

    def __init__(self, rest, config: LeaderElectionConfig, identity: str, release_on_stop: bool = True):
        self.identity = identity
        self.started: list[float] = []
        self.stopped: list[float] = []
        self.new_leaders: list[str] = []
        self.stop = threading.Event()
        self.result: bool | None = None
        self.elector = LeaderElector(
            rest, replace(config, identity=identity),
            on_started_leading=lambda: self.started.append(time.monotonic()),
            on_stopped_leading=lambda: self.stopped.append(time.monotonic()),
            on_new_leader=self.new_leaders.append,
            release_on_stop=release_on_stop,
        )
        self.thread = threading.Thread(target=self._run, name=f"elector-{identity}", daemon=True)

    def _run(self) -> None:
        self.result = self.elector.run(self.stop)

    def start(self) -> Candidate:
        self.thread.start()
        return self

    def halt(self) -> float:
        """Set stop and wait for run() to return; the time stop was set."""
        at = time.monotonic()
        self.stop.set()
        self.thread.join(RENEW + 3)
        assert not self.thread.is_alive(), f"{self.identity}: run() did not return after stop"
        return at


class OverlapMonitor:
    """Samples is_leader() of all candidates; counts the samples where more than one claims to lead."""

    def __init__(self, *candidates: Candidate) -> None:
        self.candidates = candidates
        self.overlaps = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(0.01):
            if sum(c.elector.is_leader() for c in self.candidates) > 1:
                self.overlaps += 1

    def finish(self) -> int:
        self.done.set()
        self.thread.join()
        return self.overlaps


def run_parallel(*scenarios) -> None:
    """Run scenario callables concurrently (each on its own lock object); re-raise the first failure."""
    with ThreadPoolExecutor(len(scenarios)) as pool:
        for future in [pool.submit(s) for s in scenarios]:
            future.result()


# -- no server needed ---------------------------------------------------------------------------------


def test_validate_messages():
    validate(LeaderElectionConfig())
    validate(LeaderElectionConfig(**FAST))
    prefix = "^couldn't create leader elector: "
    with pytest.raises(UserError, match=prefix + "leaseDuration must be greater than renewDeadline$"):
        validate(LeaderElectionConfig(lease_duration=10, renew_deadline=10))
    jitter = r"renewDeadline must be greater than retryPeriod\*JitterFactor$"
    with pytest.raises(UserError, match=prefix + jitter):
        validate(LeaderElectionConfig(renew_deadline=2.4, retry_period=2))
    with pytest.raises(UserError, match="retryPeriod must be greater than zero"):
        validate(LeaderElectionConfig(retry_period=0))


def test_make_lock_unknown_type():
    with pytest.raises(UserError, match=r"^couldn't create resource lock: Invalid lock-type leases2$"):
        make_lock(None, LeaderElectionConfig(lock_type="leases2"))  # type: ignore[arg-type]


def test_annotation_format_is_upstreams():
    t0 = datetime(2018, 1, 1, 0, 0, 0, 750000, tzinfo=timezone.utc)
    record = LeaderElectionRecord("host_1", 15, t0, t0, 3)
    assert encode_annotation(record) == (
        '{"holderIdentity":"host_1","leaseDurationSeconds":15,"acquireTime":"2018-01-01T00:00:00Z",'
        '"renewTime":"2018-01-01T00:00:00Z","leaderTransitions":3}'
    )
    # What a Go kube-scheduler writes (offsets allowed by RFC 3339 are read too).
    decoded = decode_annotation(
        '{"holderIdentity":"m1","leaseDurationSeconds":15,"acquireTime":"2018-01-01T01:00:00+01:00",'
        '"renewTime":"2018-01-01T00:00:05Z","leaderTransitions":2}'
    )
    whole = t0.replace(microsecond=0)
    assert decoded == LeaderElectionRecord("m1", 15, whole, whole.replace(second=5), 2)
    assert decode_annotation("{}") == LeaderElectionRecord()


# -- real API servers ---------------------------------------------------------------------------------


def test_locks_on_the_server(apiserver):
    """get/create/update round trips, optimistic concurrency (409), and Leases only where served."""
    rest = apiserver.rest()
    leases = LeaderElectionConfig(lock_type="leases", namespace="default", name="ps-lease", **FAST)
    if apiserver.version == "1.10":
        message = (
            rf"^couldn't create resource lock: the API server at {re.escape(rest.host)} does not serve "
            r"coordination.k8s.io Leases; use --leader-elect-resource-lock=endpoints or configmaps$"
        )
        with pytest.raises(UserError, match=message):
            make_lock(rest, leases)
        with pytest.raises(UserError, match=message):
            LeaderElector(rest, leases, on_started_leading=lambda: None, on_stopped_leading=lambda: None)
    else:
        lock = make_lock(rest, leases)
        assert isinstance(lock, LeaseLock) and lock.version == "v1"

    t0 = datetime.now(timezone.utc).replace(microsecond=123456)
    for lock_type in lock_types(apiserver.version):
        config = LeaderElectionConfig(lock_type=lock_type, namespace="default", name=f"ps-{lock_type}")
        first, second = make_lock(rest, config), make_lock(rest, config)
        assert first.get() == (None, None)
        stored = first.create(LeaderElectionRecord("a", 15, t0, t0, 0))
        precision = t0 if lock_type == "leases" else t0.replace(microsecond=0)
        assert stored == LeaderElectionRecord("a", 15, precision, precision, 0)
        assert stored_record(rest, lock_type, config.name)["holderIdentity"] == "a"
        with pytest.raises(ApiError) as exists:
            second.create(LeaderElectionRecord("b", 15, t0, t0, 0))
        assert exists.value.status == 409
        record, obj = second.get()
        assert record == stored and obj is not None and obj["metadata"]["resourceVersion"]
        # (A PUT that changes nothing would keep the resourceVersion.)
        first.update(replace(stored, renew_time=t0 + timedelta(seconds=2)))
        with pytest.raises(ApiError) as stale:  # second's resourceVersion is out of date
            second.update(replace(stored, holder_identity="b"))
        assert stale.value.conflict
        assert second.get()[0].holder_identity == "a"


def handoff(apiserver, lock_type: str, graceful: bool) -> None:
    """Two candidates at once: exactly one leads; after its stop the other takes over (fast when released)."""
    name = f"ps-{lock_type}-{'graceful' if graceful else 'killed'}"
    config = LeaderElectionConfig(lock_type=lock_type, namespace="default", name=name, **FAST)
    what = f"{lock_type}/{'graceful' if graceful else 'killed'}"
    a = Candidate(apiserver.rest(), config, f"{name}-a", release_on_stop=graceful)
    b = Candidate(apiserver.rest(), config, f"{name}-b", release_on_stop=graceful)
    monitor = OverlapMonitor(a, b)
    a.start(), b.start()
    assert wait_until(lambda: a.elector.is_leader() or b.elector.is_leader(), 5), f"{what}: nobody leads"
    leader, follower = (a, b) if a.elector.is_leader() else (b, a)

    # A live leader keeps the lock well past one lease duration.
    time.sleep(LEASE + 1)
    assert leader.elector.is_leader() and not follower.started, what
    assert follower.elector.leader == leader.identity and leader.identity in follower.new_leaders, what
    record = stored_record(apiserver.rest(), lock_type, name)
    assert record["holderIdentity"] == leader.identity and record["leaseDurationSeconds"] == int(LEASE), what
    assert record["leaderTransitions"] == 0, what

    stopped_at = leader.halt()
    assert leader.result is True and len(leader.started) == len(leader.stopped) == 1, what
    assert wait_until(follower.elector.is_leader, LEASE + 4), f"{what}: no takeover"
    assert wait_until(lambda: follower.started, 1), what
    delay = follower.started[0] - stopped_at
    if graceful:  # released: taken at the follower's next attempt
        assert delay < RETRY * 2.2 + 0.5, f"{what}: takeover after {delay:.2f}s"
    else:  # the lock expires a lease duration after the follower last saw it change; annotation times
        # have whole seconds, so the last change it saw may be up to 1 s older than the last renewal.
        slack = 0.2 if lock_type == "leases" else 1.2
        assert LEASE - RETRY - slack <= delay, f"{what}: takeover after {delay:.2f}s"
        assert delay <= LEASE + RETRY * 2.2 + 1, f"{what}: takeover after {delay:.2f}s"
    record = stored_record(apiserver.rest(), lock_type, name)
    assert record["holderIdentity"] == follower.identity and record["leaderTransitions"] == 1, what

    follower.halt()
    assert follower.result is True and monitor.finish() == 0, what
    if graceful:
        assert stored_record(apiserver.rest(), lock_type, name)["holderIdentity"] == "", what


def test_election_handoff(apiserver):
    run_parallel(*(
        (lambda lock_type=lock_type, graceful=graceful: handoff(apiserver, lock_type, graceful))
        for lock_type in lock_types(apiserver.version) for graceful in (True, False)
    ))


def overwritten(apiserver, lock_type: str) -> None:
    """A third party writes its own identity into the lock: the leader cannot renew and stops leading."""
    name = f"ps-{lock_type}-stolen"
    config = LeaderElectionConfig(lock_type=lock_type, namespace="default", name=name, **FAST)
    candidate = Candidate(apiserver.rest(), config, "victim").start()
    assert wait_until(candidate.elector.is_leader, 5), lock_type
    # A candidate stopped before it acquires the lock returns True without calling back.
    waiter = Candidate(apiserver.rest(), config, "waiter").start()
    assert wait_until(lambda: waiter.elector.leader == "victim", 3), lock_type
    waiter.halt()
    assert waiter.result is True and not waiter.started and not waiter.stopped, lock_type

    rest = apiserver.rest()
    now = datetime.now(timezone.utc)
    intruder = LeaderElectionRecord("intruder", 60, now, now, 1)
    for _ in range(20):  # the leader renews concurrently: retry on a conflict
        obj = rest.get(object_path(lock_type, name))
        if lock_type == "leases":
            obj["spec"] = {"holderIdentity": "intruder", "leaseDurationSeconds": 60, "leaseTransitions": 1,
                           "acquireTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                           "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        else:
            obj["metadata"]["annotations"][LEADER_ANNOTATION] = encode_annotation(intruder)
        try:
            rest.put(object_path(lock_type, name), obj)
            break
        except ApiError as e:
            if not e.conflict:
                raise
    else:
        pytest.fail(f"{lock_type}: could not overwrite the lock")
    overwritten_at = time.monotonic()

    candidate.thread.join(RENEW + RETRY + 3)
    assert not candidate.thread.is_alive(), f"{lock_type}: still leading"
    assert candidate.result is False and len(candidate.stopped) == 1, lock_type
    assert candidate.stopped[0] - overwritten_at <= RENEW + RETRY + 1.5, lock_type
    assert not candidate.elector.is_leader() and candidate.elector.leader == "intruder", lock_type
    assert stored_record(rest, lock_type, name)["holderIdentity"] == "intruder", lock_type


def test_leader_loses_overwritten_lock(apiserver, caplog):
    caplog.set_level(logging.INFO, logger="policy_scheduler.kube.daemon.leaderelection")
    run_parallel(*(
        (lambda lock_type=lock_type: overwritten(apiserver, lock_type))
        for lock_type in lock_types(apiserver.version)
    ))
    for lock_type in lock_types(apiserver.version):
        lock = f"default/ps-{lock_type}-stolen"
        for message in (
            f"attempting to acquire leader lease {lock}...",
            f"successfully acquired lease {lock}",
            f"failed to renew lease {lock} within {RENEW}s: lost master",
        ):
            assert message in caplog.messages, message
