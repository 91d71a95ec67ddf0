"""The opt-in extender fields of a Policy (not in 1.9): ``managedResources`` (1.10) and ``ignorable``."""

from __future__ import annotations

import json

import pytest

from policy_scheduler.api import ExtenderConfig, ExtenderManagedResource, load_policy, validate_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.errors import PolicyError
from policy_scheduler.factory import create_from_policy


def _policy(**extender):
    return load_policy(json.dumps({"apiVersion": "v1", "kind": "Policy",
                                   "extenders": [{"urlPrefix": "http://127.0.0.1:1/x", **extender}]}))


def test_decoded_case_insensitively_and_round_trip():
    policy = _policy(ManagedResources=[{"Name": "example.com/gpu", "ignoredbyscheduler": True},
                                       {"name": "example.com/fpga"}], Ignorable=True)
    config = policy.extenders[0]
    assert config.managed_resources == (ExtenderManagedResource("example.com/gpu", True),
                                        ExtenderManagedResource("example.com/fpga"))
    assert config.ignorable is True
    assert policy.ignored_keys == ()
    assert load_policy(json.dumps(policy.to_dict())) == policy
    assert policy.to_dict()["extenders"][0]["managedResources"] == [
        {"name": "example.com/gpu", "ignoredByScheduler": True}, {"name": "example.com/fpga"}]


def test_absent_fields_keep_1_9_behaviour():
    config = _policy().extenders[0]
    assert (config.managed_resources, config.ignorable) == (None, False)
    assert "managedResources" not in config.to_dict() and "ignorable" not in config.to_dict()


@pytest.mark.parametrize("extender, message", [
    ({"ignorable": "yes"}, 'extenders[0].ignorable: expected a boolean, got "yes"'),
    ({"managedResources": {"name": "a"}}, "extenders[0].managedResources: expected an array or null, got"),
    ({"managedResources": [{"ignoredByScheduler": True}]}, "extenders[0].managedResources[0].name: required field is missing"),
])
def test_shape_errors(extender, message):
    with pytest.raises(PolicyError) as exc:
        _policy(**extender)
    assert message in str(exc.value)


def test_validation_with_1_10_messages():
    policy = _policy(managedResources=[{"name": "example.com/gpu"}, {"name": "cpu"}, {"name": "example.com/gpu"},
                                       {"name": "Bad_Prefix/x"}])
    assert [(e.path, e.message) for e in validate_policy(policy)] == [
        ("extenders[0].managedResources[1].name", "cpu is an invalid extended resource name"),
        ("extenders[0].managedResources[2].name", "Duplicate extender managed resource name example.com/gpu"),
        ("extenders[0].managedResources[3].name",
         "prefix part a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
         "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ]
    with pytest.raises(PolicyError, match=r"^\[cpu is an invalid extended resource name, Duplicate"):
        create_from_policy(policy, cluster=ClusterState(), extender_factory=lambda c: c)


def test_managed_resources_across_extenders_must_be_distinct():
    config = ExtenderConfig("u", managed_resources=(ExtenderManagedResource("example.com/gpu"),))
    from policy_scheduler.api import Policy

    errors = validate_policy(Policy(extenders=[config, ExtenderConfig("v", managed_resources=config.managed_resources)]))
    assert [e.message for e in errors] == ["Duplicate extender managed resource name example.com/gpu"]
