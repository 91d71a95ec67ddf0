"""A real headless Chromium for the tests that open the HTML reports (tests/report, tests/sweep).

The browser is Debian's Chromium (``/usr/bin/chromium``, or ``$POLICY_SCHEDULER_CHROMIUM``) driven by
Playwright. Where it cannot be had the browser tests skip, saying why; under CI (``CI=true``, or
``POLICY_SCHEDULER_REQUIRE_BROWSER=1`` as ``.ci/run`` sets) they fail instead (``tests/conftest.py`` also fails
the run when one of :data:`BROWSER_TESTS` was skipped). Screenshots go to ``$POLICY_SCHEDULER_ARTIFACTS/report``
when that is set, else to the test run's temporary directory. ``tests/conftest.py`` imports the fixtures, once
for every test (one Playwright per process).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: The test files that open a browser: none of them may be skipped where a browser is required.
BROWSER_TESTS = ("tests/report/test_browser.py", "tests/report/test_report_widths.py", "tests/sweep/test_report_browser.py")

#: What of the open page does not fit the viewport: the document's scroll width, each element whose box ends right
#: of the viewport (the outermost only: its children go with it), each table wider than the box it scrolls in, and
#: each scroll box that scrolls. ``tests/report/test_report_widths.py`` and ``benchmarks/report_size.py --width``.
LAYOUT_JS = r"""() => {
  const vw = document.documentElement.clientWidth, name = e => {
    const section = e.closest("section");
    return e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + "." + String(e.className.baseVal ?? e.className).trim()
      .replace(/ +/g, ".") + (section ? " in #" + section.id : "");
  };
  const over = [];
  for (const e of document.querySelectorAll("body *")) {
    const r = e.getBoundingClientRect();
    if ((r.width || r.height) && r.right > vw + 0.5 && !(e.parentElement.getBoundingClientRect().right > vw + 0.5)) {
      over.push(name(e) + " ends at " + Math.round(r.right) + " px");
    }
  }
  const scrolls = [];
  for (const e of document.querySelectorAll(".dt-scroll, .scroll, .chart-wrap")) {
    if (e.scrollWidth > e.clientWidth + 1) { scrolls.push(name(e) + " scrolls: " + e.scrollWidth + " > " + e.clientWidth + " px"); }
  }
  return { viewport: vw, scrollWidth: document.documentElement.scrollWidth, over: over, scrolls: scrolls };
}"""

#: Every table at its largest page size and every ``<details>`` open: the widest the page gets.
EXPAND_JS = r"""() => {
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  document.querySelectorAll(".dt-pager select").forEach(s => {
    s.value = s.options[s.options.length - 1].value;
    s.dispatchEvent(new Event("change"));
  });
}"""


def layout_problems(page) -> list[str]:
    """Everything wider than the viewport on ``page`` (a Playwright page), expanded first; [] when it all fits."""
    page.evaluate(EXPAND_JS)
    got = page.evaluate(LAYOUT_JS)
    out = [] if got["scrollWidth"] <= got["viewport"] else [f"the page scrolls: {got['scrollWidth']} > {got['viewport']} px"]
    return out + got["over"] + got["scrolls"]


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


class Opened:
    """A report page plus what happened while it loaded."""

    def __init__(self, page, url: str, problems: list[str], requests: list[str]) -> None:
        self.page, self.url, self.problems, self.requests = page, url, problems, requests

    def rows(self, section: str):
        return self.page.locator(f"#{section} table.dt tbody tr")

    def row_texts(self, section: str) -> list[str]:
        return self.rows(section).all_inner_texts()

    def check_clean(self) -> None:
        assert self.problems == [], self.problems
        assert all(u == self.url or u.startswith("data:") for u in self.requests), self.requests


@pytest.fixture
def open_report(browser_context, artifacts_dir):
    """Open a report file in a new page, wait for its tables, save a full-page screenshot; pages closed after."""
    pages = []

    def _open(path: Path, shot: str) -> Opened:
        page = browser_context.new_page()
        pages.append(page)
        problems: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
        page.on("request", lambda r: requests.append(r.url))
        url = path.resolve().as_uri()
        page.goto(url, wait_until="load")
        page.wait_for_selector("table.dt tbody tr")
        opened = Opened(page, url, problems, requests)
        target = artifacts_dir / f"{shot}.png"
        page.screenshot(path=str(target), full_page=True)
        assert target.stat().st_size > 10_000
        return opened

    yield _open
    for page in pages:
        page.close()
