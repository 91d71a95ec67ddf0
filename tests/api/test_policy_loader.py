"""Decoding of scheduler Policies (reference policy.md §2, §3, §6.3, §7, §8)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest

from policy_scheduler.api import (
    ExtenderConfig,
    LabelPreferenceArgs,
    LabelsPresenceArgs,
    Policy,
    PolicyDecodeError,
    PredicateArgument,
    PredicatePolicy,
    PriorityArgument,
    PriorityPolicy,
    ServiceAffinityArgs,
    ServiceAntiAffinityArgs,
    TLSConfig,
    check_policy,
    load_policy,
    load_policy_file,
    load_policy_from_configmap,
    policy_from_dict,
    policy_schema,
)
from policy_scheduler.errors import PolicyError

REPO = Path(__file__).resolve().parents[2]
POLICIES = REPO / "policies"
CONFORMANCE = REPO / "tests" / "conformance"
COMPATIBILITY_CASES = CONFORMANCE / "cases" / "policy" / "TestCompatibility_v1_Scheduler.json"


def _compatibility_cases() -> list[dict]:
    return json.loads(COMPATIBILITY_CASES.read_text())


def _raises(text: str, source: str = "p.json") -> str:
    with pytest.raises(PolicyDecodeError) as info:
        load_policy(text, source)
    return str(info.value)


# ------------------------------------------------------------------------------------------------
# Upstream compatibility cases


@pytest.mark.parametrize("case", _compatibility_cases(), ids=lambda case: case["id"])
def test_compatibility_case_decodes_to_expected_policy(case: dict) -> None:
    policy = load_policy(case["policyText"], case["id"])
    expected = case["expect"]
    as_dict = policy.to_dict()
    assert as_dict["predicates"] == expected["expectedPolicy"]["predicates"]
    assert as_dict["priorities"] == expected["expectedPolicy"]["priorities"]
    assert policy.predicate_names() == expected["predicates"]
    assert policy.priority_weights() == expected["priorities"]
    assert policy.extenders is None
    assert policy.hard_pod_affinity_symmetric_weight == 0
    assert check_policy(policy) == []


POLICY_1_9 = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [
        {"name": "MatchNodeSelector"}, {"name": "PodFitsResources"}, {"name": "PodFitsHostPorts"},
        {"name": "HostName"}, {"name": "NoDiskConflict"}, {"name": "NoVolumeZoneConflict"},
        {"name": "PodToleratesNodeTaints"}, {"name": "CheckNodeMemoryPressure"},
        {"name": "CheckNodeDiskPressure"}, {"name": "CheckNodeCondition"}, {"name": "MaxEBSVolumeCount"},
        {"name": "MaxGCEPDVolumeCount"}, {"name": "MaxAzureDiskVolumeCount"}, {"name": "MatchInterPodAffinity"},
        {"name": "GeneralPredicates"}, {"name": "CheckVolumeBinding"},
        {"name": "TestServiceAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
        {"name": "TestLabelsPresence", "argument": {"labelsPresence": {"labels": ["foo"], "presence": True}}},
    ],
    "priorities": [
        {"name": "EqualPriority", "weight": 2}, {"name": "ImageLocalityPriority", "weight": 2},
        {"name": "LeastRequestedPriority", "weight": 2}, {"name": "BalancedResourceAllocation", "weight": 2},
        {"name": "SelectorSpreadPriority", "weight": 2}, {"name": "NodePreferAvoidPodsPriority", "weight": 2},
        {"name": "NodeAffinityPriority", "weight": 2}, {"name": "TaintTolerationPriority", "weight": 2},
        {"name": "InterPodAffinityPriority", "weight": 2}, {"name": "MostRequestedPriority", "weight": 2},
    ],
}

EXPECTED_EXTENDER = ExtenderConfig(
    url_prefix="/prefix", filter_verb="filter", prioritize_verb="prioritize", weight=1, bind_verb="bind",
    enable_https=True, tls_config=TLSConfig(insecure=True), http_timeout_ns=1, node_cache_capable=True,
)


@pytest.mark.parametrize("bind_key", ["bindVerb", "BindVerb", "bindverb"])
def test_1_9_and_1_7_extender_stanzas_decode_identically(bind_key: str) -> None:
    extender = {
        "urlPrefix": "/prefix", "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1,
        bind_key: "bind", "enableHttps": True, "tlsConfig": {"Insecure": True},
        "httpTimeout": 1, "nodeCacheCapable": True,
    }
    policy = load_policy(json.dumps({**POLICY_1_9, "extenders": [extender]}), "1.9+extender")
    assert policy.extenders == [EXPECTED_EXTENDER]
    assert policy.extenders[0].http_timeout_ns == 1
    assert len(policy.predicates or []) == 18
    assert policy.priority_weights()["MostRequestedPriority"] == 2
    assert check_policy(policy) == []


def test_upstream_extender_example_ignores_inner_api_version() -> None:
    text = """{"kind": "Policy", "apiVersion": "v1",
      "predicates": [{"name": "PodFitsHostPorts"}], "priorities": [{"name": "EqualPriority", "weight": 1}],
      "extenders": [{"urlPrefix": "http://127.0.0.1:12346/scheduler", "apiVersion": "v1beta1",
                     "filterVerb": "filter", "bindVerb": "bind", "prioritizeVerb": "prioritize",
                     "weight": 5, "enableHttps": false, "nodeCacheCapable": false}],
      "hardPodAffinitySymmetricWeight": 10}"""
    policy = load_policy(text)
    assert policy.extenders == [ExtenderConfig(
        url_prefix="http://127.0.0.1:12346/scheduler", filter_verb="filter", prioritize_verb="prioritize",
        weight=5, bind_verb="bind",
    )]
    assert policy.hard_pod_affinity_symmetric_weight == 10
    assert policy.ignored_keys == ("extenders[0].apiVersion",)


# ------------------------------------------------------------------------------------------------
# kind / apiVersion (policy.md §3.2, every row)

EXTENDERS_BOTH_KEYS = '"extenders": [{"urlPrefix": "http://a"}], "extenderConfigs": [{"urlPrefix": "http://b"}]'


@pytest.mark.parametrize(
    ("header", "extender_url"),
    [
        ('"apiVersion": "v1", "kind": "Policy"', "http://a"),
        ('"apiVersion": "v1"', "http://a"),
        ('"apiVersion": "/v1", "kind": "Policy"', "http://a"),
        ('"kind": "Policy"', "http://b"),
        ("", "http://b"),
        ('"apiVersion": "", "kind": ""', "http://b"),
        ('"apiVersion": "/"', "http://b"),
        ('"apiVersion": "__internal", "kind": "Policy"', "http://b"),
    ],
)
def test_version_selects_extender_key(header: str, extender_url: str) -> None:
    separator = ", " if header else ""
    policy = load_policy("{" + header + separator + EXTENDERS_BOTH_KEYS + "}")
    assert policy.extenders == [ExtenderConfig(url_prefix=extender_url)]


def test_empty_object_is_an_empty_policy() -> None:
    policy = load_policy("{}")
    assert policy == Policy()
    assert (policy.predicates, policy.priorities, policy.extenders) == (None, None, None)


def test_without_api_version_extenders_key_is_ignored() -> None:
    policy = load_policy('{"kind": "Policy", "extenders": [{"urlPrefix": "http://a", "weight": -1}]}')
    assert policy.extenders is None
    assert policy.ignored_keys == ("extenders",)


def test_with_api_version_extender_configs_key_is_ignored() -> None:
    policy = load_policy('{"apiVersion": "v1", "extenderConfigs": [{"urlPrefix": "http://a"}]}')
    assert policy.extenders is None
    assert policy.ignored_keys == ("extenderConfigs",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"apiVersion": "v1", "kind": "Pod"}', 'p.json: no kind "Pod" is registered for version "v1"'),
        ('{"apiVersion": "v1", "kind": "policy"}', 'p.json: no kind "policy" is registered for version "v1"'),
        ('{"apiVersion": "v2", "kind": "Policy"}', 'p.json: no kind "Policy" is registered for version "v2"'),
        ('{"apiVersion": "v1beta1"}', 'p.json: no kind "Policy" is registered for version "v1beta1"'),
        ('{"apiVersion": "v2", "kind": "Pod"}', 'p.json: no kind "Pod" is registered for version "v2"'),
        ('{"apiVersion": "apps/v1"}', 'p.json: no kind "Policy" is registered for version "apps/v1"'),
        ('{"kind": "Pod"}', 'p.json: no kind "Pod" is registered for the internal version of group ""'),
        ('{"apiVersion": "a/b/c", "kind": "Policy"}', "p.json: unexpected GroupVersion string: a/b/c"),
        ('{"kind": "Policy", "predicates": [', "p.json: couldn't get version/kind; json parse error: "),
        ('{"APIVERSION": "v1", "KIND": "Node"}', 'p.json: no kind "Node" is registered for version "v1"'),
        ('{"apiVersion": 1}', "p.json: couldn't get version/kind; json parse error: apiVersion: expected a string, got 1"),
        ('{"kind": ["Policy"]}', "p.json: couldn't get version/kind; json parse error: kind: expected a string, got [\"Policy\"]"),
    ],
)
def test_kind_and_version_errors(text: str, message: str) -> None:
    assert _raises(text).startswith(message)


def test_decode_error_keeps_upstream_detail_separately() -> None:
    with pytest.raises(PolicyDecodeError) as info:
        load_policy('{"apiVersion": "v1", "kind": "Pod"}', "policy.json")
    error = info.value
    assert isinstance(error, PolicyError)
    assert (error.source, error.field, error.detail) == ("policy.json", None, 'no kind "Pod" is registered for version "v1"')


# ------------------------------------------------------------------------------------------------
# Key matching, null, duplicates, unknown keys


def test_keys_match_case_insensitively_at_every_level() -> None:
    text = """{"KIND": "Policy", "ApiVersion": "v1",
      "PREDICATES": [{"NAME": "RequireZone", "Argument": {"LABELSPRESENCE": {"Labels": ["zone"], "PRESENCE": true}}},
                     {"nAmE": "Region", "ARGUMENT": {"serviceaffinity": {"LABELS": ["region"]}}}],
      "Priorities": [{"Name": "RackSpread", "WEIGHT": 3, "argument": {"ServiceAntiAffinity": {"LABEL": "rack"}}},
                     {"name": "SSD", "Weight": 2, "Argument": {"LABELPREFERENCE": {"Label": "ssd", "Presence": true}}}],
      "EXTENDERS": [{"URLPREFIX": "http://e", "FilterVerb": "f", "PRIORITIZEVERB": "p", "Weight": 2,
                     "BINDVERB": "b", "ENABLEHTTPS": true, "TLSCONFIG": {"insecure": true, "servername": "s",
                     "cafile": "/ca"}, "HTTPTIMEOUT": 7, "NodeCacheCapable": true}],
      "HARDPODAFFINITYSYMMETRICWEIGHT": 5}"""
    policy = load_policy(text)
    assert policy == Policy(
        predicates=[
            PredicatePolicy("RequireZone", PredicateArgument(labels_presence=LabelsPresenceArgs(["zone"], True))),
            PredicatePolicy("Region", PredicateArgument(service_affinity=ServiceAffinityArgs(["region"]))),
        ],
        priorities=[
            PriorityPolicy("RackSpread", 3, PriorityArgument(service_anti_affinity=ServiceAntiAffinityArgs("rack"))),
            PriorityPolicy("SSD", 2, PriorityArgument(label_preference=LabelPreferenceArgs("ssd", True))),
        ],
        extenders=[ExtenderConfig(
            url_prefix="http://e", filter_verb="f", prioritize_verb="p", weight=2, bind_verb="b",
            enable_https=True, tls_config=TLSConfig(insecure=True, server_name="s", ca_file="/ca"),
            http_timeout_ns=7, node_cache_capable=True,
        )],
        hard_pod_affinity_symmetric_weight=5,
    )
    assert policy.ignored_keys == ()


def test_internal_form_keys_match_case_insensitively() -> None:
    policy = load_policy('{"ExtenderConfigs": [{"URLPrefix": "http://x", "EnableHTTPS": true, "HTTPTimeout": 9}]}')
    assert policy.extenders == [ExtenderConfig(url_prefix="http://x", enable_https=True, http_timeout_ns=9)]


def test_null_is_absent_for_lists_and_arguments() -> None:
    text = """{"apiVersion": "v1", "predicates": null, "priorities": null, "extenders": null}"""
    assert load_policy(text) == Policy()
    entries = """{"apiVersion": "v1",
      "predicates": [{"name": "A1", "argument": null}],
      "priorities": [{"name": "B1", "weight": 1, "argument": null}],
      "extenders": [{"urlPrefix": "u", "tlsConfig": null}]}"""
    assert load_policy(entries) == Policy(
        predicates=[PredicatePolicy("A1")], priorities=[PriorityPolicy("B1", 1)], extenders=[ExtenderConfig("u")],
    )


def test_argument_members_may_be_null() -> None:
    policy = load_policy('{"predicates": [{"name": "A1", "argument": {"serviceAffinity": null, "labelsPresence": {}}}]}')
    assert policy.predicates == [PredicatePolicy("A1", PredicateArgument(labels_presence=LabelsPresenceArgs([], False)))]


def test_empty_lists_are_kept_distinct_from_absent() -> None:
    policy = load_policy('{"apiVersion": "v1", "predicates": [], "priorities": [], "extenders": []}')
    assert (policy.predicates, policy.priorities, policy.extenders) == ([], [], [])
    assert policy != Policy()


def test_duplicate_keys_last_one_wins() -> None:
    policy = load_policy('{"predicates": [{"name": "A1"}], "Predicates": [{"name": "B1"}, {"name": "C1", "NAME": "D1"}]}')
    assert policy.predicate_names() == ["B1", "D1"]


def test_repeated_object_key_is_merged_into_the_earlier_one() -> None:
    text = """{"predicates": [{"name": "X1",
        "argument": {"serviceAffinity": {"labels": ["a"]}},
        "Argument": {"labelsPresence": {"labels": ["b"]}}}]}"""
    argument = load_policy(text).predicates[0].argument
    assert argument == PredicateArgument(ServiceAffinityArgs(["a"]), LabelsPresenceArgs(["b"], False))
    assert argument.num_args() == 2
    reset = '{"predicates": [{"name": "X1", "argument": {"serviceAffinity": {}}, "argument": null}]}'
    assert load_policy(reset).predicates == [PredicatePolicy("X1")]


def test_unknown_keys_are_ignored_and_recorded() -> None:
    text = """{"apiVersion": "v1", "prioritys": [], "alwaysCheckAllPredicates": true,
      "predicates": [{"name": "A1", "argumnt": {}}],
      "priorities": [{"name": "B1", "weight": 1, "argument": {"labelPreference": {"label": "l", "x": 1}}}]}"""
    policy = load_policy(text)
    assert policy.predicates == [PredicatePolicy("A1")]
    assert policy.ignored_keys == (
        "prioritys", "alwaysCheckAllPredicates", "predicates[0].argumnt", "priorities[0].argument.labelPreference.x",
    )


def test_tls_byte_fields_are_base64() -> None:
    text = """{"apiVersion": "v1", "extenders": [{"urlPrefix": "https://e", "enableHttps": true,
      "tlsConfig": {"CertFile": "/c", "KeyFile": "/k", "CertData": "Y2VydA==", "keydata": "a2V5",
                    "CAData": "Y2\\nE="}}]}"""
    tls = load_policy(text).extenders[0].tls_config
    assert tls == TLSConfig(cert_file="/c", key_file="/k", cert_data=b"cert", key_data=b"key", ca_data=b"ca")
    assert tls.to_dict() == {"CertFile": "/c", "KeyFile": "/k", "CertData": "Y2VydA==", "KeyData": "a2V5", "CAData": "Y2E="}


def test_invalid_base64_names_the_field() -> None:
    text = '{"apiVersion": "v1", "extenders": [{"urlPrefix": "u", "tlsConfig": {"CAData": "not base64!"}}]}'
    assert _raises(text).startswith("p.json: extenders[0].tlsConfig.CAData: invalid base64 data: ")


# ------------------------------------------------------------------------------------------------
# Type errors and malformed input


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"predicates": {"name": "A"}}', 'policy.json: predicates: expected an array or null, got {"name": "A"}'),
        ('{"predicates": ["GeneralPredicates"]}', 'policy.json: predicates[0]: expected an object, got "GeneralPredicates"'),
        ('{"predicates": [{"name": 7}]}', "policy.json: predicates[0].name: expected a string, got 7"),
        ('{"predicates": [{"argument": {}}]}', "policy.json: predicates[0].name: required field is missing"),
        ('{"predicates": [{"name": null}]}', "policy.json: predicates[0].name: expected a string, got null"),
        ('{"predicates": [{"name": "A1", "argument": {"labelsPresence": {"labels": "zone"}}}]}',
         'policy.json: predicates[0].argument.labelsPresence.labels: expected an array or null, got "zone"'),
        ('{"predicates": [{"name": "A1", "argument": {"labelsPresence": {"labels": ["a", 1]}}}]}',
         "policy.json: predicates[0].argument.labelsPresence.labels[1]: expected a string, got 1"),
        ('{"predicates": [{"name": "A1", "argument": {"labelsPresence": {"presence": "true"}}}]}',
         'policy.json: predicates[0].argument.labelsPresence.presence: expected a boolean, got "true"'),
        ('{"predicates": [{"name": "A1", "argument": {"serviceAffinity": ["region"]}}]}',
         'policy.json: predicates[0].argument.serviceAffinity: expected an object or null, got ["region"]'),
        ('{"priorities": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}, {"name": "c", "weight": "2"}]}',
         'policy.json: priorities[2].weight: expected an integer, got "2"'),
        ('{"priorities": [{"name": "a", "weight": true}]}', "policy.json: priorities[0].weight: expected an integer, got true"),
        ('{"priorities": [{"name": "a", "weight": 2.0}]}', "policy.json: priorities[0].weight: expected an integer, got 2.0"),
        ('{"priorities": [{"name": "a", "weight": 2.5}]}', "policy.json: priorities[0].weight: expected an integer, got 2.5"),
        ('{"priorities": [{"name": "a", "weight": 1e3}]}', "policy.json: priorities[0].weight: expected an integer, got 1000.0"),
        ('{"priorities": [{"name": "a", "weight": 9223372036854775808}]}',
         "policy.json: priorities[0].weight: expected an integer, got 9223372036854775808 (outside the 64-bit integer range)"),
        ('{"priorities": [{"name": "a", "weight": 1, "argument": {"serviceAntiAffinity": {"label": ["rack"]}}}]}',
         'policy.json: priorities[0].argument.serviceAntiAffinity.label: expected a string, got ["rack"]'),
        ('{"priorities": [{"name": "a", "weight": 1, "argument": {"labelPreference": {"presence": 1}}}]}',
         "policy.json: priorities[0].argument.labelPreference.presence: expected a boolean, got 1"),
        ('{"hardPodAffinitySymmetricWeight": "10"}', 'policy.json: hardPodAffinitySymmetricWeight: expected an integer, got "10"'),
        ('{"extenderConfigs": [{"urlPrefix": 5}]}', "policy.json: extenderConfigs[0].urlPrefix: expected a string, got 5"),
        ('{"apiVersion": "v1", "extenders": [{"urlPrefix": "u", "httpTimeout": "5s"}]}',
         'policy.json: extenders[0].httpTimeout: expected an integer, got "5s"'),
        ('{"apiVersion": "v1", "extenders": [{"urlPrefix": "u", "enableHttps": "yes"}]}',
         'policy.json: extenders[0].enableHttps: expected a boolean, got "yes"'),
        ('{"apiVersion": "v1", "extenders": [{"urlPrefix": "u", "tlsConfig": {"insecure": "true"}}]}',
         'policy.json: extenders[0].tlsConfig.Insecure: expected a boolean, got "true"'),
        ('{"apiVersion": "v1", "extenders": [{"urlPrefix": "u", "BindVerb": false}]}',
         "policy.json: extenders[0].bindVerb: expected a string, got false"),
    ],
)
def test_type_errors_name_source_and_field_path(text: str, message: str) -> None:
    assert _raises(text, "policy.json") == message


def test_first_error_in_document_order_is_reported() -> None:
    text = '{"priorities": [{"name": "a", "weight": "x"}], "predicates": [{"name": 1}]}'
    assert _raises(text) == 'p.json: priorities[0].weight: expected an integer, got "x"'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "p.json: couldn't get version/kind; json parse error: unexpected end of JSON input"),
        ("  \n", "p.json: couldn't get version/kind; json parse error: unexpected end of JSON input"),
        ("[]", "p.json: couldn't get version/kind; json parse error: expected a JSON object at the top level, got array"),
        ('"Policy"', "p.json: couldn't get version/kind; json parse error: expected a JSON object at the top level, got string"),
        ("42", "p.json: couldn't get version/kind; json parse error: expected a JSON object at the top level, got number"),
        ("null", "p.json: couldn't get version/kind; json parse error: expected a JSON object at the top level, got null"),
        ('{"kind": "Policy",',
         "p.json: couldn't get version/kind; json parse error: Expecting property name enclosed in double quotes "
         "at line 1, column 19"),
        ("just words", "p.json: couldn't get version/kind; json parse error: Expecting value at line 1, column 1"),
    ],
)
def test_malformed_documents(text: str, message: str) -> None:
    assert _raises(text) == message


@pytest.mark.parametrize(
    ("text", "source", "message"),
    [
        # The format a file is in: its extension, else its first non-blank character.
        ("kind: Policy\npredicates: [", "p.yaml",
         "p.yaml: invalid YAML: unexpected end of the file at line 2, column 14"),
        ("kind: Policy\npredicates:\n- name: A\n  weight: 1\n weight: 2\n", "policy.yaml",
         "policy.yaml: invalid YAML: bad indentation at line 5, column 2 (in the mapping that starts at line 1, "
         "column 1)"),
        ("kind: Policy\npriorities:\n  - name: A\n    weight: 1\n   - name: B\n", "ConfigMap kube-system/p",
         "ConfigMap kube-system/p: invalid YAML: bad indentation at line 5, column 4 (in the list that starts at "
         "line 3, column 3)"),
        ("kind: Policy\n\tpredicates: []\n", "p.yml",
         "p.yml: invalid YAML: a tab character (YAML indents with spaces) at line 2, column 1"),
        ("kind: Policy\npredicates: name: A\n", "<policy>",
         "<policy>: invalid YAML: unexpected ':' (check the indentation, or quote a value that contains ': ') at "
         "line 2, column 17"),
        ('  {"kind": "Policy", "predicates": [}', "ConfigMap kube-system/p",
         "ConfigMap kube-system/p: couldn't get version/kind; json parse error: Expecting value at line 1, column 37"),
        ("kind: Policy\npredicates: [", "p.json",
         "p.json: couldn't get version/kind; json parse error: Expecting value at line 1, column 1"),
        ("- name: GeneralPredicates\n", "p.yaml",
         "p.yaml: couldn't get version/kind; expected a YAML mapping at the top level, got a list"),
        ("just words", "p.yaml",
         "p.yaml: couldn't get version/kind; expected a YAML mapping at the top level, got \"just words\""),
        ("# nothing\n", "p.yaml",
         "p.yaml: couldn't get version/kind; expected a YAML mapping at the top level, got nothing"),
    ],
)
def test_malformed_documents_in_the_format_they_are_in(text: str, source: str, message: str) -> None:
    assert _raises(text, source) == message




def test_default_source_name() -> None:
    with pytest.raises(PolicyError, match=r"^<policy>: predicates\[0\]\.name: expected a string, got 1$"):
        load_policy('{"predicates": [{"name": 1}]}')


# ------------------------------------------------------------------------------------------------
# YAML (extension)

ALL_ARGUMENTS_JSON = """{
  "kind": "Policy", "apiVersion": "v1",
  "predicates": [
    {"name": "GeneralPredicates"},
    {"name": "RegionAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
    {"name": "RequireZoneLabel", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
    {"name": "AvoidRetiring", "argument": {"labelsPresence": {"labels": ["retiring"], "presence": false}}}
  ],
  "priorities": [
    {"name": "LeastRequestedPriority", "weight": 1},
    {"name": "RackSpread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "rack"}}},
    {"name": "PreferSSD", "weight": 2, "argument": {"labelPreference": {"label": "ssd", "presence": true}}}
  ],
  "extenders": [{"urlPrefix": "http://e", "BindVerb": "bind", "httpTimeout": 5000000000,
                 "tlsConfig": {"CAData": "Y2E="}}],
  "hardPodAffinitySymmetricWeight": 3
}"""

ALL_ARGUMENTS_YAML = """
kind: Policy
apiVersion: v1
predicates:
- name: GeneralPredicates
- name: RegionAffinity
  argument: {serviceAffinity: {labels: [region]}}
- name: RequireZoneLabel
  argument:
    labelsPresence:
      labels: [zone]
      presence: true
- name: AvoidRetiring
  argument:
    labelsPresence: {labels: [retiring], presence: false}
priorities:
- {name: LeastRequestedPriority, weight: 1}
- name: RackSpread
  weight: 3
  argument: {serviceAntiAffinity: {label: rack}}
- name: PreferSSD
  weight: 2
  argument: {labelPreference: {label: ssd, presence: true}}
extenders:
- urlPrefix: http://e
  bindverb: bind
  httpTimeout: 5000000000
  tlsConfig: {CAData: Y2E=}
hardPodAffinitySymmetricWeight: 3
"""


def test_yaml_decodes_like_json() -> None:
    from_json = load_policy(ALL_ARGUMENTS_JSON, "a.json")
    from_yaml = load_policy(ALL_ARGUMENTS_YAML, "a.yaml")
    assert from_yaml == from_json
    assert from_yaml.source == "a.yaml"
    assert from_yaml.extenders[0].tls_config == TLSConfig(ca_data=b"ca")


def test_yaml_quirks_apply_too() -> None:
    policy = load_policy("kind: Policy\nextenders:\n- urlPrefix: u\nExtenderConfigs:\n- urlPrefix: v\n")
    assert policy.extenders == [ExtenderConfig("v")]
    assert policy.ignored_keys == ("extenders",)


def test_yaml_type_errors_name_the_field() -> None:
    text = "apiVersion: v1\npriorities:\n- name: A1\n  weight: '2'\n"
    assert _raises(text, "p.yaml") == 'p.yaml: priorities[0].weight: expected an integer, got "2"'
    dated = "predicates:\n- name: 2018-01-01\n"
    assert _raises(dated, "p.yaml") == "p.yaml: predicates[0].name: expected a string, got 2018-01-01 (date)"


def test_yaml_non_string_keys_are_ignored() -> None:
    policy = load_policy("predicates: []\n1: x\n")
    assert policy.predicates == []
    assert policy.ignored_keys == ("1",)


def test_policy_from_dict_uses_the_same_rules() -> None:
    policy = policy_from_dict({"Predicates": [{"Name": "A1"}], "extenders": [{"urlPrefix": "u"}]}, "case")
    assert policy == Policy(predicates=[PredicatePolicy("A1")])
    assert policy.ignored_keys == ("extenders",)
    with pytest.raises(PolicyDecodeError, match=r"^case: priorities\[0\]\.weight: expected an integer, got \"1\"$"):
        policy_from_dict({"priorities": [{"name": "a", "weight": "1"}]}, "case")


# ------------------------------------------------------------------------------------------------
# Files and ConfigMaps (policy.md §6.3)


def test_load_policy_file_uses_path_as_source(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text('{"kind": "Policy", "apiVersion": "v1", "priorities": [{"name": "A1", "weight": "1"}]}')
    with pytest.raises(PolicyDecodeError) as info:
        load_policy_file(path)
    assert str(info.value) == f'{path}: priorities[0].weight: expected an integer, got "1"'
    assert info.value.detail == 'expected an integer, got "1"'
    path.write_text('{"kind": "Policy", "apiVersion": "v1", "predicates": []}')
    policy = load_policy_file(str(path))
    assert policy.predicates == [] and policy.source == str(path)


def test_missing_policy_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(PolicyError, match=r"^missing policy config file .*nope\.json: no such file$"):
        load_policy_file(missing)
    with pytest.raises(PolicyError) as info:
        load_policy_file("")
    assert str(info.value) == "missing policy config file "


def test_unreadable_policy_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as info:
        load_policy_file(tmp_path)
    assert str(info.value) == f"couldn't read policy config: {tmp_path}: Is a directory"


def test_configmap() -> None:
    configmap = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"namespace": "kube-system", "name": "scheduler-policy"},
        "data": {"policy.cfg": '{"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "GeneralPredicates"}]}'},
    }
    policy = load_policy_from_configmap(configmap)
    assert policy.predicate_names() == ["GeneralPredicates"]
    assert policy.source == "ConfigMap kube-system/scheduler-policy"


def test_configmap_as_client_object() -> None:
    metadata = SimpleNamespace(namespace="kube-system", name="policy")
    configmap = SimpleNamespace(metadata=metadata, data={"policy.cfg": "predicates: []"})
    policy = load_policy_from_configmap(configmap)
    assert policy.predicates == [] and policy.source == "ConfigMap kube-system/policy"


def test_configmap_decode_error_names_the_configmap() -> None:
    configmap = {"metadata": {"namespace": "ns", "name": "cm"}, "data": {"policy.cfg": '{"predicates": 1}'}}
    with pytest.raises(PolicyDecodeError) as info:
        load_policy_from_configmap(configmap)
    assert str(info.value) == "ConfigMap ns/cm: predicates: expected an array or null, got 1"
    with pytest.raises(PolicyDecodeError, match=r"^my-source: predicates:"):
        load_policy_from_configmap(configmap, "my-source")


@pytest.mark.parametrize("data", [None, {}, {"policy": "{}"}])
def test_configmap_without_policy_key(data: dict | None) -> None:
    configmap = {"metadata": {"namespace": "kube-system", "name": "p"}, "data": data}
    with pytest.raises(PolicyDecodeError) as info:
        load_policy_from_configmap(configmap)
    assert info.value.detail == 'missing policy config map value at key "policy.cfg"'
    assert str(info.value) == 'ConfigMap kube-system/p: missing policy config map value at key "policy.cfg"'


def test_configmap_value_must_be_a_string() -> None:
    with pytest.raises(PolicyDecodeError) as info:
        load_policy_from_configmap({"metadata": {"name": "p"}, "data": {"policy.cfg": {"kind": "Policy"}}})
    assert str(info.value) == 'ConfigMap /p: data.policy.cfg: expected a string, got {"kind": "Policy"}'


# ------------------------------------------------------------------------------------------------
# Canonical form and round trips


def test_to_dict_canonical_form() -> None:
    policy = Policy(
        predicates=[PredicatePolicy("A1", PredicateArgument(labels_presence=LabelsPresenceArgs(["z"])))],
        priorities=[PriorityPolicy("B1", 0)],
        extenders=[ExtenderConfig("http://e", bind_verb="bind", tls_config=TLSConfig())],
    )
    assert policy.to_dict() == {
        "kind": "Policy", "apiVersion": "v1",
        "predicates": [{"name": "A1", "argument": {"labelsPresence": {"labels": ["z"], "presence": False}}}],
        "priorities": [{"name": "B1", "weight": 0}],
        "extenders": [{"urlPrefix": "http://e", "bindVerb": "bind", "tlsConfig": {}}],
    }
    assert Policy().to_dict() == {"kind": "Policy", "apiVersion": "v1"}


def test_round_trip_of_every_field() -> None:
    policy = load_policy(ALL_ARGUMENTS_JSON)
    assert load_policy(json.dumps(policy.to_dict())) == policy


def test_internal_form_round_trips_through_v1() -> None:
    policy = load_policy('{"extenderConfigs": [{"urlPrefix": "u", "weight": 2, "prioritizeVerb": "p"}]}')
    again = load_policy(json.dumps(policy.to_dict()))
    assert again == policy and again.extenders == [ExtenderConfig("u", prioritize_verb="p", weight=2)]


def test_source_and_ignored_keys_do_not_affect_equality() -> None:
    assert load_policy('{"x": 1}', "a") == load_policy("{}", "b")


POLICY_FILES = sorted(path for path in POLICIES.iterdir() if path.suffix in (".json", ".yaml"))


def test_policy_examples_exist() -> None:
    names = {path.name for path in POLICY_FILES}
    assert {"default-provider.json", "cluster-autoscaler-provider.json", "all-arguments.yaml",
            "with-extender.json", "upstream-example.json"} <= names


@pytest.mark.parametrize("path", POLICY_FILES, ids=lambda path: path.name)
def test_policy_example_loads_validates_and_round_trips(path: Path) -> None:
    policy = load_policy_file(path)
    assert check_policy(policy) == []
    assert policy.ignored_keys == ()
    again = load_policy(json.dumps(policy.to_dict()), "round-trip")
    assert again == policy


def test_default_provider_example_matches_provider_keys() -> None:
    policy = load_policy_file(POLICIES / "default-provider.json")
    assert set(policy.predicate_names()) == {
        "CheckNodeCondition", "CheckNodeDiskPressure", "CheckNodeMemoryPressure", "CheckVolumeBinding",
        "GeneralPredicates", "MatchInterPodAffinity", "MaxAzureDiskVolumeCount", "MaxEBSVolumeCount",
        "MaxGCEPDVolumeCount", "NoDiskConflict", "NoVolumeZoneConflict", "PodToleratesNodeTaints",
    }
    assert policy.priority_weights() == {
        "SelectorSpreadPriority": 1, "InterPodAffinityPriority": 1, "LeastRequestedPriority": 1,
        "BalancedResourceAllocation": 1, "NodePreferAvoidPodsPriority": 10000, "NodeAffinityPriority": 1,
        "TaintTolerationPriority": 1,
    }
    autoscaler = load_policy_file(POLICIES / "cluster-autoscaler-provider.json")
    assert autoscaler.predicates == policy.predicates
    weights = autoscaler.priority_weights()
    assert "LeastRequestedPriority" not in weights and weights["MostRequestedPriority"] == 1


def test_with_extender_example() -> None:
    extender = load_policy_file(POLICIES / "with-extender.json").extenders[0]
    assert extender.url_prefix == "http://127.0.0.1:12346/scheduler"
    assert (extender.filter_verb, extender.prioritize_verb, extender.weight) == ("filter", "prioritize", 5)
    assert extender.http_timeout_ns == 3_000_000_000


def test_all_arguments_example_uses_every_argument_kind() -> None:
    policy = load_policy_file(POLICIES / "all-arguments.yaml")
    predicate_args = [entry.argument for entry in policy.predicates if entry.argument]
    priority_args = [entry.argument for entry in policy.priorities if entry.argument]
    assert any(arg.service_affinity for arg in predicate_args)
    assert {arg.labels_presence.presence for arg in predicate_args if arg.labels_presence} == {True, False}
    assert any(arg.service_anti_affinity for arg in priority_args)
    assert any(arg.label_preference for arg in priority_args)
    assert "GeneralPredicates" in policy.predicate_names()


# ------------------------------------------------------------------------------------------------
# The schema itself


def test_schema_is_valid_draft_2020_12_and_accepts_canonical_documents() -> None:
    schema = policy_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in POLICY_FILES:
        validator.validate(load_policy_file(path).to_dict())
    validator.validate(json.loads(ALL_ARGUMENTS_JSON.replace('"BindVerb"', '"bindVerb"')))
    errors = list(validator.iter_errors({"priorities": [{"weight": 1}]}))
    assert [error.message for error in errors] == ["'name' is a required property"]
