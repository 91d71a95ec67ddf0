"""The generic scheduler: filter, prioritize, select (upstream ``core/generic_scheduler.go``).

1.9 semantics throughout: every predicate runs on every node (no short-circuit) and a node's reasons
are the concatenation over predicates; a predicate *error* on any node aborts the attempt with an
aggregate error; priorities are combined as ``sum(weight * score)`` in integer maths; ties are broken
round-robin by a counter that advances only when two or more nodes are feasible.

Where upstream leaves an order unspecified (Go map iteration, goroutine completion) this port is
deterministic: nodes in name order, predicates in the 1.10 evaluation order followed by the remaining
names in ascending order, aggregated error messages sorted.

This is the *reference* path: every predicate and priority node by node, with the algorithms
(:class:`Algorithms`) it is given; its messages and errors are the ones shown. A scheduler given a ``fast_path``
(:mod:`.fast_path`; the factory gives every scheduler built with ``vectorized=True``, the default, the vectorised
one of :mod:`policy_scheduler.fastpath`) asks it first and decides the reference way whenever it answers None.
:meth:`GenericScheduler.explain` (:mod:`policy_scheduler.core.explain`) runs the reference steps with the
algorithms wrapped to record what each decided.

Gate ``PodPriority``: with ``nominated_pods`` set (the scheduling queue's nominations), every node holding
nominated pods is checked the reference way, twice (:mod:`policy_scheduler.core.nominated`), on both
paths; :meth:`GenericScheduler.preempt` (:mod:`policy_scheduler.core.preemption`) works on copies of the
NodeInfos.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..algorithm import FitPredicate, HostPriority, PriorityConfig
from ..cache.cluster import ClusterState
from ..cache.node_info import NodeInfo
from ..errors import PredicateError, PriorityError, SchedulingError
from ..model.node import Node
from ..model.pod import Pod
from .algorithms import Algorithms
from .explain import Explanation, explain
from .extender import ExtenderFailure, SchedulerExtender, filters, ignorable, interested, prioritizes
from .fast_path import FastPath
from .fit_error import NO_NODES_AVAILABLE, FitError
from .fit_error import fit_error_message as fit_error_message  # re-exported: its importers predate fit_error
from .modern_pods import check_schedulable
from .nominated import NominatedPodLister, add_nominated_pods
from .preemption import PreemptionResult, preempt

if TYPE_CHECKING:
    from ..model.disruption import PodDisruptionBudget

log = logging.getLogger(__name__)

MetadataProducer = Callable[[Pod, Mapping[str, NodeInfo]], Any]


def aggregate_message_counts(counts: Mapping[str, int]) -> str:
    """``errors.CreateAggregateFromMessageCountMap`` (messages sorted for determinism)."""
    messages = [m if n == 1 else f"{m} (repeated {n} times)" for m, n in sorted(counts.items())]
    return aggregate(messages)


def aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``."""
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


@dataclass(frozen=True, slots=True)
class PodScoped:
    """A predicate or a priority that applies to the pods ``applies`` accepts although the algorithm
    (provider or Policy) does not name it: the modern cluster's rule for a field 1.9 never knew (e.g.
    PodTopologySpread for pods with ``topologySpreadConstraints``). Pods it does not apply to are
    scheduled with exactly the algorithm's predicates and priorities."""

    applies: Callable[[Pod], bool]
    predicate: tuple[str, FitPredicate] | None = None
    priority: PriorityConfig | None = None


class GenericScheduler:
    def __init__(
        self,
        cluster: ClusterState,
        predicates: Mapping[str, FitPredicate],
        prioritizers: Sequence[PriorityConfig],
        predicate_metadata_producer: MetadataProducer | None = None,
        priority_metadata_producer: MetadataProducer | None = None,
        extenders: Sequence[SchedulerExtender] = (),
        fast_path: FastPath | None = None,
        pod_scoped: Sequence[PodScoped] = (),
    ) -> None:
        self.cluster = cluster
        self.extenders = list(extenders)
        self._base = Algorithms.build(predicates, prioritizers, self.extenders)
        self.predicates = self._base.predicates
        self.predicate_order = [n for n, _ in self._base.ordered_predicates]
        self._ordered_predicates = self._base.ordered_predicates
        self.prioritizers = self._base.prioritizers
        self.pod_scoped = list(pod_scoped)
        self._variants: dict[tuple[bool, ...], Algorithms] = {}
        self.predicate_metadata_producer = predicate_metadata_producer or (lambda pod, infos: None)
        self.priority_metadata_producer = priority_metadata_producer or (lambda pod, infos: None)
        self.last_node_index = 0
        # Gate PodPriority: the scheduling queue's nominated pods (None: nothing is ever nominated).
        self.nominated_pods: NominatedPodLister | None = None
        # Asked before the reference path (None: the reference path alone).
        self.fast_path = fast_path
        self._extender_pool: ThreadPoolExecutor | None = None

    def algorithms_for(self, pod: Pod) -> Algorithms:
        """The algorithm's predicates, priorities and extenders, plus the pod-scoped ones that apply to ``pod``."""
        if not self.pod_scoped:
            return self._base
        key = tuple(s.applies(pod) for s in self.pod_scoped)
        if not any(key):
            return self._base
        variant = self._variants.get(key)
        if variant is None:
            predicates = dict(self._base.predicates)
            prioritizers = list(self._base.prioritizers)
            for scoped, on in zip(self.pod_scoped, key):
                if not on:
                    continue
                if scoped.predicate is not None:
                    predicates[scoped.predicate[0]] = scoped.predicate[1]
                if scoped.priority is not None:
                    prioritizers.append(scoped.priority)
            variant = self._variants[key] = Algorithms.build(predicates, prioritizers, self._base.extenders)
        return variant

    def close(self) -> None:
        """Stop following the cache (a daemon replaced this scheduler with one built from a new policy)."""
        if self.fast_path is not None:
            self.fast_path.close()
        if self._extender_pool is not None:
            self._extender_pool.shutdown(wait=False)

    # -- the algorithm ----------------------------------------------------------------------------
    def schedule(self, pod: Pod) -> str:
        """Pick a node for ``pod``; raises FitError or SchedulingError."""
        nodes = self.candidate_nodes(pod)
        if self.fast_path is not None:
            host = self.fast_path.schedule(self, pod)
            if host is not None:
                return host
        return self.decide(pod, nodes, self.algorithms_for(pod))

    def explain(self, pod: Pod) -> Explanation:
        """Schedule ``pod`` the reference way and record every predicate's verdict and every priority's score per
        node (:func:`policy_scheduler.core.explain.explain`)."""
        return explain(self, pod)

    def preempt(
        self, pod: Pod, error: FitError, pdbs: Sequence[PodDisruptionBudget] = (), nominated_node: str | None = None,
        detail: bool = True,
    ) -> PreemptionResult:
        """``Preempt`` after a FitError: the node, its victims and the nominations to clear (see
        :func:`policy_scheduler.core.preemption.preempt`)."""
        return preempt(self, pod, error, pdbs=pdbs, nominated_node=nominated_node, detail=detail)

    def candidate_nodes(self, pod: Pod) -> list[Node]:
        """The nodes to decide among; raises for a pod refused whatever the nodes (gated, or carrying a field we
        refuse: cluster rules only) and when there is no node."""
        check_schedulable(pod)
        nodes = self.cluster.node_list()
        if not nodes:
            raise SchedulingError(NO_NODES_AVAILABLE)
        return nodes

    def decide(self, pod: Pod, nodes: Sequence[Node], algorithms: Algorithms) -> str:
        """The reference path: filter ``nodes`` with ``algorithms``, then prioritize and select (one feasible node
        is the host without either)."""
        filtered = self.feasible_nodes(pod, nodes, algorithms)
        if len(filtered) == 1:
            return filtered[0].name
        return self.select_host(self.prioritize_nodes(pod, filtered, algorithms))

    def feasible_nodes(self, pod: Pod, nodes: Sequence[Node], algorithms: Algorithms) -> list[Node]:
        """The nodes that pass the predicates and the extenders' filters; FitError when none does."""
        filtered, failed = self.find_nodes_that_fit(pod, nodes, algorithms)
        if not filtered:
            raise FitError(pod, len(nodes), failed)
        return filtered

    def find_nodes_that_fit(
        self, pod: Pod, nodes: Sequence[Node], algorithms: Algorithms | None = None
    ) -> tuple[list[Node], dict[str, list[str]]]:
        if algorithms is None:
            algorithms = self.algorithms_for(pod)
        filtered, failed = self.predicate_filter(pod, nodes, algorithms)
        if filtered and algorithms.extenders:
            filtered = self.extender_filter(pod, filtered, failed, algorithms)
        return filtered, failed

    def predicate_filter(
        self, pod: Pod, nodes: Sequence[Node], algorithms: Algorithms | None = None
    ) -> tuple[list[Node], dict[str, list[str]]]:
        """The predicates over ``nodes``: those that fit, and every other node's reasons."""
        if algorithms is None:
            algorithms = self.algorithms_for(pod)
        failed: dict[str, list[str]] = {}
        if not algorithms.predicates:
            return list(nodes), failed
        infos = self.cluster.node_infos
        meta = self.predicate_metadata_producer(pod, infos)
        errors: Counter[str] = Counter()
        filtered = []
        for node in nodes:
            try:
                reasons = self.pod_fits_on_node(pod, meta, infos.get(node.name), algorithms)
            except PredicateError as e:
                errors[str(e)] += 1
                continue
            if reasons:
                failed[node.name] = reasons
            else:
                filtered.append(node)
        if errors:
            raise SchedulingError(aggregate_message_counts(errors))
        return filtered, failed

    def pod_fits_on_node(
        self, pod: Pod, meta: Any, info: NodeInfo | None, algorithms: Algorithms | None = None
    ) -> list[str]:
        """Run every predicate; return the concatenated failure reasons (empty: the pod fits).

        A node with nominated pods is checked twice (``generic_scheduler.md`` §3.1): with the nominated
        pods of priority >= the pod's added, then, if that passes, as it is.
        """
        if algorithms is None:
            algorithms = self.algorithms_for(pod)
        if self.nominated_pods is not None:
            added = add_nominated_pods(pod, meta, info, self.nominated_pods)
            if added is not None:
                failed = self._run_predicates(pod, added[0], added[1], algorithms)
                if failed:
                    return failed
        return self._run_predicates(pod, meta, info, algorithms)

    @staticmethod
    def _run_predicates(pod: Pod, meta: Any, info: NodeInfo | None, algorithms: Algorithms) -> list[str]:
        failed: list[str] = []
        for _, predicate in algorithms.ordered_predicates:
            fit, reasons = predicate(pod, meta, info)
            if not fit:
                failed.extend(reasons)
        return failed

    def extender_filter(
        self, pod: Pod, filtered: list[Node], failed: dict[str, list[str]], algorithms: Algorithms | None = None
    ) -> list[Node]:
        """Each extender in turn narrows ``filtered``; its ``failedNodes`` messages join ``failed``."""
        if algorithms is None:
            algorithms = self.algorithms_for(pod)
        infos = self.cluster.node_infos
        for extender in algorithms.extenders:
            name = extender.name
            if not filters(extender) or not interested(extender, pod):
                continue
            try:
                kept, failed_nodes = extender.filter(pod, filtered, infos)
            except Exception as e:
                if not ignorable(extender):
                    raise
                log.warning("Skipping extender %s as it returned error %s and has ignorable flag set", name, e)
                continue
            for node_name, message in failed_nodes.items():
                failed.setdefault(node_name, []).append(ExtenderFailure(message))
            filtered = kept
            if not filtered:
                break
        return filtered

    def prioritize_nodes(
        self, pod: Pod, nodes: Sequence[Node], algorithms: Algorithms | None = None
    ) -> list[HostPriority]:
        if algorithms is None:
            algorithms = self.algorithms_for(pod)
        infos = self.cluster.node_infos
        prioritizers = algorithms.prioritizers
        if not prioritizers and not algorithms.extenders:
            out = []
            for node in nodes:
                info = infos.get(node.name)
                if info is None or info.node is None:
                    raise SchedulingError("node not found")
                out.append(HostPriority(node.name, 1))
            return out
        meta = self.priority_metadata_producer(pod, infos)
        results = self._run_priorities(pod, meta, nodes, algorithms)
        totals = [0] * len(nodes)
        for config, result in zip(prioritizers, results):
            weight = config.weight
            for j in range(len(nodes)):
                totals[j] += result[j].score * weight
        if algorithms.extenders:
            self.extender_prioritize(pod, nodes, totals, algorithms)
        return [HostPriority(node.name, totals[j]) for j, node in enumerate(nodes)]

    def _run_priorities(
        self, pod: Pod, meta: Any, nodes: Sequence[Node], algorithms: Algorithms
    ) -> list[list[HostPriority]]:
        """Every priority config over ``nodes``; all failures are aggregated, as upstream does."""
        errors: list[str] = []
        results: list[list[HostPriority]] = []
        for config in algorithms.prioritizers:
            try:
                results.append(self.run_priority(config, pod, meta, list(nodes)))
            except PriorityError as e:
                errors.append(str(e))
        if errors:
            raise SchedulingError(aggregate(errors))
        return results

    def extender_prioritize(
        self, pod: Pod, nodes: Sequence[Node], totals: list[int], algorithms: Algorithms | None = None
    ) -> None:
        """Every interested extender's scores x weight, added to ``totals``; a failing one adds nothing."""
        if algorithms is None:
            algorithms = self.algorithms_for(pod)
        callers = [e for e in algorithms.extenders if prioritizes(e) and interested(e, pod)]
        if not callers:
            return
        node_list = list(nodes)

        def call(extender: SchedulerExtender) -> tuple[list[HostPriority], int] | Exception:
            try:
                return extender.prioritize(pod, node_list)
            except Exception as e:  # upstream ignores a failing extender's priorities
                return e

        if len(callers) == 1:
            results = [call(callers[0])]
        else:
            if self._extender_pool is None:
                self._extender_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="extender")
            results = list(self._extender_pool.map(call, callers))
        combined: dict[str, int] = {}
        for extender, result in zip(callers, results):
            if isinstance(result, Exception):
                log.warning("extender %s prioritize failed, ignoring it: %s", extender.name, result)
                continue
            scores, weight = result
            for hp in scores:
                combined[hp.host] = combined.get(hp.host, 0) + hp.score * weight
        get = combined.get
        for j, node in enumerate(nodes):
            totals[j] += get(node.name, 0)

    def select_host(self, priority_list: Sequence[HostPriority]) -> str:
        """Highest score wins; ties rotate through hosts sorted by name, descending."""
        if not priority_list:
            raise SchedulingError("empty priorityList")
        ordered = sorted(priority_list, key=lambda hp: (hp.score, hp.host), reverse=True)
        max_score = ordered[0].score
        ties = 1
        while ties < len(ordered) and ordered[ties].score == max_score:
            ties += 1
        return ordered[self.next_tie_index(ties)].host

    def next_tie_index(self, ties: int) -> int:
        """Which of ``ties`` tied hosts (in descending name order) wins: round-robin, by a counter that advances
        on every pick."""
        ix = self.last_node_index % ties
        self.last_node_index += 1
        return ix

    def run_priority(self, config: PriorityConfig, pod: Pod, meta: Any, nodes: list[Node]) -> list[HostPriority]:
        """One priority the reference way: map (+ reduce) over ``nodes``, or the legacy function."""
        infos = self.cluster.node_infos
        if config.function is not None:
            return config.function(pod, infos, nodes)
        assert config.map is not None
        result = [HostPriority(n.name, config.map(pod, meta, infos.get(n.name))) for n in nodes]
        if config.reduce is not None:
            config.reduce(pod, meta, infos, result)
        return result
