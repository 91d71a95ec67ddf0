"""The vectorised decision: the generic scheduler's filter, prioritize and select for every node at once.

:class:`VectorisedPath` is the fast-path wing's one face towards the reference path
(:class:`~policy_scheduler.core.fast_path.FastPath`): the factory builds one per scheduler (``vectorized=True``, the
default) and hands it to :class:`~policy_scheduler.core.generic_scheduler.GenericScheduler`, which asks it first and
runs its own reference path whenever it answers None. It evaluates the forms of this package over
:class:`~.columns.NodeColumns`, runs the reference function for any predicate or priority without a usable form,
and hands over to the reference path whenever anything errors, so messages and errors always come from the
reference. A pod that fits nowhere gets its FitError from the reasons forms (:mod:`.reasons`), the reference's
reasons counted at once. Preemption asks it for victims by arithmetic (:mod:`.preemption`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..algorithm import FitPredicate, PriorityConfig
from ..cache.cluster import ClusterState
from ..core.fit_error import FitError
from ..core.nominated import nominated_elsewhere
from ..errors import PredicateError, PriorityError
from . import PlannedPriority, priority_plan
from .columns import NodeColumns
from .forms import Forms
from .narrowing import named_candidates
from .preemption import VictimArithmetic, VictimTable, nominated_first_pass
from .reasons import failed_on_every_node

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..core.algorithms import Algorithms
    from ..core.generic_scheduler import GenericScheduler
    from ..core.victims import VictimSelection
    from ..model.disruption import PodDisruptionBudget
    from ..model.node import Node
    from ..model.pod import Pod


@dataclass(frozen=True, slots=True)
class Plan:
    """One set of predicates and priorities (a scheduler's :class:`Algorithms`) as the vectorised path runs them:
    each predicate, in evaluation order, with its bound record (None: it has none, and runs node by node), the
    priorities as steps of the weighted sum."""

    predicates: list[tuple[FitPredicate, Forms | None]]
    priorities: list[PlannedPriority]


class VectorisedPath:
    """The fast path of one scheduler: its node columns (kept in step with ``cluster``), the records of its
    predicates and priorities by name (:class:`~.forms.Forms`, bound to what the scheduler's were built as), and
    the plan of each set of them it has been asked about."""

    def __init__(self, cluster: ClusterState, predicates: Mapping[str, Forms] | None = None,
                 priorities: Mapping[str, Forms] | None = None) -> None:
        self.columns = NodeColumns(cluster)
        self.predicate_records = dict(predicates or {})
        self.priority_records = dict(priorities or {})
        self._plans: dict[int, tuple[Algorithms, Plan]] = {}

    def predicate_record(self, name: str, predicate: FitPredicate) -> Forms | None:
        """The bound record of the predicate ``name`` (None: none, or not bound to this predicate)."""
        forms = self.predicate_records.get(name)
        return forms if forms is not None and forms.reference is predicate else None

    def priority_record(self, config: PriorityConfig) -> Forms | None:
        """The bound record of a built priority (None: none, or not bound to this one)."""
        forms = self.priority_records.get(config.name)
        reference = config.function if config.function is not None else config.map
        return forms if forms is not None and forms.reference is reference else None

    def close(self) -> None:
        """Stop following the cache (the scheduler was replaced)."""
        self.columns.detach()

    def plan(self, algorithms: Algorithms) -> Plan:
        """The forms of ``algorithms``' predicates and priorities (made once per set)."""
        kept = self._plans.get(id(algorithms))
        if kept is None or kept[0] is not algorithms:
            plan = Plan([(p, self.predicate_record(n, p)) for n, p in algorithms.ordered_predicates],
                        priority_plan(algorithms.prioritizers, [self.priority_record(c) for c in algorithms.prioritizers]))
            kept = self._plans[id(algorithms)] = (algorithms, plan)
        return kept[1]

    # -- scheduling one pod ----------------------------------------------------------------------
    def schedule(self, scheduler: GenericScheduler, pod: Pod) -> str | None:
        """The host, or None to let the reference path decide (something errors). Raises FitError when no node
        fits."""
        cols = self.columns
        cols.refresh()
        filtered = self._filter(scheduler, pod)
        if filtered is None:
            return None
        candidates, verdicts, meta = filtered
        if not candidates.size:
            failed = failed_on_every_node(pod, meta, cols, verdicts, scheduler.nominated_pods,
                                          scheduler.pod_fits_on_node)
            if failed is None:
                return None
            raise FitError(pod, len(cols.names), failed)
        if scheduler.extenders:
            kept = self._extender_filter(scheduler, pod, candidates)
            if len(kept) == 1:
                return kept[0].name
            rows = cols.rows_of(kept)
            if rows is None:
                return scheduler.select_host(scheduler.prioritize_nodes(pod, kept))
            candidates = rows
        if candidates.size == 1:
            return cols.names[int(candidates[0])]
        totals = self.prioritize(scheduler, pod, candidates)
        if totals is None:
            nodes = [cols.nodes[int(i)] for i in candidates]
            return scheduler.select_host(scheduler.prioritize_nodes(pod, nodes))
        if scheduler.extenders:
            extra = [0] * candidates.size
            scheduler.extender_prioritize(pod, [cols.nodes[int(i)] for i in candidates], extra)
            totals = totals + np.array(extra, dtype=np.int64)
        best = np.flatnonzero(totals == totals.max())
        # Ties rotate through the tied hosts in descending name order; rows are in ascending name order.
        ix = scheduler.next_tie_index(best.size)
        return cols.names[int(candidates[best[best.size - 1 - ix]])]

    def _extender_filter(self, scheduler: GenericScheduler, pod: Pod, candidates: np.ndarray) -> list[Node]:
        """The extenders' filters over the candidate rows; FitError (with every node's reasons, from the
        reference predicates, and the extenders' messages) when they leave none."""
        cols = self.columns
        nodes = [cols.nodes[int(i)] for i in candidates]
        failed: dict[str, list[str]] = {}
        kept = scheduler.extender_filter(pod, nodes, failed)
        if not kept:
            all_nodes = scheduler.cluster.node_list()
            _, reasons = scheduler.predicate_filter(pod, all_nodes)
            for name, messages in failed.items():
                reasons.setdefault(name, []).extend(messages)
            raise FitError(pod, len(all_nodes), reasons)
        return kept

    def _filter(
        self, scheduler: GenericScheduler, pod: Pod
    ) -> tuple[np.ndarray, list[tuple[FitPredicate, Any, np.ndarray]], Any] | None:
        """The rows where the pod fits, each predicate's verdicts and the metadata; None when a predicate
        errs somewhere (the reference path then decides, and raises)."""
        cols = self.columns
        algorithms = scheduler.algorithms_for(pod)
        if not algorithms.predicates:
            return np.arange(len(cols.names)), [], None
        meta = scheduler.predicate_metadata_producer(pod, scheduler.cluster.node_infos)
        plan = self.plan(algorithms)
        named = named_candidates(pod, meta, cols, plan.predicates, scheduler.pod_fits_on_node)
        if named is not None:
            return named, [], meta  # no other node can fit (see fastpath.narrowing)
        mask = np.ones(len(cols.names), dtype=bool)
        verdicts = []
        for predicate, forms in plan.predicates:
            fits = forms.vectorized(pod, meta, cols) if forms is not None and forms.vectorized is not None else None
            if fits is None:
                fits = np.empty(len(cols.names), dtype=bool)
                for i, info in enumerate(cols.infos):
                    try:
                        fits[i] = predicate(pod, meta, info)[0]
                    except PredicateError:
                        return None
            verdicts.append((predicate, forms.reasons if forms is not None else None, fits))
            mask &= fits
        if scheduler.nominated_pods is not None and not self._nominated_verdicts(scheduler, plan, pod, meta, mask):
            return None
        return np.flatnonzero(mask), verdicts, meta

    def _nominated_verdicts(self, scheduler: GenericScheduler, plan: Plan, pod: Pod, meta: Any, mask: np.ndarray) -> bool:
        """Replace the vectorised verdict of each node holding nominated pods by the two-pass one (the first
        pass by arithmetic where the predicates allow, else the reference); False when a predicate errs there
        (the reference path then decides, and raises)."""
        cols = self.columns
        nominated_pods = scheduler.nominated_pods
        assert nominated_pods is not None
        first_pass = nominated_first_pass(plan.predicates, pod, meta)
        for name in nominated_pods.nominated_nodes():
            i = cols.index.get(name)
            nominated = nominated_elsewhere(nominated_pods, pod, name) if i is not None else []
            if not nominated:
                continue
            fits = first_pass(cols.infos[i], nominated) if first_pass is not None else None
            if fits is not None:  # the second pass is the node as it is: the vectorised verdict
                mask[i] = mask[i] and fits
                continue
            try:
                mask[i] = not scheduler.pod_fits_on_node(pod, meta, cols.infos[i])
            except PredicateError:
                return False
        return True

    def prioritize(self, scheduler: GenericScheduler, pod: Pod, candidates: np.ndarray) -> np.ndarray | None:
        """Every candidate row's total score (extenders' not included); None when a priority fails (the
        reference path then decides, and raises)."""
        cols = self.columns
        algorithms = scheduler.algorithms_for(pod)
        if not algorithms.prioritizers:
            # No EqualPriority fallback when extenders score (upstream ``PrioritizeNodes``).
            if scheduler.extenders:
                return np.zeros(candidates.size, dtype=np.int64)
            return np.ones(candidates.size, dtype=np.int64)
        meta = scheduler.priority_metadata_producer(pod, scheduler.cluster.node_infos)
        totals: np.ndarray | int = 0
        nodes: list[Node] | None = None
        for step in self.plan(algorithms).priorities:
            scores = step.form(pod, meta, cols, candidates) if step.form is not None else None
            if scores is not None:  # an array, or an int every candidate scores
                totals += scores if step.weight == 1 else step.weight * scores  # the first array: a new one
                continue
            if nodes is None:
                nodes = [cols.nodes[int(i)] for i in candidates]
            for config in step.configs:
                try:
                    scores = np.array([hp.score for hp in scheduler.run_priority(config, pod, meta, nodes)],
                                      dtype=np.int64)
                except PriorityError:
                    return None
                totals += config.weight * scores
        return totals if isinstance(totals, np.ndarray) else np.full(candidates.size, totals, dtype=np.int64)

    # -- preemption ------------------------------------------------------------------------------
    def victims_by_arithmetic(self, scheduler: GenericScheduler, pod: Pod, meta: Any) -> VictimArithmetic | None:
        """``selectVictimsOnNode`` by arithmetic for ``pod`` (None when its predicates do not allow it)."""
        return VictimArithmetic.plan(scheduler, self.columns, self._predicates(scheduler, pod), pod, meta)

    def victim_candidates(
        self, scheduler: GenericScheduler, pod: Pod, meta: Any, potential: Sequence[Node],
        pdbs: Sequence[PodDisruptionBudget], reference: Callable[[NodeInfo | None], VictimSelection],
    ) -> VictimTable | None:
        """One preemption's candidates from the victim table (None when the arithmetic does not apply);
        ``reference`` decides every node the arithmetic leaves open."""
        arithmetic = VictimArithmetic.plan(scheduler, self.columns, self._predicates(scheduler, pod), pod, meta)
        if arithmetic is None:
            return None
        return VictimTable(arithmetic, potential, pdbs, scheduler.cluster.node_infos, reference)

    def _predicates(self, scheduler: GenericScheduler, pod: Pod) -> list[tuple[FitPredicate, Forms | None]]:
        return self.plan(scheduler.algorithms_for(pod)).predicates
