"""Structural validation against the Kubernetes OpenAPI schema (``model/openapi.py``), through the CLI
where the user meets it: wrong types are one-line errors, unknown fields are warnings."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.errors import ObjectError, UserError
from policy_scheduler.model.openapi import OpenAPIValidator, resolve_version, schema_versions
from policy_scheduler.offline.snapshot import load_snapshot

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
       "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


@pytest.fixture(scope="module")
def validator() -> OpenAPIValidator:
    return OpenAPIValidator(resolve_version(None))


def patched(obj: dict, **changes) -> dict:
    out = json.loads(json.dumps(obj))
    for dotted, value in changes.items():
        parent = out
        keys = dotted.split("__")
        for key in keys[:-1]:
            parent = parent[int(key)] if isinstance(parent, list) else parent.setdefault(key, {})
        parent[keys[-1]] = value
    return out


@pytest.mark.parametrize("changes, message", [
    ({"spec": 5}, "Pod ns/p: spec: expected an object, got 5"),
    ({"metadata__labels": {"app": 1}}, "Pod ns/p: metadata.labels.app: expected a string, got 1"),
    ({"spec__containers": {"name": "c"}}, "Pod ns/p: spec.containers: expected a list, got an object"),
    ({"spec__containers__0__resources__requests__cpu": [1]},
     "Pod ns/p: spec.containers[0].resources.requests.cpu: expected a string or a number, got a list"),
    ({"spec__containers__0__ports": [{"containerPort": "80"}]},
     "Pod ns/p: spec.containers[0].ports[0].containerPort: expected an integer, got \"80\""),
    ({"spec__priority": "high"}, "Pod ns/p: spec.priority: expected an integer, got \"high\""),
    ({"spec__tolerations": [True]}, "Pod ns/p: spec.tolerations[0]: expected an object, got true"),
    ({"spec__affinity": {"nodeAffinity": []}}, "Pod ns/p: spec.affinity.nodeAffinity: expected an object, got a list"),
])
def test_wrong_types_name_the_json_path(validator, changes, message):
    with pytest.raises(ObjectError) as exc:
        validator.check(patched(POD, **changes), "Pod ns/p")
    assert str(exc.value) == message


def test_null_is_the_zero_value_and_unknown_fields_are_returned(validator):
    # Go's decoder takes null for any field; the server's JSON of a 1.9 object is full of them.
    assert validator.check(patched(POD, metadata__creationTimestamp=None, spec__containers__0__resources__requests__cpu=None,
                                   spec__volumes=None), "Pod ns/p") == []
    unknown = validator.check(patched(POD, spec__replicas=3, spec__containers__0__cpus=2, spec__containers__0__gpu=1),
                              "Pod ns/p")
    assert sorted(unknown) == ["spec.containers[0].cpus", "spec.containers[0].gpu", "spec.replicas"]


def test_retired_api_versions_use_their_successors_schema(validator):
    rs = {"apiVersion": "extensions/v1beta1", "kind": "ReplicaSet", "metadata": {"name": "r"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}}}}
    assert validator.check(rs, "ReplicaSet default/r") == []
    with pytest.raises(ObjectError, match=r"^ReplicaSet default/r: spec.replicas: expected an integer, got \"one\"$"):
        validator.check(patched(rs, spec__replicas="one"), "ReplicaSet default/r")
    # A kind the schemas do not know is not checked (the loader skips kinds the scheduler does not read).
    assert validator.check({"apiVersion": "example.com/v1", "kind": "Widget", "spec": 5}, "Widget w") == []


def test_kubernetes_version_resolution():
    versions = schema_versions()
    assert versions[0] <= (1, 26) <= versions[-1]
    assert resolve_version(None) == resolve_version("latest") == versions[-1]
    assert resolve_version("1.26") == resolve_version("v1.26.3") == (1, 26)
    assert resolve_version("1.9", clamp=True) == versions[0]
    with pytest.raises(UserError, match=r"^--kubernetes-version: no schema for Kubernetes 1.9; kubernetes-validate "):
        resolve_version("1.9")
    with pytest.raises(UserError, match=r"^--kubernetes-version: 'one' is not a Kubernetes version such as 1.26$"):
        resolve_version("one")


def write_cluster(tmp_path, *objects) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([NODE, *objects]))
    return str(path)


def test_cli_wrong_type_is_one_line_with_file_document_object_and_path(tmp_path):
    path = write_cluster(tmp_path, patched(POD, spec__containers__0__resources__requests__memory=[1]))
    result = CliRunner().invoke(main, ["simulate", "--cluster", path])
    assert result.exit_code == 2
    assert result.output == (f"error: {path}: document 1: Pod ns/p: spec.containers[0].resources.requests.memory: "
                             "expected a string or a number, got a list\n")


def test_cli_unknown_fields_are_warnings(tmp_path):
    path = write_cluster(tmp_path, patched(POD, spec__nodeSelectr={"disk": "ssd"}))
    result = CliRunner().invoke(main, ["simulate", "--cluster", path, "-o", "json"])
    assert result.exit_code == 0, result.output
    assert f'warning: {path}: document 1: Pod ns/p: unknown field "spec.nodeSelectr"\n' in result.stderr
    assert json.loads(result.stdout)["placements"][0]["node"] == "n"


def test_cli_warnings_are_capped(tmp_path):
    pods = [patched(POD, metadata__name=f"p{i}", spec__typo=1) for i in range(15)]
    result = CliRunner().invoke(main, ["simulate", "--cluster", write_cluster(tmp_path, *pods)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(lines) == 11 and lines[-1] == "warning: ... and 5 more unknown fields"


def test_cli_kubernetes_version_and_no_validate(tmp_path):
    bad = write_cluster(tmp_path, patched(POD, spec__priority="high"))
    result = CliRunner().invoke(main, ["simulate", "--cluster", bad, "--kubernetes-version", "1.26"])
    assert result.exit_code == 2 and "spec.priority: expected an integer" in result.output
    result = CliRunner().invoke(main, ["simulate", "--cluster", bad, "--kubernetes-version", "1.8"])
    assert result.exit_code == 2 and result.output.startswith("error: --kubernetes-version: no schema for Kubernetes 1.8;")
    # Without validation the engine's own readers still refuse what they cannot read, in one line.
    result = CliRunner().invoke(main, ["simulate", "--cluster", bad, "--no-validate"])
    assert result.exit_code == 0, result.output  # spec.priority is read leniently (0), as before


def test_kubernetes_version_1_36_knows_its_fields(tmp_path):
    """A 1.36 pod field (a container's ``restartPolicyRules``, 1.34+) is known to the 1.36 schema and unknown
    to 1.32's, where it is a warning."""
    rules = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]
    path = write_cluster(tmp_path, patched(POD, spec__containers__0__restartPolicyRules=rules))
    warning = 'unknown field "spec.containers[0].restartPolicyRules"'
    for version, warned in (("1.36", False), ("1.32", True)):
        result = CliRunner().invoke(main, ["simulate", "--cluster", path, "--kubernetes-version", version, "-o", "json"])
        assert result.exit_code == 0, result.output
        assert (warning in result.stderr) is warned, (version, result.stderr)


def test_limits_default_requests_as_the_api_server_does(tmp_path):
    # SetDefaults_Pod: a limit without a request of that resource is the request too.
    pod = patched(POD, spec__containers__0__resources={"limits": {"cpu": "3", "memory": "1Gi"}, "requests": {"cpu": "2"}})
    loaded = load_snapshot([write_cluster(tmp_path, pod)]).find_pod("ns/p")
    assert loaded.request.milli_cpu == 2000 and loaded.request.memory == 1024**3
