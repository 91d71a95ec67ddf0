"""The ``PodScheduled`` condition's ``observedGeneration`` (gate ``PodObservedGenerationTracking``: beta and on in
1.34, GA in 1.35): from 1.34 on, the scheduler writes the pod's ``metadata.generation`` on the condition it sets
(upstream's ``handleSchedulingFailure`` with ``CalculatePodConditionObservedGeneration``); as upstream's
``UpdatePodCondition``, the generation alone moving writes nothing. Side by side with upstream's kube-scheduler of the same line
(``tests/kube/side_by_side.py``): on 1.36 both write 1 for a pod created unschedulable, and 3 for a gated pod whose
two gates were removed one by one (each removal is a spec update); on 1.32 neither writes the field."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.harness.daemon import LoggedProcess
from benchmarks.harness.envtest import EnvtestServer
from policy_scheduler.kube.client.rest import MERGE_PATCH

from .side_by_side import (  # noqa: F401 - the *_fixture names: for pytest to find
    Pool,
    cluster_fixture,
    expect,
    expect_pending,
    pool_class_fixture,
    pools_fixture,
    schedulers,
)

#: A line before the field and one after it.
OBSERVED_LINES = {"1.32": False, "1.36": True}


@pytest.fixture(params=OBSERVED_LINES, ids=lambda v: f"k8s-{v}")
def server(request, envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased(request.param) as s:
        yield s


def set_gates(pool: Pool, suffix: str, *gates: str) -> None:
    """What a controller does to let a gated pod go: its gates removed (the API server allows only removals)."""
    pool.cluster.rest.patch(f"/api/v1/namespaces/default/pods/{pool.n(suffix)}",
                            {"spec": {"schedulingGates": [{"name": g} for g in gates] or None}},
                            content_type=MERGE_PATCH)


def unschedulable_condition(pool: Pool, suffix: str, generation: int | None, process: LoggedProcess) -> dict:
    """The pod's PodScheduled condition once the scheduler has written it (Unschedulable), and, given a
    ``generation``, once the pod is at that generation and the condition says no other."""
    def written() -> dict | None:
        current = pool.get(suffix) or {}
        condition = next((c for c in (current.get("status") or {}).get("conditions") or ()
                          if c.get("type") == "PodScheduled"), None)
        if not condition or condition.get("reason") != "Unschedulable":
            return None
        if generation is not None and ((current.get("metadata") or {}).get("generation") != generation
                                       or condition.get("observedGeneration", generation) != generation):
            return None
        return condition
    return expect(written, f"{pool.n(suffix)}'s Unschedulable condition at generation {generation}", process)


def test_the_condition_carries_the_generation_it_was_written_for(server, pools, tmp_path):
    observed = OBSERVED_LINES[server.version]
    for pool in pools.values():
        pool.add_node("n")
        pool.add_pod("big", cpu="8")
        pool.add_pod("gated", cpu="8", schedulingGates=[{"name": "example.com/a"}, {"name": "example.com/b"}])
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            expect_pending(pool, "big", procs[name])
            condition = unschedulable_condition(pool, "big", 1 if observed else None, procs[name])
            assert ("observedGeneration" in condition) is observed, (name, condition)
            if observed:
                assert condition["observedGeneration"] == 1, (name, condition)
            gated = pool.get("gated")
            assert gated["spec"]["schedulingGates"] and not gated["spec"].get("nodeName")
            set_gates(pool, "gated", "example.com/b")
            set_gates(pool, "gated")
        for name, pool in pools.items():
            expect_pending(pool, "gated", procs[name])
            condition = unschedulable_condition(pool, "gated", 3 if observed else None, procs[name])
            assert condition.get("observedGeneration") == (3 if observed else None), (name, condition)
