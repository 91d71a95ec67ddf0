"""Policy lint: what Kubernetes 1.9 accepts but users regret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policy_scheduler.api import Policy, lint_policy, load_policy, load_policy_file
from policy_scheduler.api.lint import unknown_names

POLICIES = Path(__file__).resolve().parents[2] / "policies"

# The names Kubernetes 1.9.0 registers (default feature gates).
REGISTERED_PREDICATES = {
    "CheckNodeCondition", "CheckNodeDiskPressure", "CheckNodeMemoryPressure", "CheckVolumeBinding",
    "GeneralPredicates", "HostName", "MatchInterPodAffinity", "MatchNodeSelector", "MaxAzureDiskVolumeCount",
    "MaxEBSVolumeCount", "MaxGCEPDVolumeCount", "NoDiskConflict", "NoVolumeZoneConflict", "PodFitsHostPorts",
    "PodFitsPorts", "PodFitsResources", "PodToleratesNodeTaints",
}
REGISTERED_PRIORITIES = {
    "BalancedResourceAllocation", "EqualPriority", "ImageLocalityPriority", "InterPodAffinityPriority",
    "LeastRequestedPriority", "MostRequestedPriority", "NodeAffinityPriority", "NodePreferAvoidPodsPriority",
    "SelectorSpreadPriority", "ServiceSpreadingPriority", "TaintTolerationPriority",
}

QUIET = {"predicates": [{"name": "GeneralPredicates"}], "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}


def _lint(document: dict, api_version: bool = True, **known: set[str]) -> list[str]:
    header = {"kind": "Policy", "apiVersion": "v1"} if api_version else {"kind": "Policy"}
    return lint_policy(load_policy(json.dumps({**header, **document}), "test"), **known)


def test_quiet_policy_has_no_warnings() -> None:
    assert _lint(QUIET) == []


def test_extenders_without_api_version() -> None:
    warnings = _lint({**QUIET, "extenders": [{"urlPrefix": "u", "httpTimeout": 1}]}, api_version=False)
    assert warnings == ["extenders is ignored without apiVersion: v1 (1.9 reads extenderConfigs)"]


def test_extender_configs_with_api_version() -> None:
    warnings = _lint({**QUIET, "extenderConfigs": [{"urlPrefix": "u", "httpTimeout": 1}]})
    assert warnings == ["extenderConfigs is ignored with apiVersion: v1 (the v1 key is extenders)"]


def test_unknown_keys() -> None:
    document = {**QUIET, "priorites": [], "alwaysCheckAllPredicates": True,
                "predicates": [{"name": "GeneralPredicates", "arguments": {}}]}
    assert _lint(document) == [  # document order: "predicates" comes first (from QUIET)
        "predicates[0].arguments: unknown key, ignored",
        "priorites: unknown key, ignored",
        "alwaysCheckAllPredicates: unknown key, ignored",
    ]


def test_no_resource_predicate() -> None:
    document = {**QUIET, "predicates": [{"name": "NoDiskConflict"},
                                        {"name": "PodFitsResources", "argument": {"labelsPresence": {"labels": ["a"]}}}]}
    assert _lint(document) == [
        "predicates: neither GeneralPredicates nor PodFitsResources is listed: pods may be placed on nodes without "
        "room and rejected by the kubelet"
    ]


@pytest.mark.parametrize("predicates", [[{"name": "PodFitsResources"}, {"name": "HostName"}], []])
def test_resource_predicate_present_or_deliberately_empty(predicates: list) -> None:
    assert _lint({**QUIET, "predicates": predicates}) == []


def test_general_predicates_members_listed_too() -> None:
    predicates = [{"name": "PodFitsResources"}, {"name": "GeneralPredicates"}, {"name": "HostName"},
                  {"name": "NoDiskConflict"}, {"name": "PodFitsHostPorts"}, {"name": "PodFitsPorts"},
                  {"name": "MatchNodeSelector"}, {"name": "PodFitsPorts-custom", "argument": {"serviceAffinity": {}}}]
    suffix = "is already part of GeneralPredicates: it is evaluated twice and its failures are counted twice"
    assert _lint({**QUIET, "predicates": predicates}) == [
        f"predicates[0]: PodFitsResources {suffix}",
        f"predicates[2]: HostName {suffix}",
        f"predicates[4]: PodFitsHostPorts {suffix}",
        f"predicates[5]: PodFitsPorts {suffix}",
        f"predicates[6]: MatchNodeSelector {suffix}",
    ]


def test_dominant_priority_weight() -> None:
    priorities = [{"name": "LeastRequestedPriority", "weight": 1}, {"name": "BalancedResourceAllocation", "weight": 1},
                  {"name": "SelectorSpreadPriority", "weight": 201}, {"name": "NodePreferAvoidPodsPriority", "weight": 10000}]
    # NodePreferAvoidPodsPriority's 10000 is deliberate; SelectorSpreadPriority's 201 vs 10002 is fine.
    assert _lint({**QUIET, "priorities": priorities}) == []
    priorities = [{"name": "LeastRequestedPriority", "weight": 1}, {"name": "BalancedResourceAllocation", "weight": 1},
                  {"name": "SelectorSpreadPriority", "weight": 201}]
    assert _lint({**QUIET, "priorities": priorities}) == [
        "priorities[2].weight: SelectorSpreadPriority has weight 201, more than 100 times the sum of all other "
        "priority weights (2): the others can only break its ties"
    ]
    priorities[2]["weight"] = 200
    assert _lint({**QUIET, "priorities": priorities}) == []


def test_single_priority_is_not_dominant() -> None:
    assert _lint({**QUIET, "priorities": [{"name": "LeastRequestedPriority", "weight": 5000}]}) == []


def test_extender_without_timeout() -> None:
    document = {**QUIET, "extenders": [{"urlPrefix": "a", "filterVerb": "f", "httpTimeout": 1000000000},
                                       {"urlPrefix": "b", "filterVerb": "f"}]}
    assert _lint(document) == [
        "extenders[1].httpTimeout: not set; each extender call may block scheduling for the 5s default"
    ]


def test_absent_lists_explain_1_9_meaning() -> None:
    predicates_note = (
        "predicates: not set: in 1.9 this means no predicates beyond the mandatory CheckNodeCondition "
        "(1.10 uses the DefaultProvider predicates instead); list them, or write [] to mean none"
    )
    priorities_note = (
        "priorities: not set: in 1.9 every feasible node scores equally: pure round-robin "
        "(1.10 uses the DefaultProvider priorities instead); list them, or write [] to mean none"
    )
    assert _lint({}) == [predicates_note, priorities_note]
    assert _lint({"predicates": None, "priorities": None}) == [predicates_note, priorities_note]
    assert lint_policy(Policy()) == [predicates_note, priorities_note]
    assert _lint({"predicates": [], "priorities": []}) == []


def test_absent_priorities_with_prioritizing_extender() -> None:
    document = {"predicates": [], "extenders": [{"urlPrefix": "u", "prioritizeVerb": "p", "weight": 1, "httpTimeout": 1}]}
    assert _lint(document) == [
        "priorities: not set: in 1.9 feasible nodes are ranked by the extenders' scores only "
        "(1.10 uses the DefaultProvider priorities instead); list them, or write [] to mean none"
    ]


def test_duplicate_names() -> None:
    document = {
        "predicates": [{"name": "GeneralPredicates"}, {"name": "Zone", "argument": {"serviceAffinity": {"labels": ["a"]}}},
                       {"name": "Zone", "argument": {"serviceAffinity": {"labels": ["b"]}}}, {"name": "GeneralPredicates"}],
        "priorities": [{"name": "LeastRequestedPriority", "weight": 1}, {"name": "EqualPriority", "weight": 1},
                       {"name": "LeastRequestedPriority", "weight": 2}],
    }
    assert _lint(document) == [
        "predicates[2]: Zone is listed again (first at predicates[1]): the last entry wins",
        "predicates[3]: GeneralPredicates is listed again (first at predicates[0]): the last entry wins",
        "priorities[2]: LeastRequestedPriority is listed again (first at priorities[0]): the last entry wins",
    ]


def test_duplicates_count_once_for_weight_dominance() -> None:
    priorities = [{"name": "LeastRequestedPriority", "weight": 500}, {"name": "EqualPriority", "weight": 1},
                  {"name": "LeastRequestedPriority", "weight": 2}]
    assert _lint({**QUIET, "priorities": priorities}) == [
        "priorities[2]: LeastRequestedPriority is listed again (first at priorities[0]): the last entry wins"
    ]


def test_argument_entry_replacing_a_registered_algorithm() -> None:
    document = {
        "predicates": [{"name": "GeneralPredicates"},
                       {"name": "NoDiskConflict", "argument": {"labelsPresence": {"labels": ["ssd"]}}}],
        "priorities": [{"name": "EqualPriority", "weight": 1, "argument": {"labelPreference": {"label": "x"}}},
                       {"name": "Mine", "weight": 1, "argument": {"labelPreference": {"label": "y"}}}],
    }
    assert _lint(document) == []
    assert _lint(document, known_predicates=REGISTERED_PREDICATES, known_priorities=REGISTERED_PRIORITIES) == [
        "predicates[1]: NoDiskConflict has an argument, so it replaces the registered predicate NoDiskConflict "
        "for the whole process",
        "priorities[0]: EqualPriority has an argument, so it replaces the registered priority EqualPriority "
        "for the whole process",
    ]


def test_hard_pod_affinity_weight_without_inter_pod_affinity_priority() -> None:
    assert _lint({**QUIET, "hardPodAffinitySymmetricWeight": 10}) == [
        "hardPodAffinitySymmetricWeight: set, but InterPodAffinityPriority is not listed, and it is the only "
        "priority that uses it"
    ]
    priorities = [*QUIET["priorities"], {"name": "InterPodAffinityPriority", "weight": 1}]
    assert _lint({**QUIET, "priorities": priorities, "hardPodAffinitySymmetricWeight": 10}) == []


def test_unknown_names_is_available_from_lint() -> None:
    policy = load_policy('{"predicates": [{"name": "NoVolumeNodeConflict"}]}')
    assert [str(error) for error in unknown_names(policy, REGISTERED_PREDICATES, REGISTERED_PRIORITIES)] == [
        'predicates[0].name: Invalid configuration: Predicate type not found for NoVolumeNodeConflict; did you mean '
        '"NoVolumeZoneConflict"?'
    ]


DELIBERATE = {
    "upstream-example.json": [
        "hardPodAffinitySymmetricWeight: set, but InterPodAffinityPriority is not listed, and it is the only "
        "priority that uses it"
    ],
}


@pytest.mark.parametrize(
    "path", sorted(path for path in POLICIES.iterdir() if path.suffix in (".json", ".yaml")), ids=lambda path: path.name
)
def test_policy_examples_lint_clean_and_use_registered_names(path: Path) -> None:
    policy = load_policy_file(path)
    assert lint_policy(policy, REGISTERED_PREDICATES, REGISTERED_PRIORITIES) == DELIBERATE.get(path.name, [])
    assert unknown_names(policy, REGISTERED_PREDICATES, REGISTERED_PRIORITIES) == []
