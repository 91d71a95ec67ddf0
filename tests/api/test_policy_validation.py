"""Policy validation (reference policy.md §5, §8.2; registry.md §3, §6, §7, §8)."""

from __future__ import annotations

import json

import pytest

from policy_scheduler.api import (
    ALGORITHM_NAME_REGEXP,
    MAX_INT,
    MAX_PRIORITY,
    MAX_TOTAL_PRIORITY,
    MAX_WEIGHT,
    SCHEDULER_POLICY_CONFIG_MAP_KEY,
    ExtenderConfig,
    Policy,
    PolicyValidationError,
    PriorityPolicy,
    aggregate_message,
    check_arguments,
    check_hard_pod_affinity_weight,
    check_policy,
    is_valid_algorithm_name,
    load_policy,
    unknown_names,
    validate_algorithm_name,
    validate_policy,
)
from policy_scheduler.errors import ConfigurationError

NAME_MESSAGE = 'does not match the name validation regexp "^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])$".'


def _v1(document: dict) -> Policy:
    return load_policy(json.dumps({"kind": "Policy", "apiVersion": "v1", **document}), "test")


def test_constants() -> None:
    assert MAX_PRIORITY == 10
    assert MAX_INT == 9223372036854775807
    assert MAX_TOTAL_PRIORITY == MAX_INT
    assert MAX_WEIGHT == 922337203685477580
    assert SCHEDULER_POLICY_CONFIG_MAP_KEY == "policy.cfg"
    assert ALGORITHM_NAME_REGEXP == "^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])$"


# policy.md §8.2 "validation-errors" (api/validation/validation_test.go v1.9.0)
VALIDATION_ITEMS = [
    ({"priorities": [{"name": "NoWeightPriority"}]},
     "Priority NoWeightPriority should have a positive weight applied to it or it has overflown"),
    ({"priorities": [{"name": "NoWeightPriority", "weight": 0}]},
     "Priority NoWeightPriority should have a positive weight applied to it or it has overflown"),
    ({"priorities": [{"name": "WeightPriority", "weight": 2}]}, None),
    ({"priorities": [{"name": "WeightPriority", "weight": -2}]},
     "Priority WeightPriority should have a positive weight applied to it or it has overflown"),
    ({"priorities": [{"name": "WeightPriority", "weight": 922337203685477580}]},
     "Priority WeightPriority should have a positive weight applied to it or it has overflown"),
    ({"extenders": [{"urlPrefix": "http://127.0.0.1:8081/extender", "prioritizeVerb": "prioritize", "weight": 2}]},
     None),
    ({"extenders": [{"urlPrefix": "http://127.0.0.1:8081/extender", "prioritizeVerb": "prioritize", "weight": -2}]},
     "Priority for extender http://127.0.0.1:8081/extender should have a positive weight applied to it"),
    ({"extenders": [{"urlPrefix": "http://127.0.0.1:8081/extender", "filterVerb": "filter"}]}, None),
    ({"extenders": [{"urlPrefix": "http://127.0.0.1:8081/extender", "bindVerb": "bind"},
                    {"urlPrefix": "http://127.0.0.1:8082/extender", "bindVerb": "bind"}]},
     "Only one extender can implement bind, found 2"),
]


@pytest.mark.parametrize(("document", "message"), VALIDATION_ITEMS)
def test_upstream_validation_items(document: dict, message: str | None) -> None:
    errors = validate_policy(_v1(document))
    if message is None:
        assert errors == []
        assert aggregate_message(errors) == ""
    else:
        assert [error.message for error in errors] == [message]
        assert aggregate_message(errors) == message


def test_validation_paths() -> None:
    policy = _v1({
        "priorities": [{"name": "A1", "weight": 1}, {"name": "B1", "weight": 1}, {"name": "C1", "weight": 0}],
        "extenders": [{"urlPrefix": "u", "prioritizeVerb": "p"}, {"urlPrefix": "v", "bindVerb": "b"},
                      {"urlPrefix": "w", "bindVerb": "b"}, {"urlPrefix": "x", "BindVerb": "b"}],
    })
    assert validate_policy(policy) == [
        PolicyValidationError("priorities[2].weight",
                              "Priority C1 should have a positive weight applied to it or it has overflown"),
        PolicyValidationError("extenders[0].weight", "Priority for extender u should have a positive weight applied to it"),
        PolicyValidationError("extenders", "Only one extender can implement bind, found 3"),
    ]
    assert str(validate_policy(policy)[2]) == "extenders: Only one extender can implement bind, found 3"


def test_aggregate_of_several_errors_keeps_upstream_order() -> None:
    policy = _v1({
        "priorities": [{"name": "P1", "weight": 0}, {"name": "P2", "weight": MAX_WEIGHT}],
        "extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "p", "weight": 0, "bindVerb": "b"},
                      {"urlPrefix": "http://b", "bindVerb": "b"}],
    })
    assert aggregate_message(validate_policy(policy)) == (
        "[Priority P1 should have a positive weight applied to it or it has overflown, "
        "Priority P2 should have a positive weight applied to it or it has overflown, "
        "Priority for extender http://a should have a positive weight applied to it, "
        "Only one extender can implement bind, found 2]"
    )


def test_weight_bounds() -> None:
    assert validate_policy(Policy(priorities=[PriorityPolicy("A1", MAX_WEIGHT - 1), PriorityPolicy("B1", 1)])) == []
    assert validate_policy(Policy(priorities=[PriorityPolicy("A1", MAX_INT)]))[0].path == "priorities[0].weight"


def test_extender_weight_only_matters_with_prioritize_verb() -> None:
    assert validate_policy(Policy(extenders=[ExtenderConfig("u", weight=-5, filter_verb="f")])) == []
    assert validate_policy(Policy(extenders=[ExtenderConfig("u", bind_verb="b")])) == []


def test_validate_policy_ignores_what_upstream_does_not_check() -> None:
    policy = _v1({
        "predicates": [{"name": "Unknown"}, {"name": "-bad-", "argument": {}}],
        "hardPodAffinitySymmetricWeight": 1000,
        "extenders": [{"urlPrefix": ""}],
    })
    assert validate_policy(policy) == []


# ------------------------------------------------------------------------------------------------
# Argument counts and names (registration-time checks)


def test_argument_count_errors() -> None:
    policy = _v1({
        "predicates": [
            {"name": "Empty", "argument": {}},
            {"name": "Both", "argument": {"serviceAffinity": {"labels": ["a"]}, "labelsPresence": {"labels": ["b"]}}},
            {"name": "NullMember", "argument": {"serviceAffinity": None}},
            {"name": "Fine", "argument": {"serviceAffinity": {"labels": ["a"]}}},
            {"name": "Plain"},
        ],
        "priorities": [
            {"name": "EmptyP", "weight": 1, "argument": {}},
            {"name": "BothP", "weight": 1,
             "argument": {"serviceAntiAffinity": {"label": "a"}, "labelPreference": {"label": "b"}}},
            {"name": "FineP", "weight": 1, "argument": {"labelPreference": {"label": "b"}}},
        ],
    })
    assert check_arguments(policy) == [
        PolicyValidationError("predicates[0].argument", "Exactly 1 predicate argument is required, numArgs: 0, Predicate: Empty"),
        PolicyValidationError("predicates[1].argument", "Exactly 1 predicate argument is required, numArgs: 2, Predicate: Both"),
        PolicyValidationError("predicates[2].argument",
                              "Exactly 1 predicate argument is required, numArgs: 0, Predicate: NullMember"),
        PolicyValidationError("priorities[0].argument", "Exactly 1 priority argument is required, numArgs: 0, Priority: EmptyP"),
        PolicyValidationError("priorities[1].argument", "Exactly 1 priority argument is required, numArgs: 2, Priority: BothP"),
    ]
    assert validate_policy(policy) == []


def test_names_of_argument_entries_are_validated() -> None:
    policy = _v1({
        "predicates": [
            {"name": "Some,Alg:orithm", "argument": {"serviceAffinity": {"labels": ["a"]}}},
            {"name": "-Plain-names-are-only-looked-up"},
            {"name": "X", "argument": {}},
        ],
        "priorities": [{"name": "rack_spread", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "r"}}}],
    })
    assert check_arguments(policy) == [
        PolicyValidationError("predicates[0].name", f"Algorithm name Some,Alg:orithm {NAME_MESSAGE}"),
        PolicyValidationError("predicates[2].argument", "Exactly 1 predicate argument is required, numArgs: 0, Predicate: X"),
        PolicyValidationError("predicates[2].name", f"Algorithm name X {NAME_MESSAGE}"),
        PolicyValidationError("priorities[0].name", f"Algorithm name rack_spread {NAME_MESSAGE}"),
    ]


@pytest.mark.parametrize("name", ["1SomeAlgo1rithm", "someAlgor-ithm1", "ab", "a-b", "PodFitsResources"])
def test_valid_algorithm_names(name: str) -> None:
    assert is_valid_algorithm_name(name)
    assert validate_algorithm_name(name) == name


@pytest.mark.parametrize("name", ["-SomeAlgorithm", "SomeAlgorithm-", "Some,Alg:orithm", "A", "", "ab\n", "a b", "é1"])
def test_invalid_algorithm_names(name: str) -> None:
    assert not is_valid_algorithm_name(name)
    with pytest.raises(ConfigurationError) as info:
        validate_algorithm_name(name)
    assert str(info.value) == f"Algorithm name {name} {NAME_MESSAGE}"


@pytest.mark.parametrize(("weight", "valid"), [(0, True), (1, True), (100, True), (101, False), (-1, False)])
def test_hard_pod_affinity_weight_range(weight: int, valid: bool) -> None:
    errors = check_hard_pod_affinity_weight(_v1({"hardPodAffinitySymmetricWeight": weight}))
    if valid:
        assert errors == []
    else:
        assert errors == [PolicyValidationError(
            "hardPodAffinitySymmetricWeight", f"invalid hardPodAffinitySymmetricWeight: {weight}, must be in the range 1-100"
        )]


def test_check_policy_runs_every_check_in_order() -> None:
    policy = _v1({
        "priorities": [{"name": "A1", "weight": 0, "argument": {}}],
        "hardPodAffinitySymmetricWeight": 200,
    })
    assert [str(error) for error in check_policy(policy)] == [
        "priorities[0].weight: Priority A1 should have a positive weight applied to it or it has overflown",
        "priorities[0].argument: Exactly 1 priority argument is required, numArgs: 0, Priority: A1",
        "hardPodAffinitySymmetricWeight: invalid hardPodAffinitySymmetricWeight: 200, must be in the range 1-100",
    ]


# ------------------------------------------------------------------------------------------------
# Name resolution

KNOWN_PREDICATES = {"GeneralPredicates", "PodFitsResources", "NoDiskConflict"}
KNOWN_PRIORITIES = {"LeastRequestedPriority", "EqualPriority"}


def test_unknown_names() -> None:
    policy = _v1({
        "predicates": [{"name": "GeneralPredicates"}, {"name": "NoVolumeNodeConflict"}, {"name": "Zone"},
                       {"name": "Zone", "argument": {"serviceAffinity": {"labels": ["zone"]}}}, {"name": "Zone"}],
        "priorities": [{"name": "Rack", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
                       {"name": "Rack", "weight": 2}, {"name": "MostRequested", "weight": 1},
                       {"name": "EqualPriority", "weight": 1}],
    })
    assert unknown_names(policy, KNOWN_PREDICATES, KNOWN_PRIORITIES) == [
        PolicyValidationError("predicates[1].name", "Invalid configuration: Predicate type not found for NoVolumeNodeConflict"
                                                    " (valid: GeneralPredicates, NoDiskConflict, PodFitsResources)"),
        PolicyValidationError("predicates[2].name", "Invalid configuration: Predicate type not found for Zone"
                                                    " (valid: GeneralPredicates, NoDiskConflict, PodFitsResources)"),
        # Rack is known from priorities[0] on: a custom entry registers its name.
        PolicyValidationError("priorities[2].name", "Invalid configuration: Priority type not found for MostRequested"
                                                    " (valid: EqualPriority, LeastRequestedPriority, Rack)"),
    ]


def test_predicate_and_priority_names_are_separate_namespaces() -> None:
    policy = _v1({"predicates": [{"name": "EqualPriority"}], "priorities": [{"name": "NoDiskConflict", "weight": 1}]})
    assert [error.message for error in unknown_names(policy, KNOWN_PREDICATES, KNOWN_PRIORITIES)] == [
        "Invalid configuration: Predicate type not found for EqualPriority"
        " (valid: GeneralPredicates, NoDiskConflict, PodFitsResources)",
        "Invalid configuration: Priority type not found for NoDiskConflict (valid: EqualPriority, LeastRequestedPriority)",
    ]


def test_unknown_names_of_empty_policy() -> None:
    assert unknown_names(Policy(), KNOWN_PREDICATES, KNOWN_PRIORITIES) == []
