"""simulate, explain, capacity and compare through click's CliRunner and the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.offline.examples import default_cluster_path
from policy_scheduler.offline.report import explain_schema
from policy_scheduler.offline.snapshot import load_snapshot
from tests.conformance.harness import load_cases

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def simulation():
    result = run("simulate", "-o", "json", "--explain")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_simulate_bundled_example(simulation):
    snapshot = load_snapshot([default_cluster_path()])
    pending = [p.ref for p in snapshot.pending_pods()]
    assert [p["pod"] for p in simulation["placements"]] == pending
    assert len(pending) >= 25
    scheduled = [p for p in simulation["placements"] if p["node"]]
    failed = [p for p in simulation["placements"] if not p["node"]]
    assert scheduled and failed
    for p in failed:
        assert p["error"].startswith(f"0/{len(snapshot.nodes)} nodes are available: ")
    for p in scheduled:
        assert p["error"] is None
        assert p["explain"]["host"] == p["node"]
        jsonschema.validate(p["explain"], explain_schema())
    assert {n["node"] for n in simulation["nodes"]} == {n.name for n in snapshot.nodes}


def test_simulate_skips_pods_of_other_schedulers(simulation):
    snapshot = load_snapshot([default_cluster_path()])
    others = [p.ref for p in snapshot.pods if not p.node_name and p.scheduler_name != "default-scheduler"]
    assert others
    assert not set(others) & {p["pod"] for p in simulation["placements"]}


def test_write_placements_reloads_without_overcommit(tmp_path):
    out = tmp_path / "placed.yaml"
    result = run("simulate", "--write-placements", str(out))
    assert result.exit_code == 0
    placed = load_snapshot([out])
    assert placed.pods and all(p.node_name for p in placed.pods)
    # Re-load the placements with the original snapshot: every node must still fit what it holds.
    original = load_snapshot([default_cluster_path()])
    requested = defaultdict(lambda: [0, 0, 0])
    for pod in original.bound_pods() + placed.pods:
        r = requested[pod.node_name]
        r[0] += pod.request.milli_cpu
        r[1] += pod.request.memory
        r[2] += 1
    for node in original.nodes:
        cpu, mem, pods = requested[node.name]
        assert cpu <= node.allocatable.milli_cpu and mem <= node.allocatable.memory and pods <= node.allocatable.allowed_pod_number, node.name


def test_explain_table_and_json_for_an_unschedulable_pod(simulation):
    failed = next(p for p in simulation["placements"] if not p["node"])
    result = run("explain", failed["pod"], "-o", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    jsonschema.validate(data, explain_schema())
    assert data["host"] is None and data["error"]
    assert all(not n["fit"] and n["priorities"] == {} for n in data["nodes"].values())
    table = run("explain", failed["pod"]).output
    assert "unschedulable" in table
    assert "(node(s)" in table or "Insufficient" in table


def test_explain_pod_file_against_conformance_snapshot(tmp_path):
    """The explain command on snapshots built from conformance cases reproduces upstream's verdicts."""
    checked = 0
    for case in load_cases():
        if case["kind"] != "predicate" or case["id"].split("/")[0] not in ("TestPodFitsResources", "TestInterPodAffinityWithMultipleNodes", "TestPodToleratesTaints", "TestPodFitsSelector"):
            continue
        cluster_dir = tmp_path / case["id"].replace("/", "-")
        cluster_dir.mkdir()
        objects = [{"apiVersion": "v1", "kind": "Node", **n} for n in case["cluster"]["nodes"]]
        for i, p in enumerate(case["cluster"]["pods"]):
            pod = json.loads(json.dumps(p))
            pod.setdefault("metadata", {}).setdefault("name", f"existing-{i}")
            objects.append({"apiVersion": "v1", "kind": "Pod", **pod})
        (cluster_dir / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
        pod = json.loads(json.dumps(case["pod"]))
        pod.setdefault("metadata", {}).setdefault("name", "incoming")
        pod["spec"] = {k: v for k, v in pod.get("spec", {}).items() if k != "nodeName"}
        pod_file = tmp_path / f"{cluster_dir.name}-pod.json"
        pod_file.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", **pod}))
        policy_file = tmp_path / f"{cluster_dir.name}-policy.json"
        policy_file.write_text(json.dumps(case["policy"]))
        # Upstream's test objects are not API-valid (pods without containers): load them as upstream builds them.
        result = run("explain", str(pod_file), "--cluster", str(cluster_dir), "--policy-config-file", str(policy_file),
                     "--no-validate", "-o", "json")
        assert result.exit_code == 0, (case["id"], result.output)
        data = json.loads(result.stdout)
        for node, fit in case["expect"]["fit"].items():
            assert data["nodes"][node]["fit"] == fit, (case["id"], node)
            if not fit and node in case["expect"].get("reasons", {}):
                got = [r for p in data["nodes"][node]["predicates"].values() for r in p["reasons"]]
                assert sorted(got) == sorted(case["expect"]["reasons"][node]), case["id"]
        checked += 1
    assert checked >= 15


def test_capacity(tmp_path):
    template = tmp_path / "pod.yaml"
    template.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
    }))
    data = json.loads(run("capacity", str(template), "-o", "json").stdout)
    assert data["replicas"] == sum(data["placements"].values()) > 0
    assert data["stopReason"].startswith("0/12 nodes are available: ")
    assert "Insufficient cpu" in data["stopReason"]
    capped = json.loads(run("capacity", str(template), "--max", "3", "-o", "json").stdout)
    assert capped["replicas"] == 3 and capped["stopReason"] is None
    assert "3 more replicas fit." in run("capacity", str(template), "--max", "3").output


def test_compare_providers():
    data = json.loads(run("compare", "DefaultProvider", "ClusterAutoscalerProvider", "-o", "json").stdout)
    assert data["a"] == "DefaultProvider" and data["b"] == "ClusterAutoscalerProvider"
    assert data["differences"], "MostRequested packs pods differently from LeastRequested"
    for d in data["differences"]:
        assert d["a"]["node"] != d["b"]["node"]
    same = json.loads(run("compare", "DefaultProvider", str(ROOT / "policies" / "default-provider.json"), "-o", "json").stdout)
    assert same["differences"] == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["simulate", "--cluster", "/nonexistent"], "error: /nonexistent: no such file or directory"),
        (["explain", "default/ghost"], "error: pod default/ghost is not in the snapshot"),
        (["simulate", "--algorithm-provider", "Nope"], 'couldn\'t create scheduler using provider "Nope": plugin "Nope" has not been registered'),
        (["simulate", "--policy-config-file", "/nonexistent.json"], "error: missing policy config file /nonexistent.json: no such file"),
        (["simulate", "--feature-gates", "Bogus=true"], "error: unrecognized key: Bogus"),
        (["simulate", "--hard-pod-affinity-symmetric-weight", "0"], "must be in the range 1-100"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_invalid_yaml_cluster(tmp_path):
    (tmp_path / "bad.yaml").write_text("kind: Node\nmetadata: {name: [\n")
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'bad.yaml'}: invalid YAML" in result.output


@pytest.mark.skipif(shutil.which("policy-scheduler") is None, reason="console script not installed")
def test_console_script_simulate_and_errors():
    out = subprocess.run(["policy-scheduler", "simulate", "-o", "json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["placements"]
    bad = subprocess.run(["policy-scheduler", "explain", "nope/nope"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: pod nope/nope is not in the snapshot"


@pytest.mark.parametrize("args", [
    ["simulate"],
    ["explain", "shop/checkout-7"],
    ["capacity", "examples/pods/web.yaml"],
    ["compare", "DefaultProvider", "ClusterAutoscalerProvider"],
])
def test_yaml_output_is_the_json_output(args):
    # Reasons are str subclasses inside the engine; both formats must print them as plain strings.
    root = Path(__file__).resolve().parents[2]
    args = [str(root / a) if a.endswith(".yaml") else a for a in args]
    as_json = run(*args, "-o", "json")
    as_yaml = run(*args, "-o", "yaml")
    assert as_json.exit_code == as_yaml.exit_code == 0, as_yaml.output
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
