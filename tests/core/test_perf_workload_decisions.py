"""The engine's decisions on upstream's scheduler_perf workloads (``benchmarks/perf_workloads.py``), pinned.

Each workload runs offline as ``policy-scheduler simulate`` runs it (the DefaultProvider, the cluster's
rules, the default queue; ``PodPriority=true`` for PreemptionBasic) on a small instance that keeps its
character. Its outcome (every pod's host or failure, with PodPriority every preemption, victim and
nomination) must be the same on the vectorised path and on the per-node reference path, and a placement
hash of it is pinned; the workloads whose code paths are being optimised are pinned at a larger size too.

PreemptionBasic runs in two steps, as upstream's does (its init pods are bound before the measured pods
are created): with every pod pending at once the priority queue would pop the high-priority pods first,
onto empty nodes, and nothing would be preempted. So its init pods are simulated first, written back bound
(``simulate --write-placements``), and the high-priority pods simulated against them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from benchmarks.perf_workloads import HIGH_PRIORITY, HOSTNAME_KEY, WORKLOADS, ZONE_KEY, Workload
from benchmarks.placement_hash import placement_hash
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.features import FeatureGates
from policy_scheduler.model.openapi import OpenAPIValidator, resolve_version
from policy_scheduler.offline.results import SimulationResult
from policy_scheduler.offline.simulate import placements_as_pods, simulate
from policy_scheduler.offline.snapshot import Checks, load_objects
from policy_scheduler.registry import DEFAULT_PROVIDER

SCHEDULER_NAME = "default-scheduler"
SOURCE = from_provider(DEFAULT_PROVIDER)

# (nodes, init pods, measured pods), upstream's ratios scaled down.
SMALL: dict[str, tuple[int, int, int]] = {
    "SchedulingBasic": (16, 16, 32),
    "SchedulingPodAntiAffinity": (16, 4, 16),  # 20 pods that each want a node of their own: 4 stay pending
    "SchedulingNodeAffinity": (16, 16, 32),
    "SchedulingPodAffinity": (16, 16, 32),
    "SchedulingPreferredPodAffinity": (16, 16, 32),
    "SchedulingPreferredPodAntiAffinity": (16, 16, 32),
    "TopologySpreading": (24, 48, 48),  # zones of 10, 8 and 6 nodes: spread per node would skew by 8
    "PreferredTopologySpreading": (24, 48, 48),
    "PreemptionBasic": (12, 48, 12),  # 4 low-priority pods fill each node; each high-priority pod preempts
    "Unschedulable": (16, 6, 32),
}
# The code paths being optimised (inter-pod affinity, preemption), at upstream's ratios: vectorised only.
LARGE: dict[str, tuple[int, int, int]] = {
    "SchedulingPodAntiAffinity": (200, 40, 160),
    "SchedulingPodAffinity": (200, 200, 400),
    "SchedulingPreferredPodAffinity": (200, 200, 400),
    "SchedulingPreferredPodAntiAffinity": (200, 200, 400),
    "PreemptionBasic": (200, 800, 200),
}

# Today's decisions, which are 1.9's: FNV-1a 64 (benchmarks/placement_hash.py) over ``<pod>=<host>\n`` per
# pending pod in the order simulate reports them (PreemptionBasic: the init pods, then the measured pods),
# then for PreemptionBasic ``<preemptor>><victim>=<node>\n`` per victim, in the order of the preemptions.
# A change of any of these hashes means a decision changed. (SchedulingBasic, SchedulingNodeAffinity and
# SchedulingPodAffinity share one: every node is in zone1, so their terms admit every node and all three
# spread the same pod names evenly in the same way.)
SMALL_HASHES = {
    "SchedulingBasic": "6e9f707b1d86788d",
    "SchedulingPodAntiAffinity": "c35aebdab2d6f665",
    "SchedulingNodeAffinity": "6e9f707b1d86788d",
    "SchedulingPodAffinity": "6e9f707b1d86788d",
    "SchedulingPreferredPodAffinity": "1dd7fcd9e585f4a3",
    "SchedulingPreferredPodAntiAffinity": "f854f7330fc61707",
    "TopologySpreading": "007adec2c11d1974",
    "PreferredTopologySpreading": "f1a7dfe6cff5736f",
    "PreemptionBasic": "77c17f2004243b01",
    "Unschedulable": "bd55eb23ce19e0ea",
}
LARGE_HASHES = {
    "SchedulingPodAntiAffinity": "5c84eece4d7b9d65",
    "SchedulingPodAffinity": "7bb6c112ce5d5e0d",
    "SchedulingPreferredPodAffinity": "8dd61cecabec8959",
    "SchedulingPreferredPodAntiAffinity": "224177ea1933f2fb",
    "PreemptionBasic": "1349ba451294b6f7",
}


def _snapshot(objects: list[dict[str, Any]]):
    """The objects loaded as ``simulate`` loads manifests (OpenAPI and the API server's checks)."""
    snapshot = load_objects(objects, "scheduler_perf", Checks(OpenAPIValidator(resolve_version(None))))
    assert snapshot.warnings == []
    return snapshot


def _builder(workload: Workload, vectorized: bool) -> tuple[Callable, bool]:
    gates = FeatureGates.parse(workload.feature_gates)
    return (lambda cluster: SOURCE.build(cluster, feature_gates=gates, vectorized=vectorized)), gates.enabled("PodPriority")


@cache
def run(name: str, size: tuple[int, int, int], vectorized: bool) -> tuple[SimulationResult, ...]:
    """The workload's simulation(s): one, or for PreemptionBasic the init pods' then the measured pods'."""
    workload = WORKLOADS[name]
    nodes, init, measured = size
    build, pod_priority = _builder(workload, vectorized)
    if name != "PreemptionBasic":
        snapshot = _snapshot(workload.snapshot_objects(nodes, init, measured, SCHEDULER_NAME))
        return (simulate(snapshot, build, scheduler_name=SCHEDULER_NAME, pod_priority=pod_priority),)
    node_objects = workload.nodes(nodes)
    first = simulate(_snapshot(node_objects + workload.init_pods(init, SCHEDULER_NAME, literal_priority=True)),
                     build, scheduler_name=SCHEDULER_NAME, pod_priority=pod_priority)
    bound = placements_as_pods(first.placements)
    assert len(bound) == init, "every init pod must be bound before the measured pods come"
    snapshot = _snapshot(node_objects + bound + workload.measured_pods(measured, SCHEDULER_NAME, literal_priority=True))
    return first, simulate(snapshot, build, scheduler_name=SCHEDULER_NAME, pod_priority=pod_priority)


def _preemption_result(result) -> Any:
    if result is None:
        return None
    nodes = {n: (o.outcome, [str(r) for r in o.reasons], o.detail,
                 None if o.victims is None else ([p.key for p in o.victims.pods], o.victims.num_pdb_violations))
             for n, o in result.nodes.items()}
    return (result.node, [p.key for p in result.victims], [p.key for p in result.nominated_pods_to_clear],
            result.num_pdb_violations, sorted(result.violated_pdbs), result.eligible, result.message,
            result.post_filter_message, nodes)


def outcome(result: SimulationResult) -> Any:
    """Everything the simulation decided, in comparable form."""
    pods = [(p.pod.key, p.node, p.error, p.attempts, p.placed_at,
             None if p.failed is None else {n: [str(r) for r in rs] for n, rs in p.failed.items()})
            for p in result.placements]
    sim = result.pod_priority
    if sim is None:
        return pods
    progress = {ref: (s.priority, s.attempts, s.nominated_node, s.preempted_by, s.preemption, s.placed_at,
                      _preemption_result(s.last_result)) for ref, s in sim.pods.items()}
    preemptions = [(p.preemptor.key, p.node, [(v.pod.key, v.node, v.simulated, v.pdb) for v in p.victims],
                    p.pdb_violations, [c.key for c in p.nominations_cleared]) for p in sim.preemptions]
    return pods, progress, preemptions, sim.stopped


def decisions_hash(results: tuple[SimulationResult, ...]) -> str:
    pairs: list[tuple[str, str | None]] = [(p.pod.name, p.node) for r in results for p in r.placements]
    for r in results:
        if r.pod_priority is not None:
            pairs += [(f"{p.preemptor.name}>{v.pod.name}", v.node) for p in r.pod_priority.preemptions for v in p.victims]
    return placement_hash(pairs)


def test_every_workload_has_an_instance():
    assert set(SMALL) == set(SMALL_HASHES) == set(WORKLOADS)
    assert set(LARGE) == set(LARGE_HASHES)


@pytest.mark.parametrize("name", list(SMALL))
def test_vectorized_path_decides_as_the_reference(name):
    fast, reference = run(name, SMALL[name], True), run(name, SMALL[name], False)
    assert len(fast) == len(reference)
    for a, b in zip(fast, reference):
        assert outcome(a) == outcome(b)


@pytest.mark.parametrize("name", list(SMALL))
def test_small_instance_decisions_are_pinned(name):
    assert decisions_hash(run(name, SMALL[name], True)) == SMALL_HASHES[name]


@pytest.mark.parametrize("name", list(LARGE))
def test_large_instance_decisions_are_pinned(name):
    assert decisions_hash(run(name, LARGE[name], True)) == LARGE_HASHES[name]


# -- what makes the pins meaningful: each small instance does what its workload is about ----------------
def small(name: str) -> SimulationResult:
    return run(name, SMALL[name], True)[-1]


def hosts(result: SimulationResult, prefix: str = "") -> Counter[str]:
    """Pods per node, of the placed pods whose name starts with ``prefix``."""
    return Counter(p.node for p in result.placements if p.node is not None and p.pod.name.startswith(prefix))


def node_labels(result: SimulationResult, key: str) -> dict[str, str | None]:
    return {node.name: node.labels.get(key) for node in result.cluster.node_list()}


def test_scheduling_basic_spreads_every_pod_evenly():
    nodes, init, measured = SMALL["SchedulingBasic"]
    result = small("SchedulingBasic")
    assert result.scheduled == init + measured
    assert set(hosts(result).values()) == {(init + measured) // nodes}


def test_pod_anti_affinity_never_colocates_and_the_surplus_stays_pending():
    nodes, init, measured = SMALL["SchedulingPodAntiAffinity"]
    result = small("SchedulingPodAntiAffinity")
    hostname = node_labels(result, HOSTNAME_KEY)
    assert Counter(hostname[n] for n in hosts(result).elements()).most_common(1)[0][1] == 1
    assert result.scheduled == nodes
    failed = [p for p in result.placements if p.node is None]
    assert [p.pod.name for p in failed] == [f"pod-{i:06d}" for i in range(nodes - init, measured)]
    assert {p.error for p in failed} == {
        f"0/{nodes} nodes are available: {nodes} ExistingPodsAntiAffinityRulesNotMatch, {nodes} MatchInterPodAffinity."}


def test_node_affinity_places_every_pod_in_its_zones():
    nodes, init, measured = SMALL["SchedulingNodeAffinity"]
    result = small("SchedulingNodeAffinity")
    zone = node_labels(result, ZONE_KEY)
    assert result.scheduled == init + measured
    assert {zone[n] for n in hosts(result)} <= {"zone1", "zone2"}


def test_required_pod_affinity_places_every_pod_in_zone1():
    nodes, init, measured = SMALL["SchedulingPodAffinity"]
    result = small("SchedulingPodAffinity")
    zone = node_labels(result, ZONE_KEY)
    assert result.scheduled == init + measured  # the first one by matching its own term
    assert {zone[n] for n in hosts(result)} == {"zone1"}


def test_preferred_pod_affinity_gathers_the_pods():
    nodes, init, measured = SMALL["SchedulingPreferredPodAffinity"]
    result = small("SchedulingPreferredPodAffinity")
    assert result.scheduled == init + measured
    # far more on one node than an even spread gives: the preference outweighs LeastRequested there
    assert max(hosts(result).values()) > 5 * math.ceil((init + measured) / nodes)


def test_preferred_pod_anti_affinity_spreads_the_pods():
    nodes, init, measured = SMALL["SchedulingPreferredPodAntiAffinity"]
    result = small("SchedulingPreferredPodAntiAffinity")
    assert result.scheduled == init + measured
    assert max(hosts(result).values()) == math.ceil((init + measured) / nodes)


def blue_per_zone(result: SimulationResult) -> Counter[str | None]:
    zone = node_labels(result, ZONE_KEY)
    return Counter(zone[n] for n in hosts(result, "pod-").elements())


def test_do_not_schedule_spread_keeps_skew_within_max_skew():
    nodes, init, measured = SMALL["TopologySpreading"]
    result = small("TopologySpreading")
    assert result.scheduled == init + measured
    nodes_per_zone = Counter(node_labels(result, ZONE_KEY).values())
    assert len(nodes_per_zone) == 3
    # the constraint matters: an even spread over the nodes (what the scores alone give) would skew by more than 5
    per_node = measured // nodes
    assert per_node * (max(nodes_per_zone.values()) - min(nodes_per_zone.values())) > 5
    counts = blue_per_zone(result)
    assert set(counts) == set(nodes_per_zone)
    assert max(counts.values()) - min(counts.values()) <= 5


def test_schedule_anyway_spread_balances_the_zones():
    nodes, init, measured = SMALL["PreferredTopologySpreading"]
    result = small("PreferredTopologySpreading")
    assert result.scheduled == init + measured
    counts = blue_per_zone(result)
    assert len(counts) == 3 and max(counts.values()) - min(counts.values()) <= 5


def test_preemption_basic_preempts_for_every_high_priority_pod():
    nodes, init, measured = SMALL["PreemptionBasic"]
    first, second = run("PreemptionBasic", SMALL["PreemptionBasic"], True)
    assert set(hosts(first).values()) == {init // nodes}  # the low-priority pods fill every node
    assert first.pod_priority.preemptions == []
    sim = second.pod_priority
    assert sim.stopped is None
    assert second.scheduled == measured == len(second.placements)
    assert len(sim.preemptions) == measured
    for placement, preemption in zip(second.placements, sim.preemptions):
        assert preemption.preemptor.key == placement.pod.key and placement.pod.priority == HIGH_PRIORITY
        assert placement.node == preemption.node  # where it was nominated
        assert preemption.victims and preemption.pdb_violations == 0 and preemption.nominations_cleared == []
        assert all(v.node == preemption.node and v.pod.priority < HIGH_PRIORITY and not v.simulated
                   for v in preemption.victims)
        progress = sim.pods[placement.pod.ref]
        assert progress.attempts == 2 and progress.nominated_node is None
    victims = [v.pod.key for p in sim.preemptions for v in p.victims]
    assert len(victims) == len(set(victims))
    assert set(hosts(second).values()) == {1}


def test_unschedulable_large_cpu_pods_never_fit():
    nodes, init, measured = SMALL["Unschedulable"]
    result = small("Unschedulable")
    failed = [p for p in result.placements if p.node is None]
    assert [p.pod.name for p in failed] == [f"init-{i:06d}" for i in range(init)]
    assert {p.error for p in failed} == {f"0/{nodes} nodes are available: {nodes} Insufficient cpu."}
    every_node = {n: ["Insufficient cpu"] for n in node_labels(result, HOSTNAME_KEY)}
    assert all({n: [str(r) for r in rs] for n, rs in (p.failed or {}).items()} == every_node for p in failed)
    assert result.scheduled == measured
