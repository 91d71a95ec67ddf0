"""The algorithms a pod is scheduled with: the predicates (also in 1.10's evaluation order), priorities and
extenders, as :class:`~.generic_scheduler.GenericScheduler` runs them and :mod:`.explain`'s recorder wraps them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..algorithm import FitPredicate, PriorityConfig
from ..predicates import ORDERING
from .extender import SchedulerExtender


def evaluation_order(names: Sequence[str]) -> list[str]:
    """The 1.10 predicate order for the names it lists, then every other name in ascending order."""
    present = set(names)
    ordered = [n for n in ORDERING if n in present]
    listed = set(ordered)
    return ordered + sorted(n for n in present if n not in listed)


@dataclass(slots=True)
class Algorithms:
    """The predicates (also in evaluation order), priorities and extenders used for a pod."""

    predicates: dict[str, FitPredicate]
    ordered_predicates: list[tuple[str, FitPredicate]]
    prioritizers: list[PriorityConfig]
    extenders: list[SchedulerExtender] = field(default_factory=list)

    @classmethod
    def build(
        cls, predicates: Mapping[str, FitPredicate], prioritizers: Sequence[PriorityConfig],
        extenders: Sequence[SchedulerExtender] = (),
    ) -> Algorithms:
        ordered = [(n, predicates[n]) for n in evaluation_order(list(predicates))]
        return cls(dict(predicates), ordered, list(prioritizers), list(extenders))
