"""The bundled modern-cluster example (``examples/modern-cluster``): its README's table of outcomes under
the cluster's rules and under 1.9's, through the CLI's JSON."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.offline.examples import modern_cluster_path

ZONE = {"a-1": "zone-a", "a-2": "zone-a", "b-1": "zone-b", "b-2": "zone-b"}
WAITING_FOR_CLAIM = '0/4 nodes are available: could not find ResourceClaim "shop/gpu-claim".'


def simulate(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(modern_cluster_path()), "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def placements(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["pod"].removeprefix("shop/"): p for p in data["placements"]}


def web_zones(by_pod: dict[str, dict[str, Any]]) -> Counter[str]:
    return Counter(ZONE[p["node"]] for name, p in by_pod.items() if name.startswith("web-"))


def cpu_before(data: dict[str, Any]) -> dict[str, str]:
    return {n["node"]: n["requestedBefore"]["cpu"] for n in data["nodes"]}


@pytest.fixture(scope="module")
def cluster_rules() -> dict[str, Any]:
    return simulate()


@pytest.fixture(scope="module")
def rules_1_9() -> dict[str, Any]:
    return simulate("--rules", "1.9")


def test_nodes_hold_what_the_kubelet_admitted(cluster_rules, rules_1_9):
    assert cpu_before(cluster_rules) == {"a-1": "0m", "a-2": "0m", "b-1": "3500m", "b-2": "3500m"}
    assert cpu_before(rules_1_9) == {"a-1": "0m", "a-2": "0m", "b-1": "1600m", "b-2": "2500m"}


def test_topology_spread(cluster_rules, rules_1_9):
    assert web_zones(placements(cluster_rules)) == {"zone-a": 2, "zone-b": 2}
    assert web_zones(placements(rules_1_9)) == {"zone-a": 4}


def test_scheduling_gates(cluster_rules, rules_1_9):
    assert "release-gate" not in placements(cluster_rules)
    assert [g["pod"] for g in cluster_rules["gated"]] == ["shop/release-gate"]
    assert placements(rules_1_9)["release-gate"]["node"]
    assert "gated" not in rules_1_9


def test_late_bound_claim(cluster_rules, rules_1_9):
    db = placements(cluster_rules)["db-0"]
    assert db["node"] == "b-2"
    assert db["volumes"] == [{"claim": "shop/data-db-0", "action": "provision", "volume": None, "node": "b-2"}]
    stuck = placements(rules_1_9)["db-0"]
    assert stuck["node"] is None and 'PersistentVolumeClaim is not bound: "data-db-0"' in stuck["error"]


def test_a_pod_whose_claim_does_not_exist_waits(cluster_rules, rules_1_9):
    waiting = placements(cluster_rules)["gpu-inference"]
    assert waiting["node"] is None and waiting["error"] == WAITING_FOR_CLAIM
    assert placements(rules_1_9)["gpu-inference"]["node"]


def test_compare_shows_what_the_cluster_rules_change():
    result = CliRunner().invoke(main, ["compare", "DefaultProvider", "DefaultProvider", "--cluster",
                                       str(modern_cluster_path()), "--rules-b", "1.9", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "[cluster rules]" in json.dumps(data) and "[1.9 rules]" in json.dumps(data)
    differing = {d["pod"] for d in data["differences"]}
    assert {"shop/db-0", "shop/gpu-inference", "shop/release-gate"} <= differing
