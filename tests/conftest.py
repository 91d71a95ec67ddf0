"""Suite-wide: under ``POLICY_SCHEDULER_REQUIRE_ENVTEST=1`` (CI) a skipped integration test fails the run."""

from __future__ import annotations

import os

import pytest

_skipped_integration: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and report.nodeid.startswith("tests/kube/"):
        _skipped_integration.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("POLICY_SCHEDULER_REQUIRE_ENVTEST") == "1" and _skipped_integration:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    if os.environ.get("POLICY_SCHEDULER_REQUIRE_ENVTEST") == "1" and _skipped_integration:
        terminalreporter.write_line(
            f"FAILED: {len(_skipped_integration)} integration test(s) against the real API servers were skipped "
            "(POLICY_SCHEDULER_REQUIRE_ENVTEST=1): " + ", ".join(_skipped_integration), red=True,
        )
