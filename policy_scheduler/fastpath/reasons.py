"""A FitError's reasons on the vectorised path: every node's, counted at once, listed only when read.

A pod that fits nowhere at 5,000 nodes has 5,000 reason lists, and a daemon mostly needs only their histogram
(the FitError's message): a preemptor retried while its victims go fails on every node again and again.
:func:`failed_on_every_node` asks each predicate that failed for its reasons on the rows it rejected; a reasons
form answers with rows that keep the numbers that make the reasons (copied from the columns), count them with
numpy, and list them per row only when the FitError's per-node map is read
(:class:`~policy_scheduler.core.fit_error.RowReasons`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..algorithm import FitPredicate, InsufficientResource
from ..core.fit_error import ReasonLists, ReasonRows, RowReasons, summed_counts
from ..core.nominated import NominatedPodLister, nominated_elsewhere
from ..errors import PredicateError

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod
    from .columns import NodeColumns


def failed_on_every_node(
    pod: Pod, meta: Any, cols: NodeColumns,
    verdicts: Sequence[tuple[FitPredicate, Callable[..., ReasonRows] | None, np.ndarray]],
    nominated_pods: NominatedPodLister | None, pod_fits_on_node: Callable[[Pod, Any, NodeInfo], list[str]],
) -> RowReasons | None:
    """Every node's failure reasons when none fits, as the reference path would give them (``verdicts``: each
    predicate in order, with its reasons form, if any, and its verdict on every row): on each node only the
    predicates whose verdict was False run (a passing predicate adds no reason), in order; a node holding
    nominated pods gets the whole reference two-pass check (``pod_fits_on_node``). None if a predicate errs, or
    if a node would have no reason (the reference would let it through: it decides)."""
    nominated = np.zeros(len(cols.names), dtype=bool)
    if nominated_pods is not None:
        for name in nominated_pods.nominated_nodes():
            i = cols.index.get(name)
            if i is not None and nominated_elsewhere(nominated_pods, pod, name):
                nominated[i] = True
    infos = cols.infos
    parts: list[tuple[np.ndarray, ReasonRows]] = []
    try:
        # Predicate by predicate, in order, the reasons on the rows it rejected: counted at once where it has a
        # reasons form.
        for predicate, form, fits in verdicts:
            rows = np.flatnonzero(~fits & ~nominated)
            if not rows.size:
                continue
            if form is not None:
                parts.append((rows, form(pod, meta, cols, rows)))
            else:
                parts.append((rows, ReasonLists([list(predicate(pod, meta, infos[i])[1]) for i in rows.tolist()])))
        rows = np.flatnonzero(nominated)
        if rows.size:
            parts.append((rows, ReasonLists([list(pod_fits_on_node(pod, meta, infos[i])) for i in rows.tolist()])))
    except PredicateError:
        return None
    reasons = RowReasons(cols.names, parts)
    return reasons if reasons.covers_every_node() else None


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
        return summed_counts(self.parts)

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
