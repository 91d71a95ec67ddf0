"""The rendered file: self-contained, escaped, deterministic, and the same from --report and from a saved JSON."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.report import render_report

from .conftest import EXPLAIN_POD, MIGRATE_POLICY

COMMANDS = ["simulate", "explain", "capacity", "compare", "migrate"]
CHARTED = ["simulate", "explain", "capacity", "compare"]  # the reports with SVG charts
DATA = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.DOTALL)


def embedded(html: str) -> dict:
    return json.loads(DATA.search(html).group(1))


@pytest.mark.parametrize("command", COMMANDS)
def test_self_contained(example_results, command):
    html = render_report(example_results[command])
    assert html.startswith("<!doctype html>")
    assert "default-src 'none'" in html  # the page may not fetch anything, and the browser enforces it
    assert not re.search(r'\s(?:src|href|xlink:href)="(?!#|data:)', html), "only in-page links and data: URLs"
    assert set(re.findall(r"https?://[^\s\"'<)]+", html)) <= {"http://www.w3.org/2000/svg"}
    assert "@import" not in html and "url(http" not in html
    data = embedded(html)
    assert data["kind"] == command and data["tables"]


@pytest.mark.parametrize("command", CHARTED)
def test_svg_is_well_formed_and_has_tooltips(example_results, command):
    html = render_report(example_results[command])
    svgs = re.findall(r"<svg .*?</svg>", html, re.DOTALL)
    assert svgs
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.get("role") == "img" and root.get("aria-label")
        assert root.findall(".//{http://www.w3.org/2000/svg}title"), "every chart has hover texts"


def test_names_appear(example_results):
    sim = render_report(example_results["simulate"])
    for node in ("worker-1a-01", "gpu-1c-01", "master-1a"):
        assert f">{node}<" in sim
    tables = embedded(sim)["tables"]
    assert [r[1] for r in tables["queue"]["rows"]] == [p["pod"] for p in example_results["simulate"]["placements"]]
    explain = render_report(example_results["explain"])
    assert "★ worker-1c-01" in explain and EXPLAIN_POD in explain


def test_deterministic(example_results):
    for command in COMMANDS:
        assert render_report(example_results[command]) == render_report(example_results[command])


def test_hostile_strings_are_escaped(example_results):
    data = json.loads(json.dumps(example_results["simulate"]))
    evil = "<script>alert(1)</script>"
    data["algorithm"] = evil
    data["placements"][0]["pod"] = "ns/<img src=x onerror=alert(1)>"
    data["nodes"][0]["node"] = "</script><b>"
    data["nodes"][0]["requestedAfterByNamespace"] = {"<ns>": {"cpu": "100m", "memory": 0, "pods": 1}}
    html = render_report(data)
    assert evil not in html and "<img src=x" not in html and "</script><b>" not in html
    assert html.count("</script>") == 2  # the data block and the script, nothing injected
    assert embedded(html)["tables"]["queue"]["rows"][0][1] == "ns/<img src=x onerror=alert(1)>"


def test_report_flag_equals_report_command(tmp_path, web_pod):
    runner = CliRunner()
    commands = {
        "simulate": ["simulate"], "explain": ["explain", EXPLAIN_POD], "capacity": ["capacity", str(web_pod)],
        "compare": ["compare", "DefaultProvider", "ClusterAutoscalerProvider"],
        "migrate": ["migrate", "--policy-config-file", str(MIGRATE_POLICY)],
    }
    for name, args in commands.items():
        direct = tmp_path / f"{name}-direct.html"
        result = runner.invoke(main, [*args, "-o", "json", "--report", str(direct)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert f"report written to {direct}" in result.stderr
        saved = tmp_path / f"{name}.json"
        saved.write_text(result.stdout)  # what -o json printed, byte for byte
        result = runner.invoke(main, ["report", str(saved), "-o", str(tmp_path / f"{name}-later.html")])
        assert result.exit_code == 0, result.output
        assert (tmp_path / f"{name}-later.html").read_text() == direct.read_text(), name
        default = runner.invoke(main, ["report", str(saved)])
        assert default.exit_code == 0 and (tmp_path / f"{name}.html").read_text() == direct.read_text()


def test_report_flag_keeps_the_table_output(tmp_path):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["simulate", "--report", str(out)], catch_exceptions=False)
    assert result.exit_code == 0
    assert "24/32 pending pods scheduled." in result.stdout and out.stat().st_size > 10_000


def test_report_from_stdin(tmp_path, example_results):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", "-", "-o", str(out)], input=json.dumps(example_results["compare"]))
    assert result.exit_code == 0, result.output
    assert "worker-1c-01" in out.read_text()


def test_unknown_keys_are_shown(example_results):
    data = {**example_results["compare"], "preemptions": [{"pod": "default/x", "victims": 2}], "note": "hello"}
    html = render_report(data)
    assert 'id="extras"' in html and "<code>preemptions</code>" in html and "hello" in html
    tables = embedded(html)["tables"]
    assert tables["extra-0"]["rows"] == [["default/x", "2"]]
