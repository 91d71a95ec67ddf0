"""Vectorised forms of the built-in predicates and priorities.

Each form computes, for every node at once over :class:`~policy_scheduler.fastpath.columns.NodeColumns`,
exactly what the per-node reference function computes node by node; the per-node functions stay the
reference (and the only path for ``explain`` and FitError reasons). A form returns ``None`` when it
cannot guarantee the reference's outcome for this pod (an error is possible, or the input is unusual);
the scheduler then runs the reference function instead.

* predicate form: ``(pod, meta, columns) -> bool array over all nodes | None``
* priority form: ``(pod, meta, columns, candidates: int array) -> int64 scores after reduce | int | None``
  (an int: the score every candidate gets, which spares the array where a priority scores all alike)
* reasons form (a predicate's, optional): ``(pod, meta, columns, rows: int array) -> ReasonRows``
  (:mod:`policy_scheduler.core.fit_error`), the reference's reasons on each of ``rows`` (where the predicate form
  said False), counted at once and listed on demand, raising PredicateError where the reference would; it spares
  a pod that fits nowhere the per-node reference pass for its FitError

Forms are attached to the reference callables by :func:`attach`; a priority form states the reduce
function it already includes, and is used only when the configured reduce is that one. Priority forms that can
add themselves up (a ``plus`` method) are merged by :func:`priority_plan` into one weighted sum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

VECTORIZED = "vectorized"
VECTORIZED_REDUCE = "vectorized_reduce"
VECTORIZED_REASONS = "vectorized_reasons"


def attach(reference: Any, form: Callable[..., Any], reduce: Callable[..., Any] | None = None) -> Any:
    """Attach ``form`` to ``reference`` (a predicate, a priority map or a legacy priority function)."""
    setattr(reference, VECTORIZED, form)
    setattr(reference, VECTORIZED_REDUCE, reduce)
    return reference


def attach_reasons(reference: Any, form: Callable[..., Any]) -> Any:
    """Attach a reasons form to the predicate ``reference``."""
    setattr(reference, VECTORIZED_REASONS, form)
    return reference


def signature(value: Any) -> str:
    """A cache key for a decoded JSON value (a pod's node selector or node affinity): ``repr`` tells every JSON value
    apart, and costs a third of a canonical ``json.dumps`` (equal values written in another key order only miss the
    cache)."""
    return repr(value)


def predicate_form(predicate: Any) -> Callable[..., Any] | None:
    return getattr(predicate, VECTORIZED, None)


def reasons_form(predicate: Any) -> Callable[..., Any] | None:
    return getattr(predicate, VECTORIZED_REASONS, None)


def priority_form(config: Any) -> Callable[..., Any] | None:
    """The form for a built PriorityConfig, if its reference has one matching its reduce step."""
    reference = config.function if config.function is not None else config.map
    form = getattr(reference, VECTORIZED, None)
    if form is None or getattr(reference, VECTORIZED_REDUCE, None) is not config.reduce:
        return None
    return form


@dataclass(frozen=True, slots=True)
class PlannedPriority:
    """One step of the weighted sum of scores: ``weight`` times ``form``'s scores, which stand for ``configs``
    (each with its own weight already applied when there are several); when the form is None or answers None,
    ``configs`` are run the reference way."""

    form: Callable[..., Any] | None
    weight: int
    configs: tuple[Any, ...]


def priority_plan(configs: Sequence[Any]) -> list[PlannedPriority]:
    """The built PriorityConfigs as steps of the weighted sum, in their order; forms with a ``plus`` method (the
    request-based scores) merged into the first of them, so they cost one pass between them."""
    plan: list[PlannedPriority] = []
    merged: int | None = None  # the index in ``plan`` of the step holding the mergeable forms
    for config in configs:
        form = priority_form(config)
        if form is not None and hasattr(form, "plus") and config.weight != 0:
            if merged is None:
                merged = len(plan)
                plan.append(PlannedPriority(form, config.weight, (config,)))
            else:
                step = plan[merged]
                plan[merged] = PlannedPriority(step.form.plus(step.weight, form, config.weight), 1,
                                               (*step.configs, config))
            continue
        plan.append(PlannedPriority(form, config.weight, (config,)))
    return plan
