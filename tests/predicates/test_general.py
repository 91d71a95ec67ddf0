"""GeneralPredicates: upstream ``TestRunGeneralPredicates``, every row, plus reason order and errors."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.predicates import general_predicates

from .conftest import (
    NVIDIA_GPU,
    allocatable,
    make_node,
    make_node_info,
    make_pod,
    metadata,
    port_pod,
    resource_pod,
)
from .conftest import resource_list as R


def port_only_pod(*ports: int):
    """``newPodWithPort``: host ports with default protocol and host IP."""
    return make_pod(containers=[{"ports": [{"hostPort": p} for p in ports]}])


NODE = allocatable(10, 20, 0, 32, 0, 0, 0)
GPU_NODE = allocatable(10, 20, 1, 32, 0, 0, 0)

CASES = [
    ("no resources/port/host requested always fits", make_pod(), [resource_pod(R(9, 19))], "machine1", NODE, True, []),
    ("not enough cpu and memory resource", resource_pod(R(8, 10)), [resource_pod(R(5, 19))], "machine1", NODE, False,
     ["Insufficient cpu", "Insufficient memory"]),
    ("no resources/port/host requested always fits on GPU machine", make_pod(), [resource_pod(R(9, 19))], "", GPU_NODE, True, []),
    ("not enough GPU resource", resource_pod(R(3, 1, nvidia_gpu=1)), [resource_pod(R(5, 10, nvidia_gpu=1))], "", GPU_NODE, False,
     [f"Insufficient {NVIDIA_GPU}"]),
    ("enough GPU resource", resource_pod(R(3, 1, nvidia_gpu=1)), [resource_pod(R(5, 10, nvidia_gpu=0))], "", GPU_NODE, True, []),
    ("host not match", make_pod(node_name="machine2"), [], "machine1", NODE, False, ["HostName"]),
    ("hostport conflict", port_only_pod(123), [port_only_pod(123)], "machine1", NODE, False, ["PodFitsHostPorts"]),
]


@pytest.mark.parametrize(("name", "pod", "existing", "node_name", "alloc", "fits", "reasons"), CASES, ids=[c[0] for c in CASES])
def test_run_general_predicates(name, pod, existing, node_name, alloc, fits, reasons) -> None:
    """Upstream TestRunGeneralPredicates."""
    node_info = make_node_info(make_node(node_name, allocatable=alloc), existing)
    assert general_predicates(pod, metadata(pod), node_info) == (fits, reasons)


def test_reasons_concatenate_in_order() -> None:
    """Resources, then host name, host ports and node selector, all reported."""
    pod = make_pod(
        node_name="other",
        nodeSelector={"disk": "ssd"},
        containers=[{"resources": {"requests": {"cpu": "20m"}}, "ports": [{"hostPort": 80}]}],
    )
    node_info = make_node_info(make_node("machine1", allocatable=NODE), [port_only_pod(80)])
    assert general_predicates(pod, None, node_info) == (
        False,
        ["Insufficient cpu", "HostName", "PodFitsHostPorts", "MatchNodeSelector"],
    )


def test_null_node_is_an_error() -> None:
    with pytest.raises(PredicateError, match="^node not found$"):
        general_predicates(make_pod(), None, make_node_info(None, [port_pod("m1", "TCP/0.0.0.0/80")]))
