"""Every report kind fits a 1,280 px wide window, in a real headless Chromium (``tests/browser.py``): nothing
ends right of the viewport, no table is cut or scrolls sideways, and every number carries its unit with one
precision per quantity (``policy_scheduler/report/units.py``).

The reports are rendered from the bundled examples: the five commands on the example cluster, the PodPriority
gate's simulate, explain and compare on the priority cluster (priorities, attempts, nominations, preemptions),
simulate, explain, capacity and compare on the modern cluster, simulate and explain on the DRA cluster, a sweep with failed cells (long error messages), a 300-node synthetic
cluster, and a simulate result whose names and messages are as long as Kubernetes allows. Each table is shown
at its largest page size and every ``<details>`` opened before measuring; a screenshot at 1,280 px goes to the
artifacts directory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.generator import generate, to_objects
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.cli import main
from policy_scheduler.offline.examples import modern_cluster_path, priority_cluster_path
from policy_scheduler.offline.report import simulation_to_dict
from policy_scheduler.offline.simulate import simulate
from policy_scheduler.offline.snapshot import load_objects
from policy_scheduler.report import write_report
from policy_scheduler.report.units import binary_bytes, cores, millicores
from tests.browser import layout_problems
from tests.report.conftest import WEB_POD
from tests.sweep.test_report_browser import example_sweep_result

WIDTH, HEIGHT = 1280, 900
PRIORITY = str(priority_cluster_path())
MODERN = str(modern_cluster_path())
DRA = str(Path(priority_cluster_path()).parent / "dra-cluster")
GATE = ("--feature-gates", "PodPriority=true")

# The cells of the paged tables, by the rule of their column (the header decides which rule applies).
CORES = re.compile(r"^-?\d{1,3}(,\d{3})*\.\d\d$")
MEMORY = re.compile(r"^(\d{1,3}(,\d{3})*\.\d (KiB|MiB|GiB|TiB|PiB)|\d{1,4} B)$")
PERCENT = re.compile(r"^-?\d{1,3}(,\d{3})*\.\d%$")
SECONDS = re.compile(r"^\d{1,3}(,\d{3})*\.\d{3} s$")
COUNT = re.compile(r"^[-+]?\d{1,3}(,\d{3})*$")
#: What an integer column may count (a word of its header): a count needs no other unit.
COUNTED = ("#", "pods", "replicas", "placed", "unschedulable", "nodes", "attempts", "preemptions", "priority",
           "total")
# A number printed before a percent sign (in a chart), and before an arrow that leads to one.
CHART_PERCENT = re.compile(r"([\d.]+)(?=%|→[\d.]+%)")
# A decimal number on a card without its unit after it (or after "X of Y").
CARD_DECIMAL = re.compile(r"\d[\d,]*\.\d+(?!\d)(?!( of [\d,]+\.\d+)?(%| cores| [KMGTP]iB| s\b))")


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(main, [*args, "-o", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def long_names(data: dict) -> dict:
    """The example simulation with names as long as Kubernetes allows and a long message without spaces."""
    data = json.loads(json.dumps(data))
    label = "a" * 63
    for i, p in enumerate(data["placements"][:6]):
        p["pod"] = f"{label[:60]}{i:03d}/{'b' * 250}-{i}"
        p["workload"] = f"ReplicaSet {label}/{'c' * 253}"
    data["placements"][0]["node"] = "n" * 253
    data["placements"][1]["error"] = "x" * 2000
    data["nodes"][0]["node"] = "m" * 253
    data["nodes"][0]["zone"] = "z" * 63
    return data


@pytest.fixture(scope="module")
def results(example_results, tmp_path_factory) -> dict[str, dict]:
    snapshot = load_objects(to_objects(generate(300, 600, 1)), "synthetic")
    source = from_provider("DefaultProvider")
    return {
        **example_results,
        "simulate-priority": cli_json("simulate", "--cluster", PRIORITY, *GATE),
        "explain-priority": cli_json("explain", "batch/report-3cpu", "--cluster", PRIORITY, *GATE),
        "compare-priority": cli_json("compare", "DefaultProvider", "DefaultProvider", "--cluster", PRIORITY,
                                     "--feature-gates-b", "PodPriority=true"),
        "simulate-modern": cli_json("simulate", "--cluster", MODERN),
        "explain-modern": cli_json("explain", "shop/web-0", "--cluster", MODERN),
        "capacity-modern": cli_json("capacity", str(WEB_POD), "--cluster", MODERN),
        "compare-modern": cli_json("compare", "DefaultProvider", "ClusterAutoscalerProvider", "--cluster", MODERN),
        "simulate-dra": cli_json("simulate", "--cluster", DRA),
        "explain-dra": cli_json("explain", "ml/train-0", "--cluster", DRA),
        "sweep": example_sweep_result(tmp_path_factory.mktemp("sweep")),
        "simulate-300-nodes": simulation_to_dict(simulate(snapshot, lambda c: source.build(c)), source.label),
        "simulate-long-names": long_names(example_results["simulate"]),
    }


KINDS = ["simulate", "explain", "capacity", "compare", "migrate", "simulate-priority", "explain-priority",
         "compare-priority", "simulate-modern", "explain-modern", "capacity-modern", "compare-modern", "simulate-dra",
         "explain-dra", "sweep", "simulate-300-nodes", "simulate-long-names"]


@pytest.fixture
def open_at_1280(browser_context, artifacts_dir):
    """Open a report at 1,280 x 900, wait for its tables, screenshot it; the page is closed afterwards."""
    pages = []

    def _open(path: Path, shot: str):
        page = browser_context.new_page()
        pages.append(page)
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.wait_for_selector("table.dt tbody tr")
        assert problems == []
        page.evaluate("() => document.fonts.ready")
        layout = layout_problems(page)
        page.screenshot(path=str(artifacts_dir / f"{shot}-{WIDTH}.png"), full_page=True)
        return page, layout

    yield _open
    for page in pages:
        page.close()


def table_columns(page) -> list[dict]:
    """Each visible column of each paged table: its header, the class of its cells, the texts of its cells."""
    return page.evaluate(r"""() => {
      const out = [];
      document.querySelectorAll("[data-table]").forEach(root => {
        const heads = [...root.querySelectorAll("thead th")].map(th => th.innerText.replace(/\s+/g, " ").trim());
        const rows = [...root.querySelectorAll("tbody tr")];
        heads.forEach((head, i) => out.push({
          table: root.getAttribute("data-table"), header: head,
          kinds: [...new Set(rows.map(r => r.children[i].className.split(" ")[0]))],
          cells: rows.map(r => r.children[i].innerText.trim()).filter(t => t !== ""),
        }));
      });
      return out;
    }""")


def unit_problems(columns: list[dict]) -> list[str]:
    """The numeric columns whose header or cells lack the unit, or whose cells mix precisions."""
    out = []
    for col in columns:
        where, head, cells = f"{col['table']}: {col['header']!r}", col["header"].lower(), col["cells"]
        if col["kinds"] == ["bar"]:
            rule = PERCENT
        elif col["kinds"] != ["num"]:
            continue
        elif "cpu" in head:
            if "(cores)" not in head:
                out.append(f"{where}: a CPU column whose header does not say (cores)")
            rule = CORES
        elif "memory" in head:
            rule = MEMORY
        elif any(SECONDS.match(c) for c in cells):
            rule = SECONDS
        else:
            rule = COUNT
            if not any(word in head for word in COUNTED):
                out.append(f"{where}: a number without a unit (not a count of {', '.join(COUNTED)})")
        out += [f"{where}: {c!r} does not match {rule.pattern}" for c in cells if not rule.match(c)]
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_the_report_fits_1280_pixels_with_units(open_at_1280, tmp_path, results, kind):
    path = tmp_path / f"{kind}.html"
    write_report(results[kind], path)
    page, layout = open_at_1280(path, f"report-{kind}")
    assert layout == []
    columns = table_columns(page)
    assert columns and all(c["kinds"] for c in columns if c["cells"])
    assert unit_problems(columns) == []
    cards = page.locator(".card").all_inner_texts()
    assert [c for c in cards if CARD_DECIMAL.search(c)] == []
    # the charts' printed values: a percentage with one decimal ("6.3→12.6%", "16.6% / 27.1%")
    values = page.locator("svg text.value").all_text_contents()
    assert [v for v in values if any(not re.fullmatch(r"\d+\.\d", n) for n in CHART_PERCENT.findall(v))] == []


def test_the_checks_catch_what_they_look_for(open_at_1280, tmp_path, results):
    """The layout check sees a table wider than the window and the unit check a CPU column without (cores)."""
    data = results["simulate"]
    path = tmp_path / "wide.html"
    write_report(data, path)
    html = path.read_text().replace("table.dt td.wide { min-width: 12em;", "table.dt td.wide { min-width: 1400px;")
    path.write_text(html)
    _, layout = open_at_1280(path, "report-too-wide")
    assert any("table.dt in #queue ends at" in p for p in layout) and any("div.dt-scroll in #queue scrolls" in p
                                                                          for p in layout)
    columns = [{"table": "t", "header": "CPU", "kinds": ["num"], "cells": ["0.5", "1.25"]},
               {"table": "t", "header": "Memory", "kinds": ["num"], "cells": ["2Gi"]},
               {"table": "t", "header": "Free", "kinds": ["num"], "cells": ["3"]},
               {"table": "t", "header": "CPU mean", "kinds": ["bar"], "cells": ["40%"]}]
    assert len(unit_problems(columns)) == 5
    assert CARD_DECIMAL.search("30.8 of 108") and CARD_DECIMAL.search("1.5 of 2 pods")
    assert not CARD_DECIMAL.search("30.80 of 108.79 cores · 6.0% → 16.2% · 1.5 GiB · 0.125 s")


def test_the_script_formats_as_units_py(open_at_1280, tmp_path, results):
    """The table cells (formatted by the page's script) and the cards and charts (by units.py) round alike,
    halves included: 125m is 0.13 cores in both, 1005m 1.01, 1,280 bytes 1.3 KiB."""
    data = json.loads(json.dumps(results["simulate"]))
    ties = [("125m", 1280), ("375m", 1023), ("1005m", 2_872_311_808), ("2675m", 5 * 2**40 + 2**39), ("5m", 0),
            ("123456789m", 1_048_524)]
    for placement, (cpu, memory) in zip(data["placements"], ties):
        placement["requests"] = {"cpu": cpu, "memory": memory}
    path = tmp_path / "rounding.html"
    write_report(data, path)
    page, _ = open_at_1280(path, "report-rounding")
    rows = [t.split("\t") for t in page.locator("#queue tbody tr").all_inner_texts()[:len(ties)]]
    shown = [(r[3], r[4]) for r in rows]
    assert shown == [(cores(millicores(cpu)), binary_bytes(memory)) for cpu, memory in ties]
    assert shown == [("0.13", "1.3 KiB"), ("0.38", "1023 B"), ("1.01", "2.7 GiB"), ("2.68", "5.5 TiB"), ("0.01", "0 B"),
                     ("123,456.79", "1,023.9 KiB")]
