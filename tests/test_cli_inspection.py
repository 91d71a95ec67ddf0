"""The inspection commands: --version, providers, predicates, priorities, policy validate."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_scheduler import __version__
from policy_scheduler.cli import main

POLICIES = sorted((Path(__file__).resolve().parent.parent / "policies").glob("*.[jy]*"))


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert __version__ in result.output


def test_providers_json():
    data = json.loads(run("providers", "-o", "json").output)
    assert set(data) == {"DefaultProvider", "ClusterAutoscalerProvider"}
    assert data["DefaultProvider"]["priorities"]["NodePreferAvoidPodsPriority"] == 10000
    assert "MostRequestedPriority" in data["ClusterAutoscalerProvider"]["priorities"]
    assert "LeastRequestedPriority" not in data["ClusterAutoscalerProvider"]["priorities"]
    assert data["DefaultProvider"]["predicates"] == data["ClusterAutoscalerProvider"]["predicates"]


def test_predicates_and_priorities_listing():
    predicates = {row["name"]: row for row in json.loads(run("predicates", "-o", "json").output)}
    # 1.9's 17 and the modern cluster's PodTopologySpread, ReadWriteOncePod, NodeVolumeLimits, NodeDeclaredFeatures,
    # DynamicResources
    assert len(predicates) == 22
    for modern in ("PodTopologySpread", "ReadWriteOncePod", "NodeVolumeLimits", "NodeDeclaredFeatures",
                   "DynamicResources"):
        assert predicates[modern]["providers"] == [] and not predicates[modern]["mandatory"]
    assert predicates["CheckNodeCondition"]["mandatory"] is True
    assert predicates["PodFitsPorts"]["providers"] == []
    priorities = {row["name"]: row for row in json.loads(run("priorities", "-o", "json").output)}
    assert priorities["InterPodAffinityPriority"]["form"] == "function"
    assert priorities["EqualPriority"]["weight"] == 1
    assert "TaintTolerationPriority (weight 1, map)" in run("priorities").output


@pytest.mark.parametrize("path", POLICIES, ids=[p.name for p in POLICIES])
def test_shipped_policies_validate(path):
    result = run("policy", "validate", str(path), "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["valid"] is True
    assert data["predicates"]


def test_validate_reports_order_weights_and_extenders(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({
        "kind": "Policy", "apiVersion": "v1",
        "predicates": [{"name": "PodFitsResources"}, {"name": "GeneralPredicates"}],
        "priorities": [{"name": "LeastRequestedPriority", "weight": 2}],
        "extenders": [{"urlPrefix": "http://127.0.0.1:1/x", "filterVerb": "filter"}],
    }))
    data = json.loads(run("policy", "validate", str(f), "-o", "json").output)
    assert data["predicates"] == ["PodFitsResources", "GeneralPredicates"]
    assert data["priorities"] == {"LeastRequestedPriority": 2}
    assert data["extenders"] == 1
    assert any("PodFitsResources is already part of GeneralPredicates" in w for w in data["warnings"])
    assert any("httpTimeout" in w for w in data["warnings"])


@pytest.mark.parametrize(
    "policy, expected",
    [
        ({"kind": "Policy", "apiVersion": "v1", "priorities": [{"name": "LeastRequestedPriority", "weight": -1}]},
         "priorities[0].weight: Priority LeastRequestedPriority should have a positive weight applied to it or it has overflown"),
        ({"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "NoSuchPredicate"}]},
         "predicates[0].name: Invalid configuration: Predicate type not found for NoSuchPredicate"),
        ({"kind": "Policy", "apiVersion": "v1", "priorities": [{"name": "Nope", "weight": 1}]},
         "priorities[0].name: Invalid configuration: Priority type not found for Nope"),
        ({"kind": "Policy", "apiVersion": "v1", "priorities": [{"name": "LeastRequestedPriority", "weight": "2"}]},
         'priorities[0].weight: expected an integer, got "2"'),
        ({"kind": "Policy", "apiVersion": "v1", "hardPodAffinitySymmetricWeight": 101},
         "hardPodAffinitySymmetricWeight: invalid hardPodAffinitySymmetricWeight: 101, must be in the range 1-100"),
    ],
)
def test_invalid_policies(tmp_path, policy, expected):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(policy))
    result = run("policy", "validate", str(f), "-o", "json")
    assert result.exit_code == 2
    errors = json.loads(result.output)["errors"]
    assert any(expected in e for e in errors), errors
    table = CliRunner().invoke(main, ["policy", "validate", str(f)])
    assert table.exit_code == 2
    assert "Traceback" not in table.output


def test_missing_policy_file(tmp_path):
    result = run("policy", "validate", str(tmp_path / "nope.json"), "-o", "json")
    assert result.exit_code == 2
    assert json.loads(result.output)["errors"] == [f"missing policy config file {tmp_path / 'nope.json'}: no such file"]


@pytest.mark.skipif(shutil.which("policy-scheduler") is None, reason="console script not installed")
def test_console_script_is_installed():
    out = subprocess.run(["policy-scheduler", "providers", "-o", "json"], capture_output=True, text=True, check=True)
    assert "DefaultProvider" in json.loads(out.stdout)
