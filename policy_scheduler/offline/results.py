"""What an offline simulation produces (placements, node usage, the result), and the steps the plain and
the priority simulation share (:mod:`.simulate`, :mod:`.priority`): both import them from here, and
:func:`.simulate.simulate` picks between the two.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cache.cluster import ClusterState
from ..core.explain import Explanation
from ..core.generic_scheduler import GenericScheduler
from ..core.modern_pods import is_gated
from ..model.pod import Pod
from ..predicates.volume_binder import VolumeAction, assume_pod_volumes, decide_pod_volumes, volume_binder_of

# The simulation's logger, as when these lived in simulate.py: their log lines keep their name.
log = logging.getLogger("policy_scheduler.offline.simulate")


SchedulerBuilder = Callable[[ClusterState], GenericScheduler]


@dataclass
class Placement:
    pod: Pod
    node: str | None
    error: str | None
    explanation: Explanation | None = None
    failed: dict[str, list[str]] | None = None  # a FitError's failure reasons per node
    volumes: list[VolumeAction] = field(default_factory=list)  # late-bound claims: the PV bound or provisioned here
    attempts: int = 1  # scheduling attempts (the offline loop re-queues failed pods as ``run`` does)
    placed_at: float | None = None  # virtual seconds from the start when it was bound
    # The cluster's rules, a pod with ResourceClaims: each claim and the devices it holds on the chosen node.
    claims: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class NodeUsage:
    """Requested cpu (millicores), memory (bytes) and pod count against allocatable."""

    name: str
    cpu_allocatable: int
    memory_allocatable: int
    pods_allocatable: int
    cpu_requested: int
    memory_requested: int
    pods: int
    zone: str | None = None
    by_namespace: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # -> (milli cpu, memory, pods)
    workloads: dict[str, int] = field(default_factory=dict)  # "Kind namespace/name" of the controller -> pods

    @classmethod
    def of(cls, cluster: ClusterState) -> dict[str, NodeUsage]:
        out = {}
        for node in cluster.node_list():
            info = cluster.node_infos[node.name]
            usage = out[node.name] = cls(
                node.name,
                info.allocatable.milli_cpu, info.allocatable.memory, info.allocatable.allowed_pod_number,
                info.requested.milli_cpu, info.requested.memory, len(info.pods), node_zone(node.labels),
            )
            for pod in info.pods:
                cpu, memory, pods = usage.by_namespace.get(pod.namespace, (0, 0, 0))
                request = pod.container_request
                usage.by_namespace[pod.namespace] = (cpu + request.milli_cpu, memory + request.memory, pods + 1)
                workload = workload_of(pod)
                if workload:
                    usage.workloads[workload] = usage.workloads.get(workload, 0) + 1
        return out


ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")


def node_zone(labels: dict[str, str]) -> str | None:
    """The node's zone label (1.9's ``failure-domain.beta``, else the GA ``topology`` key), None without one."""
    return next((labels[k] for k in ZONE_LABELS if labels.get(k)), None)


def workload_of(pod: Pod) -> str | None:
    """The pod's controlling owner as ``Kind namespace/name`` (None for a pod without a controller)."""
    ref = pod.controller_ref()
    return f"{ref.kind} {pod.namespace}/{ref.name}" if ref is not None else None


@dataclass
class SimulationResult:
    placements: list[Placement]
    before: dict[str, NodeUsage]
    after: dict[str, NodeUsage]
    cluster: ClusterState = field(repr=False)
    pod_priority: Any = None  # gate PodPriority: the priority.PrioritySimulation (pods' progress, preemptions)
    queue: str = "fifo"  # the scheduling queue's form (policy_scheduler.queue.QUEUE_KINDS)
    gated: list[Pod] = field(default_factory=list)  # pending pods with scheduling gates: never queued

    @property
    def scheduled(self) -> int:
        return sum(1 for p in self.placements if p.node)


def assume_volumes(scheduler: GenericScheduler, pod: Pod, host: str) -> list[VolumeAction]:
    """Under the cluster's rules, the late-bound claims' bindings on ``host``, assumed as ``run`` assumes
    them (a PV taken here is not offered to the next pod; a provisioned claim keeps to its node). The
    simulation never binds: the assumptions stay."""
    binder = volume_binder_of(scheduler.predicates)
    if binder is None:
        return []
    volumes = decide_pod_volumes(binder, pod, host)
    if volumes is None or volumes.empty:
        return []
    assume_pod_volumes(scheduler.cluster, volumes)
    return volumes.actions()


def split_gated(pending: Sequence[Pod]) -> tuple[list[Pod], list[Pod]]:
    """(the pods that are queued, the gated pods that are not), each in queue order (cluster rules)."""
    gated = [p for p in pending if is_gated(p)]
    for pod in gated:
        log.info("gated pod=%s gates=%s", pod.ref, ",".join(pod.scheduling_gates))
    return [p for p in pending if not is_gated(p)], gated
