"""PodFitsResources: upstream ``TestPodFitsResources`` (enoughPodsTests, notEnoughPodsTests,
storagePodsTests), every row, plus the null-node error."""

from __future__ import annotations

import pytest

from policy_scheduler.algorithm import InsufficientResource
from policy_scheduler.errors import PredicateError
from policy_scheduler.predicates import pod_fits_resources

from .conftest import (
    EXTENDED_A,
    EXTENDED_B,
    HUGE_PAGE_A,
    NVIDIA_GPU,
    allocatable,
    make_node,
    make_node_info,
    make_pod,
    metadata,
    resource_pod,
)
from .conftest import resource_list as R


def ext(name: str, n: int, cpu: int = 1, mem: int = 1) -> dict[str, str]:
    return R(cpu, mem, scalar={name: n})


# (test name, pod, existing pod's requests, fits, [(resource, requested, used, capacity)])
ENOUGH_PODS = [
    ("no resources requested always fits", make_pod(), R(10, 20), True, []),
    ("too many resources fails", resource_pod(R(1, 1)), R(10, 20), False, [("cpu", 1, 10, 10), ("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu", resource_pod(R(1, 1), init=[R(3, 1)]), R(8, 19), False, [("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu", resource_pod(R(1, 1), init=[R(3, 1), R(2, 1)]), R(8, 19), False, [("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory", resource_pod(R(1, 1), init=[R(1, 3)]), R(9, 19), False, [("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory", resource_pod(R(1, 1), init=[R(1, 3), R(1, 2)]), R(9, 19), False, [("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum, of containers and init containers", resource_pod(R(1, 1), init=[R(1, 1)]), R(9, 19), True, []),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers", resource_pod(R(1, 1), init=[R(1, 1), R(1, 1)]), R(9, 19), True, []),
    ("both resources fit", resource_pod(R(1, 1)), R(5, 5), True, []),
    ("one resource memory fits", resource_pod(R(2, 1)), R(9, 5), False, [("cpu", 2, 9, 10)]),
    ("one resource cpu fits", resource_pod(R(1, 2)), R(5, 19), False, [("memory", 2, 19, 20)]),
    ("equal edge case", resource_pod(R(5, 1)), R(5, 19), True, []),
    ("equal edge case for init container", resource_pod(R(4, 1), init=[R(5, 1)]), R(5, 19), True, []),
    ("extended resource fits", resource_pod(R(scalar={EXTENDED_A: 1})), R(), True, []),
    ("extended resource fits for init container", resource_pod(R(), init=[R(scalar={EXTENDED_A: 1})]), R(), True, []),
    ("extended resource capacity enforced", resource_pod(ext(EXTENDED_A, 10)), R(0, 0, scalar={EXTENDED_A: 0}), False, [(EXTENDED_A, 10, 0, 5)]),
    ("extended resource capacity enforced for init container", resource_pod(R(), init=[ext(EXTENDED_A, 10)]), R(0, 0, scalar={EXTENDED_A: 0}), False, [(EXTENDED_A, 10, 0, 5)]),
    ("extended resource allocatable enforced", resource_pod(ext(EXTENDED_A, 1)), R(0, 0, scalar={EXTENDED_A: 5}), False, [(EXTENDED_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container", resource_pod(R(), init=[ext(EXTENDED_A, 1)]), R(0, 0, scalar={EXTENDED_A: 5}), False, [(EXTENDED_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers", resource_pod(ext(EXTENDED_A, 3), ext(EXTENDED_A, 3)), R(0, 0, scalar={EXTENDED_A: 2}), False, [(EXTENDED_A, 6, 2, 5)]),
    ("extended resource allocatable admits multiple init containers", resource_pod(R(), init=[ext(EXTENDED_A, 3), ext(EXTENDED_A, 3)]), R(0, 0, scalar={EXTENDED_A: 2}), True, []),
    ("extended resource allocatable enforced for multiple init containers", resource_pod(R(), init=[ext(EXTENDED_A, 6), ext(EXTENDED_A, 3)]), R(0, 0, scalar={EXTENDED_A: 2}), False, [(EXTENDED_A, 6, 2, 5)]),
    ("extended resource allocatable enforced for unknown resource", resource_pod(ext(EXTENDED_B, 1)), R(0, 0), False, [(EXTENDED_B, 1, 0, 0)]),
    ("extended resource allocatable enforced for unknown resource for init container", resource_pod(R(), init=[ext(EXTENDED_B, 1)]), R(0, 0), False, [(EXTENDED_B, 1, 0, 0)]),
    ("hugepages resource capacity enforced", resource_pod(ext(HUGE_PAGE_A, 10)), R(0, 0, scalar={HUGE_PAGE_A: 0}), False, [(HUGE_PAGE_A, 10, 0, 5)]),
    ("hugepages resource capacity enforced for init container", resource_pod(R(), init=[ext(HUGE_PAGE_A, 10)]), R(0, 0, scalar={HUGE_PAGE_A: 0}), False, [(HUGE_PAGE_A, 10, 0, 5)]),
    ("hugepages resource allocatable enforced for multiple containers", resource_pod(ext(HUGE_PAGE_A, 3), ext(HUGE_PAGE_A, 3)), R(0, 0, scalar={HUGE_PAGE_A: 2}), False, [(HUGE_PAGE_A, 6, 2, 5)]),
]

NOT_ENOUGH_PODS = [
    ("even without specified resources predicate fails when there's no space for additional pod", make_pod(), R(10, 20), False, [("pods", 1, 1, 1)]),
    ("even if both resources fit predicate fails when there's no space for additional pod", resource_pod(R(1, 1)), R(5, 5), False, [("pods", 1, 1, 1)]),
    ("even for equal edge case predicate fails when there's no space for additional pod", resource_pod(R(5, 1)), R(5, 19), False, [("pods", 1, 1, 1)]),
    ("even for equal edge case predicate fails when there's no space for additional pod due to init container", resource_pod(R(5, 1), init=[R(5, 1)]), R(5, 19), False, [("pods", 1, 1, 1)]),
]

STORAGE_PODS = [
    ("due to container scratch disk", resource_pod(R(1, 1)), R(10, 10), False, [("cpu", 1, 10, 10)]),
    ("pod fit", resource_pod(R(1, 1)), R(2, 10), True, []),
    ("storage ephemeral local storage request exceeds allocatable", resource_pod(R(ephemeral_storage=25)), R(2, 2), False, [("ephemeral-storage", 25, 0, 20)]),
    ("pod fits", resource_pod(R(ephemeral_storage=10)), R(2, 2), True, []),
]


def _check(pod, existing_requests, node_allocatable, fits, expected) -> None:
    node_info = make_node_info(make_node(allocatable=node_allocatable), [resource_pod(existing_requests)])
    got_fits, reasons = pod_fits_resources(pod, metadata(pod), node_info)
    assert got_fits is fits
    if not fits:
        assert reasons == [f"Insufficient {r}" for r, *_ in expected]
        assert all(isinstance(r, InsufficientResource) for r in reasons)
        assert [(r.resource_name, r.requested, r.used, r.capacity) for r in reasons] == expected
    assert pod_fits_resources(pod, None, node_info) == (got_fits, reasons)


@pytest.mark.parametrize(("name", "pod", "existing", "fits", "expected"), ENOUGH_PODS, ids=[r[0] for r in ENOUGH_PODS])
def test_enough_pods(name, pod, existing, fits, expected) -> None:
    """Upstream TestPodFitsResources, enoughPodsTests (node 10m CPU, 20 memory, 32 pods, 5 example.com/aaa,
    20 ephemeral storage, 5 hugepages-2Mi)."""
    _check(pod, existing, allocatable(10, 20, 0, 32, 5, 20, 5), fits, expected)


@pytest.mark.parametrize(("name", "pod", "existing", "fits", "expected"), NOT_ENOUGH_PODS, ids=[r[0] for r in NOT_ENOUGH_PODS])
def test_not_enough_pods(name, pod, existing, fits, expected) -> None:
    """Upstream TestPodFitsResources, notEnoughPodsTests (node allows 1 pod)."""
    _check(pod, existing, allocatable(10, 20, 0, 1, 0, 0, 0), fits, expected)


@pytest.mark.parametrize(("name", "pod", "existing", "fits", "expected"), STORAGE_PODS, ids=[r[0] for r in STORAGE_PODS])
def test_storage_pods(name, pod, existing, fits, expected) -> None:
    """Upstream TestPodFitsResources, storagePodsTests."""
    _check(pod, existing, allocatable(10, 20, 0, 32, 5, 20, 5), fits, expected)


def test_insufficient_resource_error_text() -> None:
    """``InsufficientResourceError.Error()`` keeps the numbers (logs only)."""
    pod = resource_pod(R(1, 1))
    node_info = make_node_info(make_node(allocatable=allocatable(10, 20, 0, 32, 5, 20, 5)), [resource_pod(R(10, 0))])
    _, reasons = pod_fits_resources(pod, None, node_info)
    assert reasons[0].error() == "Node didn't have enough resource: cpu, requested: 1, used: 10, capacity: 10"


def test_node_without_pods_allocatable_never_fits() -> None:
    """A node reporting no ``pods`` allocatable fits nothing (predicates.md §2.1)."""
    node_info = make_node_info(make_node(allocatable={"cpu": "1", "memory": "1Gi"}))
    assert pod_fits_resources(make_pod(), None, node_info) == (False, ["Insufficient pods"])


def test_gpu_checked() -> None:
    """The legacy NVIDIA GPU resource is checked after cpu and memory."""
    pod = resource_pod(R(1, 1, nvidia_gpu=2))
    node_info = make_node_info(make_node(allocatable=allocatable(10, 20, 1, 32, 0, 0, 0)))
    assert pod_fits_resources(pod, None, node_info) == (False, [f"Insufficient {NVIDIA_GPU}"])


@pytest.mark.parametrize("node_info", [None, make_node_info()], ids=["null NodeInfo", "NodeInfo without node"])
def test_null_node_is_an_error(node_info) -> None:
    with pytest.raises(PredicateError, match="^node not found$"):
        pod_fits_resources(make_pod(), None, node_info)
