"""Vectorised forms of the 1.9 priority functions (see the package docstring for the contract).

Integer maths is int64 as upstream's; float expressions are evaluated element-wise in exactly the
order the reference evaluates them, so every score is bit-for-bit the reference's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..algorithm import MAX_PRIORITY, PluginFactoryArgs
from ..features import Rules
from ..model.labels import SelectorError
from ..model.topology import term_namespaces
from ..priorities import (
    calculate_node_affinity_priority_map,
    calculate_node_prefer_avoid_pods_priority_map,
    compute_taint_toleration_priority_map,
)
from ..priorities.metadata import PriorityMetadata, non_zero_request, prefer_no_schedule_tolerations
from ..priorities.node_affinity import cluster_preferred_terms, preferred_terms_error
from ..priorities.selector_spreading import ZONE_WEIGHTING, get_zone_key
from . import signature
from .affinity_terms import PREFERRED, REQUIRED_AFFINITY

if TYPE_CHECKING:
    from ..model.pod import Pod
    from .columns import NodeColumns

I64 = np.int64
F64 = np.float64
Scores = np.ndarray | int  # per candidate, or one score every candidate gets


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Go's integer division (truncates toward zero) for int64 arrays; ``b`` > 0."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


class RequestScores:
    """LeastRequested, MostRequested and BalancedResourceAllocation: scores of each node's non-zero requests plus the
    pod's against its allocatable cpu and memory (both rows of one 2-D array, so each step is one numpy call for the
    two resources). Computed once per request over every node and kept up to date by the columns (a ReplicaSet's
    pods, or any pods asking the same, share it). Those an algorithm names together are one weighted sum
    (:meth:`plus`): one class, one update of its changed rows and one gather of the candidates serve them all."""

    __slots__ = ("scorers",)

    def __init__(self, *scorers: tuple[Callable[[np.ndarray, np.ndarray], Scores], int]) -> None:
        self.scorers = scorers  # (score(requested, allocatable), weight)

    def plus(self, weight: int, other: RequestScores, other_weight: int) -> RequestScores:
        """``weight`` times these scores plus ``other_weight`` times ``other``'s."""
        return RequestScores(*((f, w * weight) for f, w in self.scorers),
                             *((f, w * other_weight) for f, w in other.scorers))

    def __call__(self, pod: Pod, meta: Any, cols: NodeColumns, idx: np.ndarray) -> Scores:
        request = non_zero_request(pod, meta)
        wanted = np.array([[request.milli_cpu], [request.memory]], dtype=I64)

        def compute(rows: slice | np.ndarray) -> Scores:
            requested = cols.nonzero_requested[:, rows] + wanted
            allocatable = cols.allocatable_cpu_memory[:, rows]
            total = None
            for score, weight in self.scorers:
                scores = score(requested, allocatable)
                scores = scores if weight == 1 else weight * scores
                total = scores if total is None else total + scores
            return total

        return cols.per_pod_class((self.scorers, request.milli_cpu, request.memory), compute)[idx]


def _unused(req: np.ndarray, cap: np.ndarray) -> np.ndarray:
    safe = np.where(cap == 0, 1, cap)
    return np.where((cap == 0) | (req > cap), 0, ((cap - req) * MAX_PRIORITY) // safe)


def _used(req: np.ndarray, cap: np.ndarray) -> np.ndarray:
    safe = np.where(cap == 0, 1, cap)
    return np.where((cap == 0) | (req > cap), 0, (req * MAX_PRIORITY) // safe)


def _least_requested(requested: np.ndarray, allocatable: np.ndarray) -> Scores:
    """Over (cpu, memory) rows: the mean of the two unused fractions' scores, truncated."""
    cpu, memory = _unused(requested, allocatable)
    return (cpu + memory) // 2


def _most_requested(requested: np.ndarray, allocatable: np.ndarray) -> Scores:
    cpu, memory = _used(requested, allocatable)
    return (cpu + memory) // 2


def _balanced(requested: np.ndarray, allocatable: np.ndarray) -> Scores:
    fractions = np.where(allocatable == 0, 1.0, requested.astype(F64) / np.where(allocatable == 0, 1, allocatable))
    cpu_f, mem_f = fractions
    score = ((1 - np.abs(cpu_f - mem_f)) * MAX_PRIORITY).astype(I64)
    return np.where((cpu_f >= 1) | (mem_f >= 1), 0, score)


least_requested = RequestScores((_least_requested, 1))
most_requested = RequestScores((_most_requested, 1))
balanced_resource_allocation = RequestScores((_balanced, 1))


def _normalize(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """``NormalizeReduce(MaxPriority, reverse)`` over the candidates' map scores."""
    max_count = max(0, int(scores.max())) if scores.size else 0
    if max_count == 0:
        return np.full_like(scores, MAX_PRIORITY) if reverse else scores
    s = go_div(MAX_PRIORITY * scores, max_count)
    return MAX_PRIORITY - s if reverse else s


def _among(rows: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which of the ascending ``rows`` are among the ascending candidates ``idx`` (a mask over ``rows``), and
    their positions in ``idx``: a form whose score differs from a constant on a few rows only touches those."""
    pos = idx.searchsorted(rows)
    hit = pos < idx.size
    hit[hit] = idx[pos[hit]] == rows[hit]
    return hit, pos[hit]


def node_affinity(pod: Pod, meta: Any, cols: NodeColumns, idx: np.ndarray) -> Scores | None:
    affinity = meta.affinity if isinstance(meta, PriorityMetadata) else pod.affinity
    if affinity is None or affinity.node_affinity is None or affinity.node_affinity.preferred is None:
        return 0
    modern = cluster_preferred_terms(pod, affinity)  # the cluster's rules for terms carrying matchFields
    if modern is not None:
        if preferred_terms_error(modern) is not None:
            return None  # the reference raises
    elif any(term.weight != 0 and term.selector.selector is None for term in affinity.node_affinity.preferred):
        return None  # the reference raises
    raw = ((pod.raw.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    key = ("NodeAffinityPriority", modern is not None,
           signature(raw.get("preferredDuringSchedulingIgnoredDuringExecution")))
    infos = cols.infos
    counts = cols.per_node(key, lambda i: calculate_node_affinity_priority_map(pod, meta, infos[i]), I64)
    return _normalize(counts[idx], reverse=False)


def taint_toleration(pod: Pod, meta: Any, cols: NodeColumns, idx: np.ndarray) -> Scores:
    tolerations = meta.pod_tolerations if isinstance(meta, PriorityMetadata) else prefer_no_schedule_tolerations(pod)
    tainted = cols.node_cached("PreferNoScheduleTainted", lambda: np.array([
        i for i, info in enumerate(cols.infos) if any(t.effect == "PreferNoSchedule" for t in info.taints)
    ], dtype=I64))
    infos = cols.infos
    # Per tainted node, the PreferNoSchedule taints the pod does not tolerate (never negative). Untainted nodes count
    # 0: after the reverse normalisation they score MAX_PRIORITY, as any node counting 0.
    counts = cols.node_cached(("TaintTolerationPriority", tolerations), lambda: np.array(
        [compute_taint_toleration_priority_map(pod, meta, infos[i]) for i in tainted.tolist()], dtype=I64))
    hit, pos = _among(tainted, idx)
    counts = counts if pos.size == tainted.size else counts[hit]
    max_count = int(counts.max()) if counts.size else 0  # the candidates' maximum
    if not max_count:
        return MAX_PRIORITY
    scores = np.full(idx.size, MAX_PRIORITY, dtype=I64)
    scores[pos] = MAX_PRIORITY - (MAX_PRIORITY * counts) // max_count
    return scores


def node_prefer_avoid_pods(pod: Pod, meta: Any, cols: NodeColumns, idx: np.ndarray) -> Scores:
    annotated = cols.node_cached("PreferAvoidPodsAnnotated", lambda: np.array([
        i for i, node in enumerate(cols.nodes) if node.annotations.get("scheduler.alpha.kubernetes.io/preferAvoidPods")
    ], dtype=I64))
    if not annotated.size:
        return MAX_PRIORITY  # what a node without the annotation scores
    ref = pod.controller_ref()
    key = ("NodePreferAvoidPodsPriority", None if ref is None else (ref.kind, ref.uid))
    infos = cols.infos
    per_node = cols.per_node(key, lambda i: calculate_node_prefer_avoid_pods_priority_map(pod, meta, infos[i]),
                             I64, annotated, MAX_PRIORITY)
    hit, pos = _among(annotated, idx)
    scores = np.full(idx.size, MAX_PRIORITY, dtype=I64)
    scores[pos] = per_node[annotated[hit]]
    return scores


def _zone_ids(cols: NodeColumns, ga_labels: bool) -> tuple[np.ndarray, int]:
    def compute() -> tuple[np.ndarray, int]:
        zones: dict[str, int] = {}
        ids = np.full(len(cols.nodes), -1, dtype=I64)
        for i, node in enumerate(cols.nodes):
            z = get_zone_key(node, ga_labels)
            if z:
                ids[i] = zones.setdefault(z, len(zones))
        return ids, len(zones)

    return cols.node_cached(("ZoneKeys", ga_labels), compute)


def selector_spread(pod: Pod, meta: Any, cols: NodeColumns, idx: np.ndarray) -> Scores | None:
    """The reference's score from each candidate's count of matching pods and its zone's. A candidate without
    matching pods scores by its zone alone, so the form scores one such node per zone (and one without a zone)
    and the nodes holding matching pods, and hands every candidate its zone's score or its own; the float
    expressions are the reference's, element-wise."""
    if not isinstance(meta, PriorityMetadata):
        return None
    rows = counts = at = np.zeros(0, dtype=I64)  # the candidates' rows holding matching pods, their counts, positions
    distinct = set(meta.pod_selectors)
    if len(distinct) == 1:  # one selector (a Service and its RC often select alike): the columns count it
        rows, counts = cols.live_matching(pod.namespace, next(iter(distinct)))
        hit, at = _among(rows, idx)
        rows, counts = rows[hit], counts[hit]
    elif meta.pod_selectors:
        matched: dict[str, Pod] = {}
        for selector in meta.pod_selectors:
            for p in cols.pods_matching((pod.namespace,), selector):
                if p.deletion_timestamp is None:
                    matched[p.key] = p
        if matched:
            rows, counts = np.unique(cols.node_indices(matched.values()), return_counts=True)
            hit, at = _among(rows, idx)
            rows, counts = rows[hit], counts[hit].astype(I64)
    zone_ids, n_zones = _zone_ids(cols, pod.rules is Rules.CLUSTER)
    if not rows.size:
        return MAX_PRIORITY  # every count 0: every score MAX_PRIORITY
    max_node = int(counts.max())
    row_zones = zone_ids[rows]
    zoned = row_zones >= 0
    zone_counts = np.rint(np.bincount(row_zones[zoned], weights=counts[zoned].astype(F64),
                                      minlength=n_zones)).astype(I64)
    max_zone = max(0, int(zone_counts.max())) if n_zones else 0

    # One pass scores a node holding no matching pod in each zone (the last: no zone), then the rows: each element
    # is the reference's float expression on that node's counts.
    no_match = cols.node_cached(("ZoneDefaults", n_zones), lambda: np.append(np.arange(n_zones, dtype=I64), -1))
    count = np.concatenate((np.zeros(n_zones + 1, dtype=I64), counts))
    zone = np.concatenate((no_match, row_zones))
    f = float(MAX_PRIORITY) * ((max_node - count).astype(F64) / float(max_node))
    has_zone = zone >= 0
    zone_score = float(MAX_PRIORITY)
    if max_zone > 0:
        zone_score = float(MAX_PRIORITY) * ((max_zone - zone_counts[zone[has_zone]]).astype(F64) / float(max_zone))
    f[has_zone] = (f[has_zone] * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
    scored = f.astype(I64)
    slots = cols.node_cached(("ZoneSlots", pod.rules is Rules.CLUSTER), lambda: np.where(zone_ids >= 0, zone_ids, n_zones))
    scores = scored[slots[idx]]  # every candidate by its zone ...
    scores[at] = scored[n_zones + 1:]  # ... and those holding matching pods by their own counts
    return scores


def inter_pod_affinity(args: PluginFactoryArgs):
    """InterPodAffinityPriority by topology domain: each matching (pod, term) adds its weight to every
    candidate node in the domain of the pod's node. The existing pods' terms come grouped from the columns'
    :class:`~.affinity_terms.AffinityTermIndex`, each group's selector tested once; every count is an
    integer sum over the same terms as upstream's walk."""
    hard_weight = args.hard_pod_affinity_symmetric_weight

    def form(pod: Pod, meta: Any, cols: NodeColumns, idx: np.ndarray) -> Scores | None:
        affinity = pod.affinity
        pod_affinity = affinity.pod_affinity if affinity is not None else None
        pod_anti = affinity.pod_anti_affinity if affinity is not None else None
        sums: dict[str, np.ndarray] = {}  # per topology key, the counts per domain (topology_slots order)

        def add(key: str, domain_counts: np.ndarray) -> None:
            sums[key] = sums[key] + domain_counts if key in sums else domain_counts

        cluster = cols.cluster
        try:
            # The incoming pod's preferred terms, against every existing pod (namespaces resolved once).
            for terms, sign in ((pod_affinity, 1), (pod_anti, -1)):
                for weighted in terms.preferred if terms is not None else ():
                    selector = weighted.term.selector.get()
                    namespaces = term_namespaces(pod, weighted.term, cluster.namespaces)
                    if weighted.term.topology_key:
                        key = weighted.term.topology_key
                        rows = cols.matching_rows(namespaces, selector)
                        matching = cols.domain_sums(key, rows, cols.matching_counts(namespaces, selector))
                        add(key, weighted.weight * sign * matching)
            # Existing pods' terms that the incoming pod matches (required affinity ones only with a positive
            # symmetric weight: upstream does not look at them otherwise); a namespaceSelector is matched against
            # the labels of the incoming pod's namespace.
            matched, broken = cols.affinity_terms.matching(pod, cluster.namespace_labels(pod.namespace))
            if any((hard_weight > 0 and group.terms[REQUIRED_AFFINITY] > 0) or group.terms[PREFERRED]
                   for group in broken):
                return None  # the reference raises PriorityError
            for group in matched:
                required = hard_weight > 0 and group.terms[REQUIRED_AFFINITY] > 0
                if not (required or group.terms[PREFERRED]) or not group.topology_key:
                    continue
                rows = cols.sparse_rows(group.rows)
                per_node = group.counts[PREFERRED]
                if required:
                    per_node = per_node + hard_weight * group.counts[REQUIRED_AFFINITY]
                add(group.topology_key, cols.domain_sums(group.topology_key, rows, per_node))
        except SelectorError:
            return None  # the reference raises PriorityError
        if not sums or not idx.size:
            return 0  # no term counts anywhere: every score 0
        if len(sums) == 1:
            # One topology key: a candidate's count is its domain's; score the domains holding candidates.
            ((key, per_domain),) = sums.items()
            slots, n_values = cols.topology_slots(key)
            at = slots[idx]
            c = per_domain.astype(F64)
            present = c[np.bincount(at, minlength=n_values + 1) > 0]
        else:
            at = None
            c = sum(per_domain[cols.topology_slots(key)[0][idx]] for key, per_domain in sums.items()).astype(F64)
            present = c
        max_count = max(0.0, float(present.max()))
        min_count = min(0.0, float(present.min()))
        if max_count - min_count > 0:
            scores = (float(MAX_PRIORITY) * ((c - min_count) / (max_count - min_count))).astype(I64)
            return scores if at is None else scores[at]
        return 0

    return form
