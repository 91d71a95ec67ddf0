"""Mutants for the never-crash tests: one field of a document replaced by a value of a random, usually
wrong, type, or deleted.

Every mutant comes from an explicit seed through :class:`random.Random` (whose integer-seeded draws
are stable across Python versions), so CI, a newcomer's venv and any later test-library release run
exactly the same cases; a failure names its seed.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any, TypeVar

Path_ = tuple[str | int, ...]
T = TypeVar("T")

_TEXT = "aZ9-_./:é \t\x00☃"


def _text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, size)))


def wrong_value(rng: random.Random) -> Any:
    """A JSON-ish value of any type: integers (large, negative), booleans, short text, small lists and
    maps, null, and floats including NaN and the infinities."""
    kind = rng.randrange(8)
    if kind == 0:
        return rng.randint(-(2**40), 2**40)
    if kind == 1:
        return -rng.randint(1, 2**63)
    if kind == 2:
        return rng.random() < 0.5
    if kind == 3:
        return _text(rng, 6)
    if kind == 4:
        return [rng.randint(-(2**31), 2**31) if rng.random() < 0.5 else _text(rng, 3) for _ in range(rng.randint(0, 2))]
    if kind == 5:
        return {_text(rng, 3): rng.randint(-(2**40), 2**40) for _ in range(rng.randint(0, 2))}
    if kind == 6:
        return None
    return rng.choice([float("nan"), float("inf"), float("-inf"), -0.0, rng.uniform(-1e6, 1e6)])


def draw(seed: int, targets: Sequence[T], one_in: int = 6) -> tuple[random.Random, T, Any, bool]:
    """``(rng, target, new value, delete)`` of mutant ``seed``; one in ``one_in`` deletes the field.
    The returned generator goes on for the test's own further draws."""
    rng = random.Random(seed)
    return rng, rng.choice(targets), wrong_value(rng), rng.randrange(one_in) == 0


def field_paths(value: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every path inside ``value`` (the empty path, the whole value, excluded)."""
    paths: list[Path_] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        paths.append((*prefix, key))
        paths.extend(field_paths(child, (*prefix, key)))
    return paths


def mutate(doc: Any, path: Path_, new: Any, delete: bool) -> Any:
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return doc
