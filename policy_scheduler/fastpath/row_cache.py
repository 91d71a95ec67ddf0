"""Per-node arrays derived from the pod-dependent columns, one per class of pods, kept up to date row by row.

A vectorised form whose value on a node depends only on that node's columns and on a few numbers of the pod
(its request, say) computes it once for every class of pods sharing those numbers, over every node. When pods
are assumed, bound or removed, :class:`NodeColumns` logs the rows they changed; the next time a class is asked
for, only those rows are computed again. A class left behind by more changes than the log keeps is computed
whole again; node changes drop every class (the columns are rebuilt).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

#: ``compute(rows)``: the values on ``rows`` (``slice(None)``: every row), in row order (a value may be a row of
#: a 2-D array).
Compute = Callable[[slice | np.ndarray], np.ndarray]

MAX_CLASSES = 128  # arrays kept at most (each one value per node); all are dropped when a new one would exceed it


class RowCache:
    def __init__(self, rows: int, max_classes: int = MAX_CLASSES) -> None:
        self._max_classes = max_classes
        self._classes: dict[Hashable, tuple[np.ndarray, list[int]]] = {}  # key -> (values, [position synced to])
        self._log: list[int] = []  # rows changed since position ``_base``
        self._base = 0
        self._max_log = max(1024, rows // 8)

    def changed(self, row: int) -> None:
        """Row ``row``'s pod-dependent columns changed."""
        if not self._classes:
            return  # nothing to bring up to date: a new class is computed whole
        self._log.append(row)
        if len(self._log) > self._max_log:
            self._base += len(self._log)
            self._log.clear()

    def get(self, key: Hashable, compute: Compute) -> np.ndarray:
        """The class ``key``'s values on every row (read-only: the cache's own array)."""
        end = self._base + len(self._log)
        entry = self._classes.get(key)
        if entry is None or entry[1][0] < self._base:
            if entry is None and len(self._classes) >= self._max_classes:
                self._classes.clear()
            values = compute(slice(None))
            self._classes[key] = (values, [end])
            return values
        values, synced = entry
        if synced[0] < end:
            rows = np.array(sorted(set(self._log[synced[0] - self._base:])), dtype=np.int64)  # np.unique costs more
            values[rows] = compute(rows)
            synced[0] = end
        return values
