"""Building schedulers from Policies and providers: upstream 1.9 ``compatibility_test.go`` (every
stanza, from the reference's transcription in tests/data) and ``factory_test.go``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policy_scheduler.algorithm import HostPriority
from policy_scheduler.api import load_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.errors import ConfigurationError, PolicyError
from policy_scheduler.factory import create_from_policy, create_from_provider
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.registry import REGISTRY, RegistryError

CASES = json.loads((Path(__file__).parent / "data" / "compatibility_v1_cases.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_compatibility_policy(case):
    """TestCompatibility_v1_Scheduler: each release's policy decodes and builds the expected algorithm."""
    expected = case["expected"]
    policy = load_policy(json.dumps(case["policy"]))
    assert policy.hard_pod_affinity_symmetric_weight == expected["decodedHardPodAffinitySymmetricWeight"]
    scheduler = create_from_policy(policy, cluster=ClusterState(), feature_gates=FeatureGates(rules=Rules.V1_9))
    assert sorted(scheduler.predicates) == expected["effectivePredicates"]
    # Under the cluster's rules CheckVolumeBinding (late-bound volumes) runs whatever the policy names.
    cluster_rules = create_from_policy(policy, cluster=ClusterState())
    assert sorted(cluster_rules.predicates) == sorted({*expected["effectivePredicates"], "CheckVolumeBinding"})
    assert [{"name": c.name, "weight": c.weight} for c in scheduler.prioritizers] == expected["priorityConfigs"]
    bare = NodeInfo(Node({"metadata": {"name": "n1"}}))
    for name, custom in expected["customPredicates"].items():
        if custom["type"] == "NodeLabelPresence":
            fit, reasons = scheduler.predicates[name](Pod({}), None, bare)
            assert (fit, reasons) == (not custom["presence"], [] if not custom["presence"] else [custom["failureReason"]])
    for name, custom in expected["customPriorities"].items():
        config = next(c for c in scheduler.prioritizers if c.name == name)
        assert (config.function is not None) == (custom["form"] == "legacy-function")


def test_every_registered_name_is_covered_by_a_compatibility_policy():
    """The closing check of TestCompatibility_v1_Scheduler, for 1.9's names (the modern cluster's
    PodTopologySpread has its own Policy tests in tests/core/test_topology_spread_scheduling.py, the volume
    rules ReadWriteOncePod and NodeVolumeLimits theirs in tests/predicates, NodeDeclaredFeatures in
    tests/predicates/test_node_declared_features.py, DynamicResources in tests/dra)."""
    modern = {"PodTopologySpread", "ReadWriteOncePod", "NodeVolumeLimits", "NodeDeclaredFeatures", "DynamicResources"}
    predicates = {p["name"] for c in CASES for p in c["policy"].get("predicates", ())}
    priorities = {p["name"] for c in CASES for p in c["policy"].get("priorities", ())}
    assert set(REGISTRY.fit_predicates) - modern <= predicates
    assert set(REGISTRY.priorities) - modern <= priorities
    assert not modern & (predicates | priorities)  # no 1.9 name collides


def test_empty_policy_means_mandatory_predicates_only():
    """factory_test.go TestCreateFromEmptyConfig, with 1.9's meaning of absent lists."""
    scheduler = create_from_policy(load_policy("{}"), cluster=ClusterState(), feature_gates=FeatureGates(rules=Rules.V1_9))
    assert sorted(scheduler.predicates) == ["CheckNodeCondition"]
    scheduler = create_from_policy(load_policy("{}"), cluster=ClusterState())
    assert sorted(scheduler.predicates) == ["CheckNodeCondition", "CheckVolumeBinding"]
    assert scheduler.prioritizers == []


def _registry_with_test_plugins():
    reg = REGISTRY.copy()
    reg.register_fit_predicate("PredicateOne", lambda pod, meta, info: (True, []))
    reg.register_fit_predicate("PredicateTwo", lambda pod, meta, info: (True, []))
    reg.register_priority_function("PriorityOne", lambda pod, infos, nodes: [HostPriority(n.name, 0) for n in nodes], 1)
    reg.register_priority_function("PriorityTwo", lambda pod, infos, nodes: [HostPriority(n.name, 0) for n in nodes], 1)
    return reg


CUSTOM_POLICY = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [
        {"name": "TestZoneAffinity", "argument": {"serviceAffinity": {"labels": ["zone"]}}},
        {"name": "TestRequireZone", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
        {"name": "PredicateOne"}, {"name": "PredicateTwo"},
    ],
    "priorities": [
        {"name": "RackSpread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
        {"name": "PriorityOne", "weight": 2}, {"name": "PriorityTwo", "weight": 1},
    ],
}


@pytest.mark.parametrize("hard_weight, expected", [(None, 1), (10, 10)])
def test_create_from_config(hard_weight, expected, monkeypatch):
    """factory_test.go TestCreateFromConfig / ...WithHardPodAffinitySymmetricWeight."""
    seen = {}
    import policy_scheduler.priorities.interpod_affinity as ipa

    original = ipa.new_inter_pod_affinity_priority

    def spy(args):
        seen["weight"] = args.hard_pod_affinity_symmetric_weight
        return original(args)

    reg = _registry_with_test_plugins()
    reg.priorities["InterPodAffinityPriority"].function = spy
    doc = dict(CUSTOM_POLICY, priorities=CUSTOM_POLICY["priorities"] + [{"name": "InterPodAffinityPriority", "weight": 1}])
    if hard_weight is not None:
        doc["hardPodAffinitySymmetricWeight"] = hard_weight
    scheduler = create_from_policy(load_policy(json.dumps(doc)), cluster=ClusterState(), registry=reg,
                                   feature_gates=FeatureGates(rules=Rules.V1_9))
    assert sorted(scheduler.predicates) == ["CheckNodeCondition", "PredicateOne", "PredicateTwo", "TestRequireZone", "TestZoneAffinity"]
    assert [(c.name, c.weight) for c in scheduler.prioritizers] == [
        ("InterPodAffinityPriority", 1), ("PriorityOne", 2), ("PriorityTwo", 1), ("RackSpread", 3)
    ]
    assert seen["weight"] == expected


def test_policy_registrations_do_not_leak_into_the_process_registry():
    create_from_policy(load_policy(json.dumps({"priorities": [{"name": "LeastRequestedPriority", "weight": 7},
        {"name": "Custom", "weight": 1, "argument": {"labelPreference": {"label": "x"}}}]})), cluster=ClusterState())
    assert REGISTRY.priorities["LeastRequestedPriority"].weight == 1
    assert "Custom" not in REGISTRY.priorities


def test_validation_errors_are_aggregated_like_upstream():
    policy = load_policy(json.dumps({"kind": "Policy", "apiVersion": "v1",
        "priorities": [{"name": "A", "weight": 0}, {"name": "B", "weight": -1}],
        "extenders": [{"urlPrefix": "u1", "bindVerb": "b"}, {"urlPrefix": "u2", "bindVerb": "b"}]}))
    with pytest.raises(PolicyError) as exc:
        create_from_policy(policy, cluster=ClusterState())
    assert str(exc.value) == (
        "[Priority A should have a positive weight applied to it or it has overflown, "
        "Priority B should have a positive weight applied to it or it has overflown, "
        "Only one extender can implement bind, found 2]"
    )


def test_unknown_names_and_bad_hard_weight():
    with pytest.raises(ConfigurationError, match='^Invalid configuration: Predicate type not found for NoVolumeNodeConflict; '
                                                 'did you mean "NoVolumeZoneConflict"\\?$'):
        create_from_policy(load_policy('{"predicates": [{"name": "NoVolumeNodeConflict"}]}'), cluster=ClusterState())
    with pytest.raises(RegistryError, match="^invalid hardPodAffinitySymmetricWeight: 0, must be in the range 1-100$"):
        create_from_provider("DefaultProvider", cluster=ClusterState(), hard_pod_affinity_symmetric_weight=0)
    with pytest.raises(RegistryError, match=r'^plugin "Nope" has not been registered \(valid: ClusterAutoscalerProvider, '
                                            r'DefaultProvider\)$'):
        create_from_provider("Nope", cluster=ClusterState())


def test_taint_nodes_by_condition_gate():
    """registry.md §5.5: CheckNodeCondition is removed and PodToleratesNodeTaints becomes mandatory."""
    gates = FeatureGates({"TaintNodesByCondition": True}, Rules.V1_9)
    scheduler = create_from_provider("DefaultProvider", cluster=ClusterState(), feature_gates=gates)
    assert "CheckNodeCondition" not in scheduler.predicates
    scheduler = create_from_policy(load_policy('{"predicates": [{"name": "NoDiskConflict"}]}'), cluster=ClusterState(), feature_gates=gates)
    assert sorted(scheduler.predicates) == ["NoDiskConflict", "PodToleratesNodeTaints"]
    with pytest.raises(ConfigurationError):
        create_from_policy(load_policy('{"predicates": [{"name": "CheckNodeCondition"}]}'), cluster=ClusterState(), feature_gates=gates)


def test_resource_limits_priority_needs_its_gate():
    policy = load_policy('{"priorities": [{"name": "ResourceLimitsPriority", "weight": 1}]}')
    with pytest.raises(ConfigurationError):
        create_from_policy(policy, cluster=ClusterState())
    gates = FeatureGates({"ResourceLimitsPriorityFunction": True})
    scheduler = create_from_policy(policy, cluster=ClusterState(), feature_gates=gates)
    assert [c.name for c in scheduler.prioritizers] == ["ResourceLimitsPriority"]
