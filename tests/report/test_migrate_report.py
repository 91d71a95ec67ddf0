"""The migrate report: status cards, the mapping table, the configuration as YAML, and saved results."""

from __future__ import annotations

import html
import json
import re
from collections import Counter

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.migration.table import STATUS_MEANINGS, to_text
from policy_scheduler.report import ReportInputError, detect_kind, load_result, render_report
from policy_scheduler.report.migrate import context, status_counts

from .test_render import embedded

PRE = re.compile(r'<pre class="config">(.*?)</pre>', re.DOTALL)


@pytest.fixture
def migrated(example_results) -> dict:
    return json.loads(json.dumps(example_results["migrate"]))


def card_values(page_html: str) -> dict[str, str]:
    pairs = re.findall(r'<div class="card-label">(.*?)</div>\s*<div class="card-value"[^>]*>(.*?)</div>', page_html)
    return dict(pairs)


def test_the_example_covers_every_status_and_argument(migrated):
    """The example Policy exercises what the report draws: all four statuses and argument entries."""
    assert set(status_counts(migrated["mapping"])) == set(STATUS_MEANINGS)
    assert all(status_counts(migrated["mapping"]).values())
    assert {e.get("argument") for e in migrated["mapping"]} >= {"serviceAffinity", "labelsPresence",
                                                                 "serviceAntiAffinity", "labelPreference"}


def test_header_cards_count_each_status(migrated):
    page = render_report(migrated)
    counts = Counter(e["status"] for e in migrated["mapping"])
    assert card_values(page) == {status.capitalize(): str(counts[status]) for status in STATUS_MEANINGS}
    assert f"{html.escape(migrated['source'])} → kube-scheduler {migrated['target']}" in page
    assert "<code>migrate --strict</code> exits 1" in page


def test_mapping_table_has_a_row_per_entry(migrated):
    table = embedded(render_report(migrated))["tables"]["mapping"]
    assert [c["label"] for c in table["columns"]] == ["From", "Kind", "Status", "To (v1)", "Note", ""]
    assert table["columns"][2]["type"] == "badge"
    rows = table["rows"]
    assert [r[0] for r in rows] == [e["from"] for e in migrated["mapping"]]
    strings = table["strings"]
    for row, entry in zip(rows, migrated["mapping"]):
        assert row[2] == row[5] == entry["status"]
        assert row[1] == entry["kind"] + (f" · {entry['argument']}" if entry.get("argument") else "")
        assert strings[row[3]] == "\n".join(to_text(item) for item in entry["to"])
        assert strings[row[4]] == entry["note"]
    assert {p["cls"] for p in table["presets"]} == set(STATUS_MEANINGS)


def test_configuration_is_shown_as_yaml(migrated):
    (text,) = PRE.findall(render_report(migrated))
    assert yaml.safe_load(html.unescape(text)) == migrated["configuration"]
    assert html.unescape(text).startswith("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")


def test_to_items_read_as_text():
    assert to_text({"plugin": "NodeResourcesFit", "extensionPoint": "score", "weight": 1}) == "NodeResourcesFit · score · weight 1"
    assert to_text({"plugin": "NodeAffinity", "extensionPoint": "filter"}) == "NodeAffinity · filter"
    assert to_text({"pluginConfig": "InterPodAffinity", "args": {"hardPodAffinityWeight": 10}}) == (
        'InterPodAffinity args {"hardPodAffinityWeight": 10}')
    assert to_text({"extender": "https://x.example/s"}) == "extender https://x.example/s"
    assert to_text({"field": "percentageOfNodesToScore", "value": 100}) == "percentageOfNodesToScore: 100"
    assert to_text({"somethingNew": 1}) == '{"somethingNew": 1}'


def test_everything_exact_says_so(migrated):
    migrated["mapping"] = [e for e in migrated["mapping"] if e["status"] in ("exact", "implicit")]
    page = render_report(migrated)
    assert "Everything the Policy names carries over exactly" in page and "--strict</code> exits 1" not in page
    assert card_values(page)["Dropped"] == "0"


def test_the_verdict_is_strict_s(migrated):
    """What 1.9 did unasked (kind implicit) is counted in the cards but does not fail --strict, as in the CLI."""
    unasked = [e for e in migrated["mapping"] if e["kind"] == "implicit" and e["status"] == "approximate"]
    assert unasked
    migrated["mapping"] = [e for e in migrated["mapping"] if e["status"] == "exact"] + unasked
    page = render_report(migrated)
    assert "--strict</code> exits 0" in page and card_values(page)["Approximate"] == str(len(unasked))


def test_empty_mapping_and_no_configuration(migrated):
    ctx = context({**migrated, "mapping": [], "configuration": {}})
    assert ctx["page"].tables["mapping"].rows == [] and ctx["configuration_yaml"] == ""


def test_hostile_strings_are_escaped(migrated):
    evil = "<script>alert(1)</script>"
    migrated["source"] = evil
    migrated["mapping"][0]["note"] = evil
    migrated["configuration"]["profiles"][0]["schedulerName"] = "</pre><b>x</b>"
    page = render_report(migrated)
    assert evil not in page and "</pre><b>" not in page
    assert page.count("</script>") == 2
    assert evil in embedded(page)["tables"]["mapping"]["strings"]


def test_unknown_keys_and_statuses_are_shown(migrated):
    migrated["warnings"] = ["something a newer migrate says"]
    migrated["mapping"][0]["status"] = "partial"
    page = render_report(migrated)
    assert "<code>warnings</code>" in page and "something a newer migrate says" in page
    assert card_values(page)["Partial"] == "1"


def test_saved_result_is_detected_and_validated(tmp_path, migrated):
    assert detect_kind({k: v for k, v in migrated.items() if k != "kind"}) == "MigrateResult"
    bad = json.loads(json.dumps(migrated))
    bad["mapping"][2]["status"] = "perfect"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ReportInputError, match=r"not a valid migrate -o json result: mapping\[2\]\.status: "):
        load_result(str(path))
    (tmp_path / "saved.yaml").write_text(yaml.safe_dump(migrated))
    assert load_result(str(tmp_path / "saved.yaml")) == migrated


def test_strict_with_report_still_writes_it(tmp_path, example_results):
    out = tmp_path / "m.html"
    args = ["migrate", "--policy-config-file", example_results["migrate"]["source"], "--strict", "--report", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert out.read_text() == render_report(example_results["migrate"])
