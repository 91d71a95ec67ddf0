"""The sweep's HTML report opened in a real headless Chromium (``tests/browser.py``): nothing fetched, no console
error, a section per scenario with its charts, the differences per snapshot, every row, the failed ones on demand."""

from __future__ import annotations

import yaml

from policy_scheduler.report import write_report
from policy_scheduler.sweep.cells import plan, run_cell
from policy_scheduler.sweep.results import document
from policy_scheduler.sweep.spec import load_spec

from .conftest import EXAMPLE, write_spec

ALGORITHMS = ["default", "autoscaler", "upstream-example"]
SNAPSHOTS = ["default-cluster", "modern-cluster"]


def example_sweep_result(tmp_path):
    """The example and one more scenario, which fails on the modern cluster (it has no node worker-1a-01)."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    base = EXAMPLE.parent
    for entry in spec["snapshots"]:
        entry["path"] = str((base / entry["path"]).resolve())
    spec["algorithms"][2]["policy"] = str((base / spec["algorithms"][2]["policy"]).resolve())
    spec["scenarios"][2]["capacity"]["template"] = str((base / spec["scenarios"][2]["capacity"]["template"]).resolve())
    spec["scenarios"].append({"drain": {"nodes": ["worker-1a-01"]}})
    loaded = load_spec(write_spec(tmp_path, spec))
    return document(loaded, {c.position: run_cell(c) for c in plan(loaded)}, executor="local")


def test_the_sweep_report(open_report, tmp_path):
    data = example_sweep_result(tmp_path)
    assert (data["cells"], data["failed"]) == (24, 3)
    path = tmp_path / "sweep.html"
    write_report(data, path)
    r = open_report(path, "report-sweep")
    r.check_clean()
    page = r.page
    assert page.locator("h1").inner_text() == "2 snapshots × 3 algorithms × 4 scenarios"
    card = page.locator(".card", has=page.locator(".card-label", has_text="Failed cells"))
    assert card.locator(".card-value").inner_text() == "3"
    assert page.locator("nav.toc a").all_inner_texts() == [
        "as-is", "scale x1.5", "capacity web.yaml", "drain worker-1a-01", "All rows"]
    for i in range(4):
        section = page.locator(f"#scenario-{i}")
        utilisation = section.locator("svg").first
        for snapshot in SNAPSHOTS:
            assert utilisation.locator("text.label", has_text=snapshot).count() == 1
        assert section.locator(".legend li").all_inner_texts() == ALGORITHMS
        assert section.locator("table.totals tbody tr").count() == 3
    # as-is: the bars, the p90 and max marks, their tooltips
    as_is = page.locator("#scenario-0")
    assert as_is.locator("svg line.mark").count() == 2 * 3 * 2 * 2  # snapshots x algorithms x (cpu, memory) x marks
    assert "p90" in as_is.locator("svg line.mark title").first.text_content()
    assert "mean" in as_is.locator("svg .pair text.value title").first.text_content()
    counts = as_is.locator("svg").nth(1)
    assert counts.locator("rect.bar").count() == 6
    assert "default-cluster · default: 8 unschedulable" in counts.locator("rect.bar title").first.text_content()
    # capacity: the copies that fit
    capacity = page.locator("#scenario-2")
    assert capacity.locator("h3", has_text="Copies that fit").count() == 1
    assert capacity.locator("svg text.value", has_text="161").count() == 1
    # the differences per snapshot, against the first algorithm; the drain cannot run on the modern cluster
    diff = page.locator("#scenario-0 table.differences")
    assert diff.locator("thead th").all_inner_texts() == ["Snapshot", "autoscaler", "upstream-example"]
    assert diff.locator("tbody td").first.inner_text().endswith("pt cpu")
    assert page.locator("#scenario-0 table.differences td.good").count() >= 1  # upstream-example places more
    drained = page.locator("#scenario-3 table.differences tbody tr", has_text="modern-cluster")
    assert drained.locator("td").all_inner_texts() == ["failed", "failed"]
    # every row; the failed ones alone
    assert page.locator("#rows .dt-count").first.inner_text() == "24 rows"
    page.locator("#rows select[aria-label=Show]").select_option("failed")
    failed = r.row_texts("rows")
    assert len(failed) == 3 and all("modern-cluster\t" in t and "drain worker-1a-01" in t for t in failed)
    assert all("no node worker-1a-01 in the snapshot" in t for t in failed)
