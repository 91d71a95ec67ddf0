"""Suite-wide: under ``POLICY_SCHEDULER_REQUIRE_ENVTEST=1`` (CI) a skipped integration test fails the run,
and under ``CI=true`` or ``POLICY_SCHEDULER_REQUIRE_BROWSER=1`` so does a skipped browser test (tests/browser.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

# The browser fixtures, defined once for the whole suite: a second session fixture starting Playwright while the
# first one runs would fail ("Sync API inside the asyncio loop").
from tests.browser import BROWSER_TESTS, artifacts_dir, browser_context, browser_required, open_report  # noqa: F401

_skipped_integration: list[str] = []
_skipped_browser: list[str] = []


#: Workers per core under ``-n auto`` (setup.cfg's addopts): most of a test's time is spent waiting on real
#: servers and processes, and the cores are what bounds the suite (measured in the note of issue 29: 2, 4 and 6
#: workers on 2 cores).
WORKERS_PER_CORE = 2


def pytest_xdist_auto_num_workers(config) -> int | None:
    """``-n auto``: WORKERS_PER_CORE per core this process may run on; ``PYTEST_XDIST_AUTO_NUM_WORKERS`` (read by
    pytest-xdist itself) overrides it."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and report.nodeid.startswith("tests/kube/"):
        _skipped_integration.append(report.nodeid)
    if report.skipped and report.nodeid.startswith(BROWSER_TESTS):
        _skipped_browser.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("POLICY_SCHEDULER_REQUIRE_ENVTEST") == "1" and _skipped_integration:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if browser_required() and _skipped_browser:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    if os.environ.get("POLICY_SCHEDULER_REQUIRE_ENVTEST") == "1" and _skipped_integration:
        terminalreporter.write_line(
            f"FAILED: {len(_skipped_integration)} integration test(s) against the real API servers were skipped "
            "(POLICY_SCHEDULER_REQUIRE_ENVTEST=1): " + ", ".join(_skipped_integration), red=True,
        )
    if browser_required() and _skipped_browser:
        terminalreporter.write_line(
            f"FAILED: {len(_skipped_browser)} browser test(s) were skipped (CI=true or POLICY_SCHEDULER_REQUIRE_BROWSER=1): "
            + ", ".join(_skipped_browser), red=True,
        )


@pytest.fixture(scope="session", autouse=True)
def _no_terminal_width() -> Iterator[None]:
    """Tables in full, whatever terminal the suite is run from: ``COLUMNS`` (which pytest-xdist's workers are
    given, 80) would fit them to it (terminal.py). The tests of the fitted tables set it themselves."""
    columns = os.environ.pop("COLUMNS", None)
    yield
    if columns is not None:
        os.environ["COLUMNS"] = columns


@pytest.fixture(autouse=True)
def _interrupts_left_as_found() -> Iterator[None]:
    """A test leaves this process's SIGINT as it found it: its disposition and the main thread's signal mask pass
    to every process a later test starts, and a child started with SIGINT ignored or blocked never sees Ctrl-C
    (the sweep's Ctrl-C test failed so once). Restored here, and the test that changed them fails, named."""
    handler, blocked = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    now_handler, now_blocked = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    if (now_handler, now_blocked) != (handler, blocked):
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        pytest.fail(f"the test left SIGINT changed: handler {handler!r} -> {now_handler!r}, "
                    f"blocked {sorted(blocked)} -> {sorted(now_blocked)}")


@pytest.fixture(scope="session")
def envtest_pool(tmp_path_factory) -> Iterator:
    """The real API servers this pytest process shares between its tests (``tests/kube/envtest_pool.py``);
    all stopped at the end of the session."""
    from tests.kube.envtest_pool import EnvtestPool

    pool = EnvtestPool(tmp_path_factory.mktemp("envtest-pool"))
    yield pool
    pool.close()
