"""The error of a pod no node fits (upstream ``core/generic_scheduler.go`` ``FitError``) and the error
text of a cluster without nodes.

Its own module so that the scheduler, which raises it, and preemption, which reads it, both import it
from here and neither imports the other for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..errors import SchedulingError
from ..features import NEWEST_LINE, KubernetesLine
from ..predicates.reasons import PreFilterReason
from .modern_pods import with_post_filter_message

if TYPE_CHECKING:
    from ..model.pod import Pod

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class ReasonRows(Protocol):
    """One predicate's failure reasons on some rows of the node columns (a FitError's part): how many rows give
    each reason, which rows give any, and each row's list, made only when someone reads them. Whatever it reads
    of the cluster it has copied: the lists are those of the moment it was made."""

    def counts(self) -> Counter[str]:
        ...

    def nonempty(self) -> np.ndarray:
        ...

    def lists(self) -> list[list[str]]:
        ...


class ReasonLists:
    """Reasons already listed, one list per row (a predicate without a counted form, the two-pass check)."""

    def __init__(self, lists: list[list[str]]) -> None:
        self._lists = lists

    def counts(self) -> Counter[str]:
        return Counter(map(str, chain.from_iterable(self._lists)))

    def nonempty(self) -> np.ndarray:
        return np.fromiter(map(bool, self._lists), dtype=bool, count=len(self._lists))

    def lists(self) -> list[list[str]]:
        return self._lists


class RowReasons:
    """A FitError's reasons on every node, as the vectorised path finds them: parts in predicate order, each
    ``(rows, ReasonRows)``; a node's reasons are its rows' in that order. The histogram is counted at once; the
    per-node map is listed the first time it is read (a daemon's pod that cannot preempt never reads it)."""

    def __init__(self, names: Sequence[str], parts: Sequence[tuple[np.ndarray, ReasonRows]]) -> None:
        self.names = names
        self.parts = parts

    def covers_every_node(self) -> bool:
        """Every node has a reason (else the reference would let one through)."""
        covered = np.zeros(len(self.names), dtype=bool)
        for rows, part in self.parts:
            covered[rows[part.nonempty()]] = True
        return bool(covered.all())

    def counts(self) -> Counter[str]:
        return summed_counts(part for _, part in self.parts)

    def by_node(self) -> dict[str, list[str]]:
        per_row: list[list[str]] = [[] for _ in self.names]
        for rows, part in self.parts:
            for i, reasons in zip(rows.tolist(), part.lists()):
                per_row[i].extend(reasons)
        return dict(zip(self.names, per_row))


class FitError(SchedulingError):
    """No node fits the pod; the message is 1.9's ``0/N nodes are available: <histogram>.``

    ``failed_predicates`` maps every node to its reasons (from :class:`RowReasons`, listed when first read);
    ``reason_counts`` is the histogram, by reason text."""

    def __init__(self, pod: Pod, num_all_nodes: int, failed_predicates: dict[str, list[str]] | RowReasons) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        if isinstance(failed_predicates, RowReasons):
            self._failed, self._rows = None, failed_predicates
            self.reason_counts = failed_predicates.counts()
        else:
            self._failed, self._rows = failed_predicates, None
            self.reason_counts = reason_counts(failed_predicates)
        self.post_filter_message = ""
        # Upstream's ``Diagnosis.PreFilterMsg``: a PreFilter that rejected the pod (DynamicResources' only, so only
        # a pod with claims can have one) is the message, not a count per node.
        self.pre_filter_message = pre_filter_message(self.failed_predicates) if pod.resource_claims else ""
        super().__init__(self.base_message)

    @property
    def base_message(self) -> str:
        """The message without PostFilter's part."""
        if self.pre_filter_message:
            return f"0/{self.num_all_nodes} nodes are available: {self.pre_filter_message}."
        return histogram_message(self.num_all_nodes, self.reason_counts)

    @property
    def failed_predicates(self) -> dict[str, list[str]]:
        if self._failed is None:
            assert self._rows is not None
            self._failed, self._rows = self._rows.by_node(), None
        return self._failed

    def add_post_filter_message(self, message: str, line: KubernetesLine = NEWEST_LINE) -> None:
        """Upstream's ``Diagnosis.PostFilterMsg`` (cluster rules: only ``preemptionPolicy: Never``'s, 1.9
        appends none): the message becomes ``<histogram>. <message>`` as ``FitError.Error()`` of the cluster's
        ``line`` prints it (1.26: with one more full stop)."""
        self.post_filter_message = message
        self.args = (with_post_filter_message(self.base_message, message, line),)


def pre_filter_message(failed_predicates: Mapping[str, Sequence[str]]) -> str:
    """The PreFilter rejection every node carries, or ""."""
    first = ""
    for reasons in failed_predicates.values():
        found = next((r for r in reasons if isinstance(r, PreFilterReason)), None)
        if found is None or (first and found != first):
            return ""
        first = first or str(found)
    return first


def summed_counts(parts: Iterable[ReasonRows]) -> Counter[str]:
    """The parts' histograms added up."""
    counts: Counter[str] = Counter()
    for part in parts:
        counts.update(part.counts())
    return counts


def reason_counts(failed_predicates: Mapping[str, Sequence[str]]) -> Counter[str]:
    """How many times each reason text occurs over every node."""
    return Counter(map(str, chain.from_iterable(failed_predicates.values())))


def histogram_message(num_all_nodes: int, counts: Mapping[str, int]) -> str:
    histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(histogram)}."


def fit_error_message(num_all_nodes: int, failed_predicates: Mapping[str, Sequence[str]]) -> str:
    return histogram_message(num_all_nodes, reason_counts(failed_predicates))
