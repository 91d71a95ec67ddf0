"""Shared normalisation (upstream ``priorities/reduce.go``: ``NormalizeReduce``) and Go integer division."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..algorithm import HostPriority, PriorityReduceFunction

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncation toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def normalize_reduce(max_priority: int, reverse: bool) -> PriorityReduceFunction:
    """``NormalizeReduce(maxPriority, reverse)``: scale scores to ``0..max_priority`` by the largest score.

    When every score is <= 0 the scores are left alone, or all set to ``max_priority`` when ``reverse``.
    """

    def reduce(
        pod: Pod | None, meta: object, node_infos: Mapping[str, NodeInfo] | None, results: list[HostPriority]
    ) -> None:
        max_count = 0
        for r in results:
            if r.score > max_count:
                max_count = r.score
        if max_count == 0:
            if reverse:
                for r in results:
                    r.score = max_priority
            return
        for r in results:
            score = go_div(max_priority * r.score, max_count)
            if reverse:
                score = max_priority - score
            r.score = score

    return reduce
