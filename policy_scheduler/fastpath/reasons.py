"""Reasons forms' results (:class:`~policy_scheduler.core.fit_error.ReasonRows`) that count without listing.

A pod that fits nowhere at 5,000 nodes has 5,000 reason lists, and a daemon mostly needs only their histogram
(the FitError's message): a preemptor retried while its victims go fails on every node again and again. These
keep the numbers that make the reasons (copied from the columns), count them at once with numpy, and list them
per row only when the FitError's per-node map is read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..algorithm import InsufficientResource
from ..core.fit_error import ReasonRows


class ResourceShortfalls:
    """PodFitsResources' reasons on some rows: per check some row fails, (resource, requested, short, used,
    allocatable) with the last three over those rows. A row's reasons are its short resources in check order;
    rows short of the same resources with the same numbers share the reason objects."""

    def __init__(self, rows: int, checks: Sequence[tuple[str, int, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        self.rows = rows
        self.checks = checks

    def counts(self) -> Counter[str]:
        return Counter({str(InsufficientResource(name, want, 0, 0)): int(short.sum())
                        for name, want, short, _, _ in self.checks if short.any()})

    def nonempty(self) -> np.ndarray:
        out = np.zeros(self.rows, dtype=bool)
        for _, _, short, _, _ in self.checks:
            out |= short
        return out

    def lists(self) -> list[list[str]]:
        if not self.checks:
            return [[] for _ in range(self.rows)]
        columns = [c for _, _, short, used, cap in self.checks
                   for c in (short, np.where(short, used, 0), np.where(short, cap, 0))]
        shared: dict[tuple[int, ...], list[str]] = {}
        out = []
        for key in zip(*(c.tolist() for c in columns)):
            reasons = shared.get(key)
            if reasons is None:
                reasons = shared[key] = [InsufficientResource(name, want, key[3 * j + 1], key[3 * j + 2])
                                         for j, (name, want, *_) in enumerate(self.checks) if key[3 * j]]
            out.append(list(reasons))
        return out


class Concatenated:
    """Several checks' reasons on the same rows, each row's in the parts' order (GeneralPredicates)."""

    def __init__(self, parts: Sequence[ReasonRows]) -> None:
        self.parts = parts

    def counts(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for part in self.parts:
            counts.update(part.counts())
        return counts

    def nonempty(self) -> np.ndarray:
        out = self.parts[0].nonempty()
        for part in self.parts[1:]:
            out = out | part.nonempty()
        return out

    def lists(self) -> list[list[str]]:
        out = self.parts[0].lists()
        for part in self.parts[1:]:
            for mine, theirs in zip(out, part.lists()):
                mine.extend(theirs)
        return out
