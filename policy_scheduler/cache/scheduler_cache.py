"""The daemon's scheduler cache: ClusterState plus 1.9's pod states (assumed / added) and expiry.

Upstream ``schedulercache/cache.go``: the loop *assumes* a pod onto the chosen node before its bind
is sent, so the next decision already counts it; the watch later confirms it (*added*), or the bind
fails and the pod is *forgotten*, or, if the watch never confirms a finished binding, it *expires*
after the TTL. Messages keep upstream's wording. The clock is injected, so expiry is tested without
sleeping. All methods take ``lock``; the scheduling loop also holds it while the engine runs, so the
engine never sees a half-applied event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..model.node import Node
from ..model.pod import Pod
from .cluster import ClusterState

log = logging.getLogger(__name__)

ASSUMED_POD_TTL = 30.0
CLEANUP_PERIOD = 1.0

# Node status fields a kubelet rewrites on every heartbeat and the engine never reads.
_VOLATILE_NODE_STATUS = frozenset({"conditions", "daemonEndpoints", "nodeInfo", "volumesInUse", "volumesAttached", "addresses"})


class CacheError(Exception):
    """An informer event the cache cannot apply (upstream logs these; so does the daemon)."""


class CacheCorrupted(CacheError):
    """Upstream's fatal ``Schedulercache is corrupted`` case: an added pod seen on another node."""


@dataclass
class _PodState:
    pod: Pod
    assumed: bool
    binding_finished: bool = False
    deadline: float | None = None


def node_fingerprint(raw: dict[str, Any]) -> tuple:
    """What a Node update must change for the engine to care: everything but heartbeat churn.

    Condition timestamps, reasons and messages, node info, addresses and attached volumes change on
    every kubelet heartbeat; a fingerprint leaves them out, so such an update is recognised without
    parsing the node.
    """
    meta = raw.get("metadata") or {}
    status = raw.get("status") or {}
    conditions = tuple((c.get("type"), c.get("status")) for c in status.get("conditions") or () if isinstance(c, dict))
    rest = {k: v for k, v in status.items() if k not in _VOLATILE_NODE_STATUS}
    return (meta.get("labels"), meta.get("annotations"), raw.get("spec"), conditions, rest)


class SchedulerCache:
    def __init__(self, cluster: ClusterState | None = None, *, ttl: float = ASSUMED_POD_TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster if cluster is not None else ClusterState()
        self.ttl = ttl
        self.clock = clock
        self.lock = threading.RLock()
        self._states: dict[str, _PodState] = {}
        self._node_fingerprints: dict[str, tuple] = {}

    # -- assumed pods (the scheduling loop) -----------------------------------------------------
    def assume_pod(self, pod: Pod) -> None:
        """Account ``pod`` (``node_name`` set) on its node before the bind is sent."""
        with self.lock:
            if pod.key in self._states:
                raise CacheError(f"pod {pod.key} state wasn't initial but get assumed")
            self.cluster.add_pod(pod)
            self._states[pod.key] = _PodState(pod, assumed=True)

    def finish_binding(self, pod: Pod) -> None:
        """The bind call returned (either way): from now on the assumed pod may expire.

        Lock-free (bind threads must not wait for the engine): the deadline is set before the flag
        ``cleanup_expired`` checks first, so it never sees a finished binding without a deadline.
        """
        state = self._states.get(pod.key)
        if state is not None and state.assumed:
            state.deadline = self.clock() + self.ttl
            state.binding_finished = True

    def forget_pod(self, pod: Pod) -> None:
        """Undo ``assume_pod`` (the bind failed)."""
        with self.lock:
            state = self._states.get(pod.key)
            if state is not None and state.pod.node_name != pod.node_name:
                raise CacheError(f"pod {pod.key} state was assumed on a different node")
            if state is None or not state.assumed:
                raise CacheError(f"pod {pod.key} state wasn't assumed but get forgotten")
            self.cluster.remove_pod(state.pod)
            del self._states[pod.key]

    def is_assumed(self, key: str) -> bool:
        state = self._states.get(key)
        return state is not None and state.assumed

    def assumed_pod(self, key: str) -> Pod | None:
        state = self._states.get(key)
        return state.pod if state is not None and state.assumed else None

    def cleanup_expired(self) -> list[Pod]:
        """Drop assumed pods whose binding finished more than ``ttl`` ago and that no watch confirmed."""
        now = self.clock()
        expired = []
        with self.lock:
            for key, state in list(self._states.items()):
                if state.assumed and state.binding_finished and state.deadline is not None and now > state.deadline:
                    log.warning("Pod %s expired", state.pod.ref)
                    self.cluster.remove_pod(state.pod)
                    del self._states[key]
                    expired.append(state.pod)
        return expired

    # -- pods the watch reports as assigned -----------------------------------------------------
    def add_pod(self, pod: Pod) -> None:
        with self.lock:
            state = self._states.get(pod.key)
            if state is None:
                self.cluster.add_pod(pod)
                self._states[pod.key] = _PodState(pod, assumed=False)
                return
            if not state.assumed:
                raise CacheError(f"pod was already in added state. Pod key: {pod.key}")
            if state.pod.node_name != pod.node_name:
                log.warning("Pod %s assumed to a different node than added to.", pod.ref)
            elif _same_for_engine(state.pod, pod):  # the usual confirmation: nothing to re-account
                state.pod.adopt(pod)
                self._states[pod.key] = _PodState(state.pod, assumed=False)
                return
            self.cluster.remove_pod(state.pod)
            self.cluster.add_pod(pod)
            self._states[pod.key] = _PodState(pod, assumed=False)

    def update_pod(self, old: Pod, new: Pod) -> None:
        with self.lock:
            state = self._added(new, "updated on", f"pod {new.key} state wasn't added but get updated")
            if _same_for_engine(state.pod, new):
                state.pod.adopt(new)
                return
            self.cluster.remove_pod(state.pod)
            self.cluster.add_pod(new)
            state.pod = new

    def remove_pod(self, pod: Pod) -> None:
        with self.lock:
            state = self._added(pod, "removed from", f"pod state wasn't added but get removed. Pod key: {pod.key}")
            self.cluster.remove_pod(state.pod)
            del self._states[pod.key]

    def _added(self, pod: Pod, verb: str, not_added: str) -> _PodState:
        """The state of an *added* pod on the same node as ``pod``; upstream's errors otherwise."""
        state = self._states.get(pod.key)
        if state is None or state.assumed:
            raise CacheError(not_added)
        if state.pod.node_name != pod.node_name:
            raise CacheCorrupted(
                f"Pod {pod.ref} {verb} a different node than previously added to. "
                "Schedulercache is corrupted and can badly affect scheduling decisions"
            )
        return state

    def pod_keys(self) -> set[str]:
        with self.lock:
            return set(self._states)

    # -- nodes -----------------------------------------------------------------------------------
    def node_changed(self, raw: dict[str, Any]) -> bool:
        """False when ``raw`` differs from the cached node only in heartbeat fields (no parse needed)."""
        name = (raw.get("metadata") or {}).get("name")
        return self._node_fingerprints.get(name) != node_fingerprint(raw)

    def add_node(self, raw: dict[str, Any], node: Node) -> None:
        """Add or update a node (``raw`` is what the API server sent, ``node`` its parsed form)."""
        with self.lock:
            self._node_fingerprints[node.name] = node_fingerprint(raw)
            self.cluster.add_node(node)

    update_node = add_node

    def remove_node(self, name: str) -> None:
        with self.lock:
            self._node_fingerprints.pop(name, None)
            self.cluster.remove_node(name)


def _engine_view(pod: Pod) -> tuple:
    meta = pod.raw.get("metadata") or {}
    # deletionTimestamp: preemption's eligibility rule reads it (a terminating victim on the nominated node).
    return (pod.raw.get("spec"), meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences"),
            meta.get("deletionTimestamp"))


def _same_for_engine(old: Pod, new: Pod) -> bool:
    """A status-only update of a bound pod (container states, IPs): nothing the engine reads changed.

    Under the cluster's rules a bound pod's status can change what it holds on its node (an in-place resize:
    what the kubelet admitted or runs with, ``PodResizePending: Infeasible``); both pods were parsed already, so
    comparing their totals costs nothing on an ordinary status heartbeat."""
    return (_engine_view(old) == _engine_view(new) and old.request == new.request
            and old.nonzero_milli_cpu == new.nonzero_milli_cpu and old.nonzero_memory == new.nonzero_memory)

