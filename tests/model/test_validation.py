"""The API server's semantic rules at load time, each with its exact message (``model/validation.py``)."""

from __future__ import annotations

import pytest
import yaml

from policy_scheduler.errors import SnapshotError
from policy_scheduler.offline.snapshot import NO_CHECKS, load_snapshot

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
       "spec": {"containers": [{"name": "c", "image": "i"}]}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def with_(base: dict, path: str, value) -> dict:
    obj = yaml.safe_load(yaml.safe_dump(base))
    keys = path.split(".")
    parent = obj
    for key in keys[:-1]:
        parent = parent.setdefault(key, {}) if not key.isdigit() else parent[int(key)]
    if keys[-1].isdigit():
        parent[int(keys[-1])] = value
    else:
        parent[keys[-1]] = value
    return obj


SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "a"}}}


def container(**resources) -> list:
    return [{"name": "c", "image": "i", "resources": resources}]


CASES = [
    # labels
    (with_(POD, "metadata.labels", {"-bad": "x"}), "Pod ns/p: metadata.labels: Invalid value: '-bad': name part must "
     "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"),
    (with_(POD, "metadata.labels", {"app": "a b"}), "Pod ns/p: metadata.labels.app: Invalid value: 'a b': a valid label "
     "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
     "alphanumeric character"),
    (with_(POD, "metadata.labels", {"Example.com/app": "x"}),
     "Pod ns/p: metadata.labels: Invalid value: 'Example.com/app': prefix part must be a DNS-1123 subdomain"),
    (with_(NODE, "metadata.labels", {"a/b/c": "x"}), "Node n: metadata.labels: Invalid value: 'a/b/c': a qualified "
     "name must consist of an optional prefix and a name"),
    (with_(POD, "spec.nodeSelector", {"disk": "ssd!"}), "Pod ns/p: spec.nodeSelector.disk: Invalid value: 'ssd!'"),
    # containers and resources
    (with_(POD, "spec.containers", []), "Pod ns/p: spec.containers: Required value"),
    (with_(POD, "spec.containers", [{"image": "i"}]), "Pod ns/p: spec.containers[0].name: Required value"),
    (with_(POD, "spec.containers", container(requests={"cpu": "-1"})),
     "Pod ns/p: spec.containers[0].resources.requests.cpu: Invalid value: '-1': must be greater than or equal to 0"),
    (with_(POD, "spec.containers", container(limits={"memory": "-1Gi"})),
     "Pod ns/p: spec.containers[0].resources.limits.memory: Invalid value: '-1Gi': must be greater than or equal to 0"),
    (with_(POD, "spec.containers", container(requests={"cpu": "2"}, limits={"cpu": "1"})),
     "Pod ns/p: spec.containers[0].resources.requests.cpu: Invalid value: '2': must be less than or equal to cpu limit"),
    (with_(POD, "spec.containers", container(requests={"gpu": "1"})),
     "Pod ns/p: spec.containers[0].resources.requests.gpu: Invalid value: 'gpu': must be a standard resource for containers"),
    (with_(POD, "spec.containers", container(requests={"requests.example.com/foo": "1"})),
     "Pod ns/p: spec.containers[0].resources.requests.requests.example.com/foo: Invalid value: "
     "'requests.example.com/foo': doesn't follow extended resource name standard"),
    (with_(POD, "spec.containers", container(requests={"bad name/x": "1"})),
     "Pod ns/p: spec.containers[0].resources.requests.bad name/x: Invalid value: 'bad name/x': prefix part must be a "
     "DNS-1123 subdomain"),
    # spec.overhead, checked as the limits of a container (1.26's validateOverhead; the messages a real 1.26
    # server gave, with our dotted path for its spec.overhead.limits[cpu])
    (with_(POD, "spec.overhead", {"cpu": "-1"}),
     "Pod ns/p: spec.overhead.limits.cpu: Invalid value: '-1': must be greater than or equal to 0"),
    (with_(POD, "spec.overhead", {"requests.x/y": "1"}),
     "Pod ns/p: spec.overhead.limits.requests.x/y: Invalid value: 'requests.x/y': doesn't follow extended resource "
     "name standard"),
    (with_(NODE, "status.allocatable", {"cpu": "-4"}),
     "Node n: status.allocatable.cpu: Invalid value: '-4': must be greater than or equal to 0"),
    (with_(NODE, "status.capacity", {"cpu": {"a": 1}}), "Node n: status.capacity.cpu: expected a quantity string, got dict"),
    # taints and tolerations
    (with_(NODE, "spec.taints", [{"key": "k", "effect": "Sometimes"}]), "Node n: spec.taints[0].effect: Unsupported "
     "value: 'Sometimes': supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""),
    (with_(NODE, "spec.taints", [{"key": "k"}]), "Node n: spec.taints[0].effect: Required value"),
    (with_(NODE, "spec.taints", [{"key": "k k", "effect": "NoSchedule"}]), "Node n: spec.taints[0].key: Invalid value: 'k k'"),
    (with_(POD, "spec.tolerations", [{"key": "k", "operator": "Like"}]), "Pod ns/p: spec.tolerations[0].operator: "
     "Unsupported value: 'Like': supported values: \"Exists\", \"Equal\""),
    (with_(POD, "spec.tolerations", [{"key": "k", "operator": "Exists", "value": "v"}]),
     "Pod ns/p: spec.tolerations[0].operator: Invalid value: \"Exists\": value must be empty when `operator` is 'Exists'"),
    (with_(POD, "spec.tolerations", [{"operator": "Equal", "value": "v"}]), "Pod ns/p: spec.tolerations[0].operator: "
     "Invalid value: 'Equal': operator must be Exists when `key` is empty, which means \"match all values and all keys\""),
    (with_(POD, "spec.tolerations", [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]),
     "Pod ns/p: spec.tolerations[0].effect: Invalid value: 'NoSchedule': effect must be 'NoExecute' when "
     "`tolerationSeconds` is set"),
    (with_(POD, "spec.tolerations", [{"key": "k", "effect": "Never"}]), "Pod ns/p: spec.tolerations[0].effect: "
     "Unsupported value: 'Never'"),
    # selectors
    (with_(POD, "spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Near", "values": ["a"]}]}]}}}),
     "Pod ns/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
     "matchExpressions[0].operator: Unsupported value: 'Near': supported values: \"In\", \"NotIn\", \"Exists\", "
     "\"DoesNotExist\", \"Gt\", \"Lt\""),
    (with_(POD, "spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}}), "Pod ns/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
     "nodeSelectorTerms: Required value: must have at least one node selector term"),
    (with_(POD, "spec.affinity", {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1", "2"]}]}}]}}),
     "matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
    (with_(POD, "spec.affinity", {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {"matchExpressions": []}}]}}),
     "Pod ns/p: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: "
     "must be in the range 1-100"),
    (with_(POD, "spec.affinity", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, "topologyKey": "z"}]}}),
     "Pod ns/p: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
     "matchExpressions[0].operator: Unsupported value: 'Gt': supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\""),
    (with_(POD, "spec.affinity", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}, "topologyKey": "z"}]}}),
     "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    (with_(POD, "spec.affinity", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}, "topologyKey": "z"}]}}),
     "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    # namespaceSelector (validatePodAffinityTerm: after the labelSelector)
    (with_(POD, "spec.affinity", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "z",
         "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "NotIn"}]}}]}}),
     "Pod ns/p: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector."
     "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    (with_(POD, "spec.affinity", {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "z", "namespaceSelector": {"matchLabels": {"team": "a b"}}}}]}}),
     "Pod ns/p: spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm."
     "namespaceSelector.matchLabels.team: Invalid value: 'a b'"),
    (with_(POD, "spec.affinity", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}, "topologyKey": "z",
         "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Gt", "values": ["1"]}]}}]}}),
     "Pod ns/p: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
     "matchExpressions[0].values: Required value"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b", "labels": {"team": "b/c"}}},
     "Namespace team-b: metadata.labels.team: Invalid value: 'b/c'"),
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"app": "a/b"}}},
     "Service default/s: spec.selector.app: Invalid value: 'a/b'"),
    # topologySpreadConstraints (ValidateTopologySpreadConstraints, 1.26)
    *[(with_(POD, "spec.topologySpreadConstraints", [dict(SPREAD, **change)]), f"Pod ns/p: spec.topologySpreadConstraints[0]{m}")
      for change, m in [
          ({"maxSkew": 0}, ".maxSkew: Invalid value: 0: must be greater than zero"),
          ({"topologyKey": ""}, ".topologyKey: Required value: can not be empty"),
          ({"whenUnsatisfiable": "Sometimes"}, ".whenUnsatisfiable: Unsupported value: 'Sometimes': supported values: "
           "\"DoNotSchedule\", \"ScheduleAnyway\""),
          ({"minDomains": 0}, ".minDomains: Invalid value: 0: must be greater than zero"),
          ({"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"}, ".minDomains: Invalid value: 2: can only use "
           "minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
          ({"nodeAffinityPolicy": "Maybe"}, ".nodeAffinityPolicy: Unsupported value: 'Maybe': supported values: "
           "\"Honor\", \"Ignore\""),
          ({"nodeTaintsPolicy": "honor"}, ".nodeTaintsPolicy: Unsupported value: 'honor': supported values: "
           "\"Honor\", \"Ignore\""),
          ({"matchLabelKeys": ["app"]}, ".matchLabelKeys[0]: Invalid value: 'app': exists in both matchLabelKeys and "
           "labelSelector"),
          ({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}, ".labelSelector.matchExpressions[0]"
           ".values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
      ]],
    (with_(POD, "spec.topologySpreadConstraints", [SPREAD, dict(SPREAD, maxSkew=2)]),
     "Pod ns/p: spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "
     "'{zone, DoNotSchedule}'"),
    ({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"},
      "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "in", "values": ["a"]}]}}},
     "ReplicaSet default/r: spec.selector.matchExpressions[0].operator: Unsupported value: 'in'"),
]


@pytest.mark.parametrize("obj, message", CASES, ids=[m[:60] for _, m in CASES])
def test_api_server_rules(tmp_path, obj, message):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(obj))
    with pytest.raises(SnapshotError) as exc:
        load_snapshot([path])
    assert str(exc.value).startswith(f"{path}: document 0: "), str(exc.value)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)
    # --no-validate leaves them to the engine, as upstream's unit tests do.
    load_snapshot([path], NO_CHECKS)


def test_valid_objects_pass(tmp_path):
    good = with_(POD, "spec.tolerations", [{"operator": "Exists"}, {"key": "k", "operator": "Equal", "value": "",
                                                                    "effect": "NoExecute", "tolerationSeconds": 3}])
    good["spec"]["containers"] = container(requests={"cpu": "1", "example.com/gpu": "1", "hugepages-2Mi": "1Gi"},
                                           limits={"cpu": "2", "alpha.kubernetes.io/nvidia-gpu": "1"})
    good["metadata"]["labels"] = {"app.kubernetes.io/name": "web", "empty": ""}
    good["spec"]["topologySpreadConstraints"] = [
        dict(SPREAD, minDomains=2, nodeAffinityPolicy="Ignore", nodeTaintsPolicy="Honor", matchLabelKeys=["rev"]),
        dict(SPREAD, whenUnsatisfiable="ScheduleAnyway")]
    path = tmp_path / "ok.yaml"
    path.write_text(yaml.safe_dump_all([good, with_(NODE, "spec.taints", [{"key": "dedicated", "value": "infra",
                                                                          "effect": "NoSchedule"}])]))
    snapshot = load_snapshot([path])
    assert [p.name for p in snapshot.pods] == ["p"] and [n.name for n in snapshot.nodes] == ["n"]
