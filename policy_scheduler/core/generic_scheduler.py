"""The generic scheduler: filter, prioritize, select (upstream ``core/generic_scheduler.go``).

1.9 semantics throughout: every predicate runs on every node (no short-circuit) and a node's reasons
are the concatenation over predicates; a predicate *error* on any node aborts the attempt with an
aggregate error; priorities are combined as ``sum(weight * score)`` in integer maths; ties are broken
round-robin by a counter that advances only when two or more nodes are feasible.

Where upstream leaves an order unspecified (Go map iteration, goroutine completion) this port is
deterministic: nodes in name order, predicates in the 1.10 evaluation order followed by the remaining
names in ascending order, aggregated error messages sorted.

Two paths compute the same decision. The *reference* path runs every predicate and priority node by node
(it alone explains and builds FitError reasons). The *vectorised* path (``vectorized=True``, the
default without extenders) evaluates the forms of :mod:`policy_scheduler.fastpath` over
:class:`NodeColumns` for all nodes at once, runs the reference function for any predicate or priority
without a usable form, and hands over to the reference path whenever no node fits or anything errors, so
messages and errors always come from the reference.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..algorithm import FitPredicate, HostPriority, PriorityConfig
from ..cache.cluster import ClusterState
from ..cache.node_info import NodeInfo
from ..errors import PredicateError, PriorityError, SchedulingError
from ..fastpath import predicate_form, priority_form
from ..model.node import Node
from ..model.pod import Pod
from ..predicates import ORDERING
from .columns import NodeColumns
from .extender import SchedulerExtender

log = logging.getLogger(__name__)

NO_NODES_AVAILABLE = "no nodes available to schedule pods"

MetadataProducer = Callable[[Pod, Mapping[str, NodeInfo]], Any]


class FitError(SchedulingError):
    """No node fits the pod; the message is 1.9's ``0/N nodes are available: <histogram>.``"""

    def __init__(self, pod: Pod, num_all_nodes: int, failed_predicates: dict[str, list[str]]) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.failed_predicates = failed_predicates
        super().__init__(fit_error_message(num_all_nodes, failed_predicates))


def fit_error_message(num_all_nodes: int, failed_predicates: Mapping[str, Sequence[str]]) -> str:
    counts: Counter[str] = Counter()
    for reasons in failed_predicates.values():
        counts.update(str(r) for r in reasons)
    histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(histogram)}."


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


@dataclass(slots=True)
class PredicateResult:
    fit: bool
    reasons: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(slots=True)
class NodeExplanation:
    fit: bool
    predicates: dict[str, PredicateResult] = field(default_factory=dict)
    priorities: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (score, weight)
    total: int | None = None


@dataclass(slots=True)
class Explanation:
    pod: str
    host: str | None = None
    error: str | None = None
    nodes: dict[str, NodeExplanation] = field(default_factory=dict)


class GenericScheduler:
    def __init__(
        self,
        cluster: ClusterState,
        predicates: Mapping[str, FitPredicate],
        prioritizers: Sequence[PriorityConfig],
        predicate_metadata_producer: MetadataProducer | None = None,
        priority_metadata_producer: MetadataProducer | None = None,
        extenders: Sequence[SchedulerExtender] = (),
        vectorized: bool = True,
    ) -> None:
        self.cluster = cluster
        self.predicates = dict(predicates)
        self.predicate_order = evaluation_order(list(self.predicates))
        self._ordered_predicates = [(n, self.predicates[n]) for n in self.predicate_order]
        self.prioritizers = list(prioritizers)
        self.predicate_metadata_producer = predicate_metadata_producer or (lambda pod, infos: None)
        self.priority_metadata_producer = priority_metadata_producer or (lambda pod, infos: None)
        self.extenders = list(extenders)
        self.last_node_index = 0
        # Extender calls are I/O: they are made once, on the reference path.
        self.columns = NodeColumns(cluster) if vectorized and not self.extenders else None
        self._predicate_forms = [(p, predicate_form(p)) for _, p in self._ordered_predicates]
        self._priority_forms = [priority_form(c) for c in self.prioritizers]

    def close(self) -> None:
        """Stop following the cache (a daemon replaced this scheduler with one built from a new policy)."""
        if self.columns is not None:
            self.columns.detach()

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
        return explanation

    def _schedule(self, pod: Pod, explanation: Explanation | None) -> str:
        nodes = self.cluster.node_list()
        if not nodes:
            raise SchedulingError(NO_NODES_AVAILABLE)
        if explanation is None and self.columns is not None:
            host = self._schedule_vectorized(pod)
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
        failed: dict[str, list[str]] = {}
        if not self.predicates:
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
        if filtered and self.extenders:
            filtered = self._extender_filter(pod, filtered, failed, explanation)
        return filtered, failed

    def pod_fits_on_node(self, pod: Pod, meta: Any, info: NodeInfo | None) -> list[str]:
        """Run every predicate; return the concatenated failure reasons (empty: the pod fits)."""
        failed: list[str] = []
        for _, predicate in self._ordered_predicates:
            fit, reasons = predicate(pod, meta, info)
            if not fit:
                failed.extend(reasons)
        return failed

    def _explain_node(
        self, pod: Pod, meta: Any, info: NodeInfo | None, node_name: str, explanation: Explanation
    ) -> list[str]:
        node_explanation = explanation.nodes[node_name] = NodeExplanation(fit=True)
        failed: list[str] = []
        first_error: PredicateError | None = None
        for name, predicate in self._ordered_predicates:
            try:
                fit, reasons = predicate(pod, meta, info)
            except PredicateError as e:
                node_explanation.predicates[name] = PredicateResult(False, [], str(e))
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

    def _extender_filter(
        self, pod: Pod, filtered: list[Node], failed: dict[str, list[str]], explanation: Explanation | None
    ) -> list[Node]:
        for extender in self.extenders:
            kept, failed_nodes = extender.filter(pod, filtered, self.cluster.node_infos)
            for node_name, message in failed_nodes.items():
                failed.setdefault(node_name, []).append(message)
                if explanation is not None and node_name in explanation.nodes:
                    node_explanation = explanation.nodes[node_name]
                    node_explanation.fit = False
                    node_explanation.predicates[f"extender:{extender.name}"] = PredicateResult(False, [message])
            if explanation is not None:
                kept_names = {n.name for n in kept}
                for node in filtered:
                    if node.name not in kept_names and node.name not in failed_nodes:
                        explanation.nodes[node.name].fit = False
            filtered = kept
            if not filtered:
                break
        return filtered

    def prioritize_nodes(
        self, pod: Pod, nodes: Sequence[Node], explanation: Explanation | None = None
    ) -> list[HostPriority]:
        infos = self.cluster.node_infos
        if not self.prioritizers and not self.extenders:
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
        for config, result in zip(self.prioritizers, results):
            weight = config.weight
            for j in range(len(nodes)):
                totals[j] += result[j].score * weight
        if explanation is not None:
            for config, result in zip(self.prioritizers, results):
                for j, node in enumerate(nodes):
                    explanation.nodes[node.name].priorities[config.name] = (result[j].score, config.weight)
        if self.extenders:
            self._extender_prioritize(pod, nodes, totals, explanation)
        out = [HostPriority(node.name, totals[j]) for j, node in enumerate(nodes)]
        if explanation is not None:
            for hp in out:
                explanation.nodes[hp.host].total = hp.score
        return out

    def _run_priorities(self, pod: Pod, meta: Any, nodes: Sequence[Node]) -> list[list[HostPriority]]:
        """Every priority config over ``nodes``; all failures are aggregated, as upstream does."""
        errors: list[str] = []
        results: list[list[HostPriority]] = []
        for config in self.prioritizers:
            try:
                results.append(self._run_priority(config, pod, meta, list(nodes)))
            except PriorityError as e:
                errors.append(str(e))
        if errors:
            raise SchedulingError(aggregate(errors))
        return results

    def _extender_prioritize(
        self, pod: Pod, nodes: Sequence[Node], totals: list[int], explanation: Explanation | None
    ) -> None:
        combined: Counter[str] = Counter()
        for extender in self.extenders:
            try:
                scores, weight = extender.prioritize(pod, list(nodes))
            except Exception as e:  # upstream ignores a failing extender's priorities
                log.warning("extender %s prioritize failed, ignoring it: %s", extender.name, e)
                continue
            for hp in scores:
                combined[hp.host] += hp.score * weight
                if explanation is not None and hp.host in explanation.nodes:
                    explanation.nodes[hp.host].priorities[f"extender:{extender.name}"] = (hp.score, weight)
        for j, node in enumerate(nodes):
            totals[j] += combined.get(node.name, 0)

    def select_host(self, priority_list: Sequence[HostPriority]) -> str:
        """Highest score wins; ties rotate through hosts sorted by name, descending."""
        if not priority_list:
            raise SchedulingError("empty priorityList")
        ordered = sorted(priority_list, key=lambda hp: (hp.score, hp.host), reverse=True)
        max_score = ordered[0].score
        ties = 1
        while ties < len(ordered) and ordered[ties].score == max_score:
            ties += 1
        ix = self.last_node_index % ties
        self.last_node_index += 1
        return ordered[ix].host

    # -- the vectorised path ---------------------------------------------------------------------
    def _schedule_vectorized(self, pod: Pod) -> str | None:
        """The host, or None to let the reference path decide (nothing fits, or something errors)."""
        cols = self.columns
        assert cols is not None
        cols.refresh()
        candidates = self._filter_vectorized(pod, cols)
        if candidates is None or not candidates.size:
            return None
        if candidates.size == 1:
            return cols.names[int(candidates[0])]
        totals = self._prioritize_vectorized(pod, cols, candidates)
        if totals is None:
            nodes = [cols.nodes[int(i)] for i in candidates]
            return self.select_host(self.prioritize_nodes(pod, nodes))
        best = np.flatnonzero(totals == totals.max())
        # Ties rotate through the tied hosts in descending name order; rows are in ascending name order.
        ix = self.last_node_index % best.size
        self.last_node_index += 1
        return cols.names[int(candidates[best[best.size - 1 - ix]])]

    def _filter_vectorized(self, pod: Pod, cols: NodeColumns) -> np.ndarray | None:
        if not self.predicates:
            return np.arange(len(cols.names))
        meta = self.predicate_metadata_producer(pod, self.cluster.node_infos)
        mask = np.ones(len(cols.names), dtype=bool)
        for predicate, form in self._predicate_forms:
            fits = form(pod, meta, cols) if form is not None else None
            if fits is None:
                fits = np.empty(len(cols.names), dtype=bool)
                for i, info in enumerate(cols.infos):
                    try:
                        fits[i] = predicate(pod, meta, info)[0]
                    except PredicateError:
                        return None
            mask &= fits
        return np.flatnonzero(mask)

    def _prioritize_vectorized(self, pod: Pod, cols: NodeColumns, candidates: np.ndarray) -> np.ndarray | None:
        if not self.prioritizers:
            return np.ones(candidates.size, dtype=np.int64)
        meta = self.priority_metadata_producer(pod, self.cluster.node_infos)
        totals = np.zeros(candidates.size, dtype=np.int64)
        nodes: list[Node] | None = None
        for config, form in zip(self.prioritizers, self._priority_forms):
            scores = form(pod, meta, cols, candidates) if form is not None else None
            if scores is None:
                if nodes is None:
                    nodes = [cols.nodes[int(i)] for i in candidates]
                try:
                    scores = np.array([hp.score for hp in self._run_priority(config, pod, meta, nodes)], dtype=np.int64)
                except PriorityError:
                    return None
            totals += config.weight * scores
        return totals

    def _run_priority(self, config: PriorityConfig, pod: Pod, meta: Any, nodes: list[Node]) -> list[HostPriority]:
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
