"""Preemption (gate ``PodPriority``): upstream 1.9 ``core/generic_scheduler.go`` ``Preempt`` and its helpers.

After a FitError, :func:`preempt` looks for a node where evicting pods of lower priority than the
preemptor lets it fit (``generic_scheduler.md`` §7):

1. the preemptor is not eligible while lower-priority pods are still terminating on the node it is
   already nominated to (``podEligibleToPreemptOthers``); under the cluster's rules, nor ever with
   ``preemptionPolicy: Never`` (1.26's first question, its message added to the FitError's);
2. only nodes whose failure reasons removing pods cannot cure are skipped
   (``nodesWherePreemptionMightHelp``); with none left, the preemptor's own nomination is cleared;
3. on each remaining node every lower-priority pod is removed from a copy of its NodeInfo and of the
   predicate metadata; if the preemptor then fits, the removed pods are re-added one at a time,
   highest priority first, those whose PodDisruptionBudget allows no disruption before the others,
   each kept if the preemptor still fits and otherwise a victim (``selectVictimsOnNode``);
4. the node is picked by fewest PDB violations, then the lowest highest-victim priority, the
   smallest sum of (victim priority + 2^31), the fewest victims, then the first
   (``pickOneNodeForPreemption``); with extenders, each filters the picked node with its victims
   gone, and a node any of them rejects is dropped and the next picked
   (``nodePassesExtendersForPreemption``; 1.9 has no extender ``ProcessPreemption`` verb);
5. the lower-priority pods nominated to the chosen node lose their nomination
   (``getLowerPriorityNominatedPods``).

Pure engine code: nothing is evicted or patched here. The caller (``simulate``, or a daemon) records the
nomination, deletes the victims and clears the nominations. Upstream leaves three orders unspecified
(Go map iteration and an unstable sort); this port fixes them: candidate nodes in node-lister order
(names ascending), victims of equal priority in NodeInfo order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import PredicateError, SchedulingError
from ..features import NEWEST_LINE, KubernetesLine
from ..model.disruption import PodDisruptionBudget
from ..model.node import Node
from ..model.pod import Pod
from ..predicates.dynamic_resources import dynamic_resources_of
from ..predicates.metadata import MetadataError
from ..predicates.node_declared_features import ERR_REASON_UNSATISFIED_REQUIREMENTS
from ..predicates.reasons import (
    ERR_NODE_LABEL_PRESENCE_VIOLATED,
    ERR_NODE_NETWORK_UNAVAILABLE,
    ERR_NODE_NOT_READY,
    ERR_NODE_SELECTOR_NOT_MATCH,
    ERR_NODE_UNKNOWN_CONDITION,
    ERR_NODE_UNSCHEDULABLE,
    ERR_POD_NOT_MATCH_HOST_NAME,
    ERR_TAINTS_TOLERATIONS_NOT_MATCH,
    ERR_VOLUME_BIND_CONFLICT,
    ERR_VOLUME_NODE_CONFLICT,
    ERR_VOLUME_ZONE_CONFLICT,
    UnresolvableReason,
)
from ..predicates.volume_binder import ERR_REASON_PV_NOT_EXIST
from .extender import ExtenderFailure, SchedulerExtender, filters, ignorable, interested
from .fast_path import FastPath, VictimCandidates
from .fit_error import NO_NODES_AVAILABLE, FitError
from .modern_pods import NOT_ELIGIBLE_PREEMPTION_NEVER, never_post_filter_message, never_preempts
from .nominated import NominatedPodLister, nominated_elsewhere, nominated_node_of
from .victims import Victims, VictimSelection, lower_priority_pods, reprieve, victims_key

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo

log = logging.getLogger(__name__)


class PreemptingScheduler(Protocol):
    """What preemption reads and calls on the scheduler it runs for: :class:`GenericScheduler` has it all
    (that module imports this one, so this one names only the members it uses)."""

    cluster: ClusterState
    extenders: Sequence[SchedulerExtender]
    nominated_pods: NominatedPodLister | None
    predicate_metadata_producer: Callable[[Pod, Mapping[str, NodeInfo]], Any]
    fast_path: FastPath | None

    def algorithms_for(self, pod: Pod) -> Any:
        ...

    def pod_fits_on_node(self, pod: Pod, meta: Any, info: NodeInfo | None) -> list[str]:
        ...


#: Failure reasons that evicting pods cannot cure (``nodesWherePreemptionMightHelp``).
UNRESOLVABLE_REASONS: frozenset[str] = frozenset({
    ERR_NODE_SELECTOR_NOT_MATCH,
    ERR_POD_NOT_MATCH_HOST_NAME,
    ERR_TAINTS_TOLERATIONS_NOT_MATCH,
    ERR_NODE_LABEL_PRESENCE_VIOLATED,
    ERR_NODE_NOT_READY,
    ERR_NODE_NETWORK_UNAVAILABLE,
    ERR_NODE_UNSCHEDULABLE,
    ERR_NODE_UNKNOWN_CONDITION,
    ERR_VOLUME_ZONE_CONFLICT,
    ERR_VOLUME_NODE_CONFLICT,
    ERR_VOLUME_BIND_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,  # the cluster's rules: 1.26's VolumeBinding says UnschedulableAndUnresolvable
    ERR_REASON_UNSATISFIED_REQUIREMENTS,  # the cluster's rules: 1.36's NodeDeclaredFeatures, likewise
})

# What became of a node in one preemption attempt (``NodePreemption.outcome``).
CHOSEN = "chosen"
NOT_CHOSEN = "not chosen"
NOT_HELPFUL = "preemption would not help"
DOES_NOT_FIT = "does not fit"
EXTENDER_REJECTED = "rejected by an extender"


@dataclass(slots=True)
class NodePreemption:
    """One node's part in a preemption attempt, for ``explain``: its outcome, the failure reasons
    behind it, the victims it would need, and (not chosen) the step of the choice it lost at."""

    outcome: str
    reasons: list[str] = field(default_factory=list)
    victims: Victims | None = None
    detail: str = ""


@dataclass(slots=True)
class PreemptionResult:
    """What ``Preempt`` decided.

    ``node`` is where the preemptor is to be nominated (None: no preemption), ``victims`` the pods to
    delete there (highest priority first; empty when the node already has room) and
    ``nominated_pods_to_clear`` the pods whose nomination is to be removed: the lower-priority pods
    nominated to ``node``, or the preemptor itself when preemption cannot help anywhere.
    ``eligible`` is False when the preemptor must wait for its earlier victims to terminate.
    ``nodes`` says, for every node, why it was or was not chosen.
    """

    node: str | None = None
    victims: list[Pod] = field(default_factory=list)
    nominated_pods_to_clear: list[Pod] = field(default_factory=list)
    num_pdb_violations: int = 0
    violated_pdbs: dict[str, PodDisruptionBudget] = field(default_factory=dict)  # victim key -> its budget
    eligible: bool = True
    message: str = ""
    nodes: dict[str, NodePreemption] = field(default_factory=dict)
    # What the FitError's message gains (upstream's PostFilter message): cluster rules, preemptionPolicy Never;
    # worded as the cluster's line words it.
    post_filter_message: str = ""
    line: KubernetesLine = NEWEST_LINE

    def annotate(self, error: FitError) -> None:
        """``Diagnosis.PostFilterMsg``: ``error``'s message gains the PostFilter message, if any."""
        if self.post_filter_message:
            error.add_post_filter_message(self.post_filter_message, self.line)


# -- the steps --------------------------------------------------------------------------------------
def pod_eligible_to_preempt_others(pod: Pod, node_infos: Mapping[str, NodeInfo], nominated_node: str) -> bool:
    """``podEligibleToPreemptOthers``: not while a lower-priority pod on the pod's nominated node is
    terminating (it may be the victim of this pod's previous preemption)."""
    if not nominated_node:
        return True
    info = node_infos.get(nominated_node)
    if info is None:
        return True
    return not any(p.deletion_timestamp is not None and p.priority < pod.priority for p in info.pods)


def unresolvable_reasons(reasons: Iterable[str]) -> list[str]:
    """The reasons among ``reasons`` that no eviction can cure (extenders' messages never are)."""
    return [r for r in reasons if isinstance(r, UnresolvableReason)
            or (not isinstance(r, ExtenderFailure) and r in UNRESOLVABLE_REASONS)]


def nodes_where_preemption_might_help(nodes: Sequence[Node], failed_predicates: Mapping[str, Sequence[str]],
                                      outcomes: dict[str, NodePreemption] | None = None) -> list[Node]:
    """``nodesWherePreemptionMightHelp``: nodes without an unresolvable reason (a node missing from the
    map qualifies). ``outcomes`` (optional) receives each other node's unresolvable reasons."""
    potential = []
    for node in nodes:
        unresolvable = unresolvable_reasons(failed_predicates.get(node.name, ()))
        if not unresolvable:
            potential.append(node)
        elif outcomes is not None:
            outcomes[node.name] = NodePreemption(NOT_HELPFUL, [str(r) for r in dict.fromkeys(unresolvable)],
                                                 detail="evicting pods cannot cure this")
    return potential


def _copy_metadata(meta: Any) -> Any:
    shallow_copy = getattr(meta, "shallow_copy", None)
    return shallow_copy() if shallow_copy is not None else meta


def select_victims_on_node(
    scheduler: PreemptingScheduler, pod: Pod, meta: Any, node_info: NodeInfo | None, pdbs: Sequence[PodDisruptionBudget]
) -> VictimSelection:
    """``selectVictimsOnNode`` on a copy of ``node_info`` (``meta`` is this node's own copy)."""
    if node_info is None or node_info.node is None:
        return VictimSelection(False, reasons=["node not found"])
    info = node_info.clone()
    can_update = getattr(meta, "remove_pod", None) is not None

    def remove(p: Pod) -> None:
        info.remove_pod(p)
        if can_update:
            try:
                meta.remove_pod(p, info)
            except MetadataError:
                pass  # upstream ignores RemovePod's error

    def add(p: Pod) -> None:
        info.add_pod(p)
        if can_update:
            try:
                meta.add_pod(p, info)
            except MetadataError:
                pass

    potential = lower_priority_pods(info.pods, pod.priority)
    for p in potential:
        remove(p)
    try:
        reasons = scheduler.pod_fits_on_node(pod, meta, info)
    except PredicateError as e:
        log.warning("Encountered error while selecting victims on node %s: %s", info.name, e)
        return VictimSelection(False, reasons=[f"error: {e}"], removed=len(potential))
    if reasons:
        return VictimSelection(False, reasons=[str(r) for r in reasons], removed=len(potential))

    def keep(p: Pod) -> bool:
        add(p)
        try:
            fits = not scheduler.pod_fits_on_node(pod, meta, info)
        except PredicateError:
            fits = False
        if not fits:
            remove(p)
        return fits

    return VictimSelection(True, reprieve(potential, pdbs, keep, info.name), removed=len(potential))


def select_nodes_for_preemption(
    scheduler: PreemptingScheduler, pod: Pod, potential_nodes: Sequence[Node], pdbs: Sequence[PodDisruptionBudget],
    outcomes: dict[str, NodePreemption] | None = None,
) -> dict[str, Victims]:
    """``selectNodesForPreemption``: the victims on every potential node where evictions make room, in
    node order. ``outcomes`` (optional) receives each rejected node's reasons.

    With a fast path (``scheduler.fast_path``), a node is first asked by its arithmetic
    (:meth:`~policy_scheduler.core.fast_path.FastPath.victims_by_arithmetic`) when the preemptor's predicates
    allow it; the reference decides every node the arithmetic leaves open.
    """
    infos = scheduler.cluster.node_infos
    meta = scheduler.predicate_metadata_producer(pod, infos)
    fast_path = scheduler.fast_path
    arithmetic = fast_path.victims_by_arithmetic(scheduler, pod, meta) if fast_path is not None else None
    result: dict[str, Victims] = {}
    for node in potential_nodes:
        info = infos.get(node.name)
        selection = arithmetic.select(info, pdbs) if arithmetic is not None and info is not None else None
        if selection is None:
            selection = select_victims_on_node(scheduler, pod, _copy_metadata(meta), info, pdbs)
        if selection.fits:
            assert selection.victims is not None
            result[node.name] = selection.victims
        elif outcomes is not None:
            outcomes[node.name] = NodePreemption(
                DOES_NOT_FIT, selection.reasons,
                detail=f"does not fit even with its {selection.removed} lower-priority pod(s) removed",
            )
    return result


_STEPS = ("more PDB violations", "a higher-priority first victim", "a higher sum of (priority + 2^31) over its victims",
          "more victims")


def pick_one_node_for_preemption(candidates: Mapping[str, Victims]) -> tuple[str | None, dict[str, str]]:
    """``pickOneNodeForPreemption``: the node to preempt on, and for every other candidate why it lost.

    A node needing no eviction wins at once; then fewest PDB violations, lowest priority of the first
    victim (upstream reads ``victims.pods[0]``: the highest-priority victim, or the highest-priority
    PDB-protected one when there is any), smallest sum of (priority + 2^31), fewest victims; ties go to
    the first node in order.
    """
    if not candidates:
        return None, {}
    for name, victims in candidates.items():
        if not victims.pods:
            return name, {other: "another node needs no eviction" for other in candidates if other != name}
    keys = {n: victims_key(v) for n, v in candidates.items()}
    remaining = list(candidates)
    lost: dict[str, str] = {}
    for step, label in enumerate(_STEPS):
        best = min(keys[n][step] for n in remaining)
        for n in remaining:
            if keys[n][step] != best:
                lost[n] = label if step == 2 else f"{label} ({keys[n][step]} > {best})"
        remaining = [n for n in remaining if keys[n][step] == best]
        if len(remaining) == 1:
            return remaining[0], lost
    for n in remaining[1:]:
        lost[n] = f"tied with {remaining[0]} on every criterion; the first node in name order wins"
    return remaining[0], lost


def node_passes_extenders_for_preemption(
    scheduler: PreemptingScheduler, pod: Pod, node_name: str, victims: Sequence[Pod]
) -> tuple[bool, str | None]:
    """``nodePassesExtendersForPreemption``: every extender's filter keeps ``node_name`` once its victims
    are gone. Returns (passes, why not)."""
    if not scheduler.extenders:
        return True, None
    infos = dict(scheduler.cluster.node_infos)
    info = infos[node_name].clone()
    for victim in victims:
        info.remove_pod(victim)
    infos[node_name] = info
    assert info.node is not None
    nodes = [info.node]
    for extender in scheduler.extenders:
        if not filters(extender) or not interested(extender, pod):
            continue
        try:
            nodes, failed = extender.filter(pod, nodes, infos)
        except Exception as e:
            if ignorable(extender):
                log.warning("Skipping extender %s as it returned error %s and has ignorable flag set", extender.name, e)
                continue
            log.error("Error occurred while checking extenders for preemption on node %s: %s", node_name, e)
            return False, f"extender {extender.name}: error: {e}"
        if node_name in failed or not nodes:
            return False, f"extender {extender.name}: {failed.get(node_name) or 'filtered out'}"
    return True, None


def lower_priority_nominated_pods(scheduler: PreemptingScheduler, pod: Pod, node_name: str) -> list[Pod]:
    """``getLowerPriorityNominatedPods``: pods nominated to ``node_name`` with a lower priority than ``pod``."""
    return [p for p in nominated_elsewhere(scheduler.nominated_pods, pod, node_name) if p.priority < pod.priority]


# -- Preempt ----------------------------------------------------------------------------------------
def preempt(
    scheduler: PreemptingScheduler,
    pod: Pod,
    error: FitError,
    *,
    pdbs: Sequence[PodDisruptionBudget] = (),
    nominated_node: str | None = None,
    detail: bool = True,
) -> PreemptionResult:
    """``Preempt(pod, nodeLister, fitError)`` over ``scheduler``'s cluster state.

    ``pdbs`` are the cluster's PodDisruptionBudgets (all namespaces). The pods nominated to each node
    come from ``scheduler.nominated_pods``; the preemptor's own nominated node is ``nominated_node`` if
    given, else what that lister says, else the pod object's annotation / status. Raises
    :class:`SchedulingError` when there are no nodes. Without ``detail``, ``result.nodes`` holds only the chosen
    node and those an extender rejected (the decision is the same; the daemon needs no more).
    """
    result = PreemptionResult()
    if never_preempts(pod):  # 1.26 PodEligibleToPreemptOthers: asked before anything else
        result.eligible = False
        result.message = NOT_ELIGIBLE_PREEMPTION_NEVER
        result.line = scheduler.cluster.kubernetes_line
        checker = dynamic_resources_of(scheduler.algorithms_for(pod).predicates) if pod.resource_claims else None
        result.post_filter_message = (never_post_filter_message(result.line, checker.post_filter_message(pod, error.failed_predicates))
                                      if checker is not None else never_post_filter_message(result.line))
        log.debug("Pod %s is not eligible for preemption: %s", pod.ref, result.message)
        return result
    infos = scheduler.cluster.node_infos
    if nominated_node is None:
        lister = scheduler.nominated_pods
        nominated_node = (lister.node_for(pod) if lister is not None else None) or nominated_node_of(pod)
    if not pod_eligible_to_preempt_others(pod, infos, nominated_node):
        result.eligible = False
        result.message = (f"not eligible: lower-priority pods on its nominated node {nominated_node} are still "
                          "terminating")
        log.debug("Pod %s is not eligible for more preemption.", pod.name)
        return result
    nodes = scheduler.cluster.node_list()
    if not nodes:
        raise SchedulingError(NO_NODES_AVAILABLE)
    if UNRESOLVABLE_REASONS.isdisjoint(error.reason_counts) and not pod.resource_claims:
        potential = list(nodes)  # no such reason on any node (an extender's message of the same text is looked at)
    else:
        potential = nodes_where_preemption_might_help(nodes, error.failed_predicates, result.nodes if detail else None)
    if not potential:
        log.debug("Preemption will not help schedule pod %s on any node.", pod.name)
        result.nominated_pods_to_clear = [pod]
        result.message = "preemption would not help on any node"
        return result
    candidates = _candidates(scheduler, pod, potential, pdbs, result.nodes if detail else None)
    while (node_name := candidates.pick()) is not None:
        victims = candidates.victims(node_name)
        passes, why = node_passes_extenders_for_preemption(scheduler, pod, node_name, victims.pods)
        if passes:
            if detail:
                assert isinstance(candidates, _EveryNode)  # with detail, every node's victims (_candidates)
                candidates.record_losers(result.nodes)
            result.nodes[node_name] = NodePreemption(CHOSEN, victims=victims)
            result.node = node_name
            result.victims = list(victims.pods)
            result.num_pdb_violations = victims.num_pdb_violations
            result.violated_pdbs = dict(victims.pdbs)
            result.nominated_pods_to_clear = lower_priority_nominated_pods(scheduler, pod, node_name)
            result.message = (f"preempt {len(victims.pods)} pod(s) on {node_name}" if victims.pods
                              else f"nominate {node_name}, which has room without evictions")
            _sort_outcomes(result, nodes)
            return result
        result.nodes[node_name] = NodePreemption(EXTENDER_REJECTED, [why or ""], victims=victims, detail=why or "")
        candidates.drop(node_name)
    result.message = "no node where evicting lower-priority pods makes room"
    _sort_outcomes(result, nodes)
    return result


class Candidates(VictimCandidates, Protocol):
    """:class:`~.fast_path.VictimCandidates` that also say why each other node lost (``explain``)."""

    def record_losers(self, outcomes: dict[str, NodePreemption]) -> None:
        ...


class _EveryNode:
    """Every candidate's ``Victims`` (``selectNodesForPreemption``), picked by :func:`pick_one_node_for_preemption`,
    which also says why each other node lost (``explain``)."""

    def __init__(self, candidates: dict[str, Victims]) -> None:
        self.candidates = candidates
        self.lost: dict[str, str] = {}

    def pick(self) -> str | None:
        name, self.lost = pick_one_node_for_preemption(self.candidates)
        return name

    def victims(self, name: str) -> Victims:
        return self.candidates[name]

    def drop(self, name: str) -> None:
        del self.candidates[name]

    def record_losers(self, outcomes: dict[str, NodePreemption]) -> None:
        for other, reason in self.lost.items():
            outcomes[other] = NodePreemption(NOT_CHOSEN, victims=self.candidates[other], detail=reason)


def _candidates(scheduler: PreemptingScheduler, pod: Pod, potential: Sequence[Node], pdbs: Sequence[PodDisruptionBudget],
                outcomes: dict[str, NodePreemption] | None) -> Candidates | VictimCandidates:
    """Without ``outcomes`` (nobody reads why each node lost), the fast path's candidates when it has them
    (the vectorised one's victim table: the same pick, from victim keys kept per class of preemptors); else every
    node's victims."""
    if outcomes is None and scheduler.fast_path is not None:
        meta = scheduler.predicate_metadata_producer(pod, scheduler.cluster.node_infos)
        candidates = scheduler.fast_path.victim_candidates(
            scheduler, pod, meta, potential, pdbs,
            lambda info: select_victims_on_node(scheduler, pod, _copy_metadata(meta), info, pdbs))
        if candidates is not None:
            return candidates
    return _EveryNode(select_nodes_for_preemption(scheduler, pod, potential, pdbs, outcomes))


def _sort_outcomes(result: PreemptionResult, nodes: Sequence[Node]) -> None:
    if len(result.nodes) < 2:
        return
    order = {n.name: i for i, n in enumerate(nodes)}
    result.nodes = dict(sorted(result.nodes.items(), key=lambda kv: order.get(kv[0], len(order))))
