"""PodTopologySpread, the score half (upstream ``podtopologyspread/scoring.go``, 1.26, checked
against 1.32), as a 1.9 priority function over the feasible nodes.

Only the pod's own ``ScheduleAnyway`` constraints count (no system-default constraints); a pod without
any scores 0 on every node.

Upstream, per pod (PreScore): feasible nodes lacking one of the constraints' topology keys are ignored
(they score 0); each constraint gets the weight ``log(domains + 2)``, where domains is the number of
topology values among the other feasible nodes (for ``kubernetes.io/hostname``: the number of those
nodes); matching pods (the pod's namespace, not being deleted, the constraint's selector) are counted
per topology value over every node that carries all the keys and that the constraint counts (node
inclusion policies, as for the filter), for the values the feasible nodes have. Per node (Score):
``round(Σ count(node's domain) * weight + (maxSkew - 1))``, where a hostname constraint counts the
matching pods on the node itself. NormalizeScore: with the largest score ``max`` and smallest ``min``
over the scored nodes, ``100 * (max + min - s) / max`` (all 100 when max is 0), so fewer matching pods
score higher.

**Score scale.** Upstream scores 0..100 (``MaxNodeScore``); a 1.9 Policy's are 0..10
(``MaxPriority``). The normalised score is converted with Go integer arithmetic:
``score * 10 / 100`` (truncating; 0..100 -> 0..10), then weighted like any 1.9 priority.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY, HostPriority, PluginFactoryArgs, PriorityFunction
from ..errors import PriorityError
from ..model.labels import Selector, SelectorError
from ..model.topology_spread import LABEL_HOSTNAME, TopologySpreadConstraint
from ..predicates.topology_spread import (
    Inclusion,
    count_matching,
    go_round,
    has_all_keys,
    selectors,
    soft_constraints,
)

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod

NAME = "PodTopologySpread"
MAX_NODE_SCORE = 100
#: Weight when the priority applies to a pod although the Policy does not name it: upstream's default
#: profile weights PodTopologySpread 2 (``getDefaultPlugins``, 1.26 and 1.32).
DEFAULT_WEIGHT = 2


def to_max_priority(score: int) -> int:
    """0..100 -> 0..10: ``score * MaxPriority / MaxNodeScore`` in Go integer arithmetic."""
    return score * MAX_PRIORITY // MAX_NODE_SCORE


def topology_normalizing_weight(size: int) -> float:
    """``topologyNormalizingWeight``: ``log(size + 2)``."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """``scoreForCount``."""
    return float(count) * weight + float(max_skew - 1)


def normalize(scores: list[int], ignored: list[bool]) -> list[int]:
    """``NormalizeScore`` (0..100)."""
    min_score, max_score = 2**63 - 1, 0
    for s, skip in zip(scores, ignored):
        if skip:
            continue
        min_score = min(min_score, s)
        max_score = max(max_score, s)
    out = []
    for s, skip in zip(scores, ignored):
        if skip:
            out.append(0)
        elif max_score == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (max_score + min_score - s) // max_score)
    return out


def raw_scores(
    pod: Pod, constraints: tuple[TopologySpreadConstraint, ...], sels: list[Selector],
    node_infos: Mapping[str, NodeInfo], nodes: list[Node],
) -> tuple[list[int], list[bool]]:
    """PreScore + Score over the feasible ``nodes``: each node's unnormalised score, and whether it
    is ignored (lacks a topology key)."""
    ignored = [not has_all_keys(n.labels, constraints) for n in nodes]
    kept = [n for n, skip in zip(nodes, ignored) if not skip]
    # Domains of the feasible nodes, per constraint (hostname: per node, counted in Score).
    domains: list[dict[str, int]] = []
    weights: list[float] = []
    for c in constraints:
        if c.topology_key == LABEL_HOSTNAME:
            domains.append({})
            weights.append(topology_normalizing_weight(len(kept)))
        else:
            values = dict.fromkeys(n.labels[c.topology_key] for n in kept)
            domains.append(dict.fromkeys(values, 0))
            weights.append(topology_normalizing_weight(len(values)))
    inclusion = Inclusion(pod)
    namespace = pod.namespace
    for info in node_infos.values():
        node = info.node if info is not None else None
        if node is None or not has_all_keys(node.labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            value = node.labels[c.topology_key]
            if value not in domains[i] or not inclusion.included(c, info):
                continue
            domains[i][value] += count_matching(info.pods, sels[i], namespace)
    scores = []
    for node, skip in zip(nodes, ignored):
        if skip:
            scores.append(0)
            continue
        score = 0.0
        for i, c in enumerate(constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                info = node_infos.get(node.name)
                count = count_matching(info.pods, sels[i], namespace) if info is not None else 0
            else:
                count = domains[i][value]
            score += score_for_count(count, c.max_skew, weights[i])
        scores.append(go_round(score))
    return scores, ignored


def new_pod_topology_spread_priority(args: PluginFactoryArgs) -> PriorityFunction:
    """The ``PodTopologySpread`` priority (whole-list form: it needs the feasible nodes, as upstream's
    PreScore does). Under ``Rules.V1_9``, and for pods without ScheduleAnyway constraints, every node
    scores 0."""
    cluster_rules = args.feature_gates.cluster_rules

    def pod_topology_spread(pod: Pod, node_infos: Mapping[str, NodeInfo], nodes: list[Node]) -> list[HostPriority]:
        constraints = soft_constraints(pod) if cluster_rules else ()
        if not constraints or not nodes:
            return [HostPriority(n.name, 0) for n in nodes]
        try:
            sels = selectors(constraints, "soft")
        except SelectorError as e:
            raise PriorityError(str(e)) from None
        scores, ignored = raw_scores(pod, constraints, sels, node_infos, nodes)
        return [HostPriority(n.name, to_max_priority(s)) for n, s in zip(nodes, normalize(scores, ignored))]

    return pod_topology_spread
