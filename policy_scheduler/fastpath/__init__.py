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

A name's forms are registered with the name, in one record (:class:`.forms.Forms`: the reference, its vectorised
form, reasons form, the reduce a priority form includes, preemption's declaration); a priority form is used only
when the configured reduce is the one it includes. Priority forms that can add themselves up (a ``plus`` method)
are merged by :func:`priority_plan` into one weighted sum. :class:`.decision.VectorisedPath` runs them: the one
thing of this package the reference path sees (through :class:`policy_scheduler.core.fast_path.FastPath`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .forms import Forms

def signature(value: Any) -> str:
    """A cache key for a decoded JSON value (a pod's node selector or node affinity): ``repr`` tells every JSON value
    apart, and costs a third of a canonical ``json.dumps`` (equal values written in another key order only miss the
    cache)."""
    return repr(value)


def priority_form(config: Any, forms: Forms | None) -> Callable[..., Any] | None:
    """The vectorised form of a built PriorityConfig, from its record, if the form includes its reduce step."""
    if forms is None or forms.vectorized is None or forms.reduce is not config.reduce:
        return None
    return forms.vectorized


@dataclass(frozen=True, slots=True)
class PlannedPriority:
    """One step of the weighted sum of scores: ``weight`` times ``form``'s scores, which stand for ``configs``
    (each with its own weight already applied when there are several); when the form is None or answers None,
    ``configs`` are run the reference way."""

    form: Callable[..., Any] | None
    weight: int
    configs: tuple[Any, ...]


def priority_plan(configs: Sequence[Any], records: Sequence[Forms | None]) -> list[PlannedPriority]:
    """The built PriorityConfigs (each with its record) as steps of the weighted sum, in their order; forms with a
    ``plus`` method (the request-based scores) merged into the first of them, so they cost one pass between them."""
    plan: list[PlannedPriority] = []
    merged: int | None = None  # the index in ``plan`` of the step holding the mergeable forms
    for config, forms in zip(configs, records):
        form = priority_form(config, forms)
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
