"""Vectorised PodTopologySpread (filter and score) over :class:`NodeColumns`.

What upstream's PreFilter / PreScore compute per pod is computed here once per pod from the columns:
the matching pods come from the columns' label index (not a scan of every pod), are placed on their
nodes' topology ids, and counted per domain with ``bincount``; node eligibility (all keys present, node
inclusion policies) is a mask, the node-affinity and taint parts cached per pod signature like the
other forms. The per-node functions in :mod:`policy_scheduler.predicates.topology_spread` and
:mod:`policy_scheduler.priorities.topology_spread` stay the reference.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.labels import Selector, SelectorError
from ..model.topology_spread import LABEL_HOSTNAME, TopologySpreadConstraint
from ..predicates.topology_spread import (
    MAX_INT32,
    hard_constraints,
    required_node_affinity,
    selectors,
    soft_constraints,
)
from ..priorities.topology_spread import MAX_NODE_SCORE, to_max_priority
from . import predicates as fast_predicates

if TYPE_CHECKING:
    from ..model.pod import Pod
    from .columns import NodeColumns

I64 = np.int64


def _affinity_mask(pod: Pod, cols: NodeColumns) -> np.ndarray:
    spec = pod.raw.get("spec") or {}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not pod.node_selector and required is None:
        return np.ones(len(cols.names), dtype=bool)
    key = ("SpreadNodeAffinity", json.dumps(pod.node_selector, sort_keys=True),
           json.dumps(required, sort_keys=True, default=str))
    matches = required_node_affinity(pod)
    nodes = cols.nodes
    return cols.per_node(key, lambda i: matches(nodes[i]), bool)


class _Domains:
    """Per pod: topology ids of the constraints' keys, and the nodes carrying all of them."""

    def __init__(self, pod: Pod, cols: NodeColumns, constraints: tuple[TopologySpreadConstraint, ...]) -> None:
        self.pod = pod
        self.cols = cols
        self.topologies = [cols.topology(c.topology_key) for c in constraints]
        all_keys = np.ones(len(cols.names), dtype=bool)
        for ids, _ in self.topologies:
            all_keys &= ids >= 0
        self.all_keys = all_keys
        self._affinity: np.ndarray | None = None
        self._taints: np.ndarray | None = None

    def eligible(self, c: TopologySpreadConstraint) -> np.ndarray:
        mask = self.all_keys
        if c.honor_node_affinity:
            if self._affinity is None:
                self._affinity = _affinity_mask(self.pod, self.cols)
            mask = mask & self._affinity
        if c.honor_node_taints:
            if self._taints is None:
                self._taints = fast_predicates.pod_tolerates_node_taints(self.pod, None, self.cols)
            mask = mask & self._taints
        return mask

    def matching_rows(self, selector: Selector) -> np.ndarray:
        """The node rows of the matching pods (the pod's namespace, not being deleted), one per pod."""
        rows, counts = self.cols.live_matching(self.pod.namespace, selector)
        return np.repeat(rows, counts)


def filter_form(cluster_rules: bool):
    """The predicate form: ``(pod, meta, cols) -> mask``."""

    def form(pod: Pod, meta: Any, cols: NodeColumns) -> np.ndarray | None:
        n = len(cols.names)
        if not cluster_rules or not pod.topology_spread:
            return np.ones(n, dtype=bool)
        constraints = hard_constraints(pod)
        if not constraints:
            return np.ones(n, dtype=bool)
        try:
            sels = selectors(constraints, "hard")
        except SelectorError:
            return None  # the reference raises
        domains = _Domains(pod, cols, constraints)
        mask = np.ones(n, dtype=bool)
        for i, c in enumerate(constraints):
            ids, values = domains.topologies[i]
            eligible = domains.eligible(c)
            present = np.zeros(len(values), dtype=bool)
            present[ids[eligible]] = True
            rows = domains.matching_rows(sels[i])
            rows = rows[eligible[rows]]
            counts = np.bincount(ids[rows], minlength=len(values)).astype(I64)
            num_domains = int(present.sum())
            if num_domains < c.min_domains:
                global_min = 0
            elif num_domains == 0:
                global_min = MAX_INT32
            else:
                global_min = int(counts[present].min())
            self_match = 1 if sels[i].matches(pod.labels) else 0
            has_key = ids >= 0
            node_counts = np.where(has_key, counts[np.maximum(ids, 0)] if len(values) else 0, 0)
            mask &= has_key & (node_counts + self_match - global_min <= c.max_skew)
        return mask

    return form


def _go_round(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return (t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)).astype(I64)


def score_form(cluster_rules: bool):
    """The priority form: ``(pod, meta, cols, candidates) -> scores`` (0..10, normalised)."""

    def form(pod: Pod, meta: Any, cols: NodeColumns, candidates: np.ndarray) -> np.ndarray | None:
        zeros = np.zeros(candidates.size, dtype=I64)
        if not cluster_rules or not pod.topology_spread:
            return zeros
        constraints = soft_constraints(pod)
        if not constraints or not candidates.size:
            return zeros
        try:
            sels = selectors(constraints, "soft")
        except SelectorError:
            return None
        domains = _Domains(pod, cols, constraints)
        ignored = ~domains.all_keys[candidates]
        kept = candidates[~ignored]
        score = np.zeros(candidates.size, dtype=np.float64)
        for i, c in enumerate(constraints):
            ids, values = domains.topologies[i]
            rows = domains.matching_rows(sels[i])
            if c.topology_key == LABEL_HOSTNAME:
                weight = math.log(kept.size + 2)
                per_node = np.bincount(rows, minlength=len(cols.names)).astype(I64)
                counts = per_node[candidates]
            else:
                present = np.zeros(len(values), dtype=bool)
                present[ids[kept]] = True
                weight = math.log(int(present.sum()) + 2)
                eligible = domains.eligible(c)
                rows = rows[eligible[rows]]
                per_value = np.bincount(ids[rows], minlength=len(values)).astype(I64)
                counts = np.where(ignored, 0, per_value[np.maximum(ids[candidates], 0)] if len(values) else 0)
            score = score + (counts.astype(np.float64) * weight + float(c.max_skew - 1))
        raw = np.where(ignored, 0, _go_round(score))
        if not kept.size:
            return zeros
        live = raw[~ignored]
        lo, hi = int(live.min()), int(live.max())
        if hi == 0:
            normalised = np.full(candidates.size, MAX_NODE_SCORE, dtype=I64)
        else:
            normalised = MAX_NODE_SCORE * (hi + lo - raw) // hi
        normalised = np.where(ignored, 0, normalised)
        return to_max_priority(normalised)

    return form
