"""NormalizeReduce (upstream ``priorities/reduce.go``) and Go integer division."""

from __future__ import annotations

import pytest

from policy_scheduler.algorithm import HostPriority
from policy_scheduler.priorities import normalize_reduce
from policy_scheduler.priorities.reduce import go_div


def _run(scores: list[int], reverse: bool) -> list[int]:
    results = [HostPriority(f"n{i}", s) for i, s in enumerate(scores)]
    normalize_reduce(10, reverse)(None, None, {}, results)
    return [r.score for r in results]


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([0, 1, 3], False, [0, 3, 10]),
        ([0, 1, 3], True, [10, 7, 0]),
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [10, 10, 10]),
        ([2, 4, 11], False, [1, 3, 10]),
        ([], True, []),
    ],
)
def test_normalize_reduce(scores: list[int], reverse: bool, expected: list[int]) -> None:
    """priorities.md §14 and the §19 worked example ([0, 1, 3] -> [0, 3, 10]; reverse -> [10, 7, 0])."""
    assert _run(scores, reverse) == expected


def test_normalize_reduce_negative_scores_truncate_like_go() -> None:
    """Go's ``maxPriority * score / maxCount`` truncates toward zero: -1 * 10 / 3 == -3, not -4."""
    assert _run([-1, 3], False) == [-3, 10]


def test_normalize_reduce_all_non_positive_left_alone() -> None:
    assert _run([-2, 0], False) == [-2, 0]
    assert _run([-2, 0], True) == [10, 10]


@pytest.mark.parametrize(("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)])
def test_go_div(a: int, b: int, q: int) -> None:
    assert go_div(a, b) == q
