"""The fast path's record of a predicate or priority name: everything it has beside the reference.

One :class:`Forms` is registered with each name that has any (``forms=`` of the registry's ``register_*``
methods, where the name is registered: :mod:`algorithmprovider.defaults` for the built-ins); a name without
one is run the reference way only. Where the forms depend on what the name's factory builds (a checker that
holds the cluster, the feature gates), a function ``(built, args) -> Forms`` is registered instead
(:data:`FormsFactory`; ``built`` is the predicate, or the priority's :class:`~policy_scheduler.algorithm.PriorityConfig`).
Building a scheduler binds each record to what was built (:func:`bind_predicate`, :func:`bind_priority`), and
the equivalence tests enumerate the registered records: a form that exists is tested against its reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs, PriorityConfig
    from ..model.pod import Pod


#: A predicate's declaration for preemption's arithmetic: ``(its bound record, pod, meta) ->``
#: :class:`~.preemption.Dependence` ``| None`` (None: "it depends on the pods on the node").
Declaration = Callable[["Forms", "Pod", Any], Any]


@dataclass(frozen=True, slots=True)
class Forms:
    """What the fast path has for one predicate or priority name (the form signatures: :mod:`policy_scheduler.fastpath`).

    * ``reference``: the predicate, or the priority's function or map: set when bound to a scheduler's;
    * ``vectorized``: its vectorised form;
    * ``reasons``: a predicate's reasons form (its failure reasons on many rows at once);
    * ``reduce``: the reduce function a priority's form already includes: the form is used only when the built
      priority's reduce is that one;
    * ``preemption``: a predicate's declaration for preemption's arithmetic (:mod:`.preemption`); without one the
      reference decides every preemption that involves the predicate.
    """

    reference: Any = None
    vectorized: Callable[..., Any] | None = None
    reasons: Callable[..., Any] | None = None
    reduce: Callable[..., Any] | None = None
    preemption: Declaration | None = None


#: Registered instead of a :class:`Forms` when the forms depend on what the name's factory builds.
FormsFactory = Callable[[Any, "PluginFactoryArgs"], Forms]
Record = Forms | FormsFactory


def bind_predicate(record: Record | None, predicate: FitPredicate, args: PluginFactoryArgs) -> Forms | None:
    """The record of a built predicate (None: the name has none)."""
    if record is None:
        return None
    forms = record if isinstance(record, Forms) else record(predicate, args)
    return replace(forms, reference=predicate)


def bind_priority(record: Record | None, config: PriorityConfig, args: PluginFactoryArgs) -> Forms | None:
    """The record of a built priority (None: the name has none)."""
    if record is None:
        return None
    forms = record if isinstance(record, Forms) else record(config, args)
    return replace(forms, reference=config.function if config.function is not None else config.map)
