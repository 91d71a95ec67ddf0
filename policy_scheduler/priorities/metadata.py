"""Per-pod priority metadata (upstream ``priorities/metadata.go``: ``PriorityMetadataFactory``,
``priorityMetadata``, ``getSelectors``; ``getNonZeroRequests`` from ``least_requested.go``).

The metadata is computed once per pod per scheduling attempt, before the node loop. Every map function
also accepts ``meta=None`` (or any object that is not a :class:`PriorityMetadata`) and then recomputes
what it needs from the pod, exactly as upstream's ``meta.(*priorityMetadata)`` type check falls back.

This module also holds the one helper the resource priorities (LeastRequested, MostRequested,
BalancedResourceAllocation) share: :func:`resource_inputs`, the non-zero requested amounts (incoming pod +
pods already on the node) against the node's allocatable CPU and memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ..cache.cluster import ListerError
from ..errors import PriorityError
from ..model.labels import Selector, SelectorError, selector_from_set
from ..model.resources import Resource
from ..model.taints import PREFER_NO_SCHEDULE, Toleration

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.affinity import Affinity
    from ..model.node import Node
    from ..model.pod import Pod


@dataclass(frozen=True, slots=True)
class PriorityMetadata:
    """``priorityMetadata``: what the priority functions need from the pod, computed once."""

    # Σ over regular containers of the request, 100m / 200Mi when the cpu / memory key is absent.
    non_zero_request: Resource
    # The pod's tolerations whose effect is empty or PreferNoSchedule.
    pod_tolerations: tuple[Toleration, ...]
    # pod.spec.affinity
    affinity: Affinity | None
    # Selectors of the Services, RCs, ReplicaSets and StatefulSets matching the pod.
    pod_selectors: tuple[Selector, ...]


def prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
    """``getAllTolerationPreferNoSchedule``: tolerations with an empty or PreferNoSchedule effect."""
    return tuple(t for t in pod.tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def get_selectors(pod: Pod, cluster: ClusterState, services_only: bool = False) -> tuple[Selector, ...]:
    """``getSelectors``: selectors of every Service, RC, ReplicaSet and StatefulSet matching ``pod``.

    Lister errors ("no controllers found", "pod has no labels", ...) contribute nothing; a
    ReplicaSet/StatefulSet whose LabelSelector cannot be parsed is skipped. With ``services_only`` the
    controller listers are treated as empty (how ServiceSpreadingPriority is constructed).
    """
    selectors: list[Selector] = []
    try:
        services = cluster.get_pod_services(pod)
    except ListerError:
        services = []
    for svc in services:
        selectors.append(selector_from_set(svc.selector))
    if services_only:
        return tuple(selectors)
    try:
        rcs = cluster.get_pod_controllers(pod)
    except ListerError:
        rcs = []
    for rc in rcs:
        selectors.append(selector_from_set(rc.selector))
    for lister in (cluster.get_pod_replica_sets, cluster.get_pod_stateful_sets):
        try:
            controllers = lister(pod)
        except ListerError:
            continue
        for c in controllers:
            try:
                selectors.append(c.selector.get())
            except SelectorError:
                continue
    return tuple(selectors)


MAX_CACHED_SELECTORS = 4096  # label sets whose selectors are kept at most


class PriorityMetadataFactory:
    """``PriorityMetadataFactory``: produces :class:`PriorityMetadata` from the cluster's listers."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        # The selectors matching a namespace and set of labels (they depend on nothing else of the pod), while
        # the Services and controllers stay as they are: a ReplicaSet's pods look them up once.
        self._selectors: dict[tuple[str, frozenset[tuple[str, str]]], tuple[Selector, ...]] = {}
        self._generation = -1

    def selectors(self, pod: Pod) -> tuple[Selector, ...]:
        """:func:`get_selectors` for ``pod``, cached by namespace and labels."""
        if self._generation != self.cluster.workload_generation or len(self._selectors) >= MAX_CACHED_SELECTORS:
            self._selectors.clear()
            self._generation = self.cluster.workload_generation
        key = (pod.namespace, frozenset(pod.labels.items()))
        selectors = self._selectors.get(key)
        if selectors is None:
            selectors = self._selectors[key] = get_selectors(pod, self.cluster)
        return selectors

    def get_metadata(self, pod: Pod | None, node_infos: Mapping[str, NodeInfo] | None = None) -> PriorityMetadata | None:
        """``PriorityMetadata(pod, nodeNameToInfo)``; None for a None pod. ``node_infos`` is unused."""
        if pod is None:
            return None
        return PriorityMetadata(
            non_zero_request=non_zero_request(pod, None),
            pod_tolerations=prefer_no_schedule_tolerations(pod),
            affinity=pod.affinity,
            pod_selectors=self.selectors(pod),
        )

    __call__ = get_metadata


def non_zero_request(pod: Pod, meta: object) -> Resource:
    """The pod's non-zero request: from the metadata when present, else ``getNonZeroRequests(pod)``."""
    if isinstance(meta, PriorityMetadata):
        return meta.non_zero_request
    return Resource(milli_cpu=pod.nonzero_milli_cpu, memory=pod.nonzero_memory)


def checked_node_info(node_info: NodeInfo | None) -> NodeInfo:
    """``node_info`` itself; ``PriorityError("node not found")`` when it is None or has no node."""
    if node_info is None or node_info.node is None:
        raise PriorityError("node not found")
    return node_info


def node_or_error(node_info: NodeInfo | None) -> Node:
    """The node of ``node_info``; ``PriorityError("node not found")`` when there is none."""
    node = node_info.node if node_info is not None else None
    if node is None:
        raise PriorityError("node not found")
    return node


class ResourceInputs(NamedTuple):
    requested_milli_cpu: int
    requested_memory: int
    allocatable_milli_cpu: int
    allocatable_memory: int


def resource_inputs(pod: Pod, meta: object, node_info: NodeInfo | None) -> ResourceInputs:
    """Requested (pod non-zero request + the node's non-zero requests) and allocatable CPU / memory.

    Shared by LeastRequested, MostRequested and BalancedResourceAllocation. Raises
    ``PriorityError("node not found")`` when the NodeInfo has no node.
    """
    info = checked_node_info(node_info)
    request = non_zero_request(pod, meta)
    return ResourceInputs(
        request.milli_cpu + info.nonzero_milli_cpu,
        request.memory + info.nonzero_memory,
        info.allocatable.milli_cpu,
        info.allocatable.memory,
    )
