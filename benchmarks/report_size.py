"""HTML report size and render time on the synthetic benchmark cluster (``generator.py``).

For each command it computes the result as the CLI does (simulate the pending queue, explain the first
pending pod, count capacity for a copy of it, compare DefaultProvider with ClusterAutoscalerProvider),
turns it into the ``-o json`` data, then times the report alone: data preparation + templates
(``render_report``) and the write. With ``--browser`` it also opens each file in headless Chromium
(Playwright, ``/usr/bin/chromium``) and times the load, scripts and first paint of the tables included;
with ``--width PX`` as well it opens them in a window that wide and reports what does not fit
(``overflow``: [] when every table, chart and card fits; ``tests/browser.py``'s check). One JSON line per
command on standard output.

    python benchmarks/report_size.py --nodes 5000 --pods 10000 --seed 1 [--commands simulate,explain]
        [--out DIR] [--capacity-max N] [--browser [--width 1280]]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generator import generate, to_objects  # noqa: E402
from policy_scheduler.algorithm_source import AlgorithmSource, from_provider  # noqa: E402
from policy_scheduler.cache.cluster import ClusterState  # noqa: E402
from policy_scheduler.core.generic_scheduler import GenericScheduler  # noqa: E402
from policy_scheduler.offline import report as offline_report  # noqa: E402
from policy_scheduler.offline import simulate as offline  # noqa: E402
from policy_scheduler.offline.snapshot import Snapshot, load_objects  # noqa: E402
from policy_scheduler.report import render_report  # noqa: E402

COMMANDS = ("simulate", "explain", "capacity", "compare")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def builder(source: AlgorithmSource, weight: int) -> Callable[[ClusterState], GenericScheduler]:
    return lambda cluster: source.build(cluster, hard_pod_affinity_symmetric_weight=weight)


def result_data(command: str, snapshot: Snapshot, weight: int, capacity_max: int) -> dict[str, Any]:
    """The ``-o json`` data of ``command`` on the snapshot, as the CLI computes it."""
    default = from_provider("DefaultProvider")
    build = builder(default, weight)
    if command == "simulate":
        return offline_report.simulation_to_dict(offline.simulate(snapshot, build), default.label)
    first = snapshot.pending_pods()[0]
    if command == "explain":
        return offline_report.explain_result_to_dict(offline.explain_pod(snapshot, first, build), default.label)
    if command == "capacity":
        result = offline.capacity(snapshot, first.raw, build, capacity_max)
        return offline_report.capacity_to_dict(result, pod=first, max_replicas=capacity_max, algorithm=default.label)
    other = from_provider("ClusterAutoscalerProvider")
    a, b, diffs = offline.compare(snapshot, build, builder(other, weight))
    return offline_report.differences_to_dict(default.label, other.label, diffs, len(a.placements), a, b)


def open_in_browser(paths: list[Path], width: int | None = None) -> dict[Path, tuple[float, list[str] | None]]:
    """Per file: seconds from navigation to the load event (scripts run, tables drawn), and with ``width``
    what does not fit a window that wide once every table shows its largest page (else None)."""
    from playwright.sync_api import sync_playwright

    from tests.browser import layout_problems

    out = {}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                       headless=True)
        for path in paths:
            page = context.new_page()
            if width:
                page.set_viewport_size({"width": width, "height": 900})
            start = time.perf_counter()
            page.goto(path.resolve().as_uri(), wait_until="load")
            page.wait_for_selector("table.dt tbody tr")
            seconds = time.perf_counter() - start
            out[path] = (seconds, layout_problems(page) if width else None)
            page.close()
        context.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated subset of " + ",".join(COMMANDS))
    parser.add_argument("--capacity-max", type=int, default=2000, help="capacity's --max (default 2000)")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep the reports (and the -o json data) here (default: a temporary directory)")
    parser.add_argument("--browser", action="store_true", help="also time opening each report in headless Chromium")
    parser.add_argument("--width", type=int, default=None, metavar="PX",
                        help="with --browser: open the reports PX wide and report what does not fit (overflow)")
    args = parser.parse_args(argv)
    commands = [c for c in args.commands.split(",") if c]
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        parser.error(f"unknown command(s): {', '.join(sorted(unknown))}")
    if args.width and not args.browser:
        parser.error("--width needs --browser")

    data = generate(args.nodes, args.pods, args.seed)
    weight = data.get("hardPodAffinitySymmetricWeight") or 1
    snapshot = load_objects(to_objects(data), "benchmark")
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.out or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        lines, paths = [], []
        for command in commands:
            start = time.perf_counter()
            result = result_data(command, snapshot, weight, args.capacity_max)
            compute = time.perf_counter() - start
            text = json.dumps(result, indent=2)
            json_bytes = len(text.encode())
            if args.out:
                (out_dir / f"result-{command}-n{args.nodes}-p{args.pods}.json").write_text(text, encoding="utf-8")
            start = time.perf_counter()
            html = render_report(result)
            path = out_dir / f"report-{command}-n{args.nodes}-p{args.pods}.html"
            path.write_text(html, encoding="utf-8")
            render = time.perf_counter() - start
            paths.append(path)
            lines.append({
                "command": command, "nodes": args.nodes, "pods": args.pods, "seed": args.seed,
                "result_seconds": round(compute, 2), "json_bytes": json_bytes,
                "html_bytes": path.stat().st_size, "html_mb": round(path.stat().st_size / 1e6, 2),
                "render_seconds": round(render, 2),
            })
        if args.browser:
            opened = open_in_browser(paths, args.width)
            for line, path in zip(lines, paths):
                seconds, overflow = opened[path]
                line["browser_open_seconds"] = round(seconds, 2)
                if args.width:
                    line["width"], line["overflow"] = args.width, overflow
        for line in lines:
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
