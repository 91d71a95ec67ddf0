"""Leader election for the scheduler daemon, with client-go's ``tools/leaderelection`` semantics.

Replicas contend for one lock object: a v1 Endpoints or ConfigMap carrying the JSON record in the
``control-plane.alpha.kubernetes.io/leader`` annotation, or a ``coordination.k8s.io`` Lease. The record
formats are exactly upstream's, so a Go kube-scheduler and this one can contend for the same lock.

Rules (as client-go):

* Every write is an optimistic-concurrency update through ``metadata.resourceVersion``; a 409 (or any
  other API error) is a failed attempt, logged and retried on the next period, never raised.
* A non-leader may take over only when the record it observes has not changed for the record's
  ``leaseDurationSeconds``, measured on its *own* clock from the moment it first saw that record. The
  timestamps inside the record are never compared with the local clock (clock-skew tolerance).
* ``leaderTransitions`` increments whenever the holder changes; a leader renewing keeps its
  ``acquireTime`` and the count.
* Releasing (client-go's ``ReleaseOnCancel``) writes the record with an empty holder,
  ``leaseDurationSeconds`` 1 and fresh times, keeping ``leaderTransitions``; any candidate may then take
  over at its next attempt.

The record's ``leaseDurationSeconds`` is ``int(lease_duration)`` (Go truncates the duration to whole
seconds the same way), so sub-second parts of ``--leader-elect-lease-duration`` are dropped.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from ...errors import UserError
from ..client.rest import ApiError, RestClient

log = logging.getLogger(__name__)

LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
LOCK_TYPES = ("endpoints", "configmaps", "leases")
JITTER_FACTOR = 1.2
#: A standby's attempt comes this long after the moment the observed lease expires (not before it).
EXPIRY_MARGIN = 0.05
COORDINATION_GROUP = "coordination.k8s.io"


class LockError(Exception):
    """A lock object exists but cannot be used (undecodable record, update before get/create)."""


# -- configuration ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderElectionConfig:
    """The ``--leader-elect-*`` settings (durations in seconds).

    An empty ``identity`` means :func:`default_identity`: the host name plus ``_`` and a random UUID
    (client-go's kube-scheduler 1.9 used the bare host name; later releases append a UUID so that two
    replicas on one host, or a restarted one, never share an identity).
    """

    lock_type: str = "endpoints"
    namespace: str = "kube-system"
    name: str = "kube-scheduler"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def validate(config: LeaderElectionConfig) -> None:
    """Upstream's ``NewLeaderElector`` checks, in its order, with kube-scheduler's message prefix."""
    problem = None
    if config.lease_duration <= config.renew_deadline:
        problem = "leaseDuration must be greater than renewDeadline"
    elif config.renew_deadline <= JITTER_FACTOR * config.retry_period:
        problem = "renewDeadline must be greater than retryPeriod*JitterFactor"
    elif config.lease_duration <= 0:
        problem = "leaseDuration must be greater than zero"
    elif config.renew_deadline <= 0:
        problem = "renewDeadline must be greater than zero"
    elif config.retry_period <= 0:
        problem = "retryPeriod must be greater than zero"
    if problem:
        raise UserError(f"couldn't create leader elector: {problem}")


# -- the record ---------------------------------------------------------------------------------------


@dataclass
class LeaderElectionRecord:
    """client-go's ``LeaderElectionRecord``; times are aware UTC datetimes (None: Go's zero time)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0


_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)$")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time (``metav1.Time`` or ``MicroTime``) as UTC; null or "" is None (Go's zero time)."""
    if value is None or value == "":
        return None
    match = _TIME.match(value) if isinstance(value, str) else None
    if not match:
        raise LockError(f"invalid RFC 3339 time {value!r}")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    offset = "+00:00" if zone in ("Z", "z") else zone
    text = f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micro:06d}{offset}"
    return datetime.fromisoformat(text).astimezone(timezone.utc)


def format_time(value: datetime | None) -> str | None:
    """``metav1.Time`` JSON: RFC 3339 in UTC with whole seconds ("2018-01-01T00:00:00Z")."""
    return None if value is None else value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(value: datetime | None) -> str | None:
    """``metav1.MicroTime`` JSON: "2006-01-02T15:04:05.000000Z"."""
    return None if value is None else value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _int(value: Any, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise LockError(f"{field}: expected an integer, got {value!r}")
    return int(value)


def encode_annotation(record: LeaderElectionRecord) -> str:
    """The annotation value, byte-for-byte what Go's ``json.Marshal`` writes for the record."""
    return json.dumps(
        {
            "holderIdentity": record.holder_identity,
            "leaseDurationSeconds": record.lease_duration_seconds,
            "acquireTime": format_time(record.acquire_time),
            "renewTime": format_time(record.renew_time),
            "leaderTransitions": record.leader_transitions,
        },
        separators=(",", ":"),
    )


def decode_annotation(text: str) -> LeaderElectionRecord:
    try:
        data = json.loads(text)
    except ValueError as e:
        raise LockError(f"annotation {LEADER_ANNOTATION} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise LockError(f"annotation {LEADER_ANNOTATION} is not a JSON object")
    return _decode_record(data, "", "leaderTransitions")


def encode_lease_spec(record: LeaderElectionRecord) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "acquireTime": format_micro_time(record.acquire_time),
        "renewTime": format_micro_time(record.renew_time),
        "leaseTransitions": record.leader_transitions,
    }
    return {k: v for k, v in spec.items() if v is not None}


def decode_lease_spec(spec: dict[str, Any]) -> LeaderElectionRecord:
    return _decode_record(spec, "spec.", "leaseTransitions")


def _decode_record(data: dict[str, Any], path: str, transitions_key: str) -> LeaderElectionRecord:
    """The annotation's JSON and a Lease's spec hold the same fields (the transition count named apart)."""
    holder = data.get("holderIdentity") or ""
    if not isinstance(holder, str):
        raise LockError(f"{path}holderIdentity: expected a string, got {holder!r}")
    return LeaderElectionRecord(
        holder_identity=holder,
        lease_duration_seconds=_int(data.get("leaseDurationSeconds"), f"{path}leaseDurationSeconds"),
        acquire_time=parse_time(data.get("acquireTime")),
        renew_time=parse_time(data.get("renewTime")),
        leader_transitions=_int(data.get(transitions_key), f"{path}{transitions_key}"),
    )


# -- locks --------------------------------------------------------------------------------------------


class ResourceLock(ABC):
    """One lock object (endpoints, configmaps or leases: the subclasses say where the record lives). ``get`` remembers the object, so ``update`` writes with its resourceVersion.

    ``timeout`` (seconds) bounds one request; None means the RestClient's default.
    """

    kind = ""
    api_version = ""

    def __init__(self, rest: RestClient, namespace: str, name: str) -> None:
        self.rest = rest
        self.namespace = namespace
        self.name = name
        self._object: dict[str, Any] | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    @abstractmethod
    def collection_path(self) -> str:
        """The URL path of the lock kind's collection in the lock's namespace."""

    @property
    def path(self) -> str:
        return f"{self.collection_path}/{self.name}"

    def get(
        self, *, timeout: float | None = None
    ) -> tuple[LeaderElectionRecord | None, dict[str, Any] | None]:
        """``(record, object)``; ``(None, None)`` when the object does not exist.

        An object without a record yields an empty record (any candidate may take it). Raises ApiError for
        other API failures and LockError for a record that cannot be decoded.
        """
        try:
            obj = self.rest.get(self.path, timeout=timeout)
        except ApiError as e:
            if e.not_found:
                self._object = None
                return None, None
            raise
        self._object = obj
        return self._record_of(obj), obj

    def create(self, record: LeaderElectionRecord, *, timeout: float | None = None) -> LeaderElectionRecord:
        """Create the object holding ``record``; the record as stored. Raises ApiError (409: exists)."""
        body = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": {"namespace": self.namespace, "name": self.name},
        }
        self._set_record(body, record)
        obj = self.rest.post(self.collection_path, body, timeout=timeout)
        self._object = obj
        return self._record_of(obj)

    def update(self, record: LeaderElectionRecord, *, timeout: float | None = None) -> LeaderElectionRecord:
        """Replace the record in the object last read or written (a 409 means someone else wrote since)."""
        if self._object is None:
            raise LockError(f"{self.kind} {self.describe()} not initialized, call get or create first")
        body = json.loads(json.dumps(self._object))
        self._set_record(body, record)
        obj = self.rest.put(self.path, body, timeout=timeout)
        self._object = obj
        return self._record_of(obj)

    @abstractmethod
    def _record_of(self, obj: dict[str, Any]) -> LeaderElectionRecord:
        """The leader record an object of this kind holds."""

    @abstractmethod
    def _set_record(self, obj: dict[str, Any], record: LeaderElectionRecord) -> None:
        """Write ``record`` into an object of this kind."""


class _AnnotationLock(ResourceLock):
    resource = ""

    @property
    def collection_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/{self.resource}"

    def _record_of(self, obj: dict[str, Any]) -> LeaderElectionRecord:
        text = ((obj.get("metadata") or {}).get("annotations") or {}).get(LEADER_ANNOTATION)
        return LeaderElectionRecord() if text is None else decode_annotation(text)

    def _set_record(self, obj: dict[str, Any], record: LeaderElectionRecord) -> None:
        metadata = obj.setdefault("metadata", {})
        annotations = metadata.get("annotations") or {}
        metadata["annotations"] = {**annotations, LEADER_ANNOTATION: encode_annotation(record)}


class EndpointsLock(_AnnotationLock):
    kind, api_version, resource = "Endpoints", "v1", "endpoints"


class ConfigMapLock(_AnnotationLock):
    kind, api_version, resource = "ConfigMap", "v1", "configmaps"


class LeaseLock(ResourceLock):
    kind = "Lease"

    def __init__(self, rest: RestClient, namespace: str, name: str, version: str = "v1") -> None:
        super().__init__(rest, namespace, name)
        self.version = version
        self.api_version = f"{COORDINATION_GROUP}/{version}"

    @property
    def collection_path(self) -> str:
        return f"/apis/{COORDINATION_GROUP}/{self.version}/namespaces/{self.namespace}/leases"

    def _record_of(self, obj: dict[str, Any]) -> LeaderElectionRecord:
        return decode_lease_spec(obj.get("spec") or {})

    def _set_record(self, obj: dict[str, Any], record: LeaderElectionRecord) -> None:
        obj["spec"] = encode_lease_spec(record)


def served_lease_version(rest: RestClient) -> str | None:
    """The coordination.k8s.io version to use (v1, else v1beta1), or None when the server has neither.

    Decided through discovery: a 404 on a Lease itself cannot tell "no such Lease" from "no such API".
    """
    try:
        group = rest.get(f"/apis/{COORDINATION_GROUP}")
    except ApiError as e:
        if e.not_found:
            return None
        raise UserError(
            f"couldn't create resource lock: discovering {COORDINATION_GROUP} at {rest.host}: {e}"
        ) from None
    served = {v.get("version") for v in group.get("versions") or () if isinstance(v, dict)}
    return next((v for v in ("v1", "v1beta1") if v in served), None)


def make_lock(rest: RestClient, config: LeaderElectionConfig) -> ResourceLock:
    """The lock named by ``config.lock_type`` (``--leader-elect-resource-lock``)."""
    if config.lock_type == "endpoints":
        return EndpointsLock(rest, config.namespace, config.name)
    if config.lock_type == "configmaps":
        return ConfigMapLock(rest, config.namespace, config.name)
    if config.lock_type == "leases":
        version = served_lease_version(rest)
        if version is None:
            raise UserError(
                f"couldn't create resource lock: the API server at {rest.host} does not serve "
                f"{COORDINATION_GROUP} Leases; use --leader-elect-resource-lock=endpoints or configmaps"
            )
        return LeaseLock(rest, config.namespace, config.name, version)
    raise UserError(f"couldn't create resource lock: Invalid lock-type {config.lock_type}")


# -- the elector --------------------------------------------------------------------------------------


class LeaderElector:
    """client-go's LeaderElector over one :class:`ResourceLock`.

    Callbacks: ``on_started_leading`` runs in a new daemon thread (``leader-elected``) so that it may
    block (the daemon runs its scheduling loop in it); ``on_new_leader(identity)`` runs in a new daemon
    thread whenever the observed holder changes to a non-empty identity (upstream's goroutine);
    ``on_stopped_leading`` runs synchronously in :meth:`run` just before it returns, and only if
    leadership was acquired (after the release, when there is one).

    The constructor validates ``config`` and builds the lock (:func:`make_lock`, unless ``lock`` is
    given), raising UserError as those do.

    ``release_on_stop=False`` leaves the lock held when ``stop`` is set (the record then expires after
    the lease duration), as a crashed leader would. ``clock`` gives the wall time used for
    ``observedTime`` and for the times written into the record.
    """

    def __init__(
        self,
        rest: RestClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        release_on_stop: bool = True,
        lock: ResourceLock | None = None,
    ) -> None:
        validate(config)
        self.config = config
        self.identity = config.identity or default_identity()
        self.lock = lock if lock is not None else make_lock(rest, config)
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.clock = clock
        self.release_on_stop = release_on_stop
        # One request may take at most this long (client-go's NewFromKubeconfig: max(1s, renewDeadline/2)),
        # so that a single hung request cannot cost the lease.
        self.request_timeout = max(1.0, config.renew_deadline / 2)
        #: When set (monotonic seconds), the release on stop must be done by then: the daemon's shutdown bound.
        self.release_by: float | None = None
        self._mutex = threading.Lock()
        self._observed: LeaderElectionRecord | None = None
        self._observed_time = 0.0
        self._reported_leader = ""
        self._leading = False

    # -- public state ---------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True between acquiring the lock and stopping or losing it, while the last record seen is ours."""
        with self._mutex:
            observed = self._observed
            return self._leading and observed is not None and observed.holder_identity == self.identity

    @property
    def leader(self) -> str:
        """The holder identity of the last observed record ("" before any, or after a release)."""
        with self._mutex:
            return self._observed.holder_identity if self._observed else ""

    # -- the loop -------------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> bool:
        """Acquire, lead, renew; blocks until ``stop`` is set or leadership is lost.

        Returns True when ``stop`` ended it (before acquiring, or while leading: the lock is then released
        unless ``release_on_stop`` is False), False when renewal did not succeed within the renew
        deadline (the lock is not released: someone else holds it, or the server is unreachable).
        """
        if not self._acquire(stop):
            return True
        with self._mutex:
            self._leading = True
        threading.Thread(target=self.on_started_leading, name="leader-elected", daemon=True).start()
        lost = self._renew(stop)
        with self._mutex:
            self._leading = False
        if lost:
            log.error("failed to renew lease %s within %ss: lost master",
                      self.lock.describe(), self.config.renew_deadline)
        elif self.release_on_stop:
            self._release()
        self.on_stopped_leading()
        return not lost

    def _acquire(self, stop: threading.Event) -> bool:
        desc = self.lock.describe()
        log.info("attempting to acquire leader lease %s...", desc)
        while not stop.is_set():
            succeeded = self._try_acquire_or_renew(self.request_timeout)
            self._maybe_report_transition()
            if succeeded:
                log.info("successfully acquired lease %s", desc)
                return True
            log.debug("failed to acquire lease %s", desc)
            stop.wait(self._next_attempt_in())
        return False

    def _next_attempt_in(self) -> float:
        """Seconds to the next attempt: one retry period, or less when the lease held by another expires
        sooner, so that a crashed leader is replaced within the lease plus one retry period of its last
        renewal (client-go waits a jittered period, up to 2.2 retry periods, on both sides of the expiry)."""
        wait = self.config.retry_period
        with self._mutex:
            observed, observed_at = self._observed, self._observed_time
        if observed is not None and observed.holder_identity and observed.holder_identity != self.identity:
            expires_in = observed_at + observed.lease_duration_seconds - self.clock()
            wait = min(wait, max(expires_in, 0.0) + EXPIRY_MARGIN)
        return wait

    def _renew(self, stop: threading.Event) -> bool:
        """Renew every retry period until ``stop`` (returns False) or a renew deadline passes (True)."""
        retry = self.config.retry_period
        while not stop.is_set():
            deadline = time.monotonic() + self.config.renew_deadline
            renewed = False
            while not stop.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                if self._try_acquire_or_renew(min(self.request_timeout, remaining)):
                    renewed = True
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or stop.wait(min(retry, remaining)):
                    break
            self._maybe_report_transition()
            if stop.is_set():
                return False
            if not renewed:
                return True
            log.debug("successfully renewed lease %s", self.lock.describe())
            stop.wait(retry)
        return False

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), timezone.utc)

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        with self._mutex:
            self._observed = record
            self._observed_time = self.clock()

    def _try_acquire_or_renew(self, timeout: float) -> bool:
        """One attempt (upstream ``tryAcquireOrRenew``); every failure is logged and reported as False."""
        now = self._now()
        record = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )
        desc = self.lock.describe()
        try:
            old, _ = self.lock.get(timeout=timeout)
        except (ApiError, LockError) as e:
            log.error("error retrieving resource lock %s: %s", desc, e)
            return False
        if old is None:
            try:
                stored = self.lock.create(record, timeout=timeout)
            except (ApiError, LockError) as e:
                log.error("error initially creating leader election record for %s: %s", desc, e)
                return False
            self._set_observed(stored)
            return True

        with self._mutex:
            changed = old != self._observed
        if changed:
            self._set_observed(old)
        with self._mutex:
            held_by_us = old.holder_identity == self.identity
            valid = self._observed_time + old.lease_duration_seconds > self.clock()
        if old.holder_identity and valid and not held_by_us:
            log.debug("lock %s is held by %s and has not yet expired", desc, old.holder_identity)
            return False

        if held_by_us:
            record = replace(record, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions)
        else:
            record = replace(record, leader_transitions=old.leader_transitions + 1)
        try:
            stored = self.lock.update(record, timeout=timeout)
        except (ApiError, LockError) as e:
            if isinstance(e, ApiError) and e.conflict:
                log.info("failed to update lock %s: %s", desc, e)
            else:
                log.error("failed to update lock %s: %s", desc, e)
            return False
        self._set_observed(stored)
        return True

    def _release(self) -> None:
        """Give the lock up (upstream ``ReleaseOnCancel``) if the last record seen is ours."""
        with self._mutex:
            observed = self._observed
        if observed is None or observed.holder_identity != self.identity:
            return
        now = self._now()
        record = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=observed.leader_transitions,
        )
        timeout = self.request_timeout
        if self.release_by is not None:
            timeout = min(timeout, max(0.05, self.release_by - time.monotonic()))
        try:
            stored = self.lock.update(record, timeout=timeout)
        except (ApiError, LockError) as e:
            log.error("failed to release lock %s: %s", self.lock.describe(), e)
            return
        self._set_observed(stored)
        log.info("released lease %s", self.lock.describe())

    def _maybe_report_transition(self) -> None:
        with self._mutex:
            holder = self._observed.holder_identity if self._observed else ""
            if holder == self._reported_leader:
                return
            self._reported_leader = holder
        if not holder:
            return
        log.info("new leader elected: %s (lease %s)", holder, self.lock.describe())
        if self.on_new_leader is not None:
            threading.Thread(
                target=self.on_new_leader, args=(holder,), name="leader-observed", daemon=True
            ).start()
