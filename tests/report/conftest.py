"""Fixtures for the report tests: the example cluster's four results, a migrated Policy, and a real headless
Chromium (``tests/browser.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main

# The example results the report tests render: (command, arguments).
EXPLAIN_POD = "shop/checkout-7"  # five feasible nodes, a three-node tie set, two nodes failing MatchInterPodAffinity
ROOT = Path(__file__).resolve().parents[2]
WEB_POD = ROOT / "examples" / "pods" / "web.yaml"  # 500m cpu, 1Gi memory: 85 more fit in the example cluster
MIGRATE_POLICY = ROOT / "policies" / "all-arguments.yaml"  # all four statuses, the four argument kinds


def run_cli(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="session")
def web_pod() -> Path:
    return WEB_POD


@pytest.fixture(scope="session")
def example_results(web_pod) -> dict[str, dict]:
    """The ``-o json`` output of each command on the bundled example cluster (migrate: of a bundled Policy)."""
    commands = {
        "simulate": ["simulate"],
        "explain": ["explain", EXPLAIN_POD],
        "capacity": ["capacity", str(web_pod)],
        "compare": ["compare", "DefaultProvider", "ClusterAutoscalerProvider"],
        "migrate": ["migrate", "--policy-config-file", str(MIGRATE_POLICY)],
    }
    return {name: json.loads(run_cli(*args, "-o", "json").stdout) for name, args in commands.items()}
