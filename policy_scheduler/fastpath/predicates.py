"""Vectorised forms of the 1.9 fit predicates (see the package docstring for the contract)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import predicates as reference
from ..core.fit_error import ReasonLists, ReasonRows
from ..errors import PredicateError
from ..features import FeatureGates
from ..model.labels import IN, SelectorError, set_selector_matches
from ..model.node_selector import NODE_NAME_FIELD, NodeSelectorTerm
from ..model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, NVIDIA_GPU, PODS
from ..model.taints import NO_EXECUTE, NO_SCHEDULE
from ..model.topology import term_namespaces
from ..predicates.disk_conflict import may_conflict
from ..predicates.inter_pod_affinity import PodAffinityChecker, _pod_matches_own_term
from ..predicates.node_conditions import (
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    tolerated_condition_taints,
)
from ..predicates.node_declared_features import NodeDeclaredFeaturesChecker
from ..predicates.node_selector import cluster_required_terms
from ..predicates.volume_binder import ClusterVolumeBindingChecker
from ..predicates.volume_count import MaxPDVolumeCountChecker
from ..predicates.volume_zone import VolumeZoneChecker
from . import signature
from .affinity_terms import REQUIRED_ANTI_AFFINITY
from .reasons import Concatenated, ResourceShortfalls

if TYPE_CHECKING:
    from ..model.pod import Pod
    from .columns import NodeColumns

Mask = np.ndarray


def _all(cols: NodeColumns) -> Mask:
    """Every node fits (read-only: one array per node set, as most predicates answer for most pods)."""
    def every_node() -> Mask:
        mask = np.ones(len(cols.names), dtype=bool)
        mask.flags.writeable = False
        return mask

    return cols.node_cached("every node", every_node)


STACKED_CHECKS = 5  # the first checks (pods, cpu, memory, gpu, ephemeral storage): the rows of cols.requested


def _resource_checks(pod: Pod, meta: Any, cols: NodeColumns) -> list[tuple[str, int, np.ndarray, np.ndarray]]:
    """PodFitsResources' checks in the reference's order: (resource, requested, used per node, allocatable per
    node); a node fails one where allocatable < requested + used (pods: one more pod). The first ones are the
    columns' stacked rows, in their order."""
    request = meta.pod_request if meta is not None else pod.request
    checks = [(PODS, 1, cols.pod_count, cols.alloc_pods)]
    if not request.is_zero_request():
        checks += [(CPU, request.milli_cpu, cols.req_cpu, cols.alloc_cpu),
                   (MEMORY, request.memory, cols.req_memory, cols.alloc_memory),
                   (NVIDIA_GPU, request.nvidia_gpu, cols.req_gpu, cols.alloc_gpu),
                   (EPHEMERAL_STORAGE, request.ephemeral_storage, cols.req_ephemeral, cols.alloc_ephemeral)]
        checks += [(name, request.scalar[name], cols.scalar_requested(name), cols.scalar_allocatable(name))
                   for name in sorted(request.scalar)]
    return checks


def pod_fits_resources(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    request = meta.pod_request if meta is not None else pod.request
    checks = _resource_checks(pod, meta, cols)
    stacked = min(len(checks), STACKED_CHECKS)  # one comparison over the stacked rows, then the extended resources
    wanted = np.array([want for _, want, _, _ in checks[:stacked]], dtype=np.int64)[:, None]
    extended = checks[stacked:]

    def fits(rows: slice | np.ndarray) -> Mask:
        mask = (cols.allocatable[:stacked, rows] >= wanted + cols.requested[:stacked, rows]).all(axis=0)
        for _, want, used, cap in extended:
            mask &= cap[rows] >= want + used[rows]
        return mask

    return cols.per_pod_class(("PodFitsResources", request.request_key()), fits)


def pod_fits_resources_reasons(pod: Pod, meta: Any, cols: NodeColumns, rows: np.ndarray) -> ResourceShortfalls:
    """PodFitsResources' reasons on ``rows``: too many pods, then each resource short, in the reference's order."""
    checks = []
    for name, want, used, cap in _resource_checks(pod, meta, cols):
        used_rows, cap_rows = used[rows], cap[rows]  # copies: the reasons are those of now
        short = cap_rows < want + used_rows
        if short.any():
            checks.append((name, want, short, used_rows, cap_rows))
    return ResourceShortfalls(len(rows), checks)


def pod_fits_host(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    if not pod.node_name:
        return _all(cols)
    return cols.names_array == pod.node_name


def pod_fits_host_ports(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    if not pod.host_ports:
        return _all(cols)
    mask = np.ones(len(cols.names), dtype=bool)
    for i, info in enumerate(cols.infos):
        if info.used_ports:
            mask[i] = reference.pod_fits_host_ports(pod, meta, info)[0]
    return mask


def _node_selector_terms_mask(terms: tuple[NodeSelectorTerm, ...], cols: NodeColumns) -> Mask:
    """``LazyErrorNodeSelector.Match`` on every node: per term, its expressions (per node, cached by
    selector) AND its field requirements against the node names; the terms ORed."""
    n = len(cols.names)
    out = np.zeros(n, dtype=bool)
    names = cols.names_array
    named = names != ""  # a node without a name has no fields: matchFields are not checked
    nodes = cols.nodes
    for term in terms:
        if term.error is not None or term.empty:
            continue
        mask = np.ones(n, dtype=bool)
        if term.expressions is not None:
            selector = term.expressions.get()
            mask &= cols.per_node(("NodeSelectorTermExpressions", selector),
                                  lambda i, s=selector: s.matches(nodes[i].labels), bool)
        for f in term.fields or ():
            values = names if f.key == NODE_NAME_FIELD else np.full(n, "", dtype=object)
            hit = values == f.value
            mask &= (hit if f.op == IN else ~hit) | ~named
        out |= mask
    return out


def pod_match_node_selector(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    terms = cluster_required_terms(pod)
    if terms is not None:  # the cluster's rules for terms carrying matchFields
        mask = _node_selector_terms_mask(terms, cols)
        if pod.node_selector:
            selector, nodes = pod.node_selector, cols.nodes
            mask &= cols.per_node(("NodeSelectorSet", signature(selector)),
                                  lambda i: set_selector_matches(selector, nodes[i].labels), bool)
        return mask
    affinity = ((pod.raw.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not pod.node_selector and required is None:
        return _all(cols)
    key = ("MatchNodeSelector", signature(pod.node_selector), signature(required))
    infos = cols.infos
    return cols.per_node(key, lambda i: reference.pod_match_node_selector(pod, None, infos[i])[0], bool)


def general_predicates(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    return (
        pod_fits_resources(pod, meta, cols)
        & pod_fits_host(pod, meta, cols)
        & pod_fits_host_ports(pod, meta, cols)
        & pod_match_node_selector(pod, meta, cols)
    )


def general_predicates_reasons(pod: Pod, meta: Any, cols: NodeColumns, rows: np.ndarray) -> Concatenated:
    """GeneralPredicates' reasons on ``rows``: the resources', then host name's, host ports' and node
    selector's (the reference's own, on the rows where their verdict is False), concatenated in that order."""
    parts: list[ReasonRows] = [pod_fits_resources_reasons(pod, meta, cols, rows)]
    for check, form in ((reference.pod_fits_host, pod_fits_host), (reference.pod_fits_host_ports, pod_fits_host_ports),
                        (reference.pod_match_node_selector, pod_match_node_selector)):
        failing = np.flatnonzero(~form(pod, meta, cols)[rows]).tolist()
        if failing:
            lists: list[list[str]] = [[] for _ in range(len(rows))]
            for k in failing:
                lists[k] = list(check(pod, meta, cols.infos[int(rows[k])])[1])
            parts.append(ReasonLists(lists))
    return Concatenated(parts)


def check_node_condition(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    infos = cols.infos
    tolerated = tolerated_condition_taints(pod)
    return cols.per_node(("CheckNodeCondition", tolerated),
                         lambda i: reference.check_node_condition(pod, None, infos[i])[0], bool)


def check_node_memory_pressure(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    best_effort = meta.pod_best_effort if meta is not None else pod.best_effort
    if not best_effort or TAINT_MEMORY_PRESSURE in tolerated_condition_taints(pod):
        return _all(cols)
    return ~cols.memory_pressure


def check_node_disk_pressure(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    if TAINT_DISK_PRESSURE in tolerated_condition_taints(pod):
        return _all(cols)
    return ~cols.disk_pressure


def _tainted_nodes(cols: NodeColumns) -> list[int]:
    return cols.node_cached("NoScheduleTainted", lambda: [
        i for i, info in enumerate(cols.infos) if any(t.effect in (NO_SCHEDULE, NO_EXECUTE) for t in info.taints)
    ])


def pod_tolerates_node_taints(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
    tainted = _tainted_nodes(cols)
    if not tainted:
        return _all(cols)
    infos = cols.infos
    key = ("PodToleratesNodeTaints", pod.tolerations)
    return cols.per_node(key, lambda i: reference.pod_tolerates_node_taints(pod, None, infos[i])[0], bool, tainted, True)


def no_volumes(pod: Pod, meta: Any, cols: NodeColumns) -> Mask | None:
    """Volume predicates (disk conflict, volume counts, volume zone) pass every node for a pod without
    volumes; with volumes the reference runs (it may need PV/PVC lookups that can error)."""
    return None if pod.volumes else _all(cols)


def no_disk_conflict(pod: Pod, meta: Any, cols: NodeColumns) -> Mask | None:
    """NoDiskConflict passes every node for a pod without an inline volume of a kind that can conflict."""
    return None if may_conflict(pod) else _all(cols)


def volume_count(checker: MaxPDVolumeCountChecker):
    """A max-volume-count predicate passes every node for a pod with no volume of its kind."""
    def form(pod: Pod, meta: Any, cols: NodeColumns) -> Mask | None:
        if not pod.volumes:
            return _all(cols)
        try:
            return None if checker.pod_volume_ids(pod) else _all(cols)
        except PredicateError:
            return None  # the reference raises it
    return form


def volume_zone(checker: VolumeZoneChecker):
    """NoVolumeZoneConflict passes every node when no node has a zone or region label, or no PV of the pod
    has one; otherwise (or when resolving the claims errs) the reference decides node by node."""
    def form(pod: Pod, meta: Any, cols: NodeColumns) -> Mask | None:
        if not pod.volumes:
            return _all(cols)
        zoned = cols.node_cached(("ZonedNodes", checker.labels), lambda: any(
            key in node.labels for node in cols.nodes for key in checker.labels))
        if not zoned:
            return _all(cols)
        try:
            return None if checker.has_zoned_volume(pod) else _all(cols)
        except PredicateError:
            return None
    return form


def volume_binding(gates: FeatureGates, checker: Any):
    def form(pod: Pod, meta: Any, cols: NodeColumns) -> Mask | None:
        if not gates.enabled("VolumeScheduling") and not gates.cluster_rules:
            return _all(cols)
        if isinstance(checker, ClusterVolumeBindingChecker) and not checker.binder.applies(pod):
            return _all(cols)  # a pod it does not decide for (no late-bound claim, no PV node affinity)
        return no_volumes(pod, meta, cols)

    return form


def inter_pod_affinity(checker: PodAffinityChecker):
    """MatchInterPodAffinity over topology domains: a node fails when it shares a domain with the node of
    a pod whose required anti-affinity matches the incoming pod (a), lacks every pod a required affinity
    term needs (c), or shares a domain with a pod the pod's required anti-affinity names (d). The existing
    pods' anti-affinity terms come grouped from the columns' term index, the pods matching the pod's own terms
    as per-node counts (metadata present means every cached pod is on a known node)."""

    def form(pod: Pod, meta: Any, cols: NodeColumns) -> Mask | None:
        if meta is None:
            return None
        mask = np.ones(len(cols.names), dtype=bool)
        matched, broken = cols.affinity_terms.matching(pod, meta.namespace_labels)
        if any(group.terms[REQUIRED_ANTI_AFFINITY] for group in broken):
            return None  # metadata would have failed: not the state it was computed from
        for group in matched:
            if not group.terms[REQUIRED_ANTI_AFFINITY]:
                continue
            if not group.topology_key:
                return None  # the reference raises
            near = cols.nonzero_rows(group.rows, group.counts[REQUIRED_ANTI_AFFINITY])
            mask &= ~cols.topology_mask(group.topology_key, near)
        if not pod.has_pod_affinity_constraints:
            return mask
        affinity = pod.affinity
        for terms, anti in ((affinity.pod_affinity, False), (affinity.pod_anti_affinity, True)):
            for term in terms.required if terms is not None else ():
                try:
                    if not term.topology_key:
                        raise SelectorError("empty topology key")
                    selector = term.selector.get()
                    namespaces = term_namespaces(pod, term, cols.cluster.namespaces)  # resolved once per decision
                    rows = cols.matching_rows(namespaces, selector)
                except SelectorError:
                    if not anti:
                        return None  # the reference raises for these
                    mask[:] = False  # the reference swallows the error and fails every node
                    continue
                near = cols.topology_mask(term.topology_key, rows)
                if anti:
                    mask &= ~near
                elif rows.size:
                    mask &= near
                elif not _pod_matches_own_term(pod, term, namespaces):
                    mask[:] = False
        return mask

    return form


def node_declared_features(checker: NodeDeclaredFeaturesChecker):
    """NodeDeclaredFeatures: every node at once, the reference's verdict (the columns' nodes all exist)."""
    def form(pod: Pod, meta: Any, cols: NodeColumns) -> Mask:
        reqs = checker.requirements(pod)
        if not reqs:
            return np.ones(len(cols.names), dtype=bool)
        return np.fromiter((reqs <= node.declared_features for node in cols.nodes), dtype=bool,
                           count=len(cols.nodes))

    return form
