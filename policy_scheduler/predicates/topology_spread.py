"""PodTopologySpread, the filter half (upstream ``framework/plugins/podtopologyspread``: ``common.go``,
``filtering.go``; 1.26, checked against 1.32), and what the filter and the score share.

Only the pod's own ``DoNotSchedule`` constraints are checked: upstream's system-default constraints for
pods without constraints are not applied (a pod without constraints gets 1.9's decisions).

Per pod (upstream's PreFilter, :func:`compute_filter_state`, kept on the predicate metadata): for every
node that carries all the constraints' topology keys, and for each constraint that counts the node
(``nodeAffinityPolicy`` Honor: the node matches the pod's nodeSelector and required node affinity;
``nodeTaintsPolicy`` Honor: the pod tolerates the node's NoSchedule/NoExecute taints), the pods on it in
the pod's namespace, not being deleted, that the constraint's selector matches, summed per topology
value (a domain). Per node (Filter): the node must carry every key ("missing required label"), and for
each constraint ``count(node's domain) + selfMatch - globalMin <= maxSkew``, where globalMin is the
smallest domain count, or 0 while there are fewer domains than ``minDomains``.

Counts are kept per constraint (1.32's layout); 1.26 keyed them by topology key, which is the same thing
because the API server refuses two constraints with one {topologyKey, whenUnsatisfiable}.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import PredicateError
from ..model.labels import Selector, SelectorError, set_selector_matches
from ..model.node_selector import match_node_selector_terms
from ..model.taints import NO_EXECUTE, NO_SCHEDULE, taint_tolerated
from ..model.topology_spread import TopologySpreadConstraint

if TYPE_CHECKING:
    from ..algorithm import PluginFactoryArgs
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod

NAME = "PodTopologySpread"

#: upstream ``ErrReasonConstraintsNotMatch`` / ``ErrReasonNodeLabelNotMatch``
ERR_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_NODE_LABEL_NOT_MATCH = "node(s) didn't match pod topology spread constraints (missing required label)"

MAX_INT32 = 2**31 - 1


def hard_constraints(pod: Pod) -> tuple[TopologySpreadConstraint, ...]:
    return tuple(c for c in pod.topology_spread if c.hard)


def soft_constraints(pod: Pod) -> tuple[TopologySpreadConstraint, ...]:
    return tuple(c for c in pod.topology_spread if c.soft)


def has_hard_constraints(pod: Pod) -> bool:
    return any(c.hard for c in pod.topology_spread)


def has_soft_constraints(pod: Pod) -> bool:
    return any(c.soft for c in pod.topology_spread)


def selectors(constraints: Iterable[TopologySpreadConstraint], action: str) -> list[Selector]:
    """Every constraint's selector; :class:`SelectorError` as upstream's
    ``obtaining pod's <hard|soft> topology spread constraints: <error>``."""
    out = []
    for c in constraints:
        try:
            out.append(c.selector.get())
        except SelectorError as e:
            raise SelectorError(f"obtaining pod's {action} topology spread constraints: {e}") from None
    return out


# -- which nodes are domains --------------------------------------------------------------------
def required_node_affinity(pod: Pod) -> Callable[[Node], bool]:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match`` (modern semantics, parse errors ignored): the
    nodeSelector, and the required terms ORed, where a term with neither expressions nor fields, or one
    that cannot be parsed, matches nothing (and the next term is tried)."""
    node_selector = pod.node_selector
    affinity = pod.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    terms = node_affinity.required_node_selector if node_affinity is not None else None

    def matches(node: Node) -> bool:
        if node_selector and not set_selector_matches(node_selector, node.labels):
            return False
        return terms is None or match_node_selector_terms(terms, node.labels, node.name)

    return matches


def tolerates_do_not_schedule_taints(pod: Pod, node_info: NodeInfo) -> bool:
    """No NoSchedule/NoExecute taint on the node that the pod does not tolerate
    (``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``)."""
    tolerations = pod.tolerations
    return all(taint_tolerated(t, tolerations) for t in node_info.taints if t.effect in (NO_SCHEDULE, NO_EXECUTE))


def has_all_keys(labels: Mapping[str, str], constraints: Iterable[TopologySpreadConstraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``."""
    return all(c.topology_key in labels for c in constraints)


class Inclusion:
    """Whether a node counts for a constraint (``matchNodeInclusionPolicies``), with the pod's
    required node affinity built once."""

    __slots__ = ("pod", "affinity")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.affinity = required_node_affinity(pod)

    def included(self, constraint: TopologySpreadConstraint, node_info: NodeInfo) -> bool:
        node = node_info.node
        assert node is not None
        if constraint.honor_node_affinity and not self.affinity(node):
            return False
        if constraint.honor_node_taints and not tolerates_do_not_schedule_taints(self.pod, node_info):
            return False
        return True


def count_matching(pods: Iterable[Pod], selector: Selector, namespace: str) -> int:
    """``countPodsMatchSelector``: pods in ``namespace``, not being deleted, that ``selector`` matches."""
    n = 0
    for p in pods:
        if p.deletion_timestamp is not None or p.namespace != namespace:
            continue
        if selector.matches(p.labels):
            n += 1
    return n


# -- the filter's per-pod state ------------------------------------------------------------------
@dataclass(slots=True)
class CriticalPaths:
    """The two smallest (value, count) pairs of a constraint (upstream ``criticalPaths``). ``paths[0]``
    always holds the minimum; ``paths[1]`` is not guaranteed to be the second minimum after updates,
    which is enough because preemption removes pods from one node at a time, each on its own copy."""

    values: list[str] = field(default_factory=lambda: ["", ""])
    nums: list[int] = field(default_factory=lambda: [MAX_INT32, MAX_INT32])

    def update(self, value: str, num: int) -> None:
        values, nums = self.values, self.nums
        i = 0 if value == values[0] else 1 if value == values[1] else -1
        if i >= 0:
            nums[i] = num
            if nums[0] > nums[1]:
                values.reverse()
                nums.reverse()
        elif num < nums[0]:
            values[1], nums[1] = values[0], nums[0]
            values[0], nums[0] = value, num
        elif num < nums[1]:
            values[1], nums[1] = value, num

    def copy(self) -> CriticalPaths:
        return CriticalPaths(list(self.values), list(self.nums))


@dataclass(slots=True)
class SpreadFilterState:
    """Upstream's ``preFilterState``: the hard constraints with their selectors, per constraint the
    matching-pod count of every domain, and the critical paths."""

    constraints: tuple[TopologySpreadConstraint, ...]
    selectors: list[Selector]
    counts: list[dict[str, int]]
    paths: list[CriticalPaths]

    def min_match(self, i: int) -> int:
        """The global minimum for constraint ``i``, 0 while it has fewer domains than minDomains."""
        if len(self.counts[i]) < self.constraints[i].min_domains:
            return 0
        return self.paths[i].nums[0]

    def clone(self) -> SpreadFilterState:
        return SpreadFilterState(self.constraints, self.selectors, [dict(c) for c in self.counts],
                                 [p.copy() for p in self.paths])

    def update_with_pod(self, updated: Pod, preemptor: Pod, node_info: NodeInfo | None, delta: int) -> None:
        """``updateWithPod``: ``updated`` added (+1) to or removed (-1) from ``node_info``'s node."""
        node = node_info.node if node_info is not None else None
        if updated.namespace != preemptor.namespace or node is None:
            return
        if not has_all_keys(node.labels, self.constraints):
            return
        inclusion: Inclusion | None = None
        for i, c in enumerate(self.constraints):
            if not self.selectors[i].matches(updated.labels):
                continue
            if c.honor_node_affinity or c.honor_node_taints:
                inclusion = inclusion or Inclusion(preemptor)
                if not inclusion.included(c, node_info):
                    continue
            value = node.labels[c.topology_key]
            counts = self.counts[i]
            counts[value] = counts.get(value, 0) + delta
            self.paths[i].update(value, counts[value])


def compute_filter_state(pod: Pod, node_infos: Iterable[NodeInfo]) -> SpreadFilterState | None:
    """``calPreFilterState`` over every node; None when the pod has no DoNotSchedule constraint.
    Raises :class:`SelectorError` for a selector that cannot be built."""
    constraints = hard_constraints(pod)
    if not constraints:
        return None
    sels = selectors(constraints, "hard")
    counts: list[dict[str, int]] = [{} for _ in constraints]
    inclusion = Inclusion(pod)
    namespace = pod.namespace
    for info in node_infos:
        node = info.node if info is not None else None
        if node is None:
            continue
        labels = node.labels
        if not has_all_keys(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not inclusion.included(c, info):
                continue
            value = labels[c.topology_key]
            domain = counts[i]
            domain[value] = domain.get(value, 0) + count_matching(info.pods, sels[i], namespace)
    paths = []
    for domain in counts:
        p = CriticalPaths()
        for value, num in domain.items():
            p.update(value, num)
        paths.append(p)
    return SpreadFilterState(constraints, sels, counts, paths)


def filter_node(pod: Pod, state: SpreadFilterState, node: Node) -> tuple[bool, list[str]]:
    """``Filter`` for one node with the pod's state."""
    labels = node.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return False, [ERR_NODE_LABEL_NOT_MATCH]
        self_match = 1 if state.selectors[i].matches(pod.labels) else 0
        skew = state.counts[i].get(value, 0) + self_match - state.min_match(i)
        if skew > c.max_skew:
            return False, [ERR_CONSTRAINTS_NOT_MATCH]
    return True, []


def new_pod_topology_spread_predicate(args: PluginFactoryArgs) -> Callable[[Pod, Any, NodeInfo | None], tuple[bool, list[str]]]:
    """The ``PodTopologySpread`` predicate. Under ``Rules.V1_9`` it passes every node (1.9 knew no
    topology spread). The state comes from the predicate metadata (computed once per pod); without
    metadata it is computed from the cluster for the call."""
    cluster = args.cluster
    cluster_rules = args.feature_gates.cluster_rules

    def pod_topology_spread(pod: Pod, meta: Any, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        if not cluster_rules or not pod.topology_spread or not has_hard_constraints(pod):
            return True, []
        node = node_info.node if node_info is not None else None
        if node is None:
            raise PredicateError("node not found")
        getter = getattr(meta, "topology_spread_state", None)
        try:
            state = getter() if getter is not None else compute_filter_state(pod, cluster.node_infos.values())
        except SelectorError as e:
            raise PredicateError(str(e)) from None
        if state is None:
            return True, []
        return filter_node(pod, state, node)

    return pod_topology_spread


def go_round(x: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return int(t)
