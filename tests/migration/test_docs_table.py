"""docs/migration.md embeds the mapping tables the code generates, so the page cannot drift from the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy_scheduler.migration.table import (
    BEGIN,
    END,
    between_markers,
    main,
    mapping_tables,
    replace_between_markers,
    version_groups,
)
from policy_scheduler.migration.versions import NEWEST, OLDEST

DOCS = Path(__file__).resolve().parents[2] / "docs" / "migration.md"


@pytest.fixture(scope="module")
def tables() -> str:
    return mapping_tables()


def test_docs_embed_the_generated_tables(tables):
    embedded = between_markers(DOCS.read_text(encoding="utf-8"))
    assert embedded is not None, f"docs/migration.md has lost its {BEGIN} / {END} markers"
    assert embedded == tables, (
        "docs/migration.md's mapping tables differ from the code's: run "
        "`python -m policy_scheduler.migration.table --write docs/migration.md`")


def test_every_version_is_in_one_group_and_the_cloud_limits_split_them():
    groups = version_groups()
    assert sorted(m for minors, _ in groups for m in minors) == list(range(OLDEST, NEWEST + 1))
    first = [minors for minors, _ in groups]
    # 1.36: NodeDeclaredFeatures on, the BalancedAllocation formula, image volumes; 1.35: NodeDeclaredFeatures
    # registered (gate off), DynamicResources scores; 1.34: DRA on; 1.33: best-effort pods not balanced-scored;
    # 1.32 and 1.31 differ on the cloud volume-limit plugins
    assert first[:6] == [[36], [35], [34], [33], [32], [31]], first
    for minors, rows in groups:
        ebs = next(r for r in rows if r.entry == "predicate `MaxEBSVolumeCount`")
        assert any(t.startswith("EBSLimits") for t in ebs.to) == (minors[0] < 32), minors
        assert ("out of the default profile since 1.31" in ebs.note) == (minors == [31]), minors
        entries = {r.entry: r for r in rows}
        features = entries.get("implicit: (cluster rules: node declared features)")
        assert (features is not None) == (minors[0] >= 35), minors
        assert features is None or ("gate NodeDeclaredFeatures is alpha and off" in features.note) == (minors == [35])
        claims = entries.get("implicit: (spec.resourceClaims: dynamic resource allocation)")
        assert (claims is not None) == (minors[0] >= 34), minors
        assert claims is None or ("DynamicResources · score · weight 2" in claims.to) == (minors[0] >= 35), minors


def test_rows_cover_every_entry_kind(tables):
    newest = version_groups()[0][1]
    entries = [r.entry for r in newest]
    for name in ("GeneralPredicates", "CheckNodeMemoryPressure", "PodFitsPorts", "LeastRequestedPriority",
                 "EqualPriority", "NodePreferAvoidPodsPriority", "ResourceLimitsPriority"):
        assert any(f"`{name}`" in e for e in entries), name
    for argument in ("serviceAffinity", "labelsPresence", "serviceAntiAffinity", "labelPreference"):
        assert f"`{argument}` argument" in entries
    for field in ("hardPodAffinitySymmetricWeight", "alwaysCheckAllPredicates", "predicates", "priorities"):
        assert any(e.startswith(f"field `{field}`") for e in entries), field
    assert "`extenders[]`" in entries and any(e.startswith("implicit: ") for e in entries)
    assert {r.status for r in newest} == {"exact", "approximate", "dropped", "implicit"}
    assert tables.count("| 1.9 entry | status |") == len(version_groups())


def test_write_replaces_only_between_the_markers(tmp_path, tables, capsys):
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\nbefore\n{BEGIN}\nstale table\n{END}\nafter\n")
    assert main(["--write", str(page)]) == 0
    assert page.read_text() == f"# Title\n\nbefore\n{BEGIN}\n{tables}{END}\nafter\n"
    assert between_markers(page.read_text()) == tables
    assert main(["--write", str(page)]) == 0 and between_markers(page.read_text()) == tables  # idempotent
    assert main([]) == 0 and capsys.readouterr().out == tables


def test_write_without_markers_is_one_line_exit_2(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("no markers here\n")
    assert main(["--write", str(page)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {page}: no {BEGIN} ... {END} markers"
    assert page.read_text() == "no markers here\n"
    with pytest.raises(ValueError):
        replace_between_markers("x", "y")
