"""The generic scheduler: filter, prioritize, select (upstream ``core/generic_scheduler.go``).

1.9 semantics throughout: every predicate runs on every node (no short-circuit) and a node's reasons
are the concatenation over predicates; a predicate *error* on any node aborts the attempt with an
aggregate error; priorities are combined as ``sum(weight * score)`` in integer maths; ties are broken
round-robin by a counter that advances only when two or more nodes are feasible.

Where upstream leaves an order unspecified (Go map iteration, goroutine completion) this port is
deterministic: nodes in name order, predicates in the 1.10 evaluation order followed by the remaining
names in ascending order, aggregated error messages sorted.

This is the *reference* path: every predicate and priority node by node (it alone explains, and its
messages and errors are the ones shown). A scheduler given a ``fast_path`` (:mod:`.fast_path`; the factory gives
every scheduler built with ``vectorized=True``, the default, the vectorised one of
:mod:`policy_scheduler.fastpath`) asks it first and decides the reference way whenever it answers None.

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
from ..predicates import ORDERING
from .explain import Explanation, ExtenderCall, NodeExplanation, PredicateResult
from .extender import ExtenderFailure, SchedulerExtender, filters, ignorable, interested, prioritizes
from .fast_path import FastPath
from .fit_error import NO_NODES_AVAILABLE, FitError
from .fit_error import fit_error_message as fit_error_message  # re-exported: its importers predate fit_error
from .modern_pods import PodGatedError, check_schedulable
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


def evaluation_order(names: Sequence[str]) -> list[str]:
    """The 1.10 predicate order for the names it lists, then every other name in ascending order."""
    present = set(names)
    ordered = [n for n in ORDERING if n in present]
    listed = set(ordered)
    return ordered + sorted(n for n in present if n not in listed)


@dataclass(frozen=True, slots=True)
class PodScoped:
    """A predicate or a priority that applies to the pods ``applies`` accepts although the algorithm
    (provider or Policy) does not name it: the modern cluster's rule for a field 1.9 never knew (e.g.
    PodTopologySpread for pods with ``topologySpreadConstraints``). Pods it does not apply to are
    scheduled with exactly the algorithm's predicates and priorities."""

    applies: Callable[[Pod], bool]
    predicate: tuple[str, FitPredicate] | None = None
    priority: PriorityConfig | None = None


@dataclass(slots=True)
class Algorithms:
    """The predicates (also in evaluation order) and priorities used for a pod."""

    predicates: dict[str, FitPredicate]
    ordered_predicates: list[tuple[str, FitPredicate]]
    prioritizers: list[PriorityConfig]

    @classmethod
    def build(cls, predicates: Mapping[str, FitPredicate], prioritizers: Sequence[PriorityConfig]) -> Algorithms:
        ordered = [(n, predicates[n]) for n in evaluation_order(list(predicates))]
        return cls(dict(predicates), ordered, list(prioritizers))


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
        self._base = Algorithms.build(predicates, prioritizers)
        self.predicates = self._base.predicates
        self.predicate_order = [n for n, _ in self._base.ordered_predicates]
        self._ordered_predicates = self._base.ordered_predicates
        self.prioritizers = self._base.prioritizers
        self.pod_scoped = list(pod_scoped)
        self._variants: dict[tuple[bool, ...], Algorithms] = {}
        self.predicate_metadata_producer = predicate_metadata_producer or (lambda pod, infos: None)
        self.priority_metadata_producer = priority_metadata_producer or (lambda pod, infos: None)
        self.extenders = list(extenders)
        self.last_node_index = 0
        # Gate PodPriority: the scheduling queue's nominated pods (None: nothing is ever nominated).
        self.nominated_pods: NominatedPodLister | None = None
        # Asked before the reference path (None: the reference path alone).
        self.fast_path = fast_path
        self._extender_pool: ThreadPoolExecutor | None = None

    def algorithms_for(self, pod: Pod) -> Algorithms:
        """The algorithm's predicates and priorities, plus the pod-scoped ones that apply to ``pod``."""
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
            variant = self._variants[key] = Algorithms.build(predicates, prioritizers)
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
        return self._schedule(pod, None)

    def explain(self, pod: Pod) -> Explanation:
        """Schedule ``pod`` and record every predicate's verdict and every priority's score per node."""
        explanation = Explanation(pod=pod.ref)
        try:
            explanation.host = self._schedule(pod, explanation)
        except SchedulingError as e:
            explanation.error = str(e)
            if isinstance(e, FitError):
                explanation.fit_error = e
            elif isinstance(e, PodGatedError):
                explanation.gates = e.gates
        return explanation

    def preempt(
        self, pod: Pod, error: FitError, pdbs: Sequence[PodDisruptionBudget] = (), nominated_node: str | None = None,
        detail: bool = True,
    ) -> PreemptionResult:
        """``Preempt`` after a FitError: the node, its victims and the nominations to clear (see
        :func:`policy_scheduler.core.preemption.preempt`)."""
        return preempt(self, pod, error, pdbs=pdbs, nominated_node=nominated_node, detail=detail)

    def _schedule(self, pod: Pod, explanation: Explanation | None) -> str:
        check_schedulable(pod)  # a gated pod, or one carrying a field we refuse (cluster rules only)
        nodes = self.cluster.node_list()
        if not nodes:
            raise SchedulingError(NO_NODES_AVAILABLE)
        if explanation is None and self.fast_path is not None:
            host = self.fast_path.schedule(self, pod)
            if host is not None:
                return host
        filtered, failed = self.find_nodes_that_fit(pod, nodes, explanation)
        if not filtered:
            raise FitError(pod, len(nodes), failed)
        if len(filtered) == 1:
            if explanation is not None:
                self._explain_single(pod, filtered, explanation)
            return filtered[0].name
        priority_list = self.prioritize_nodes(pod, filtered, explanation)
        return self.select_host(priority_list)

    def find_nodes_that_fit(
        self, pod: Pod, nodes: Sequence[Node], explanation: Explanation | None = None
    ) -> tuple[list[Node], dict[str, list[str]]]:
        filtered, failed = self.predicate_filter(pod, nodes, explanation)
        if filtered and self.extenders:
            filtered = self.extender_filter(pod, filtered, failed, explanation)
        return filtered, failed

    def predicate_filter(
        self, pod: Pod, nodes: Sequence[Node], explanation: Explanation | None
    ) -> tuple[list[Node], dict[str, list[str]]]:
        """The predicates over ``nodes``: those that fit, and every other node's reasons."""
        failed: dict[str, list[str]] = {}
        if not self.algorithms_for(pod).predicates:
            filtered = list(nodes)
            if explanation is not None:
                for node in nodes:
                    explanation.nodes[node.name] = NodeExplanation(fit=True)
        else:
            infos = self.cluster.node_infos
            meta = self.predicate_metadata_producer(pod, infos)
            errors: Counter[str] = Counter()
            filtered = []
            for node in nodes:
                info = infos.get(node.name)
                try:
                    if explanation is None:
                        reasons = self.pod_fits_on_node(pod, meta, info)
                    else:
                        reasons = self._explain_node(pod, meta, info, node.name, explanation)
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

    def pod_fits_on_node(self, pod: Pod, meta: Any, info: NodeInfo | None) -> list[str]:
        """Run every predicate; return the concatenated failure reasons (empty: the pod fits).

        A node with nominated pods is checked twice (``generic_scheduler.md`` §3.1): with the nominated
        pods of priority >= the pod's added, then, if that passes, as it is.
        """
        if self.nominated_pods is not None:
            added = add_nominated_pods(pod, meta, info, self.nominated_pods)
            if added is not None:
                failed = self._run_predicates(pod, added[0], added[1])
                if failed:
                    return failed
        return self._run_predicates(pod, meta, info)

    def _run_predicates(self, pod: Pod, meta: Any, info: NodeInfo | None) -> list[str]:
        failed: list[str] = []
        for _, predicate in self.algorithms_for(pod).ordered_predicates:
            fit, reasons = predicate(pod, meta, info)
            if not fit:
                failed.extend(reasons)
        return failed

    def _explain_node(
        self, pod: Pod, meta: Any, info: NodeInfo | None, node_name: str, explanation: Explanation
    ) -> list[str]:
        node_explanation = explanation.nodes[node_name] = NodeExplanation(fit=True)
        added = add_nominated_pods(pod, meta, info, self.nominated_pods) if self.nominated_pods is not None else None
        if added is not None:
            node_explanation.nominated_pods = [p.ref for p in added[2]]
            failed = self._explain_pass(pod, added[0], added[1], node_explanation)
            if failed:
                return failed
        return self._explain_pass(pod, meta, info, node_explanation)

    def _explain_pass(self, pod: Pod, meta: Any, info: NodeInfo | None, node_explanation: NodeExplanation) -> list[str]:
        """Every predicate once, each verdict recorded (a predicate's error keeps the reasons it gave)."""
        node_explanation.predicates.clear()
        failed: list[str] = []
        first_error: PredicateError | None = None
        for name, predicate in self.algorithms_for(pod).ordered_predicates:
            try:
                fit, reasons = predicate(pod, meta, info)
            except PredicateError as e:
                node_explanation.predicates[name] = PredicateResult(False, [str(r) for r in e.reasons], str(e))
                node_explanation.fit = False
                first_error = first_error or e
                continue
            node_explanation.predicates[name] = PredicateResult(fit, [str(r) for r in reasons] if not fit else [])
            if not fit:
                node_explanation.fit = False
                failed.extend(reasons)
        if first_error is not None:
            raise first_error
        return failed

    def extender_filter(
        self, pod: Pod, filtered: list[Node], failed: dict[str, list[str]], explanation: Explanation | None
    ) -> list[Node]:
        """Each extender in turn narrows ``filtered``; its ``failedNodes`` messages join ``failed``."""
        infos = self.cluster.node_infos
        for extender in self.extenders:
            name = extender.name
            if not filters(extender) or not interested(extender, pod):
                if explanation is not None:
                    outcome = "no verb" if not filters(extender) else "not interested"
                    explanation.extenders.append(ExtenderCall(name, "filter", outcome))
                continue
            try:
                kept, failed_nodes = extender.filter(pod, filtered, infos)
            except Exception as e:
                if not ignorable(extender):
                    if explanation is not None:
                        explanation.extenders.append(ExtenderCall(name, "filter", "error", str(e)))
                    raise
                log.warning("Skipping extender %s as it returned error %s and has ignorable flag set", name, e)
                if explanation is not None:
                    explanation.extenders.append(ExtenderCall(name, "filter", "ignored error", str(e)))
                continue
            for node_name, message in failed_nodes.items():
                failed.setdefault(node_name, []).append(ExtenderFailure(message))
            if explanation is not None:
                explanation.extenders.append(ExtenderCall(name, "filter", "called"))
                self._explain_extender_filter(name, filtered, kept, failed_nodes, explanation)
            filtered = kept
            if not filtered:
                break
        return filtered

    @staticmethod
    def _explain_extender_filter(
        name: str, sent: list[Node], kept: list[Node], failed_nodes: Mapping[str, str], explanation: Explanation
    ) -> None:
        kept_names = {n.name for n in kept}
        for node in sent:
            verdict = explanation.nodes[node.name].extender(name)
            verdict.fit = node.name in kept_names
            if not verdict.fit:
                explanation.nodes[node.name].fit = False
        for node_name, message in failed_nodes.items():
            node_explanation = explanation.nodes.get(node_name)
            if node_explanation is not None:
                verdict = node_explanation.extender(name)
                verdict.fit = False
                verdict.reasons.append(message)
                node_explanation.fit = False

    def prioritize_nodes(
        self, pod: Pod, nodes: Sequence[Node], explanation: Explanation | None = None
    ) -> list[HostPriority]:
        infos = self.cluster.node_infos
        prioritizers = self.algorithms_for(pod).prioritizers
        if not prioritizers and not self.extenders:
            out = []
            for node in nodes:
                info = infos.get(node.name)
                if info is None or info.node is None:
                    raise SchedulingError("node not found")
                out.append(HostPriority(node.name, 1))
            if explanation is not None:
                for hp in out:
                    node_explanation = explanation.nodes[hp.host]
                    node_explanation.priorities["EqualPriority"] = (1, 1)
                    node_explanation.total = 1
            return out
        meta = self.priority_metadata_producer(pod, infos)
        results = self._run_priorities(pod, meta, nodes)
        totals = [0] * len(nodes)
        for config, result in zip(prioritizers, results):
            weight = config.weight
            for j in range(len(nodes)):
                totals[j] += result[j].score * weight
        if explanation is not None:
            for config, result in zip(prioritizers, results):
                for j, node in enumerate(nodes):
                    explanation.nodes[node.name].priorities[config.name] = (result[j].score, config.weight)
        if self.extenders:
            self.extender_prioritize(pod, nodes, totals, explanation)
        out = [HostPriority(node.name, totals[j]) for j, node in enumerate(nodes)]
        if explanation is not None:
            for hp in out:
                explanation.nodes[hp.host].total = hp.score
        return out

    def _run_priorities(self, pod: Pod, meta: Any, nodes: Sequence[Node]) -> list[list[HostPriority]]:
        """Every priority config over ``nodes``; all failures are aggregated, as upstream does."""
        errors: list[str] = []
        results: list[list[HostPriority]] = []
        for config in self.algorithms_for(pod).prioritizers:
            try:
                results.append(self.run_priority(config, pod, meta, list(nodes)))
            except PriorityError as e:
                errors.append(str(e))
        if errors:
            raise SchedulingError(aggregate(errors))
        return results

    def extender_prioritize(
        self, pod: Pod, nodes: Sequence[Node], totals: list[int], explanation: Explanation | None
    ) -> None:
        """Every interested extender's scores x weight, added to ``totals``; a failing one adds nothing."""
        callers = []
        for extender in self.extenders:
            if prioritizes(extender) and interested(extender, pod):
                callers.append(extender)
            elif explanation is not None:
                outcome = "no verb" if not prioritizes(extender) else "not interested"
                explanation.extenders.append(ExtenderCall(extender.name, "prioritize", outcome))
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
                if explanation is not None:
                    explanation.extenders.append(ExtenderCall(extender.name, "prioritize", "error", str(result)))
                continue
            scores, weight = result
            if explanation is not None:
                explanation.extenders.append(ExtenderCall(extender.name, "prioritize", "called"))
            for hp in scores:
                combined[hp.host] = combined.get(hp.host, 0) + hp.score * weight
                if explanation is not None and hp.host in explanation.nodes:
                    verdict = explanation.nodes[hp.host].extender(extender.name)
                    verdict.score, verdict.weight = hp.score, weight
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

    def _explain_single(self, pod: Pod, filtered: Sequence[Node], explanation: Explanation) -> None:
        """One feasible node: upstream runs no priority; show the scores anyway, for information."""
        try:
            self.prioritize_nodes(pod, filtered, explanation)
        except SchedulingError as e:
            log.debug("priorities for the only feasible node failed: %s", e)
