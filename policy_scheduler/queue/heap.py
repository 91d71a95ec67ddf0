"""A heap of items by key (upstream ``internal/heap``): pushing a key again replaces its item and its place,
removing a key is O(1). Replaced and removed items leave stale entries in the heap, skipped when they
surface and dropped when they outnumber the live ones."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_COMPACT_AT = 64  # below this many heap entries stale ones are left to surface


class KeyedHeap(Generic[T]):
    """Items ordered by the ``order`` given at push (smallest first), ties in push order."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[int, T]] = {}  # key -> (push number, item)
        self._heap: list[tuple[Any, int, str]] = []  # (order, push number, key)
        self._pushes = itertools.count()

    def push(self, key: str, item: T, order: Any) -> None:
        n = next(self._pushes)
        self._items[key] = (n, item)
        heapq.heappush(self._heap, (order, n, key))
        if len(self._heap) > _COMPACT_AT and len(self._heap) > 4 * len(self._items):
            self._heap = [entry for entry in self._heap if self._live(entry)]
            heapq.heapify(self._heap)

    def peek(self) -> tuple[Any, T] | None:
        """The head's order and item, None when empty."""
        while self._heap:
            entry = self._heap[0]
            if self._live(entry):
                return entry[0], self._items[entry[2]][1]
            heapq.heappop(self._heap)
        return None

    def pop(self) -> T:
        """Remove and return the head (the heap must not be empty)."""
        while True:
            entry = heapq.heappop(self._heap)
            if self._live(entry):
                return self._items.pop(entry[2])[1]

    def remove(self, key: str) -> T | None:
        entry = self._items.pop(key, None)
        return entry[1] if entry is not None else None

    def get(self, key: str) -> T | None:
        entry = self._items.get(key)
        return entry[1] if entry is not None else None

    def values(self) -> Iterator[T]:
        return (item for _, item in self._items.values())

    def _live(self, entry: tuple[Any, int, str]) -> bool:
        current = self._items.get(entry[2])
        return current is not None and current[0] == entry[1]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)
