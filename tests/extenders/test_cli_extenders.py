"""Extenders in ``simulate`` and ``explain`` (and not in ``policy validate``), through the CLI, against the
example extender on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from benchmarks.harness.ports import free_port
from policy_scheduler.cli import main
from policy_scheduler.offline.report import explain_schema

from .cluster import GPU, NODES, node, pod

POLICY: dict[str, Any] = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [{"name": "PodFitsResources"}],
    "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
}


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write(tmp_path: Path, extenders: list[dict[str, Any]], pods: list[dict[str, Any]],
          nodes: list[dict[str, Any]] | None = None) -> tuple[str, str]:
    (tmp_path / "cluster").mkdir(exist_ok=True)
    (tmp_path / "cluster" / "objects.yaml").write_text(yaml.safe_dump_all([*(nodes or NODES), *pods]))
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({**POLICY, "extenders": extenders}))
    return str(tmp_path / "cluster"), str(policy)


def extender(url: str, **kw: Any) -> dict[str, Any]:
    return {"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 2,
            "httpTimeout": 2_000_000_000, **kw}


def simulate(cluster: str, policy: str) -> dict[str, Any]:
    result = run("simulate", "--cluster", cluster, "--policy-config-file", policy, "-o", "json")
    assert result.exit_code == 0, result.output
    return {p["pod"]: p for p in json.loads(result.stdout)["placements"]}


@pytest.mark.parametrize("node_cache_capable", [False, True])
def test_simulate_follows_the_extender(server, tmp_path, node_cache_capable):
    for raw in NODES:
        server.extender.nodes.add(raw)
    cluster, policy = write(tmp_path, [extender(server.url, nodeCacheCapable=node_cache_capable)],
                            [pod(f"p{i}") for i in range(6)])
    placements = simulate(cluster, policy)
    # node-0 is in maintenance; node-2's score 9 x weight 2 outweighs LeastRequested's differences.
    assert {p["node"] for p in placements.values()} == {"node-2"}
    verbs = [verb for verb, _ in server.extender.requests]
    assert verbs == ["filter", "prioritize"] * 6
    key = "nodenames" if node_cache_capable else "nodes"
    assert all(set(args) == {"pod", key} for _, args in server.extender.requests)


def test_explain_attributes_verdicts_and_scores_to_the_extender(server, tmp_path):
    cluster, policy = write(tmp_path, [extender(server.url)], [pod("web")])
    result = run("explain", "default/web", "--cluster", cluster, "--policy-config-file", policy, "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    jsonschema.validate(data, explain_schema())
    assert data["host"] == "node-2"
    url = server.url
    assert data["nodes"]["node-0"]["fit"] is False
    assert data["nodes"]["node-0"]["extenders"] == {url: {"fit": False, "reasons": ["node is under maintenance"],
                                                          "score": None, "weight": None}}
    assert data["nodes"]["node-2"]["extenders"] == {url: {"fit": True, "reasons": [], "score": 9, "weight": 2}}
    least = data["nodes"]["node-2"]["priorities"]["LeastRequestedPriority"]
    assert data["nodes"]["node-2"]["total"] == least["score"] * least["weight"] + 9 * 2
    assert data["extenders"] == [{"extender": url, "verb": "filter", "outcome": "called"},
                                 {"extender": url, "verb": "prioritize", "outcome": "called"}]
    table = run("explain", "default/web", "--cluster", cluster, "--policy-config-file", policy).stdout
    assert f"extender {url}: node is under maintenance" in table
    assert f"extender {url} (x2)" in table


def test_every_node_rejected_gives_upstreams_fit_error(server, tmp_path):
    nodes = [node(f"node-{i}", maintenance=True) for i in range(3)]
    cluster, policy = write(tmp_path, [extender(server.url)], [pod("web")], nodes)
    placements = simulate(cluster, policy)
    assert placements["default/web"]["error"] == "0/3 nodes are available: 3 node is under maintenance."
    explained = json.loads(run("explain", "default/web", "--cluster", cluster, "--policy-config-file", policy,
                               "-o", "json").stdout)
    assert explained["error"] == "0/3 nodes are available: 3 node is under maintenance."


def test_extender_reasons_join_the_predicates_histogram(server, tmp_path):
    big = pod("big", cpu="3")
    nodes = [node("node-0", maintenance=True), node("node-1", maintenance=True), node("node-2")]
    filler = pod("filler", cpu="2", node_name="node-2")
    cluster, policy = write(tmp_path, [extender(server.url)], [filler, big], nodes)
    assert simulate(cluster, policy)["default/big"]["error"] == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node is under maintenance."
    )


def test_managed_resources_skip_other_pods(server, tmp_path):
    managed = extender(server.url, managedResources=[{"name": GPU}])
    cluster, policy = write(tmp_path, [managed], [pod("plain"), pod("trainer", gpus=1)])
    placements = simulate(cluster, policy)
    assert placements["default/trainer"]["node"] == "node-3"  # the only node with GPUs
    assert [args["pod"]["metadata"]["name"] for _, args in server.extender.requests] == ["trainer"]
    explained = json.loads(run("explain", "default/plain", "--cluster", cluster, "--policy-config-file", policy,
                               "-o", "json").stdout)
    assert [c["outcome"] for c in explained["extenders"]] == ["not interested", "not interested"]


def test_unreachable_extender_fails_the_pod_with_upstreams_message(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/scheduler"
    cluster, policy = write(tmp_path, [extender(url)], [pod("web")])
    assert simulate(cluster, policy)["default/web"]["error"] == (
        f"Post {url}/filter: dial tcp 127.0.0.1:{port}: getsockopt: connection refused"
    )


def test_unreachable_ignorable_extender_is_skipped_with_a_warning(tmp_path, caplog):
    url = f"http://127.0.0.1:{free_port()}/scheduler"
    cluster, policy = write(tmp_path, [extender(url, ignorable=True)], [pod("web")])
    with caplog.at_level(logging.WARNING):
        placements = simulate(cluster, policy)
    assert placements["default/web"]["node"] in {"node-0", "node-1", "node-2", "node-3"}
    assert f"Skipping extender {url} as it returned error Post {url}/filter" in caplog.text
    assert "has ignorable flag set" in caplog.text
    explained = json.loads(run("explain", "default/web", "--cluster", cluster, "--policy-config-file", policy,
                               "-o", "json").stdout)
    assert [(c["verb"], c["outcome"]) for c in explained["extenders"]] == [("filter", "ignored error"),
                                                                           ("prioritize", "error")]


@pytest.mark.parametrize("fault, message", [
    ({"status": 500}, "Failed filter with extender at URL {url}, code 500"),
    ({"body": b"{"}, "unexpected EOF"),
    ({"sleep": 1.0}, "Post {url}/filter: net/http: request canceled (Client.Timeout exceeded while awaiting headers)"),
])
def test_filter_faults_fail_the_pod(server, tmp_path, fault, message):
    server.extender.faults["filter"] = fault
    cluster, policy = write(tmp_path, [extender(server.url, httpTimeout=300_000_000)], [pod("web")])
    assert simulate(cluster, policy)["default/web"]["error"] == message.format(url=server.url)


def test_prioritize_faults_are_ignored(server, tmp_path):
    server.extender.faults["prioritize"] = {"status": 500}
    cluster, policy = write(tmp_path, [extender(server.url)], [pod("web")])
    assert simulate(cluster, policy)["default/web"]["node"] in {"node-1", "node-2", "node-3"}


def test_https_extender_in_simulate(https_server, certs, tmp_path):
    tls = {"CAFile": str(certs.ca)}
    cluster, policy = write(tmp_path, [extender(https_server.url, enableHttps=True, tlsConfig=tls)], [pod("web")])
    assert simulate(cluster, policy)["default/web"]["node"] == "node-2"


def test_policy_validate_calls_nothing(server, tmp_path):
    _, policy = write(tmp_path, [extender(server.url, bindVerb="bind")], [])
    result = run("policy", "validate", policy, "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["extenders"] == 1
    assert not server.extender.requests
