"""The nodes a pod's required node affinity names: where to look first for a DaemonSet pod.

Every DaemonSet pod (1.12+) carries ``matchFields: metadata.name In [<its node>]``; it can fit on that node
only, yet the filters would evaluate every node to find out. Upstream's NodeAffinity PreFilter narrows the
nodes to the names the terms give (``getPreFilterNodeNames``). Here the narrowing is only ever a first look,
so the decision stays the reference's:

* the names come from the terms the cluster's rules evaluate (:func:`cluster_required_terms`): every term
  that can match must carry a ``metadata.name In`` field requirement (a term that cannot be parsed, or an
  empty one, matches nothing); any other term, and the pod is not narrowed;
* a predicate of the pod's set must check that affinity (MatchNodeSelector or GeneralPredicates), so every
  other node fails it;
* every predicate of the set must be one whose verdict, for this pod, reads the node and the pod only (the
  declarations preemption's arithmetic uses, :mod:`.preemption`): such a predicate can raise on a node only
  when the node is missing, so no node left out could have made the reference raise. A plugin's predicate,
  a pod with volumes, host ports, affinity terms or spread constraints is not narrowed.

When the pod fits on a named node those are the feasible nodes the full evaluation would find; when it
fits on none, the full evaluation runs, for the reasons every node gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PredicateError
from ..model.labels import IN
from ..model.node_selector import NODE_NAME_FIELD
from ..predicates.node_selector import cluster_required_terms, pod_match_node_selector
from .preemption import dependence

if TYPE_CHECKING:
    from ..model.pod import Pod
    from .columns import NodeColumns
    from .forms import Forms


def required_node_names(pod: Pod) -> frozenset[str] | None:
    """The node names the pod's required terms name, or None when a term that can match names none."""
    terms = cluster_required_terms(pod)
    if terms is None:
        return None
    names: set[str] = set()
    for term in terms:
        if term.error is not None or term.empty:
            continue  # matches nothing
        named = [f.value for f in term.fields or () if f.key == NODE_NAME_FIELD and f.op == IN]
        if not named:
            return None
        names.add(named[0])  # several In requirements on the name: the term needs all, so any one bounds it
    return frozenset(names)


def named_node_rows(pod: Pod, meta: Any, cols: NodeColumns,
                    predicates: Iterable[tuple[Any, Forms | None]]) -> np.ndarray | None:
    """The rows (ascending) of the only nodes where ``pod`` can fit, or None when it cannot be narrowed
    (``predicates``: the pod's, each with its bound record)."""
    names = required_node_names(pod)
    if names is None or "" in cols.index:  # a node without a name has no fields: any term matches it
        return None
    checks_affinity = False
    for _, forms in predicates:
        declared = dependence(forms, pod, meta)
        if declared is None:
            return None
        checks_affinity = checks_affinity or any(check is pod_match_node_selector for check, _ in declared.checks)
    if not checks_affinity:
        return None
    return np.array(sorted(cols.index[n] for n in names if n in cols.index), dtype=np.int64)


def named_candidates(pod: Pod, meta: Any, cols: NodeColumns, predicates: Iterable[tuple[Any, Forms | None]],
                     fits_on_node: Callable[[Pod, Any, Any], list[str]]) -> np.ndarray | None:
    """The feasible rows, found among the named nodes only by ``fits_on_node`` (the reference check, nominated
    pods included); None when the pod is not narrowed, fits on none of them, or a predicate errs there: the
    full evaluation decides."""
    rows = named_node_rows(pod, meta, cols, predicates)
    if rows is None:
        return None
    try:
        feasible = [i for i in rows.tolist() if not fits_on_node(pod, meta, cols.infos[i])]
    except PredicateError:
        return None
    return np.array(feasible, dtype=np.int64) if feasible else None
