"""Node declared features, the model side (``model/node_features.py``): upstream 1.36.3's
``k8s.io/component-helpers/nodedeclaredfeatures`` rows (``framework_test.go`` TestInferForPodScheduling,
``featureset_test.go`` TestFeatureMapper's TryMap, ``restart_all_containers_test.go``,
``features/registry.go``), ``util/version``'s comparison, and ``validation_test.go``
TestValidateNodeDeclaredFeatures on ``status.declaredFeatures``."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.errors import ObjectError
from policy_scheduler.features import Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.node_features import (
    FEATURES,
    RESTART_ALL_CONTAINERS,
    SCHEDULER_VERSION,
    USER_NAMESPACES_HOST_NETWORK,
    Feature,
    Version,
    infer_for_pod_scheduling,
    known,
    required_features,
)
from policy_scheduler.model.pod import Pod


# -- the registry ---------------------------------------------------------------------------------------
def test_registry_is_1_36s_five_features_sorted_without_max_version():
    """``features.AllFeatures``, sorted by name (``nodedeclaredfeatures.New``); none bounded by a version."""
    assert [f.name for f in FEATURES] == [
        "ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits",
        "UserNamespacesHostNetworkSupport"]
    assert all(f.max_version is None for f in FEATURES)
    assert SCHEDULER_VERSION == Version.parse("1.36.3")


def restart_all_container() -> dict[str, Any]:
    """``containerWithRestartAllContainersAction``."""
    return {"name": "container", "image": "image", "restartPolicy": "Never",
            "restartPolicyRules": [{"action": "RestartAllContainers",
                                    "exitCodes": {"operator": "In", "values": [1]}}]}


PLAIN = {"name": "name", "image": "image"}


# restart_all_containers_test.go TestInferForScheduling, then the other features' rules.
@pytest.mark.parametrize("spec, expected", [
    ({"initContainers": [restart_all_container()], "containers": [PLAIN]}, {RESTART_ALL_CONTAINERS}),
    ({"initContainers": [PLAIN], "containers": [restart_all_container()]}, {RESTART_ALL_CONTAINERS}),
    ({"initContainers": [PLAIN], "containers": [{**PLAIN, "name": "name2"}]}, set()),
    # a rule of the other action needs nothing
    ({"containers": [{**restart_all_container(), "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}]}]}, set()),
    # ephemeral containers carry no rules that count
    ({"containers": [PLAIN], "ephemeralContainers": [restart_all_container()]}, set()),
    # usernamespaceshostnetwork: host network in a user namespace
    ({"containers": [PLAIN], "hostNetwork": True, "hostUsers": False}, {USER_NAMESPACES_HOST_NETWORK}),
    ({"containers": [PLAIN], "hostNetwork": True}, set()),  # hostUsers unset is not false
    ({"containers": [PLAIN], "hostNetwork": True, "hostUsers": True}, set()),
    ({"containers": [PLAIN], "hostUsers": False}, set()),
    ({"containers": [restart_all_container()], "hostNetwork": True, "hostUsers": False},
     {RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK}),
    # the update-only features (pod-level resources, init container resize) infer nothing for scheduling
    ({"containers": [PLAIN], "resources": {"requests": {"cpu": "500m"}},
      "initContainers": [{**PLAIN, "resources": {"requests": {"cpu": "1"}}}]}, set()),
])
def test_infer_for_pod_scheduling_of_the_registered_features(spec, expected):
    assert infer_for_pod_scheduling(spec) == expected
    raw = {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}
    assert required_features(Pod(raw)) == expected
    assert required_features(Pod(raw, Rules.V1_9)) == set()  # 1.9 knew neither field


def _level_resources(spec: dict[str, Any]) -> bool:
    return spec.get("resources") is not None


WITH = {"resources": {"requests": {"cpu": "500m"}}}


# framework_test.go TestInferForPodScheduling (a mock feature inferring from pod-level resources).
@pytest.mark.parametrize("max_version, spec, target, expected", [
    (None, WITH, "1.30.0", {"PodLevelResources"}),  # pod with feature
    (None, {}, "1.30.0", set()),  # pod without feature
    ("1.30.0", WITH, "1.31.0", set()),  # universally available
    ("1.30.0", WITH, "0.0.0-alpha.2.39+049eafd34dfbd2", {"PodLevelResources"}),  # pre-release target
    ("1.30.0", WITH, "1.40.0", set()),  # exceeds max version
    ("1.30.0", WITH, "1.30.0", {"PodLevelResources"}),  # MaxVersion is inclusive
])
def test_infer_for_pod_scheduling_version_rules(max_version, spec, target, expected):
    feature = Feature("PodLevelResources", _level_resources,
                      Version.parse(max_version) if max_version else None)
    assert infer_for_pod_scheduling(spec, Version.parse(target), (feature,)) == expected


def test_infer_for_pod_scheduling_needs_a_target_version():
    with pytest.raises(ValueError, match="target version cannot be nil"):
        infer_for_pod_scheduling(WITH, None, (Feature("PodLevelResources", _level_resources),))


# TestDiscoverNodeFeatures' max-version rows, on the scheduler's side: past 1.38 the feature no longer counts.
@pytest.mark.parametrize("target, counts", [
    ("1.38.0", True), ("1.39.0", False), ("1.39.0-alpha.2.39+049eafd34dfbd2", False), ("1.38.0-rc.1", True),
    ("v1.36.3+openshift.7b29fb077260", True),
])
def test_max_version_gating(target, counts):
    feature = Feature("F", lambda spec: True, Version.parse("1.38.0"))
    assert bool(infer_for_pod_scheduling({}, Version.parse(target), (feature,))) is counts


# util/version: Parse (semantic, else generic) and compareInternal.
@pytest.mark.parametrize("a, b, sign", [
    ("1.36.3", "1.36.3", 0), ("v1.36.3", "1.36.3", 0), ("1.36", "1.36.0", 0), ("1.36.0.0", "1.36.0", 0),
    ("1.37.0", "1.36.9", 1), ("1.36.10", "1.36.9", 1), ("1.36.0-alpha.1", "1.36.0", -1),
    ("1.36.0-alpha.2", "1.36.0-alpha.10", -1), ("1.36.0-beta.0", "1.36.0-alpha.10", 1),
    ("1.36.0-alpha", "1.36.0-alpha.1", -1), ("1.36.0+build", "1.36.0", 0),
    ("1.36.0-rc.1", "1.36", 0),  # a generic version ignores the pre-release
    ("1.36.1.2", "1.36.1", 1),
])
def test_version_comparison(a, b, sign):
    assert Version.parse(a).compare(Version.parse(b)) == sign
    assert Version.parse(b).compare(Version.parse(a)) == -sign


@pytest.mark.parametrize("text", ["", "1", "v", "01.2.3", "one.two"])
def test_version_parse_errors(text):
    with pytest.raises(ValueError):
        Version.parse(text)


# featureset_test.go TestFeatureMapper (TryMap): unknown names are dropped.
@pytest.mark.parametrize("declared, expected", [
    ([], set()), (["RestartAllContainersOnContainerExits"], {"RestartAllContainersOnContainerExits"}),
    (["Aardvark", "RestartAllContainersOnContainerExits", "Zebra/sub"], {"RestartAllContainersOnContainerExits"}),
    (["ExtendWebSocketsToKubelet", "UserNamespacesHostNetworkSupport"],
     {"ExtendWebSocketsToKubelet", "UserNamespacesHostNetworkSupport"}),
])
def test_known_features(declared, expected):
    assert known(declared) == expected


# -- the node: status.declaredFeatures -----------------------------------------------------------------
def node(declared: Any) -> dict[str, Any]:
    return {"metadata": {"name": "test-node"}, "status": {"declaredFeatures": declared}}


@pytest.mark.parametrize("declared", [None, [], ["AnotherFeature", "MyFeature", "MyFeature/SubFeature"],
                                      ["F" + "e" * 252]])
def test_valid_declared_features(declared):
    assert Node(node(declared)).declared_features == frozenset(declared or ())


INVALID_NAME = ("must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., "
                "MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes")


# validation_test.go TestValidateNodeDeclaredFeatures, each with its message (the first error).
@pytest.mark.parametrize("declared, message", [
    (["MyFeature", "MyFeature"], 'status.declaredFeatures[1]: Duplicate value: "MyFeature"'),
    (["MyFeature", "AnotherFeature"],
     'status.declaredFeatures[1]: Invalid value: "AnotherFeature": list must be sorted alphabetically'),
    (["AnotherFeature", "invalid", "MyFeature"],
     f'status.declaredFeatures[1]: Invalid value: "invalid": invalid feature name "invalid": {INVALID_NAME}'),
    (["myFeature"],
     f'status.declaredFeatures[0]: Invalid value: "myFeature": invalid feature name "myFeature": {INVALID_NAME}'),
    (["Feature-name"], f'status.declaredFeatures[0]: Invalid value: "Feature-name": invalid feature name '
                       f'"Feature-name": {INVALID_NAME}'),
    (["FeatureA/"],
     f'status.declaredFeatures[0]: Invalid value: "FeatureA/": invalid feature name "FeatureA/": {INVALID_NAME}'),
    (["F" + "e" * 253], 'status.declaredFeatures[0]: Invalid value: "F' + "e" * 253 + '": invalid feature name "F'
     + "e" * 253 + '": must be no more than 253 characters'),
    ("MyFeature", "status.declaredFeatures: expected a list, got \"MyFeature\""),
    ([1], "status.declaredFeatures[0]: expected a string, got 1"),
])
def test_invalid_declared_features(declared, message):
    with pytest.raises(ObjectError) as err:
        Node(node(declared))
    assert str(err.value) == f"Node test-node: {message}"


# -- the pod: the fields the inference reads --------------------------------------------------------------
@pytest.mark.parametrize("spec, message", [
    ({"containers": [{**PLAIN, "restartPolicyRules": "RestartAllContainers"}]},
     'spec.containers[0].restartPolicyRules: expected a list, got "RestartAllContainers"'),
    ({"containers": [{**PLAIN, "restartPolicyRules": ["x"]}]},
     'spec.containers[0].restartPolicyRules[0]: expected an object, got "x"'),
    ({"initContainers": [{**PLAIN, "restartPolicyRules": [{"action": 1}]}], "containers": [PLAIN]},
     "spec.initContainers[0].restartPolicyRules[0].action: expected a string, got 1"),
    ({"containers": [{**PLAIN, "restartPolicyRules": [{"action": "RestartPod"}]}]},
     'spec.containers[0].restartPolicyRules[0].action: Unsupported value: "RestartPod": supported values: '
     '"Restart", "RestartAllContainers"'),
    ({"containers": [PLAIN], "hostUsers": "false"}, 'spec.hostUsers: expected a boolean, got "false"'),
    ({"containers": [PLAIN], "hostNetwork": 1}, "spec.hostNetwork: expected a boolean, got 1"),
])
def test_pod_fields_the_inference_reads_are_checked(spec, message):
    with pytest.raises(ObjectError) as err:
        Pod({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    assert str(err.value) == f"Pod ns/p: {message}"
