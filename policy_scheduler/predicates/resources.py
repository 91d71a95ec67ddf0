"""PodFitsResources (upstream ``predicates.PodFitsResources`` and ``GetResourceRequest``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import InsufficientResource
from ..model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, NVIDIA_GPU, PODS, Resource
from .metadata import PredicateMetadata, require_node

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def pod_request(pod: Pod, meta: PredicateMetadata | None) -> Resource:
    """The pod's request: containers summed, then the max with each init container (``GetResourceRequest``)."""
    return meta.pod_request if meta is not None else pod.request


def pod_fits_resources(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Fits iff the node has room for one more pod and for every resource the pod requests."""
    require_node(node_info)
    fails = insufficient_resources(pod_request(pod, meta), node_info.requested, len(node_info.pods), node_info.allocatable)
    return not fails, fails


def insufficient_resources(request: Resource, requested: Resource, pod_count: int, allocatable: Resource) -> list[str]:
    """PodFitsResources' reasons from numbers alone: ``pod_count`` pods requesting ``requested`` on a node with
    ``allocatable``, and one more asking for ``request`` (empty: it fits)."""
    fails: list[str] = []
    if pod_count + 1 > allocatable.allowed_pod_number:
        fails.append(InsufficientResource(PODS, 1, pod_count, allocatable.allowed_pod_number))
    if request.is_zero_request():
        return fails
    fails.extend(_insufficient(request, requested, allocatable))
    return fails


def resources_fit(request: Resource, requested: Resource, pod_count: int, allocatable: Resource) -> bool:
    """PodFitsResources' verdict from numbers alone (preemption's arithmetic): ``pod_count`` pods
    requesting ``requested`` already on a node with ``allocatable``, and one more asking for ``request``."""
    if pod_count + 1 > allocatable.allowed_pod_number:
        return False
    if request.is_zero_request():
        return True
    if (allocatable.milli_cpu < request.milli_cpu + requested.milli_cpu
            or allocatable.memory < request.memory + requested.memory
            or allocatable.nvidia_gpu < request.nvidia_gpu + requested.nvidia_gpu
            or allocatable.ephemeral_storage < request.ephemeral_storage + requested.ephemeral_storage):
        return False
    return all(allocatable.scalar.get(n, 0) >= v + requested.scalar.get(n, 0) for n, v in request.scalar.items())


def _insufficient(request: Resource, requested: Resource, allocatable: Resource) -> list[str]:
    """One reason per resource whose allocatable is strictly less than request + requested."""
    checks = (
        (CPU, request.milli_cpu, requested.milli_cpu, allocatable.milli_cpu),
        (MEMORY, request.memory, requested.memory, allocatable.memory),
        (NVIDIA_GPU, request.nvidia_gpu, requested.nvidia_gpu, allocatable.nvidia_gpu),
        (EPHEMERAL_STORAGE, request.ephemeral_storage, requested.ephemeral_storage, allocatable.ephemeral_storage),
    )
    fails: list[str] = [InsufficientResource(n, want, used, cap) for n, want, used, cap in checks if cap < want + used]
    # Upstream iterates a Go map (unspecified order); ascending name keeps the output deterministic.
    for name in sorted(request.scalar):
        want = request.scalar[name]
        used = requested.scalar.get(name, 0)
        cap = allocatable.scalar.get(name, 0)
        if cap < want + used:
            fails.append(InsufficientResource(name, want, used, cap))
    return fails
