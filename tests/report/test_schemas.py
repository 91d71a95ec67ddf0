"""Every ``-o json`` output conforms to the JSON Schema shipped for it, and carries what the reports read."""

from __future__ import annotations

import json

import jsonschema
import pytest

from policy_scheduler.offline.report import explain_schema, result_schema

from .conftest import run_cli


@pytest.mark.parametrize("command", ["simulate", "explain", "capacity", "compare", "migrate"])
def test_output_conforms_to_its_schema(example_results, command):
    schema = result_schema(command)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(example_results[command])


def test_simulate_with_explain_conforms_and_nests_explanations():
    data = json.loads(run_cli("simulate", "--explain", "-o", "json").stdout)
    jsonschema.validate(data, result_schema("simulate"))
    for p in data["placements"]:
        jsonschema.validate(p["explain"], explain_schema())


def test_simulate_carries_the_report_data(example_results):
    data = example_results["simulate"]
    assert data["algorithm"] == "DefaultProvider"
    for n in data["nodes"]:
        assert n["zone"] and n["zone"].startswith("eu-west-1")
        # the breakdown adds up to the totals, before and after
        for which in ("Before", "After"):
            parts = n[f"requested{which}ByNamespace"].values()
            total = n[f"requested{which}"]
            assert sum(int(p["cpu"][:-1]) for p in parts) == int(total["cpu"][:-1])
            assert sum(p["memory"] for p in parts) == total["memory"]
            assert sum(p["pods"] for p in parts) == total["pods"]
            assert sum(n[f"workloads{which}"].values()) <= total["pods"]
    failed = [p for p in data["placements"] if p["node"] is None]
    assert failed
    for p in failed:
        histogram = ", ".join(sorted(f"{n} {r}" for r, n in p["reasons"].items()))
        assert p["error"] == f"0/12 nodes are available: {histogram}."
    placed = [p for p in data["placements"] if p["node"]]
    assert all("reasons" not in p for p in placed)
    assert {p["workload"] for p in placed} >= {"ReplicaSet shop/frontend-5c9b7f5d4d", "StatefulSet shop/redis"}
    video = next(p for p in placed if p["pod"] == "default/video-encoder-x264")
    assert video["requests"] == {"cpu": "6000m", "memory": 2 * 2**30}


def test_simulate_explain_mode_gives_the_same_reasons(example_results):
    data = json.loads(run_cli("simulate", "--explain", "-o", "json").stdout)
    plain = {p["pod"]: p.get("reasons") for p in example_results["simulate"]["placements"]}
    assert {p["pod"]: p.get("reasons") for p in data["placements"]} == plain


def test_capacity_carries_per_node_reasons(example_results):
    data = example_results["capacity"]
    assert data["pod"] == "default/web" and data["requests"] == {"cpu": "500m", "memory": 2**30}
    assert data["max"] is None
    assert len(data["nodes"]) == 12
    assert {n["node"]: n["replicas"] for n in data["nodes"] if n["replicas"]} == data["placements"]
    assert sum(data["stopReasons"].values()) == sum(len(n["reasons"]) for n in data["nodes"])
    histogram = ", ".join(sorted(f"{n} {r}" for r, n in data["stopReasons"].items()))
    assert data["stopReason"] == f"0/12 nodes are available: {histogram}."


def test_capacity_stopped_by_max(web_pod):
    data = json.loads(run_cli("capacity", str(web_pod), "--max", "3", "-o", "json").stdout)
    jsonschema.validate(data, result_schema("capacity"))
    assert data["max"] == 3 and data["stopReason"] is None and data["stopReasons"] == {}
    assert all(n["reasons"] == [] for n in data["nodes"])


def test_compare_carries_utilisation_under_a_and_b(example_results):
    data = example_results["compare"]
    assert data["scheduled"] == {"a": 24, "b": 24}
    moved_to = {d["b"]["node"] for d in data["differences"]}
    nodes = {n["node"]: n for n in data["nodes"]}
    assert len(nodes) == 12
    assert any(nodes[m]["requestedA"] != nodes[m]["requestedB"] for m in moved_to)


def test_yaml_output_has_the_same_data(example_results):
    import yaml

    assert yaml.safe_load(run_cli("simulate", "-o", "yaml").stdout) == example_results["simulate"]
