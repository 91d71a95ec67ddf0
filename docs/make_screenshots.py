"""Regenerate the README's report screenshots (docs/report-*.png) from the bundled example cluster.

Runs the four commands exactly as the README shows them (``--report``), opens each report in headless
Chromium (Debian's ``/usr/bin/chromium`` driven by Playwright, a fresh profile) and saves the top of the
page as a PNG beside this script.

    python docs/make_screenshots.py [--html-dir DIR] [--width 1280] [--max-height 2000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# name -> the command's arguments (the bundled example cluster is the default --cluster)
REPORTS = {
    "simulate": ["simulate"],
    "explain": ["explain", "shop/checkout-7"],
    "capacity": ["capacity", "examples/pods/web.yaml"],
    "compare": ["compare", "DefaultProvider", "ClusterAutoscalerProvider"],
}


def make_reports(html_dir: Path) -> dict[str, Path]:
    out = {}
    for name, args in REPORTS.items():
        path = html_dir / f"report-{name}.html"
        subprocess.run([sys.executable, "-m", "policy_scheduler.cli", *args, "--report", str(path)], cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL)
        out[name] = path
    return out


def screenshot(reports: dict[str, Path], width: int, max_height: int) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": width, "height": 900})
        for name, path in reports.items():
            page = context.new_page()
            page.goto(path.resolve().as_uri(), wait_until="load")
            page.wait_for_selector("table.dt tbody tr")
            height = min(max_height, page.evaluate("document.documentElement.scrollHeight"))
            target = DOCS / f"report-{name}.png"
            page.screenshot(path=str(target), full_page=True, clip={"x": 0, "y": 0, "width": width, "height": height})
            print(f"{target.relative_to(ROOT)}: {width}x{height}")
            page.close()
        context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html-dir", type=Path, default=None, help="keep the HTML reports here")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--max-height", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        html_dir = args.html_dir or Path(tmp)
        html_dir.mkdir(parents=True, exist_ok=True)
        screenshot(make_reports(html_dir), args.width, args.max_height)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
