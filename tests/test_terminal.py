"""The width-aware table renderer and line wrapper (policy_scheduler/terminal.py) on their own; the commands'
tables at a terminal's width are in tests/offline/test_terminal_width.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.terminal import FULL, Layout, fit_lines, terminal_width, text_table

ROWS = [
    ["POD", "NODE", "ATTEMPTS", "REASON"],
    ["shop/web-0", "node-a", "1", ""],
    ["default/ml-train-64core", "-", "3", "0/12 nodes are available: 1 Insufficient memory, 12 Insufficient cpu."],
]


def test_without_a_width_every_column_is_in_full_as_before():
    full = text_table(ROWS)
    assert full.splitlines() == [
        "POD                      NODE    ATTEMPTS  REASON",
        "shop/web-0               node-a  1",
        "default/ml-train-64core  -       3         0/12 nodes are available: 1 Insufficient memory, 12 Insufficient cpu.",
    ]
    assert text_table(ROWS, Layout(None), drop=["ATTEMPTS"], wrap=["REASON"]) == full
    assert text_table(ROWS, Layout(500), drop=["ATTEMPTS"], wrap=["REASON"]) == full  # it fits: nothing changes


def test_a_narrow_width_wraps_messages_and_drops_low_value_columns_only_when_wrapping_is_not_enough():
    # 70 columns: every column fits with the message wrapped (at no less than 20 characters): nothing dropped
    at_70 = text_table(ROWS, Layout(70), drop=["ATTEMPTS"], wrap=["REASON"]).splitlines()
    assert at_70 == [
        "POD                      NODE    ATTEMPTS  REASON",
        "shop/web-0               node-a  1",
        "default/ml-train-64core  -       3         0/12 nodes are available: 1",
        "                                           Insufficient memory, 12",
        "                                           Insufficient cpu.",
    ]
    # 60 columns: the message would get less than 20: ATTEMPTS goes, the message keeps every word
    at_60 = text_table(ROWS, Layout(60), drop=["ATTEMPTS"], wrap=["REASON"]).splitlines()
    assert at_60 == [
        "POD                      NODE    REASON",
        "shop/web-0               node-a",
        "default/ml-train-64core  -       0/12 nodes are available: 1",
        "                                 Insufficient memory, 12",
        "                                 Insufficient cpu.",
    ]


def test_dropping_follows_the_order_given_and_stops_once_it_fits():
    rows = [["NAME", "A", "B", "C"], ["x" * 10, "a" * 10, "b" * 10, "c" * 10]]
    assert text_table(rows, Layout(34), drop=["C", "B", "A"]).splitlines()[0].split() == ["NAME", "A", "B"]
    assert text_table(rows, Layout(22), drop=["C", "B", "A"]).splitlines()[0].split() == ["NAME", "A"]
    assert text_table(rows, Layout(22), drop=["A", "C", "B"]).splitlines()[0].split() == ["NAME", "B"]


def test_a_table_too_wide_even_without_its_low_value_columns_cuts_cells_with_an_ellipsis():
    rows = [["POD", "NODE"], ["namespace/a-very-long-pod-name-0", "node-with-a-long-name"]]
    lines = text_table(rows, Layout(30)).splitlines()
    assert max(map(len, lines)) <= 30
    pod, node = lines[1].split()
    assert pod.endswith("…") and "namespace/a-very-long-pod-name-0".startswith(pod[:-1])
    assert node.endswith("…") and "node-with-a-long-name".startswith(node[:-1])


@settings(max_examples=200, deadline=None)
@given(cells=st.lists(st.lists(st.text(alphabet="ab -/:", max_size=60), min_size=4, max_size=4), min_size=1, max_size=6),
       width=st.integers(min_value=12, max_value=150), drop=st.permutations(["H1", "H2", "H3"]))
def test_no_line_is_ever_wider_than_the_width(cells, width, drop):
    rows = [["H0", "H1", "H2", "H3"], *cells]
    lines = text_table(rows, Layout(width), drop=drop[:2], wrap=["H3"]).splitlines()
    assert all(len(line) <= width for line in lines), (width, lines)
    assert lines[0].startswith("H0")


def test_fit_lines_wraps_long_lines_with_a_hanging_indent_and_leaves_the_rest():
    text = "short\n  a line of many words that goes on and on beyond the width\nend"
    assert fit_lines(text, FULL) == text
    assert fit_lines(text, Layout(30)).splitlines() == [
        "short", "  a line of many words that", "    goes on and on beyond the", "    width", "end"]


def test_the_width_is_columns_else_the_terminals_else_none(monkeypatch):
    monkeypatch.setenv("COLUMNS", "97")
    assert terminal_width() == 97 and Layout.for_output("table") == Layout(97)
    assert Layout.for_output("wide") == FULL
    for junk in ("", "0", "-5", "wide"):
        monkeypatch.setenv("COLUMNS", junk)
        assert terminal_width() is None  # pytest's captured stdout is no terminal
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() is None


@pytest.mark.parametrize("columns", [53, 211])
def test_the_terminals_own_width_without_columns(monkeypatch, columns):
    class Terminal:
        def isatty(self) -> bool:
            return True

        def fileno(self) -> int:
            return 1

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr("sys.stdout", Terminal())
    monkeypatch.setattr("os.get_terminal_size", lambda fd: __import__("os").terminal_size((columns, 40)))
    assert terminal_width() == columns
