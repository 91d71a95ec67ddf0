"""The plugin end to end inside the engine: its entry-point functions register into a copy of the
process registry, then a scheduler is built from ExampleProvider and from the example policy over the
bundled example cluster plus ``cluster/racks.yaml`` (what ``policy-scheduler simulate`` would do)."""

from __future__ import annotations

from pathlib import Path

import pytest
from policy_scheduler_example_plugin import (
    ERR_RACK_MISMATCH,
    PREDICATE,
    PRIORITY,
    PROVIDER,
    register_predicates,
    register_priorities,
    register_provider,
)

from algorithmprovider import defaults  # noqa: F401  (registers the built-ins)
from policy_scheduler.api import load_policy_file
from policy_scheduler.factory import create_from_policy, create_from_provider
from policy_scheduler.offline.examples import default_cluster_path
from policy_scheduler.offline.snapshot import load_snapshot
from policy_scheduler.registry import REGISTRY, Registry

HERE = Path(__file__).resolve().parent.parent


@pytest.fixture
def registry() -> Registry:
    reg = REGISTRY.copy()
    for register in (register_predicates, register_priorities, register_provider):
        register(reg)
    return reg


@pytest.fixture
def snapshot():
    return load_snapshot([str(default_cluster_path()), str(HERE / "cluster")])


def test_registrations(registry):
    assert registry.is_fit_predicate_registered(PREDICATE)
    assert registry.priorities[PRIORITY].weight == 1
    default, example = registry.get_algorithm_provider("DefaultProvider"), registry.get_algorithm_provider(PROVIDER)
    assert example.fit_predicate_keys == default.fit_predicate_keys | {PREDICATE}
    assert example.priority_function_keys == default.priority_function_keys | {PRIORITY}
    assert PREDICATE not in default.fit_predicate_keys  # DefaultProvider itself is left alone


def test_example_provider_schedules_by_rack(registry, snapshot):
    cluster = snapshot.cluster_state()
    scheduler = create_from_provider(PROVIDER, cluster=cluster, registry=registry)
    placed = scheduler.explain(snapshot.find_pod("racked/wants-rack-b"))
    assert placed.host == "rack-b-01"
    assert placed.nodes["rack-a-01"].predicates[PREDICATE].reasons == [ERR_RACK_MISMATCH]
    stuck = scheduler.explain(snapshot.find_pod("racked/wants-rack-c"))
    assert stuck.host is None
    assert f"14 {ERR_RACK_MISMATCH}" in str(stuck.error)


def test_example_policy(registry, snapshot):
    cluster = snapshot.cluster_state()
    scheduler = create_from_policy(load_policy_file(str(HERE / "policy.json")), cluster=cluster, registry=registry)
    explanation = scheduler.explain(snapshot.find_pod("racked/any-rack"))
    assert explanation.host in {"rack-a-01", "rack-b-01"}
    assert explanation.nodes["rack-a-01"].priorities[PRIORITY] == (10, 2)  # (score, weight)
    assert explanation.nodes["worker-1a-01"].priorities[PRIORITY] == (0, 2)
