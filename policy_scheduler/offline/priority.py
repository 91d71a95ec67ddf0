"""Offline scheduling with the ``PodPriority`` gate on: priority queue, nominations and preemption.

* Priorities: every pod in the snapshot gets the ``spec.priority`` 1.9's Priority admission plugin
  would have given it at creation (:func:`with_pod_priorities`); a pod that already carries one (read
  back from a cluster) keeps it.
* ``simulate`` with the gate runs ``run``'s loop (:mod:`.driver`) with the queue's nominations and
  preemption; :class:`PrioritySimulation` is what it records for the reports.
* :func:`explain_with_priority` explains one pod and, when it does not fit, what preemption would do.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

from ..core.explain import Explanation
from ..core.nominated import NominatedPods, nominated_node_of
from ..errors import ObjectError
from ..model.pod import Pod
from ..model.priority import PriorityClass, admitted_preemption_policy, admitted_priority
from .driver import PodProgress, Preemption
from .results import SchedulerBuilder
from .snapshot import Snapshot

log = logging.getLogger(__name__)


# -- priorities ---------------------------------------------------------------------------------------
def _classes(snapshot: Snapshot) -> tuple[dict[str, PriorityClass], PriorityClass | None]:
    classes: dict[str, PriorityClass] = {}
    default: PriorityClass | None = None
    for pc in snapshot.priority_classes:
        classes[pc.name] = pc
        if pc.global_default:
            if default is not None:
                raise ObjectError(
                    f"PriorityClass {pc.name}", "globalDefault",
                    f"PriorityClass {default.name} is already marked as default. Only one default can exist",
                    snapshot.origins.get(("PriorityClass", "", pc.name)),
                )
            default = pc
    return classes, default


def with_priority(pod: Pod, priority: int, preemption_policy: str | None = None) -> Pod:
    """A copy of ``pod`` whose priority is ``priority`` (and, given, whose preemption policy is
    ``preemption_policy``); the manifest is left as it is."""
    policy = preemption_policy or pod.preemption_policy
    if pod.priority == priority and pod.preemption_policy == policy:
        return pod
    clone = object.__new__(Pod)
    for slot in Pod.__slots__:
        setattr(clone, slot, getattr(pod, slot))
    clone.priority = priority
    clone.preemption_policy = policy
    return clone


def admit(pod: Pod, classes: dict[str, PriorityClass], default: PriorityClass | None, source: str | None) -> Pod:
    """``pod`` with the priority the admission plugin gives it; an unknown class names ``source``."""
    spec = pod.raw.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    try:
        priority = admitted_priority(pod.ref, spec, pod.annotations, classes, default)
    except ObjectError as e:
        if source:
            raise e.with_source(source) from None
        raise
    policy = admitted_preemption_policy(spec, pod.annotations, classes, default)
    return with_priority(pod, pod.priority if priority is None else priority, policy)


def with_pod_priorities(snapshot: Snapshot) -> Snapshot:
    """The snapshot with every pod's priority resolved from its PriorityClass (gate ``PodPriority``)."""
    classes, default = _classes(snapshot)
    pods = [admit(p, classes, default, snapshot.origins.get(("Pod", p.namespace, p.name))) for p in snapshot.pods]
    return dataclasses.replace(snapshot, pods=pods)


def admit_pod(snapshot: Snapshot, pod: Pod, source: str | None = None) -> Pod:
    """One pod (e.g. ``explain``'s manifest file) admitted against the snapshot's classes."""
    classes, default = _classes(snapshot)
    return admit(pod, classes, default, source or snapshot.origins.get(("Pod", pod.namespace, pod.name)))


# -- what the simulation records ------------------------------------------------------------------------
@dataclass
class PrioritySimulation:
    """Gate on: each pending pod's progress (by ref), every preemption, and why the loop stopped early."""

    pods: dict[str, PodProgress] = field(default_factory=dict)
    preemptions: list[Preemption] = field(default_factory=list)
    stopped: str | None = None


# -- explain ----------------------------------------------------------------------------------------------
def explain_with_priority(snapshot: Snapshot, pod: Pod, build: SchedulerBuilder, source: str | None = None) -> Explanation:
    """``explain`` with the gate on: the snapshot's nominations count, and an unschedulable pod gets the
    preemption 1.9 would attempt. ``source`` names the pod's manifest when it is not in the snapshot."""
    snapshot = with_pod_priorities(snapshot)
    target = admit_pod(snapshot, pod, source)
    cluster = snapshot.cluster_state()
    if target.key in cluster.pods:
        cluster.remove_pod(cluster.pods[target.key])
    scheduler = build(cluster)
    scheduler.nominated_pods = nominated = NominatedPods()
    for p in snapshot.pending_pods(target.scheduler_name):
        node = nominated_node_of(p)
        if node and p.key != target.key:
            nominated.nominate(p, node)
    explanation = scheduler.explain(target)
    explanation.node_name = target.node_name
    if explanation.fit_error is not None and not target.node_name:
        explanation.preemption = scheduler.preempt(target, explanation.fit_error, snapshot.pod_disruption_budgets)
        if explanation.preemption.post_filter_message:
            explanation.preemption.annotate(explanation.fit_error)
            explanation.error = str(explanation.fit_error)
    return explanation
