"""The daemon's preemption (``kube/preemption.py``) without an API server: what it decides in memory, the
API calls it makes and their order (1.9's ``scheduler.go`` ``preempt``), and what a failed call stops."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.cache.scheduler_cache import SchedulerCache
from policy_scheduler.core.generic_scheduler import FitError, GenericScheduler
from policy_scheduler.kube.client.rest import MERGE_PATCH, ApiError
from policy_scheduler.kube.daemon.preemption import PDBStore, Preemptor, nomination_patch
from policy_scheduler.kube.metrics import SchedulerMetrics
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.queue import PriorityQueue

NS = "ns"


def raw_pod(name: str, priority: int, cpu: str = "1", node: str = "", annotations: dict | None = None,
            labels: dict | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": {"nodeName": node, "priority": priority, "schedulerName": "s",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec},
            "status": {"phase": "Running" if node else "Pending"}}


class FakeRest:
    """Records PATCH and DELETE calls; ``fail[(method, name)]`` lists the errors the next calls raise."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.fail: dict[tuple[str, str], list[ApiError]] = {}
        self.gate: threading.Event | None = None

    def _call(self, method: str, path: str, body: Any) -> dict:
        if self.gate is not None:
            self.gate.wait(5)
        name = path.split("/pods/")[1].split("/")[0]
        self.calls.append((method, path, body))
        errors = self.fail.get((method, name))
        if errors:
            raise errors.pop(0)
        return {}

    def patch(self, path: str, body: Any, content_type: str = "") -> dict:
        assert content_type == MERGE_PATCH
        return self._call("PATCH", path, body)

    def delete(self, path: str, query: Any = None, body: Any = None) -> dict:
        return self._call("DELETE", path, body)


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def pod_event(self, pod: Pod, type_: str, reason: str, message: str) -> None:
        self.events.append((pod.name, type_, reason, message))


class FakeRequeuer:
    def __init__(self) -> None:
        self.requeued: list[tuple[str, bool, float | None]] = []

    def requeue(self, pod: Pod, unschedulable: bool, delay: float | None = None) -> None:
        self.requeued.append((pod.name, unschedulable, delay))


class Setup:
    def __init__(self, nodes: dict[str, str], bound: list[dict], pending: list[dict], pdbs: list[dict] = ()) -> None:
        self.cache = SchedulerCache()
        for name, cpu in nodes.items():
            raw = {"metadata": {"name": name, "labels": {}},
                   "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
            self.cache.add_node(raw, Node(raw))
        for raw in bound:
            self.cache.add_pod(Pod(raw))
        self.queue = PriorityQueue()
        self.store = {r["metadata"]["name"]: r for r in pending}
        for raw in pending:
            self.queue.add(Pod(raw))
        self.algorithm: GenericScheduler = from_provider("DefaultProvider").build(self.cache.cluster)
        self.algorithm.nominated_pods = self.queue
        self.rest, self.recorder, self.requeuer = FakeRest(), FakeRecorder(), FakeRequeuer()
        self.metrics = SchedulerMetrics()
        self.pdb_store = PDBStore("policy/v1")
        for raw in pdbs:
            self.pdb_store.on_add(raw)
        self.preemptor = Preemptor(
            self.rest, cache=self.cache, queue=self.queue, requeuer=self.requeuer, recorder=self.recorder,
            metrics=self.metrics, lookup=lambda key: self._lookup(key), pdbs=self.pdb_store.list)

    def _lookup(self, key: str) -> Pod | None:
        raw = self.store.get(key.split("/")[1])
        return Pod(raw) if raw is not None else None

    def fail_and_preempt(self, name: str) -> bool:
        """Schedule ``name`` (it must not fit), then preempt for it as the loop does; wait for the worker."""
        pod = Pod(self.store[name])
        with pytest.raises(FitError) as error:
            self.algorithm.schedule(pod)
        deferred = self.preemptor.attempt(pod, error.value, self.algorithm)
        assert self.preemptor.wait(5)
        return deferred

    def attempts(self, result: str) -> float:
        return self.metrics.preemption_attempts.labels(result=result)._value.get()


def status(name: str) -> str:
    return f"/api/v1/namespaces/{NS}/pods/{name}/status"


def pod_path(name: str) -> str:
    return f"/api/v1/namespaces/{NS}/pods/{name}"


def delete_body(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": f"uid-{name}"}}


def full_node() -> Setup:
    """Node "full" (2 cpu) holds low-1 and low-2 (priority 100); "high" (1000) and "waiting" (50,
    nominated to "full") are pending."""
    return Setup({"full": "2"},
                 [raw_pod("low-1", 100, node="full"), raw_pod("low-2", 100, node="full")],
                 [raw_pod("high", 1000), raw_pod("waiting", 50, annotations={"NominatedNodeName": "full"})])


def test_the_api_calls_and_their_order():
    """1.9's order: nominate the preemptor (status subresource, merge patch), delete each victim with its
    default grace period (uid precondition), a Preempted event per victim, clear the lower nomination; the
    preemptor is re-queued only then."""
    s = full_node()
    assert s.queue.node_for(Pod(s.store["waiting"])) == "full"
    assert s.fail_and_preempt("high") is True
    assert s.rest.calls == [
        ("PATCH", status("high"), {"metadata": {"annotations": {"NominatedNodeName": "full"}},
                                   "status": {"nominatedNodeName": "full"}}),
        ("DELETE", pod_path("low-2"), delete_body("low-2")),
        ("PATCH", status("waiting"), {"metadata": {"annotations": {"NominatedNodeName": ""}},
                                      "status": {"nominatedNodeName": None}}),
    ]
    assert s.recorder.events == [("low-2", "Normal", "Preempted", "by ns/high on node full")]
    assert s.requeuer.requeued == [("high", True, None)]
    # In memory at once: high counts on "full", "waiting" no longer does.
    assert [p.name for p in s.queue.nominated_pods_for_node("full")] == ["high"]
    assert s.attempts("nominated") == 1
    assert s.metrics.preemption_victims._value.get() == 1


def test_not_eligible_again_until_the_victims_are_seen_terminating():
    """Retried before the watch shows its victim terminating, the preemptor does not preempt again (no second
    DELETE); once the victim is terminating on its nominated node, 1.9's own rule keeps it waiting."""
    s = full_node()
    s.fail_and_preempt("high")
    calls = len(s.rest.calls)
    assert s.fail_and_preempt("high") is False
    assert len(s.rest.calls) == calls and s.attempts("not_eligible") == 1
    victim = s.cache.cluster.pods["uid-low-2"]
    terminating = {**victim.raw, "metadata": {**victim.raw["metadata"], "deletionTimestamp": "2018-01-01T00:00:00Z"}}
    s.cache.update_pod(victim, Pod(terminating))
    assert s.fail_and_preempt("high") is False
    assert len(s.rest.calls) == calls and s.attempts("not_eligible") == 2


def test_a_retry_while_the_calls_are_in_flight_is_left_to_the_worker():
    s = full_node()
    s.rest.gate = threading.Event()
    pod = Pod(s.store["high"])
    with pytest.raises(FitError) as error:
        s.algorithm.schedule(pod)
    assert s.preemptor.attempt(pod, error.value, s.algorithm) is True
    assert s.preemptor.attempt(pod, error.value, s.algorithm) is True  # deferred: the worker re-queues it
    assert s.attempts("not_eligible") == 1
    s.rest.gate.set()
    assert s.preemptor.wait(5)
    assert [c[0] for c in s.rest.calls] == ["PATCH", "DELETE", "PATCH"]
    assert s.requeuer.requeued == [("high", True, None)]


def test_a_failed_patch_stops_the_preemption_before_any_delete():
    s = full_node()
    s.rest.fail[("PATCH", "high")] = [ApiError(500, "InternalError", "boom")]
    s.fail_and_preempt("high")
    assert [(m, p) for m, p, _ in s.rest.calls] == [("PATCH", status("high"))]
    assert s.recorder.events == []
    assert s.queue.node_for(Pod(s.store["high"])) is None  # the nomination the API server never got
    assert s.requeuer.requeued == [("high", False, 1.0)]  # retried after its back-off


def test_a_failed_delete_stops_the_preemption():
    """The preemptor needs both pods gone; the first DELETE fails: the second victim stays, no event, the
    lower nomination is not cleared (1.9 returns before clearing)."""
    s = Setup({"full": "2"}, [raw_pod("low-1", 100, node="full"), raw_pod("low-2", 100, node="full")],
              [raw_pod("big", 1000, cpu="2"), raw_pod("waiting", 50, annotations={"NominatedNodeName": "full"})])
    s.rest.fail[("DELETE", "low-1")] = [ApiError(403, "Forbidden", "no"), ApiError(403, "Forbidden", "no")]
    s.fail_and_preempt("big")
    assert [(m, p) for m, p, _ in s.rest.calls] == [("PATCH", status("big")), ("DELETE", pod_path("low-1"))]
    assert s.recorder.events == []
    assert s.requeuer.requeued == [("big", False, 1.0)]
    s.requeuer.requeued.clear()
    s.fail_and_preempt("big")  # retried: the next failure waits twice as long
    assert s.requeuer.requeued == [("big", False, 2.0)]


def test_a_victim_already_gone_does_not_stop_the_preemption():
    s = Setup({"full": "2"}, [raw_pod("low-1", 100, node="full"), raw_pod("low-2", 100, node="full")],
              [raw_pod("big", 1000, cpu="2")])
    s.rest.fail[("DELETE", "low-1")] = [ApiError(404, "NotFound", "gone")]
    s.fail_and_preempt("big")
    assert [(m, p) for m, p, _ in s.rest.calls] == [
        ("PATCH", status("big")), ("DELETE", pod_path("low-1")), ("DELETE", pod_path("low-2"))]
    assert s.recorder.events == [("low-2", "Normal", "Preempted", "by ns/big on node full")]
    assert s.requeuer.requeued == [("big", True, None)]


def test_1_10s_spurious_patch_conflicts_are_retried_and_clearing_errors_only_logged(caplog):
    s = full_node()
    s.rest.fail[("PATCH", "high")] = [ApiError(409, "Conflict", "meaningful conflict")]
    s.rest.fail[("PATCH", "waiting")] = [ApiError(500, "InternalError", "boom")]
    s.fail_and_preempt("high")
    assert [(m, p) for m, p, _ in s.rest.calls] == [
        ("PATCH", status("high")), ("PATCH", status("high")), ("DELETE", pod_path("low-2")),
        ("PATCH", status("waiting"))]
    assert s.requeuer.requeued == [("high", True, None)]
    assert "Cannot remove nominated node annotation of pod ns/waiting" in caplog.text


def test_where_preemption_cannot_help_only_an_existing_nomination_is_cleared():
    selector = {"nodeSelector": {"disk": "nvme"}}
    s = Setup({"full": "2"}, [raw_pod("low-1", 100, node="full"), raw_pod("low-2", 100, node="full")],
              [raw_pod("picky", 1000, annotations={"NominatedNodeName": "full"}, **selector),
               raw_pod("plain-picky", 1000, **selector)])
    assert s.fail_and_preempt("picky") is False
    assert s.rest.calls == [("PATCH", status("picky"), nomination_patch(""))]
    assert s.queue.node_for(Pod(s.store["picky"])) is None
    assert s.fail_and_preempt("plain-picky") is False
    assert len(s.rest.calls) == 1 and s.recorder.events == [] and s.requeuer.requeued == []
    assert s.attempts("no_node") == 2


def test_a_disruption_budget_moves_the_preemption_to_the_node_without_violations():
    pdb = {"metadata": {"name": "guard", "namespace": NS},
           "spec": {"selector": {"matchLabels": {"app": "guarded"}}}, "status": {"disruptionsAllowed": 0}}
    s = Setup({"a": "1", "b": "1"},
              [raw_pod("on-a", 100, node="a", labels={"app": "guarded"}), raw_pod("on-b", 200, node="b")],
              [raw_pod("high", 1000)], [pdb])
    s.fail_and_preempt("high")
    assert [(m, p) for m, p, _ in s.rest.calls] == [("PATCH", status("high")), ("DELETE", pod_path("on-b"))]
    s.pdb_store.on_delete(pdb)
    assert s.pdb_store.list() == []


def test_the_preemptor_is_not_preempted_for_once_it_no_longer_waits():
    s = full_node()
    pod = Pod(s.store.pop("high"))  # deleted (or bound) meanwhile: the informer no longer has it pending
    with pytest.raises(FitError) as error:
        s.algorithm.schedule(pod)
    assert s.preemptor.attempt(pod, error.value, s.algorithm) is False
    assert s.rest.calls == [] and s.attempts("not_eligible") == 1
