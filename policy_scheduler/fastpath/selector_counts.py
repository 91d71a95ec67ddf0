"""Per node, how many cached pods each (namespaces, selector) asked about matches, kept up to date.

The vectorised forms ask for the pods a label selector matches (SelectorSpread, inter-pod affinity,
topology spread) over and over; :class:`SelectorCounts` counts them per node from the first question on and
follows every pod the cache adds or removes. A pod is tested only against the selectors that can match it:
those requiring one of its label values (a selector's first single-value ``In`` requirement files it under
that key and value) and those requiring none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable

import numpy as np

from ..model.labels import IN, Selector
from ..model.pod import Pod
from ..model.topology import ALL_NAMESPACES, TermNamespaces

MAX_SELECTORS = 256  # selectors counted at most; all are dropped when a new one would exceed it

Key = tuple[Hashable, Selector]


def selector_key(namespaces: TermNamespaces, selector: Selector) -> Key:
    return (namespaces if namespaces is ALL_NAMESPACES else frozenset(namespaces), selector)


class SelectorCounts:
    def __init__(self) -> None:
        self._counts: dict[Key, np.ndarray] = {}
        self._rows: dict[Key, dict[int, int]] = {}  # per key, its non-zero rows and their counts
        self._filed: dict[tuple[str, str] | None, list[Key]] = defaultdict(list)  # (label, value) or None -> keys

    def counts(self, key: Key, node_rows: Callable[[], np.ndarray], size: int) -> np.ndarray:
        """The per-node counts for ``key`` (read-only); the first time from ``node_rows()``, the rows of the
        matching pods."""
        counts = self._counts.get(key)
        if counts is None:
            if len(self._counts) >= MAX_SELECTORS:
                self._counts.clear()
                self._rows.clear()
                self._filed.clear()
            counts = self._counts[key] = np.bincount(node_rows(), minlength=size).astype(np.int64)
            self._rows[key] = {i: int(counts[i]) for i in np.flatnonzero(counts).tolist()}
            reqs = key[1].requirements or ()
            eq = next((r for r in reqs if r.op == IN and len(r.values) == 1), None)
            self._filed[None if eq is None else (eq.key, next(iter(eq.values)))].append(key)
        return counts

    def rows(self, key: Key) -> dict[int, int]:
        """The rows where ``key``'s counts are not 0 (after :meth:`counts`)."""
        return self._rows[key]

    def pod_changed(self, pod: Pod, row: int, sign: int) -> None:
        """``pod`` was added to (``sign`` 1) or removed from (-1) node row ``row``."""
        if not self._counts:
            return
        labels = pod.labels
        keys = list(self._filed.get(None, ()))
        for item in labels.items():
            keys += self._filed.get(item, ())
        for key in keys:
            namespaces, selector = key
            if pod.namespace in namespaces and selector.matches(labels):
                counts = self._counts[key]
                counts[row] += sign
                rows = self._rows[key]
                if counts[row]:
                    rows[row] = int(counts[row])
                else:
                    del rows[row]
