"""The four reports opened in a real headless Chromium: no console errors, no network, names, tooltips, paging.

Each test saves a full-page screenshot to the artifacts directory (see conftest). Nothing here is timed.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.generator import generate, to_objects
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.offline.report import simulation_to_dict
from policy_scheduler.offline.simulate import simulate
from policy_scheduler.offline.snapshot import load_objects
from policy_scheduler.report import write_report

NODES = ["gpu-1a-01", "gpu-1c-01", "master-1a", "worker-1a-01", "worker-1a-02", "worker-1b-01", "worker-1b-02",
         "worker-1b-03", "worker-1b-04", "worker-1c-01", "worker-1c-02", "worker-1c-03"]


def write(tmp_path: Path, data: dict, name: str) -> Path:
    path = tmp_path / f"{name}.html"
    write_report(data, path)
    return path


def test_simulate_report(open_report, tmp_path, example_results):
    r = open_report(write(tmp_path, example_results["simulate"], "simulate"), "report-simulate")
    r.check_clean()
    page = r.page
    usage = page.locator("#usage svg")
    for node in NODES:
        assert usage.locator("text.label", has_text=node).count() == 1, node
    # the pending queue: 32 pods over two pages, in queue order
    first = r.row_texts("queue")
    assert len(first) == 25 and first[0].startswith("1\tdefault/video-encoder-x264")
    page.locator("#queue .dt-pager button", has_text="next").click()
    rest = r.row_texts("queue")
    assert len(rest) == 7 and rest[-1].startswith("32\t")
    queue_pods = [p["pod"] for p in example_results["simulate"]["placements"]]
    assert [t.split("\t")[1] for t in first + rest] == queue_pods
    # the filter and the preset
    page.locator("#queue input[type=search]").fill("ml-train")
    assert r.row_texts("queue") == [r.row_texts("queue")[0]] and "unschedulable" in r.row_texts("queue")[0]
    page.locator("#queue input[type=search]").fill("")
    page.locator("#queue select[aria-label=Show]").select_option("fail")
    failed = r.rows("queue")
    assert failed.count() == 8
    # the FitError is the reason cell's tooltip
    reason = failed.first.locator("td").nth(6)
    assert reason.get_attribute("title").startswith("0/12 nodes are available: ")
    # hover texts on the charts
    titles = page.locator("#reasons svg title").all_text_contents()
    assert any("Insufficient cpu" in t for t in titles)
    segment = usage.locator("title", has_text="worker-1a-02 · default: +").first
    assert "placed by the simulation" in segment.text_content()
    assert page.locator("#zones table.matrix", has_text="ReplicaSet shop/frontend-5c9b7f5d4d").count() == 1
    assert r.rows("nodes").count() == 12


def test_explain_report(open_report, tmp_path, example_results):
    r = open_report(write(tmp_path, example_results["explain"], "explain"), "report-explain")
    r.check_clean()
    page = r.page
    grid = r.rows("grid")
    assert grid.count() == 12
    host = page.locator("#grid tr.host")
    assert host.count() == 1 and host.locator("td").first.inner_text() == "worker-1c-01"
    page.locator("#grid select[aria-label=Show]").select_option("tie")
    assert sorted(t.split("\t")[0] for t in r.row_texts("grid")) == ["worker-1a-01", "worker-1b-01", "worker-1c-01"]
    page.locator("#grid select[aria-label=Show]").select_option("")
    # the reason of a failing verdict is on hover
    row = page.locator("#grid tbody tr", has_text="worker-1a-02")
    failing = row.locator("td.verdict.fail")
    assert failing.count() >= 1
    failing.first.hover()
    assert "MatchInterPodAffinity" in failing.first.get_attribute("title")
    assert page.locator("#grid td.verdict.pass").first.get_attribute("title").endswith(": passes")
    # the heatmap: weights, host star, tie outline, score tooltips
    heat = page.locator("#scores svg")
    assert heat.locator("text", has_text="★ worker-1c-01").count() == 1
    assert heat.locator("rect.tie-outline").count() == 3
    assert heat.locator("title", has_text="SelectorSpreadPriority: score").count() == 5
    assert heat.locator("text", has_text="NodePreferAvoidPodsPriority ×10000").count() == 1
    page.locator("#scores details summary").click()
    assert len(r.row_texts("scores")) == 5
    cell = page.locator("#scores td.heat").first
    assert "× weight" in cell.get_attribute("title")


def test_capacity_report(open_report, tmp_path, example_results):
    r = open_report(write(tmp_path, example_results["capacity"], "capacity"), "report-capacity")
    r.check_clean()
    page = r.page
    assert page.locator(".card-value", has_text="85").count() == 1
    bars = page.locator("#replicas svg").first
    placed = example_results["capacity"]["placements"]
    for node in placed:
        assert bars.locator("text.label", has_text=node).count() == 1
    rows = r.row_texts("nodes")
    assert len(rows) == 12 and rows[0].split("\t")[2] == str(max(placed.values()))
    assert page.locator("#stop .fit-error").inner_text() == example_results["capacity"]["stopReason"]
    assert any("Insufficient cpu" in t for t in page.locator("#stop svg title").all_text_contents())


def test_compare_report(open_report, tmp_path, example_results):
    r = open_report(write(tmp_path, example_results["compare"], "compare"), "report-compare")
    r.check_clean()
    page = r.page
    moves = example_results["compare"]["differences"]
    assert [t.split("\t")[0] for t in r.row_texts("move-table")] == [d["pod"] for d in moves]
    bands = page.locator("#moves svg path.band")
    assert bands.count() >= 1
    assert "→" in bands.first.locator("title").text_content()
    assert page.locator("#moves svg", has_text="eu-west-1a").count() == 1  # the by-zone flows
    util = page.locator("#utilisation svg")
    for node in NODES:
        assert util.locator("text.label", has_text=node).count() == 1
    assert r.rows("nodes").count() == 12


def test_unknown_keys_render_in_the_browser(open_report, tmp_path, example_results):
    data = json.loads(json.dumps(example_results["simulate"]))
    data["preemptions"] = [{"pod": "default/ml-train-64core", "node": "worker-1a-01", "victims": ["default/low"]}]
    data["placements"][9]["nominatedNode"] = "worker-1a-01"
    r = open_report(write(tmp_path, data, "extras"), "report-simulate-extras")
    r.check_clean()
    assert r.page.locator("#extras table.dt tbody tr").inner_text().startswith("default/ml-train-64core")
    assert r.page.locator("#queue thead", has_text="nominatedNode").count() == 1


def test_a_larger_cluster_pages_sorts_and_filters(open_report, tmp_path):
    """600 pods on 300 synthetic nodes: the charts show the fullest nodes, the tables page through the rest."""
    snapshot = load_objects(to_objects(generate(300, 600, 1)), "synthetic")
    source = from_provider("DefaultProvider")
    data = simulation_to_dict(simulate(snapshot, lambda c: source.build(c)), source.label)
    r = open_report(write(tmp_path, data, "larger"), "report-simulate-300-nodes")
    r.check_clean()
    page = r.page
    assert page.locator("#usage svg g.usage-bar").count() == 30 * 3
    assert page.locator("#queue .dt-count").first.inner_text() == "600 rows"
    assert page.locator("#queue .dt-pager .dt-count").inner_text() == "1–25 of 600"
    page.locator("#nodes th", has_text="CPU after").click()  # numbers sort descending first
    best = max(round(100 * int(n["requestedAfter"]["cpu"][:-1]) / int(n["allocatable"]["cpu"][:-1]), 1)
               for n in data["nodes"])
    assert r.row_texts("nodes")[0].split("\t")[3] == f"{best:g}%"
    page.locator("#nodes th", has_text="Node").first.click()
    page.locator("#nodes input[type=search]").fill("node-0029")
    assert [t.split("\t")[0] for t in r.row_texts("nodes")] == [f"node-0029{i}" for i in range(10)]


def test_migrate_report(open_report, tmp_path, example_results):
    data = example_results["migrate"]
    r = open_report(write(tmp_path, data, "migrate"), "report-migrate")
    r.check_clean()
    page = r.page
    counts = {s: sum(e["status"] == s for e in data["mapping"]) for s in ("exact", "approximate", "dropped", "implicit")}
    for status, n in counts.items():
        card = page.locator(".card", has=page.locator(".card-label", has_text=status.capitalize()))
        assert card.locator(".card-value").inner_text() == str(n), status
    rows = r.row_texts("mapping")
    assert [t.split("\t")[0] for t in rows] == [e["from"] for e in data["mapping"]]
    # the status is a badge; the preset shows one status
    badges = page.locator("#mapping td span.badge")
    assert badges.all_inner_texts() == [e["status"] for e in data["mapping"]]
    assert "rgb(" in badges.first.evaluate("e => getComputedStyle(e).backgroundColor")
    page.locator("#mapping select[aria-label=Show]").select_option("dropped")
    assert r.rows("mapping").count() == counts["dropped"]
    assert all("\tdropped\t" in t for t in r.row_texts("mapping"))
    page.locator("#mapping select[aria-label=Show]").select_option("")
    page.locator("#mapping input[type=search]").fill("labelPreference")
    (preferred,) = r.row_texts("mapping")
    assert "NodeAffinity · score · weight" in preferred
    assert page.locator("#configuration pre").inner_text().startswith("apiVersion: kubescheduler.config.k8s.io/v1")
