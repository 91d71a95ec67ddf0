"""Fixtures for the report tests: the example cluster's four results, a migrated Policy, and a real headless Chromium.

The browser is Debian's Chromium (``/usr/bin/chromium``, or ``$POLICY_SCHEDULER_CHROMIUM``) driven by
Playwright. Where it cannot be had the browser tests skip, saying why; under CI (``CI=true``, or
``POLICY_SCHEDULER_REQUIRE_BROWSER=1`` as ``.ci/run`` sets) they fail instead. Screenshots go to
``$POLICY_SCHEDULER_ARTIFACTS/report`` when that is set, else to the test run's temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# The example results the report tests render: (command, arguments).
EXPLAIN_POD = "shop/checkout-7"  # five feasible nodes, a three-node tie set, two nodes failing MatchInterPodAffinity
ROOT = Path(__file__).resolve().parents[2]
WEB_POD = ROOT / "examples" / "pods" / "web.yaml"  # 500m cpu, 1Gi memory: 85 more fit in the example cluster
MIGRATE_POLICY = ROOT / "policies" / "all-arguments.yaml"  # all four statuses, the four argument kinds


def browser_required() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("POLICY_SCHEDULER_REQUIRE_BROWSER") == "1"


def chromium_path() -> str | None:
    configured = os.environ.get("POLICY_SCHEDULER_CHROMIUM")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


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


@pytest.fixture(scope="session")
def artifacts_dir(tmp_path_factory) -> Path:
    root = os.environ.get("POLICY_SCHEDULER_ARTIFACTS")
    path = Path(root) / "report" if root else tmp_path_factory.mktemp("report-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    """A persistent Chromium context on a fresh profile; skip (or, under CI, fail) where there is none."""
    def unavailable(reason: str):
        if browser_required():
            pytest.fail(f"{reason} (a browser is required here: CI=true or POLICY_SCHEDULER_REQUIRE_BROWSER=1)",
                        pytrace=False)
        pytest.skip(reason)

    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        unavailable("playwright is not installed (pip install -e '.[test]')")
    executable = chromium_path()
    if executable is None:
        unavailable("no Chromium at /usr/bin/chromium (apt-get install chromium) or $POLICY_SCHEDULER_CHROMIUM")
    manager = sync_playwright().start()
    try:
        context = manager.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=executable, args=CHROMIUM_ARGS,
            headless=True, viewport={"width": 1400, "height": 900})
    except Error as e:
        manager.stop()
        unavailable(f"Chromium at {executable} does not start: {str(e).splitlines()[0]}")
    yield context
    context.close()
    manager.stop()
