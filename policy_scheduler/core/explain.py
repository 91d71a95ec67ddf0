"""``explain``: one pod scheduled the reference way, with what every predicate, priority and extender decided.

The recorder does not ask the scheduler to explain: it wraps the algorithms the scheduler would use for the pod
(each predicate, each priority config, each extender) so that every call writes its verdict, reasons, error or
scores into an :class:`Explanation`, then runs the scheduler's own reference steps
(:meth:`GenericScheduler.candidate_nodes`, :meth:`~GenericScheduler.feasible_nodes`,
:meth:`~GenericScheduler.prioritize_nodes`, :meth:`~GenericScheduler.select_host`) with the wrapped ones. The
fast path is never asked (its messages and errors are the reference's anyway); the round-robin counter advances as
:meth:`GenericScheduler.schedule` would advance it. Where the reference stops at a single feasible node, explain
scores that node anyway, for information.

What the wrappers keep exact:

* predicates: a node's entry holds its last pass (with nominated pods, the second pass, run only when the first
  found no failure, is recorded over the first) and the first pass's nominated pods; a predicate's error is
  recorded with the reasons it gave and the pass goes on, so every predicate has its verdict, and the pass's first
  error is raised after its last predicate (the reference raises it at once: the node's outcome is the same);
* priorities: the scores (after reduce) are held until the priorities and the extenders have all answered, and
  recorded only then, with the totals, as the reference records nothing when a priority fails;
* extenders: a wrapped extender takes every verb for every pod and decides, as the reference would, whether its
  extender is asked: a skipped filter keeps every node sent and a skipped prioritize scores nothing, so the
  decision is the same and the skip is recorded in its place; prioritize calls (which may run in threads) are
  recorded in extender order once they have all answered.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..algorithm import FitPredicate, HostPriority, PriorityConfig
from ..errors import PredicateError, SchedulingError
from .extender import SchedulerExtender, filters, ignorable, interested, prioritizes
from .fit_error import FitError
from .modern_pods import PodGatedError
from .nominated import NominatedPodLister, first_pass_pods
from .preemption import PreemptionResult

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod
    from .algorithms import Algorithms


class ReferenceSteps(Protocol):
    """What the recorder runs of :class:`~.generic_scheduler.GenericScheduler`: its reference steps, each taking the
    algorithms it runs (the recorder wraps the scheduler; the scheduler does not know the recorder)."""

    nominated_pods: NominatedPodLister | None

    def algorithms_for(self, pod: Pod) -> Algorithms: ...

    def candidate_nodes(self, pod: Pod) -> list[Node]: ...

    def feasible_nodes(self, pod: Pod, nodes: Sequence[Node], algorithms: Algorithms) -> list[Node]: ...

    def prioritize_nodes(
        self, pod: Pod, nodes: Sequence[Node], algorithms: Algorithms | None = None
    ) -> list[HostPriority]: ...

    def select_host(self, priority_list: Sequence[HostPriority]) -> str: ...

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PredicateResult:
    fit: bool
    reasons: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(slots=True)
class ExtenderVerdict:
    """One extender's say on one node: its filter verdict (None: the node was not sent to its filter),
    its ``failedNodes`` message, and its prioritize score and weight (None: not scored)."""

    fit: bool | None = None
    reasons: list[str] = field(default_factory=list)
    score: int | None = None
    weight: int | None = None


@dataclass(slots=True)
class ExtenderCall:
    """What became of one extender verb for the pod: ``called``, ``not interested`` (managedResources),
    ``no verb``, ``error`` (the attempt failed, or for prioritize: its scores dropped) or
    ``ignored error`` (an ignorable extender's filter failed and was skipped)."""

    extender: str
    verb: str
    outcome: str
    error: str | None = None


@dataclass(slots=True)
class NodeExplanation:
    fit: bool
    predicates: dict[str, PredicateResult] = field(default_factory=dict)
    priorities: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (score, weight)
    total: int | None = None
    extenders: dict[str, ExtenderVerdict] = field(default_factory=dict)  # extender name (urlPrefix) -> verdict
    nominated_pods: list[str] = field(default_factory=list)  # pods nominated here, counted in the first pass

    def extender(self, name: str) -> ExtenderVerdict:
        return self.extenders.setdefault(name, ExtenderVerdict())


@dataclass(slots=True)
class Explanation:
    pod: str
    host: str | None = None
    error: str | None = None
    nodes: dict[str, NodeExplanation] = field(default_factory=dict)
    extenders: list[ExtenderCall] = field(default_factory=list)
    node_name: str = ""  # the pod's spec.nodeName: bound by name, never scheduled
    preemption: PreemptionResult | None = None  # gate PodPriority: what preemption would do
    fit_error: FitError | None = field(default=None, repr=False)
    volumes: list[Any] = field(default_factory=list)  # the cluster's rules: VolumeActions on the host (late-bound claims)
    gates: tuple[str, ...] = ()  # the pod is gated (cluster rules): never decided while these remain
    devices: list[Any] = field(default_factory=list)  # the cluster's rules: a pod's claims, per node (dra/explain.py)


def explain(scheduler: ReferenceSteps, pod: Pod) -> Explanation:
    """Schedule ``pod`` the reference way and record every predicate's verdict and every priority's score per node
    (the scheduler's round-robin counter advances as scheduling the pod would advance it)."""
    explanation = Explanation(pod=pod.ref)
    try:
        explanation.host = Recorder(scheduler, pod, explanation).run()
    except SchedulingError as e:
        explanation.error = str(e)
        if isinstance(e, FitError):
            explanation.fit_error = e
        elif isinstance(e, PodGatedError):
            explanation.gates = e.gates
    return explanation


class Recorder:
    """One pod's explanation: the scheduler's algorithms for the pod, wrapped to write into ``explanation``."""

    def __init__(self, scheduler: ReferenceSteps, pod: Pod, explanation: Explanation) -> None:
        self.scheduler = scheduler
        self.pod = pod
        self.explanation = explanation
        self._pass_error: PredicateError | None = None  # the first error of the predicate pass under way
        self._scores: dict[int, list[HostPriority]] = {}  # priority config index -> its result, until recorded
        self._extenders: list[RecordingExtender] = []

    def run(self) -> str:
        """The host (what :meth:`GenericScheduler.schedule` would pick); raises as it would."""
        scheduler, pod = self.scheduler, self.pod
        nodes = scheduler.candidate_nodes(pod)
        algorithms = self.wrap(scheduler.algorithms_for(pod))
        lister = scheduler.nominated_pods if algorithms.predicates else None
        for node in nodes:  # every node has its entry, in node order, before any predicate runs
            node_explanation = self.explanation.nodes[node.name] = NodeExplanation(fit=True)
            if lister is not None:
                node_explanation.nominated_pods = [p.ref for p in first_pass_pods(lister, pod, node.name) or []]
        filtered = scheduler.feasible_nodes(pod, nodes, algorithms)
        if len(filtered) == 1:  # upstream runs no priority; show the scores anyway, for information
            try:
                self.prioritize(filtered, algorithms)
            except SchedulingError as e:
                log.debug("priorities for the only feasible node failed: %s", e)
            return filtered[0].name
        return scheduler.select_host(self.prioritize(filtered, algorithms))

    def wrap(self, algorithms: Algorithms) -> Algorithms:
        """``algorithms`` with every predicate, priority config and extender recording what it decides."""
        ordered = algorithms.ordered_predicates
        last = len(ordered) - 1
        wrapped = {name: self._predicate(name, predicate, i == 0, i == last) for i, (name, predicate) in enumerate(ordered)}
        self._extenders = [RecordingExtender(e, self) for e in algorithms.extenders]
        return dataclasses.replace(
            algorithms,
            predicates={name: wrapped[name] for name in algorithms.predicates},
            ordered_predicates=[(name, wrapped[name]) for name, _ in ordered],
            prioritizers=[self._priority(i, config) for i, config in enumerate(algorithms.prioritizers)],
            extenders=list(self._extenders),
        )

    # -- predicates ---------------------------------------------------------------------------------
    def _predicate(self, name: str, predicate: FitPredicate, first: bool, last: bool) -> FitPredicate:
        def recorded(pod: Pod, meta: Any, info: NodeInfo | None) -> tuple[bool, list[Any]]:
            assert info is not None and info.node is not None  # every listed node has its NodeInfo
            node_explanation = self.explanation.nodes[info.node.name]
            if first:  # a pass begins (the second of a node with nominated pods replaces the first)
                node_explanation.predicates.clear()
                self._pass_error = None
            try:
                fit, reasons = predicate(pod, meta, info)
            except PredicateError as e:
                node_explanation.predicates[name] = PredicateResult(False, [str(r) for r in e.reasons], str(e))
                node_explanation.fit = False
                self._pass_error = self._pass_error or e
                fit, reasons = False, list(e.reasons)
            else:
                node_explanation.predicates[name] = PredicateResult(fit, [str(r) for r in reasons] if not fit else [])
                if not fit:
                    node_explanation.fit = False
            if last and self._pass_error is not None:
                raise self._pass_error
            return fit, reasons

        return recorded

    # -- priorities ---------------------------------------------------------------------------------
    def _priority(self, index: int, config: PriorityConfig) -> PriorityConfig:
        """``config`` keeping its result (after reduce) for :meth:`prioritize` to record."""
        if config.function is not None:
            function = config.function

            def kept_function(pod: Pod, infos: Mapping[str, NodeInfo], nodes: list[Node]) -> list[HostPriority]:
                result = self._scores[index] = function(pod, infos, nodes)
                return result

            return dataclasses.replace(config, function=kept_function)
        reduce = config.reduce

        def kept_reduce(pod: Pod, meta: Any, infos: Mapping[str, NodeInfo], result: list[HostPriority]) -> None:
            if reduce is not None:
                reduce(pod, meta, infos, result)
            self._scores[index] = result

        return dataclasses.replace(config, reduce=kept_reduce)

    def prioritize(self, nodes: list[Node], algorithms: Algorithms) -> list[HostPriority]:
        """The reference's priority list for ``nodes``, with every priority's and extender's scores and the totals
        recorded once all have answered."""
        self._scores.clear()
        for extender in self._extenders:
            extender.prioritized = None
        out = self.scheduler.prioritize_nodes(self.pod, nodes, algorithms)
        explained = self.explanation.nodes
        if not algorithms.prioritizers and not algorithms.extenders:
            for hp in out:
                explained[hp.host].priorities["EqualPriority"] = (1, 1)
        for index, config in enumerate(algorithms.prioritizers):
            result = self._scores[index]
            for j, node in enumerate(nodes):
                explained[node.name].priorities[config.name] = (result[j].score, config.weight)
        if algorithms.extenders:
            self._record_extender_scores()
        for hp in out:
            explained[hp.host].total = hp.score
        return out

    def _record_extender_scores(self) -> None:
        """The prioritize calls in the reference's order: the skipped extenders, then the asked ones."""
        calls = self.explanation.extenders
        asked = []
        for extender in self._extenders:
            assert extender.prioritized is not None  # the reference asks every extender that says it prioritizes
            outcome, answer = extender.prioritized
            if outcome in ("no verb", "not interested"):
                calls.append(ExtenderCall(extender.name, "prioritize", outcome))
            else:
                asked.append((extender.name, outcome, answer))
        for name, outcome, answer in asked:
            if isinstance(answer, Exception):
                calls.append(ExtenderCall(name, "prioritize", outcome, str(answer)))
                continue
            calls.append(ExtenderCall(name, "prioritize", outcome))
            scores, weight = answer
            for hp in scores:
                node_explanation = self.explanation.nodes.get(hp.host)
                if node_explanation is not None:
                    verdict = node_explanation.extender(name)
                    verdict.score, verdict.weight = hp.score, weight


class RecordingExtender:
    """An extender that takes every verb for every pod, asks its extender only where the reference would, and records
    each filter call (and its verdict per node) in place and each prioritize call for the recorder to record."""

    filter_verb = True
    prioritize_verb = True

    def __init__(self, extender: SchedulerExtender, recorder: Recorder) -> None:
        self.extender = extender
        self.name = extender.name
        self.recorder = recorder
        self.prioritized: tuple[str, Any] | None = None  # (outcome, the answer or the error), once asked

    def is_interested(self, pod: Pod) -> bool:
        return True

    def is_ignorable(self) -> bool:
        return ignorable(self.extender)

    def is_binder(self) -> bool:
        return self.extender.is_binder()

    def bind(self, pod: Pod, node_name: str) -> None:
        self.extender.bind(pod, node_name)

    def _skipped(self, pod: Pod, verb: bool) -> str | None:
        if not verb:
            return "no verb"
        if not interested(self.extender, pod):
            return "not interested"
        return None

    def filter(
        self, pod: Pod, nodes: list[Node], node_infos: Mapping[str, NodeInfo]
    ) -> tuple[list[Node], dict[str, str]]:
        explanation = self.recorder.explanation
        skipped = self._skipped(pod, filters(self.extender))
        if skipped is not None:
            explanation.extenders.append(ExtenderCall(self.name, "filter", skipped))
            return list(nodes), {}
        try:
            kept, failed_nodes = self.extender.filter(pod, nodes, node_infos)
        except Exception as e:
            outcome = "ignored error" if ignorable(self.extender) else "error"
            explanation.extenders.append(ExtenderCall(self.name, "filter", outcome, str(e)))
            raise
        explanation.extenders.append(ExtenderCall(self.name, "filter", "called"))
        kept_names = {n.name for n in kept}
        for node in nodes:
            verdict = explanation.nodes[node.name].extender(self.name)
            verdict.fit = node.name in kept_names
            if not verdict.fit:
                explanation.nodes[node.name].fit = False
        for node_name, message in failed_nodes.items():
            node_explanation = explanation.nodes.get(node_name)
            if node_explanation is not None:
                verdict = node_explanation.extender(self.name)
                verdict.fit = False
                verdict.reasons.append(message)
                node_explanation.fit = False
        return kept, failed_nodes

    def prioritize(self, pod: Pod, nodes: list[Node]) -> tuple[list[HostPriority], int]:
        skipped = self._skipped(pod, prioritizes(self.extender))
        if skipped is not None:
            self.prioritized = (skipped, None)
            return [], 0
        try:
            answer = self.extender.prioritize(pod, nodes)
        except Exception as e:
            self.prioritized = ("error", e)
            raise
        self.prioritized = ("called", answer)
        return answer
