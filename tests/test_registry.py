"""The registry: upstream 1.9 ``factory/plugins_test.go`` plus the registration/lookup rules of
``registry.md`` (name validation, overwrite semantics, exact error texts, provider key sets)."""

from __future__ import annotations

import pytest

from algorithmprovider.defaults import register_defaults
from policy_scheduler.algorithm import HostPriority, PluginFactoryArgs
from policy_scheduler.api import load_policy
from policy_scheduler.api.types import PredicatePolicy, PriorityPolicy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.errors import ConfigurationError
from policy_scheduler.registry import REGISTRY, Registry, RegistryError

NAME_RE = "^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])$"


def _true(pod, meta, info):
    return True, []


@pytest.mark.parametrize("name", ["1SomeAlgo1rithm", "someAlgor-ithm1", "ab"])
def test_algorithm_name_validation_accepts(name):
    """TestAlgorithmNameValidation (valid rows)."""
    assert Registry().register_fit_predicate(name, _true) == name


@pytest.mark.parametrize("name", ["-SomeAlgorithm", "SomeAlgorithm-", "Some,Alg:orithm", "A", ""])
def test_algorithm_name_validation_rejects(name):
    """TestAlgorithmNameValidation (invalid rows); a single character is too short for the regexp."""
    with pytest.raises(ConfigurationError) as exc:
        Registry().register_fit_predicate(name, _true)
    assert str(exc.value) == f'Algorithm name {name} does not match the name validation regexp "{NAME_RE}".'


def test_registration_overwrites_silently():
    reg = Registry()
    reg.register_priority_function2("Prio", lambda p, m, i: 1, None, 1)
    reg.register_priority_function2("Prio", lambda p, m, i: 2, None, 7)
    assert reg.priorities["Prio"].weight == 7


def test_default_registrations():
    """registry.md §5: 17 predicates and 11 priorities with default gates; 1.9's provider key sets. Plus the
    modern cluster's PodTopologySpread (a predicate and a priority, default weight 2), ReadWriteOncePod,
    NodeVolumeLimits and NodeDeclaredFeatures (predicates), DynamicResources (a predicate and a priority, default
    weight 2), in no provider."""
    reg = Registry()
    register_defaults(reg)
    assert reg.list_registered_fit_predicates() == sorted([
        "CheckNodeCondition", "CheckNodeDiskPressure", "CheckNodeMemoryPressure", "CheckVolumeBinding",
        "GeneralPredicates", "HostName", "MatchInterPodAffinity", "MatchNodeSelector", "MaxAzureDiskVolumeCount",
        "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "NoDiskConflict", "NoVolumeZoneConflict", "PodFitsHostPorts",
        "PodFitsPorts", "PodFitsResources", "PodToleratesNodeTaints", "PodTopologySpread", "ReadWriteOncePod",
        "NodeVolumeLimits", "NodeDeclaredFeatures", "DynamicResources",
    ])
    assert reg.list_registered_priority_functions() == sorted([
        "BalancedResourceAllocation", "EqualPriority", "ImageLocalityPriority", "InterPodAffinityPriority",
        "LeastRequestedPriority", "MostRequestedPriority", "NodeAffinityPriority", "NodePreferAvoidPodsPriority",
        "SelectorSpreadPriority", "ServiceSpreadingPriority", "TaintTolerationPriority", "PodTopologySpread",
        "DynamicResources",
    ])
    assert reg.priorities["PodTopologySpread"].weight == 2
    assert reg.priorities["DynamicResources"].weight == 2
    for modern in ("PodTopologySpread", "ReadWriteOncePod", "NodeVolumeLimits", "NodeDeclaredFeatures",
                   "DynamicResources"):
        assert all(modern not in p.fit_predicate_keys | p.priority_function_keys for p in reg.providers.values())
    assert reg.mandatory_fit_predicates == {"CheckNodeCondition"}
    assert reg.priorities["NodePreferAvoidPodsPriority"].weight == 10000
    default = reg.get_algorithm_provider("DefaultProvider")
    autoscaler = reg.get_algorithm_provider("ClusterAutoscalerProvider")
    assert default.fit_predicate_keys is autoscaler.fit_predicate_keys
    assert autoscaler.priority_function_keys == (default.priority_function_keys - {"LeastRequestedPriority"}) | {"MostRequestedPriority"}
    assert reg.list_algorithm_providers() == "ClusterAutoscalerProvider | DefaultProvider"


def test_provider_errors():
    reg = Registry()
    register_defaults(reg)
    with pytest.raises(RegistryError) as exc:
        reg.get_algorithm_provider("NoSuchProvider")
    assert str(exc.value) == ('plugin "NoSuchProvider" has not been registered (valid: ClusterAutoscalerProvider, '
                              'DefaultProvider)')
    with pytest.raises(RegistryError) as exc:
        reg.insert_predicate_key_to_algo_provider("NoSuchProvider", "X")
    assert str(exc.value) == "plugin NoSuchProvider has not been registered"
    reg.insert_predicate_key_to_algo_provider("DefaultProvider", "PodFitsPorts")
    assert "PodFitsPorts" in reg.get_algorithm_provider("ClusterAutoscalerProvider").fit_predicate_keys
    reg.remove_predicate_key_from_algorithm_provider_map("PodFitsPorts")
    assert "PodFitsPorts" not in reg.get_algorithm_provider("DefaultProvider").fit_predicate_keys


def test_build_errors_have_upstream_texts():
    reg = Registry()
    register_defaults(reg)
    args = PluginFactoryArgs(ClusterState())
    with pytest.raises(RegistryError) as exc:
        reg.get_fit_predicate_functions(["NoSuchPredicate"], args)
    assert str(exc.value) == 'Invalid predicate name "NoSuchPredicate" specified - no corresponding function found'
    with pytest.raises(RegistryError) as exc:
        reg.get_priority_function_configs(["NoSuchPriority"], args)
    assert str(exc.value) == "Invalid priority name NoSuchPriority specified - no corresponding function found"


def test_unknown_names_get_the_closest_registered_ones_after_upstreams_text():
    reg = Registry()
    register_defaults(reg)
    args = PluginFactoryArgs(ClusterState())
    with pytest.raises(RegistryError) as exc:
        reg.get_fit_predicate_functions(["PodToleratesNodeTaint"], args)
    assert str(exc.value) == ('Invalid predicate name "PodToleratesNodeTaint" specified - no corresponding function '
                              'found; did you mean "PodToleratesNodeTaints"?')
    with pytest.raises(RegistryError) as exc:
        reg.get_priority_function_configs(["LeastRequested"], args)
    assert str(exc.value) == ('Invalid priority name LeastRequested specified - no corresponding function found; did '
                              'you mean "LeastRequestedPriority"?')
    with pytest.raises(ConfigurationError) as exc:
        reg.register_custom_fit_predicate(PredicatePolicy(name="generalpredicates"))
    assert str(exc.value) == ('Invalid configuration: Predicate type not found for generalpredicates; did you mean '
                              '"GeneralPredicates"?')
    with pytest.raises(ConfigurationError) as exc:
        reg.register_custom_priority_function(PriorityPolicy(name="ImageLocalityPriorty", weight=1))
    assert str(exc.value) == ('Invalid configuration: Priority type not found for ImageLocalityPriorty; did you mean '
                              '"ImageLocalityPriority"?')
    with pytest.raises(RegistryError) as exc:
        reg.get_algorithm_provider("DefaultProvidr")
    assert str(exc.value) == ('plugin "DefaultProvidr" has not been registered; did you mean "DefaultProvider"? '
                              '(valid: ClusterAutoscalerProvider, DefaultProvider)')


def test_mandatory_predicates_are_always_added():
    reg = Registry()
    register_defaults(reg)
    built = reg.get_fit_predicate_functions(["NoDiskConflict"], PluginFactoryArgs(ClusterState()))
    assert sorted(built) == ["CheckNodeCondition", "NoDiskConflict"]


def test_priority_weight_overflow():
    reg = Registry()
    reg.register_priority_function("Big", lambda pod, infos, nodes: [HostPriority(n.name, 0) for n in nodes], 922337203685477580)
    reg.register_priority_function("Small", lambda pod, infos, nodes: [], 1)
    with pytest.raises(RegistryError) as exc:
        reg.get_priority_function_configs(["Big", "Small"], PluginFactoryArgs(ClusterState()))
    assert str(exc.value) == "Total priority of priority functions has overflown"


def test_priorities_are_built_in_name_order():
    reg = Registry()
    register_defaults(reg)
    configs = reg.get_priority_function_configs(["TaintTolerationPriority", "BalancedResourceAllocation", "InterPodAffinityPriority"],
                                                PluginFactoryArgs(ClusterState()))
    assert [c.name for c in configs] == ["BalancedResourceAllocation", "InterPodAffinityPriority", "TaintTolerationPriority"]
    assert configs[1].function is not None and configs[1].map is None


def test_custom_algorithms_from_a_policy():
    """registry.md §6-7: argument entries register under the policy name; plain entries reuse."""
    reg = Registry()
    register_defaults(reg)
    policy = load_policy("""{"kind": "Policy", "apiVersion": "v1",
      "predicates": [{"name": "RackAffinity", "argument": {"serviceAffinity": {"labels": ["rack"]}}},
                     {"name": "NeedsZone", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
                     {"name": "PodFitsResources"}],
      "priorities": [{"name": "ZoneSpread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
                     {"name": "PreferSSD", "weight": 2, "argument": {"labelPreference": {"label": "ssd", "presence": true}}},
                     {"name": "LeastRequestedPriority", "weight": 5}]}""")
    for p in policy.predicates:
        reg.register_custom_fit_predicate(p)
    for p in policy.priorities:
        reg.register_custom_priority_function(p)
    assert reg.priorities["LeastRequestedPriority"].weight == 5
    assert reg.priorities["ZoneSpread"].function is not None
    assert reg.priorities["PreferSSD"].map_reduce is not None
    reg.get_fit_predicate_functions(["RackAffinity"], PluginFactoryArgs(ClusterState()))
    assert "RackAffinity" in reg.predicate_metadata_producers


def test_custom_algorithm_errors():
    reg = Registry()
    register_defaults(reg)
    policy = load_policy('{"predicates": [{"name": "Nope"}], "priorities": [{"name": "Nada", "weight": 1}]}')
    with pytest.raises(ConfigurationError) as exc:
        reg.register_custom_fit_predicate(policy.predicates[0])
    assert str(exc.value) == "Invalid configuration: Predicate type not found for Nope"
    with pytest.raises(ConfigurationError) as exc:
        reg.register_custom_priority_function(policy.priorities[0])
    assert str(exc.value) == "Invalid configuration: Priority type not found for Nada"


def test_copy_is_independent():
    copy = REGISTRY.copy()
    copy.priorities["LeastRequestedPriority"].weight = 99
    copy.insert_predicate_key_to_algo_provider("DefaultProvider", "PodFitsPorts")
    assert REGISTRY.priorities["LeastRequestedPriority"].weight == 1
    assert "PodFitsPorts" not in REGISTRY.get_algorithm_provider("DefaultProvider").fit_predicate_keys
    # The two providers still share one predicate set inside the copy.
    assert "PodFitsPorts" in copy.get_algorithm_provider("ClusterAutoscalerProvider").fit_predicate_keys
