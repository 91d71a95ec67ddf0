"""ResourceLimitsPriority (upstream ``TestResourceLimistPriority`` in resource_limits_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import resource_limits_priority_map

from .conftest import container, make_cluster, make_pod, prioritize, resource_node


def _limits_pod(*limits: dict, init: list[dict] | None = None):
    return make_pod(
        containers=[container(limits=lim) for lim in limits],
        init_containers=[container(limits=lim) for lim in init] if init is not None else None,
    )


NO_RESOURCES = make_pod()
CPU_ONLY = _limits_pod({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})
MEM_ONLY = _limits_pod({"cpu": "0", "memory": "2000"}, {"cpu": "0", "memory": "3000"})
CPU_AND_MEMORY = _limits_pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})

TABLE = [
    pytest.param(
        NO_RESOURCES, [(4000, 10000), (4000, 0), (0, 10000), (0, 0)], (0, 0, 0, 0),
        id="0: pod does not specify its resource limits",
    ),
    pytest.param(CPU_ONLY, [(3000, 10000), (2000, 10000)], (1, 0), id="1: pod only specifies cpu limits"),
    pytest.param(MEM_ONLY, [(4000, 4000), (5000, 10000)], (0, 1), id="2: pod only specifies mem limits"),
    pytest.param(CPU_AND_MEMORY, [(4000, 4000), (5000, 10000)], (1, 1), id="3: pod specifies both cpu and mem limits"),
    pytest.param(CPU_AND_MEMORY, [(0, 0)], (0,), id="4: node does not advertise its allocatables"),
]


@pytest.mark.parametrize(("pod", "node_specs", "expected"), TABLE)
def test_resource_limits_priority(pod, node_specs, expected) -> None:
    """Upstream TestResourceLimistPriority (all 5 rows)."""
    nodes = [resource_node(f"machine{i}", cpu, mem) for i, (cpu, mem) in enumerate(node_specs, start=1)]
    cluster = make_cluster(nodes)
    got = prioritize(resource_limits_priority_map, None, pod, None, cluster.node_infos, nodes)
    assert got == [(n.name, s) for n, s in zip(nodes, expected, strict=True)]


def test_init_container_limits_take_the_max() -> None:
    """Limits: regular containers summed (3000m), then max with each init container (5000m) > 4000m."""
    pod = _limits_pod({"cpu": "1000m"}, {"cpu": "2000m"}, init=[{"cpu": "5000m"}])
    info = make_cluster([resource_node("n", 4000, 0)]).node_infos["n"]
    assert resource_limits_priority_map(pod, None, info) == 0
    info = make_cluster([resource_node("n", 5000, 0)]).node_infos["n"]
    assert resource_limits_priority_map(pod, None, info) == 1


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        resource_limits_priority_map(NO_RESOURCES, None, None)
