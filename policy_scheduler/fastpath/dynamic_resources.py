"""DynamicResources' vectorised form: every node's verdict for a pod whose claims all wait for an allocation, from
the verdicts kept for its claims' signature (:mod:`policy_scheduler.dra.verdicts`), asking the predicate again
only on the rows whose verdict may have changed since.

A row's verdict for such a pod is a function of the signature, the node (its name and labels), the slices, the
classes and the devices in use in the node's pools (the allocator reads nothing else; PreFilter's answer, the
same on every node, is the pod's own). So the rows of one signature are kept with the node columns' generation
(a node added, removed or relabelled rebuilds the columns: every row is asked again) and the position in
``ClusterState.dra_pool_log`` they were computed at; on the next pod of the signature only the rows of the nodes
that read a pool bumped since (``dra_verdicts[POOL_NODES]``) are asked again. A slice or a class that changes
drops every kept row with the verdicts. Where this does not hold the form answers None and the predicate runs on
every node: a pod with a claim allocated already (its node selector is the pod's own), a cluster whose slices
have shared counters (the allocator then keeps state across nodes), verdicts not kept. An error of the
predicate on a row asked again also answers None: node by node, the predicate raises it as the reference does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dra.verdicts import MAX_SIGNATURES, POOL_NODES
from ..errors import PredicateError
from ..model.labels import IN
from ..model.node_selector import NODE_NAME_FIELD, NodeSelectorTerm

if TYPE_CHECKING:
    from ..model.pod import Pod
    from ..predicates.dynamic_resources import DynamicResourcesChecker
    from .columns import NodeColumns


#: ``ClusterState.dra_verdicts``' entries of this form (beside the node names'): signature -> KeptRows, and
#: ``id(selector)`` -> (the selector, the columns' nodes and generation, its rows); each dropped whole when full.
ROWS = ("rows",)
SELECTORS = ("selectors",)
MAX_SELECTORS = 4096


@dataclass
class KeptRows:
    """One signature's verdict on every row of one build of the node columns."""

    nodes: list  # NodeColumns.nodes when computed (a rebuild makes a new list)
    generation: int
    log_position: int
    fits: np.ndarray


def filter_form(checker: DynamicResourcesChecker) -> Callable[[Pod, Any, NodeColumns], np.ndarray | None]:
    def vectorized(pod: Pod, meta: Any, cols: NodeColumns) -> np.ndarray | None:
        state = checker.state(pod)
        n = len(cols.names)
        if state.reason is not None:
            return np.zeros(n, dtype=bool)
        if not state.claims:
            return np.ones(n, dtype=bool)
        cluster = checker.cluster
        cols.refresh()
        if state.allocator is None:  # every claim allocated already: where their node selectors all match
            fits = np.ones(n, dtype=bool)
            for claim in state.claims:
                if claim.allocation_node_selector is not None:
                    fits &= _selector_rows(cluster, cols, claim.allocation_node_selector)
            return fits
        if len(state.to_allocate) != len(state.claims) or not cluster.dra_keep_verdicts or _has_counters(cluster):
            return None
        kept_rows = cluster.dra_verdicts.get(ROWS)
        if kept_rows is None or len(kept_rows) >= MAX_SIGNATURES:
            kept_rows = cluster.dra_verdicts[ROWS] = {}
        kept: KeptRows | None = kept_rows.get(state.signature)
        log = cluster.dra_pool_log
        if kept is None or kept.nodes is not cols.nodes or kept.generation != cols.generation:
            rows = range(n)
            fits = np.empty(n, dtype=bool)
        else:
            fits = kept.fits.copy()
            changed: set[int] = set()
            pool_nodes = cluster.dra_verdicts.get(POOL_NODES, {})
            index = cols.index
            for pool in set(log[kept.log_position:]):
                for name in pool_nodes.get(pool, ()):
                    i = index.get(name)
                    if i is not None:
                        changed.add(i)
            rows = sorted(changed)
        infos = cols.infos
        try:
            for i in rows:
                fits[i] = checker(pod, meta, infos[i])[0]
        except PredicateError:
            return None
        kept_rows[state.signature] = KeptRows(cols.nodes, cols.generation, len(log), fits)
        return fits.copy()

    return vectorized


def _selector_rows(cluster: Any, cols: NodeColumns, selector: tuple[NodeSelectorTerm, ...]) -> np.ndarray:
    """The rows an allocation's node selector matches (kept per selector object and build of the columns); the
    node itself (one ``matchFields`` term on its name, a local device's) by the index."""
    selectors = cluster.dra_verdicts.get(SELECTORS)
    if selectors is None or len(selectors) >= MAX_SELECTORS:
        selectors = cluster.dra_verdicts[SELECTORS] = {}
    key = id(selector)
    kept = selectors.get(key)
    if kept is not None and kept[0] is selector and kept[1] is cols.nodes and kept[2] == cols.generation:
        return kept[3]
    n = len(cols.names)
    term = selector[0] if len(selector) == 1 else None
    if (term is not None and term.error is None and term.expressions is None and term.fields is not None
            and len(term.fields) == 1 and term.fields[0].key == NODE_NAME_FIELD and term.fields[0].op == IN):
        rows = np.zeros(n, dtype=bool)
        i = cols.index.get(term.fields[0].value)
        if i is not None:
            rows[i] = True
    else:
        rows = np.fromiter((any(t.matches(node.labels, node.name) for t in selector) for node in cols.nodes),
                           dtype=bool, count=n)
    selectors[key] = (selector, cols.nodes, cols.generation, rows)
    return rows


def _has_counters(cluster: Any) -> bool:
    cache = cluster.dra_slice_cache
    has = cache.get("shared counters")
    if has is None:
        has = cache["shared counters"] = any(s.shared_counters for s in cluster.slice_list())
    return has
