"""The sweep specification: what it resolves to, and every way it can be wrong as one line naming the file and
the field, exit 2, no traceback."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from policy_scheduler.sweep.scenarios import AddNodes, AsIs, Capacity, Drain, Scale
from policy_scheduler.sweep.spec import METRICS, load_spec, spec_schema

from .conftest import DEFAULT_CLUSTER, EXAMPLE, MODERN_CLUSTER, ROOT, WEB_POD, sweep, write_spec

BASE = {"snapshots": [{"name": "default", "path": DEFAULT_CLUSTER}],
        "algorithms": [{"provider": "DefaultProvider"}], "scenarios": ["as-is"]}


def test_the_schema_is_valid_and_the_example_follows_it():
    jsonschema.Draft202012Validator.check_schema(spec_schema())
    import yaml

    jsonschema.validate(yaml.safe_load(EXAMPLE.read_text()), spec_schema())


def test_the_example_resolves():
    spec = load_spec(EXAMPLE)
    assert [s.name for s in spec.snapshots] == ["default-cluster", "modern-cluster"]
    assert [Path(s.path) for s in spec.snapshots] == [Path(DEFAULT_CLUSTER).resolve(), Path(MODERN_CLUSTER).resolve()]
    assert [a.label for a in spec.algorithms] == ["default", "autoscaler", "upstream-example"]
    assert [a.source.provider for a in spec.algorithms] == ["DefaultProvider", "ClusterAutoscalerProvider", None]
    assert spec.algorithms[2].source.policy is not None and spec.algorithms[2].policy_path == "../../policies/upstream-example.json"
    assert [(type(s), s.name) for s in spec.scenarios] == [
        (AsIs, "as-is"), (Scale, "scale x1.5"), (Capacity, "capacity web.yaml")]
    assert spec.scenarios[1].factor == 1.5
    assert spec.scenarios[2].template["metadata"]["name"] == "web" and spec.scenarios[2].max_replicas is None
    assert spec.metrics == METRICS and spec.scheduler_name == "default-scheduler" and spec.cells == 18


def test_every_form_and_default(tmp_path):
    (tmp_path / "fleet" / "a").mkdir(parents=True)
    (tmp_path / "fleet" / "b").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / "fleet" / name / "nodes.yaml").write_text((Path(MODERN_CLUSTER) / "nodes.yaml").read_text())
    configmap = ROOT / "examples" / "deploy" / "policy-configmap.yaml"
    spec = load_spec(write_spec(tmp_path, {
        "snapshots": ["fleet/*", {"path": DEFAULT_CLUSTER, "name": "default"}],
        "algorithms": [{"provider": "DefaultProvider"}, {"policy": str(configmap), "label": "from-configmap",
                                                          "rules": "1.9", "schedulingQueue": "three-queue",
                                                          "featureGates": "PodPriority=true",
                                                          "hardPodAffinitySymmetricWeight": 5}],
        "scenarios": [{"as-is": None, "name": "today"}, {"scale": {"factor": 0.5}},
                      {"drain": {"nodes": ["a", "b", "c", "d"]}}, {"drain": {"zone": "eu-west-1a"}},
                      {"drain": {"selector": {"matchLabels": {"disktype": "ssd"},
                                              "matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}}},
                      {"add-nodes": {"like": "worker-1a-01", "count": 3}},
                      {"capacity": {"template": str(WEB_POD), "max": 10}}],
        "metrics": ["cpu", "placed"], "schedulerName": "other", "validate": False,
    }))
    assert [s.name for s in spec.snapshots] == ["fleet/a", "fleet/b", "default"]
    a, b = spec.algorithms
    assert (a.label, a.rules, a.scheduling_queue, a.feature_gates, a.hard_pod_affinity_symmetric_weight) == (
        "DefaultProvider", "cluster", None, "", 1)
    assert (b.label, b.rules, b.scheduling_queue, b.feature_gates, b.hard_pod_affinity_symmetric_weight) == (
        "from-configmap", "1.9", "three-queue", "PodPriority=true", 5)
    assert b.source.policy is not None and b.gates().enabled("PodPriority")
    assert [s.name for s in spec.scenarios] == [
        "today", "scale x0.5", "drain 4 nodes", "drain zone eu-west-1a", "drain disktype=ssd,!gpu",
        "add 3 x worker-1a-01", "capacity web.yaml max 10"]
    assert [type(s) for s in spec.scenarios] == [AsIs, Scale, Drain, Drain, Drain, AddNodes, Capacity]
    assert spec.scenarios[6].max_replicas == 10
    assert spec.metrics == ("placed", "cpu")  # in the rows' order, whatever order they were asked in
    assert (spec.scheduler_name, spec.validate) == ("other", False)


def _variant(tmp_path: Path, change) -> Path:
    spec = copy.deepcopy(BASE)
    if callable(change):
        change(spec)
        return write_spec(tmp_path, spec)
    return write_spec(tmp_path, change)


def _set(path: str, value):
    def change(spec):
        target = spec
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        if value is KeyError:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return change


def _files(tmp_path: Path) -> None:
    (tmp_path / "bad-policy.json").write_text('{"kind": "Policy", "apiVersion": "v1", "priorities": [{"name": "X"}]}')
    two = (tmp_path / "two-pods.yaml")
    pod = (Path(WEB_POD)).read_text()
    two.write_text(pod + "\n---\n" + pod.replace("name: web", "name: web-2"))
    (tmp_path / "empty").mkdir()


ERRORS = {
    "yaml": ("snapshots: [", "sweep.yaml: invalid YAML: unexpected end of the file at line 2, column 1"),
    "yaml-indentation": ("snapshots:\n  - a\nalgorithms:\n  - provider: DefaultProvider\n   label: x\n",
                         "sweep.yaml: invalid YAML: bad indentation at line 5, column 4 (in the list that starts at "
                         "line 4, column 3)"),
    "not-a-mapping": ("- a\n- b\n", "sweep.yaml: expected a mapping with snapshots, algorithms and scenarios, got list"),
    "empty": ("", "sweep.yaml: expected a mapping with snapshots, algorithms and scenarios, got nothing"),
    "missing-section": (_set("scenarios", KeyError), "sweep.yaml: (top level): 'scenarios' is a required property"),
    "unknown-key": (_set("snapshot", []), "sweep.yaml: (top level): Additional properties are not allowed ('snapshot' was unexpected)"),
    "scenario-kind": (_set("scenarios", ["asis"]),
                      'sweep.yaml: scenarios[0]: unknown scenario "asis"; did you mean "as-is"? (valid: add-nodes, '
                      "as-is, capacity, drain, scale)"),
    "scenario-typo": (_set("scenarios", [{"name": "bigger", "scal": {"factor": 2}}]),
                      'sweep.yaml: scenarios[0]: unknown scenario "scal"; did you mean "scale"? (valid: add-nodes, '
                      "as-is, capacity, drain, scale)"),
    "scenario-unknown": (_set("scenarios", [{"explode": {}}]),
                         'sweep.yaml: scenarios[0]: unknown scenario "explode" (valid: add-nodes, as-is, capacity, '
                         "drain, scale)"),
    "scenario-two-kinds": (_set("scenarios", [{"scale": {"factor": 2}, "drain": {"zone": "a"}}]),
                           'sweep.yaml: scenarios[0]: expected "as-is" or an object with one of the keys as-is, scale, '
                           "drain, add-nodes, capacity (and optionally name)"),
    "scale-factor": (_set("scenarios", [{"scale": {"factor": 0}}]),
                     "sweep.yaml: scenarios[0].scale.factor: 0 is less than or equal to the minimum of 0"),
    "scale-typo": (_set("scenarios", [{"scale": {"factr": 2}}]), "sweep.yaml: scenarios[0].scale: Additional properties are not allowed ('factr' was unexpected)"),
    "drain-empty": (_set("scenarios", [{"drain": {}}]), "sweep.yaml: scenarios[0].drain: {} should be non-empty"),
    "drain-two-ways": (_set("scenarios", [{"drain": {"zone": "a", "nodes": ["b"]}}]),
                       "sweep.yaml: scenarios[0].drain: {'zone': 'a', 'nodes': ['b']} has too many properties"),
    "drain-operator": (_set("scenarios", [{"drain": {"selector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}}}]),
                       "sweep.yaml: scenarios[0].drain.selector.matchExpressions[0].operator: 'Has' is not one of"),
    "drain-selector": (_set("scenarios", [{"drain": {"selector": {"matchLabels": {"bad key!": "x"}}}}]),
                       "sweep.yaml: scenarios[0].drain.selector: "),
    "add-nodes-count": (_set("scenarios", [{"add-nodes": {"like": "x", "count": "3"}}]),
                        "sweep.yaml: scenarios[0].add-nodes.count: '3' is not of type 'integer'"),
    "capacity-template": (_set("scenarios", [{"capacity": {"template": "none.yaml"}}]),
                          "sweep.yaml: scenarios[0].capacity.template: "),
    "capacity-two-pods": (_set("scenarios", [{"capacity": {"template": "two-pods.yaml"}}]),
                          "two-pods.yaml: expected exactly one Pod, found 2"),
    "scenario-twice": (_set("scenarios", ["as-is", {"as-is": {}}]),
                       "sweep.yaml: scenarios[1]: scenario 'as-is' is already listed as scenarios[0]; give one a name"),
    "algorithm-neither": (_set("algorithms", [{"label": "x"}]), "sweep.yaml: algorithms[0]: missing provider or policy"),
    "provider-typo": (_set("algorithms", [{"provider": "DefaultProvidr"}]),
                      'sweep.yaml: algorithms[0]: couldn\'t create scheduler using provider "DefaultProvidr": plugin '
                      '"DefaultProvidr" has not been registered; did you mean "DefaultProvider"? (valid: '
                      'ClusterAutoscalerProvider, DefaultProvider)'),
    "algorithm-both": (_set("algorithms", [{"provider": "DefaultProvider", "policy": "p.json"}]),
                       "sweep.yaml: algorithms[0]: give one of provider and policy, not both"),
    "algorithm-rules": (_set("algorithms", [{"provider": "DefaultProvider", "rules": "1.10"}]),
                        "sweep.yaml: algorithms[0].rules: '1.10' is not one of ['cluster', '1.9']"),
    "provider": (_set("algorithms", [{"provider": "NoSuchProvider"}]),
                 "sweep.yaml: algorithms[0]: couldn't create scheduler using provider \"NoSuchProvider\""),
    "gates": (_set("algorithms", [{"provider": "DefaultProvider", "featureGates": "Nope=true"}]),
              "sweep.yaml: algorithms[0]: unrecognized key: Nope"),
    "policy-missing": (_set("algorithms", [{"policy": "nope.json"}]), "sweep.yaml: algorithms[0].policy: nope.json: no such file"),
    "policy-invalid": (_set("algorithms", [{"policy": "bad-policy.json"}]), "sweep.yaml: algorithms[0]: "),
    "label-twice": (_set("algorithms", [{"provider": "DefaultProvider"}, {"provider": "DefaultProvider"}]),
                    "sweep.yaml: algorithms[1]: label 'DefaultProvider' is already used by algorithms[0]; give each a label"),
    "snapshot-missing": (_set("snapshots", ["nowhere"]), "sweep.yaml: snapshots[0]: nowhere: no such file or directory"),
    "snapshot-glob": (_set("snapshots", ["nothing/*.yaml"]), "sweep.yaml: snapshots[0]: nothing/*.yaml matches no file or directory"),
    "snapshot-type": (_set("snapshots", [3]), "sweep.yaml: snapshots[0]: expected a path (or glob), or an object with path"),
    "snapshot-twice": (_set("snapshots", [DEFAULT_CLUSTER, {"path": DEFAULT_CLUSTER, "name": "again"}]),
                       "sweep.yaml: snapshots[1]: snapshot 'again' is already listed as snapshots[0]"),
    "snapshot-name-glob": (_set("snapshots", [{"path": "*", "name": "x"}]), "sweep.yaml: snapshots[0].name: * matches "),
    "snapshot-empty-dir": (_set("snapshots", ["empty"]), "sweep.yaml: snapshot 'empty': "),
    "metrics": (_set("metrics", ["cpu", "bogus"]), "sweep.yaml: metrics[1]: 'bogus' is not one of"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_each_error_is_one_line_exit_2(tmp_path, case):
    _files(tmp_path)
    change, message = ERRORS[case]
    result = sweep(str(_variant(tmp_path, change)))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith(f"error: {tmp_path / 'sweep.yaml'}" if case != "snapshot-empty-dir" else "error: "), lines[0]
    assert message in lines[0], lines[0]


OPTION_ERRORS = [
    (["--scheduler-address", "tcp://127.0.0.1:8786"], "error: --scheduler-address is for --executor dask"),
    (["--executor", "dask"], "error: --executor dask needs --scheduler-address tcp://HOST:PORT"),
    (["--executor", "dask", "--scheduler-address", "tcp://127.0.0.1:8786", "--workers", "2"],
     "error: --workers is for --executor local"),
    (["--executor", "dask", "--scheduler-address", "tcp://127.0.0.1"],
     "error: --scheduler-address tcp://127.0.0.1: not a Dask scheduler address (tcp://HOST:PORT): missing port number"),
    (["--resume", "{tmp}/nothing.json"], "error: --resume {tmp}/nothing.json: no such file"),
    (["--resume", "{tmp}/other.json"], "error: --resume {tmp}/other.json: not a sweep result"),
]


@pytest.mark.parametrize("args,message", OPTION_ERRORS)
def test_option_errors_are_one_line_exit_2(tmp_path, args, message):
    (tmp_path / "other.json").write_text(json.dumps({"kind": "SimulateResult", "placements": []}))
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = sweep(str(write_spec(tmp_path, BASE)), *args)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == message.replace("{tmp}", str(tmp_path)) or (
        len(result.output.strip().splitlines()) == 1 and result.output.startswith(message.replace("{tmp}", str(tmp_path))))


def test_a_missing_specification(tmp_path):
    result = sweep(str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2 and result.output == f"error: {tmp_path / 'nope.yaml'}: no such file\n"
