"""NodeColumns: the scheduler cache as arrays over nodes, kept in step with it.

Row *i* is ``cluster.node_list()[i]`` (nodes in name order). Resource columns are updated incrementally
when a pod is added or removed; everything that depends on nodes only (allocatable, conditions, label
topology, per-signature masks) is rebuilt after a node changes, lazily: a burst of node events (a
daemon's initial list) costs one rebuild, at the next :meth:`refresh`. A label index of the cached pods lets the
vectorised predicates and priorities find the pods a selector matches without scanning every pod; for the
selectors they ask about, per-node counts of the matching pods are kept up to date as pods come and go, and the
cached pods' inter-pod affinity terms are counted per node by group (:mod:`.affinity_terms`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from ..cache.cluster import ClusterState
from ..model.labels import IN, Selector
from ..model.node import Node
from ..model.pod import Pod
from ..model.topology import ALL_NAMESPACES, TermNamespaces
from .affinity_terms import AffinityTermIndex
from .row_cache import Compute, RowCache
from .selector_counts import SelectorCounts, selector_key

#: Victim tables kept (each five int64 per node: 2.6 MB at 65,000 nodes); preemptors mostly come in a few classes.
MAX_PREEMPTOR_CLASSES = 16

I64 = np.int64


class NodeColumns:
    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.generation = 0
        self._stale = False
        self._rebuild()
        cluster.observers.append(self)

    def detach(self) -> None:
        """Stop following the cache (the scheduler owning these columns was replaced)."""
        if self in self.cluster.observers:
            self.cluster.observers.remove(self)

    def refresh(self) -> None:
        """Bring node-derived columns up to date after node changes."""
        if self._stale:
            self._rebuild()

    # -- construction ---------------------------------------------------------------------------
    def _rebuild(self) -> None:
        cluster = self.cluster
        self.nodes: list[Node] = list(cluster.node_list())
        self.names = [n.name for n in self.nodes]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.names_array = np.array(self.names, dtype=object)
        infos = [cluster.node_infos[name] for name in self.names]
        self.infos = infos
        n = len(infos)

        def col(get: Callable[[Any], int]) -> np.ndarray:
            return np.fromiter((get(i) for i in infos), dtype=I64, count=n)

        # PodFitsResources' rows (pods, cpu, memory, gpu, ephemeral storage) of one array each, so that a check of
        # them all is a few numpy calls; the 1-D columns are views of them, updated in place.
        self.allocatable = np.stack([col(lambda i: i.allocatable.allowed_pod_number),
                                     col(lambda i: i.allocatable.milli_cpu), col(lambda i: i.allocatable.memory),
                                     col(lambda i: i.allocatable.nvidia_gpu),
                                     col(lambda i: i.allocatable.ephemeral_storage)])
        self.requested = np.stack([col(lambda i: len(i.pods)), col(lambda i: i.requested.milli_cpu),
                                   col(lambda i: i.requested.memory), col(lambda i: i.requested.nvidia_gpu),
                                   col(lambda i: i.requested.ephemeral_storage)])
        self.alloc_pods, self.alloc_cpu, self.alloc_memory, self.alloc_gpu, self.alloc_ephemeral = self.allocatable
        self.pod_count, self.req_cpu, self.req_memory, self.req_gpu, self.req_ephemeral = self.requested
        self.allocatable_cpu_memory = self.allocatable[1:3]  # for the forms that score both at once
        self.nonzero_requested = np.stack([col(lambda i: i.nonzero_milli_cpu), col(lambda i: i.nonzero_memory)])
        self.nonzero_cpu, self.nonzero_memory = self.nonzero_requested  # views: updated in place
        self.memory_pressure = np.array([i.memory_pressure == "True" for i in infos], dtype=bool)
        self.disk_pressure = np.array([i.disk_pressure == "True" for i in infos], dtype=bool)
        self._scalar_alloc: dict[str, np.ndarray] = {}
        self._scalar_req: dict[str, np.ndarray] = {}
        # Node-only derived data, keyed by a signature; dropped whenever nodes change.
        self._node_cache: dict[Hashable, Any] = {}
        # Data derived from the nodes' pods per class of incoming pods, updated on the rows that change.
        self._pod_classes = RowCache(n)
        self._preemptor_classes = RowCache(n, MAX_PREEMPTOR_CLASSES)
        # Pod index.
        self._pods_by_namespace: dict[str, dict[str, Pod]] = defaultdict(dict)
        self._pods_by_label: dict[tuple[str, str, str], dict[str, Pod]] = defaultdict(dict)
        self.terminating = 0  # indexed pods with a deletion timestamp
        self.affinity_terms = AffinityTermIndex(n)
        self._selector_counts = SelectorCounts()
        for pod in cluster.list_pods():
            self._index(pod)
        self.generation += 1
        self._stale = False

    def nodes_changed(self) -> None:
        self._stale = True

    # -- incremental updates (a stale view is rebuilt whole instead) ----------------------------
    def pod_added(self, pod: Pod) -> None:
        if not self._stale:
            self._account(pod, 1)
            self._index(pod)

    def pod_removed(self, pod: Pod) -> None:
        if not self._stale:
            self._account(pod, -1)
            self._unindex(pod)

    def _account(self, pod: Pod, sign: int) -> None:
        i = self.index.get(pod.node_name)
        if i is None:
            return
        r = pod.container_request
        self.req_cpu[i] += sign * r.milli_cpu
        self.req_memory[i] += sign * r.memory
        self.req_gpu[i] += sign * r.nvidia_gpu
        self.req_ephemeral[i] += sign * r.ephemeral_storage
        self.nonzero_cpu[i] += sign * pod.nonzero_milli_cpu
        self.nonzero_memory[i] += sign * pod.nonzero_memory
        self.pod_count[i] += sign
        for name, v in r.scalar.items():
            col = self._scalar_req.get(name)
            if col is not None:  # one not built yet is built from the NodeInfos, which already count this pod
                col[i] += sign * v
        self._pod_classes.changed(i)
        self._preemptor_classes.changed(i)

    def _index(self, pod: Pod) -> None:
        i = self.index.get(pod.node_name)
        if i is None:
            return
        key = pod.key
        self._pods_by_namespace[pod.namespace][key] = pod
        if pod.deletion_timestamp is not None:
            self.terminating += 1
        for k, v in pod.labels.items():
            self._pods_by_label[(pod.namespace, k, v)][key] = pod
        if pod.has_pod_affinity_constraints:
            self.affinity_terms.add(pod, i)
        self._selector_counts.pod_changed(pod, i, 1)

    def _unindex(self, pod: Pod) -> None:
        key = pod.key
        indexed = self._pods_by_namespace.get(pod.namespace, {}).pop(key, None)
        if indexed is not None and indexed.deletion_timestamp is not None:
            self.terminating -= 1
        for k, v in pod.labels.items():
            self._pods_by_label.get((pod.namespace, k, v), {}).pop(key, None)
        self.affinity_terms.remove(key)
        i = self.index.get(pod.node_name)
        if i is not None:
            self._selector_counts.pod_changed(pod, i, -1)

    # -- derived columns ------------------------------------------------------------------------
    def rows_of(self, nodes: list[Node]) -> np.ndarray | None:
        """The rows of ``nodes`` in ascending order; None when one is not the cached object (changed,
        unknown or repeated: an extender may return such nodes, and only the per-node priorities see them
        as upstream does)."""
        rows = sorted(self.index.get(n.name, -1) for n in nodes)
        if len(set(rows)) != len(rows) or rows[0] < 0:
            return None
        if any(self.nodes[self.index[n.name]] is not n for n in nodes):
            return None
        return np.array(rows, dtype=np.int64)

    def scalar_allocatable(self, name: str) -> np.ndarray:
        col = self._scalar_alloc.get(name)
        if col is None:
            col = self._scalar_alloc[name] = np.fromiter(
                (i.allocatable.scalar.get(name, 0) for i in self.infos), dtype=I64, count=len(self.infos)
            )
        return col

    def scalar_requested(self, name: str) -> np.ndarray:
        col = self._scalar_req.get(name)
        if col is None:
            col = self._scalar_req[name] = np.fromiter(
                (i.requested.scalar.get(name, 0) for i in self.infos), dtype=I64, count=len(self.infos)
            )
        return col

    def node_cached(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """A value derived from the nodes only (labels, taints, conditions), computed once per node set."""
        try:
            return self._node_cache[key]
        except KeyError:
            value = self._node_cache[key] = compute()
            return value

    def per_pod_class(self, key: Hashable, compute: Compute) -> np.ndarray:
        """``compute(rows)`` over every node for the class of incoming pods ``key``, from the resource columns and
        pod counts only; kept up to date row by row as pods come and go (read-only: the cache's own array)."""
        return self._pod_classes.get(key, compute)

    def per_preemptor_class(self, key: Hashable, compute: Compute) -> np.ndarray:
        """Like :meth:`per_pod_class`, for values that read the pods on each node too (their priorities,
        requests and labels; preemption's victims): pods come and go through the same accounting."""
        return self._preemptor_classes.get(key, compute)

    def per_node(self, key: Hashable, fn: Callable[[int], Any], dtype: Any, nodes: Iterable[int] | None = None,
                 default: Any = 0) -> np.ndarray:
        """``fn(i)`` for every node (or only ``nodes``, others ``default``), cached under ``key``."""
        def compute() -> np.ndarray:
            out = np.full(len(self.names), default, dtype=dtype)
            for i in range(len(self.names)) if nodes is None else nodes:
                out[i] = fn(i)
            return out

        return self.node_cached(key, compute)

    def topology(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Per node, an id of its value of label ``key`` (-1 when absent), and the value → id map."""
        def compute() -> tuple[np.ndarray, dict[str, int]]:
            values: dict[str, int] = {}
            ids = np.full(len(self.nodes), -1, dtype=I64)
            for i, node in enumerate(self.nodes):
                v = node.labels.get(key)
                if v is not None:
                    ids[i] = values.setdefault(v, len(values))
            return ids, values

        return self.node_cached(("topology", key), compute)

    # -- pod lookups ----------------------------------------------------------------------------
    def pods_matching(self, namespaces: TermNamespaces, selector: Selector) -> list[Pod]:
        """Cached pods (on known nodes) in ``namespaces`` (or every namespace) whose labels ``selector`` matches."""
        reqs = selector.requirements
        if reqs is None:
            return []
        eq = next((r for r in reqs if r.op == IN and len(r.values) == 1), None)
        out = []
        for ns in list(self._pods_by_namespace) if namespaces is ALL_NAMESPACES else namespaces:
            if eq is not None:
                (value,) = eq.values
                candidates = self._pods_by_label.get((ns, eq.key, value))
            else:
                candidates = self._pods_by_namespace.get(ns)
            if candidates:
                out.extend(p for p in candidates.values() if selector.matches(p.labels))
        return out

    def matching_counts(self, namespaces: TermNamespaces, selector: Selector) -> np.ndarray:
        """Per node, how many of :meth:`pods_matching`'s pods it holds; kept up to date from the first call on
        (read-only: the array is the index's own)."""
        key = selector_key(namespaces, selector)
        return self._selector_counts.counts(key, lambda: self.node_indices(self.pods_matching(namespaces, selector)),
                                            len(self.names))

    def matching_rows(self, namespaces: TermNamespaces, selector: Selector) -> np.ndarray:
        """The ascending rows where :meth:`matching_counts` is not 0."""
        counts = self.matching_counts(namespaces, selector)
        return self.nonzero_rows(self._selector_counts.rows(selector_key(namespaces, selector)), counts)

    def live_matching(self, namespace: str, selector: Selector) -> tuple[np.ndarray, np.ndarray]:
        """The ascending rows holding pods of ``namespace`` that ``selector`` matches and that are not being
        deleted, and how many on each: from the kept counts when no cached pod is terminating."""
        namespaces = (namespace,)
        if not self.terminating:
            rows = self.matching_rows(namespaces, selector)
            return rows, self.matching_counts(namespaces, selector)[rows]
        pods = [p for p in self.pods_matching(namespaces, selector) if p.deletion_timestamp is None]
        rows, counts = np.unique(self.node_indices(pods), return_counts=True)
        return rows, counts.astype(I64)

    def sparse_rows(self, rows: Mapping[int, int]) -> np.ndarray | slice:
        """The ascending keys of ``rows`` (the rows where some per-node column may be non-zero) when they are
        few, a sixteenth of the nodes at most; else every row (``slice(None)``), cheaper than sorting them."""
        if len(rows) * 16 > len(self.names):
            return slice(None)
        return np.array(sorted(rows), dtype=I64)

    def nonzero_rows(self, rows: Mapping[int, int], per_node: np.ndarray) -> np.ndarray:
        """The ascending rows where ``per_node`` is not 0, knowing it can only be so on ``rows``' keys."""
        candidates = self.sparse_rows(rows)
        if isinstance(candidates, slice):
            return np.flatnonzero(per_node)
        return candidates[per_node[candidates] != 0]

    def domain_sums(self, key: str, rows: np.ndarray | slice, per_node: np.ndarray) -> np.ndarray:
        """Per value of label ``key``, in :meth:`topology_slots` order, the sum of the int64 ``per_node`` over
        ``rows`` (the rows where it may be non-zero); the last entry, for nodes without the label, is 0."""
        slots, n_values = self.topology_slots(key)
        sums = np.rint(np.bincount(slots[rows], weights=per_node[rows], minlength=n_values + 1)).astype(I64)
        sums[n_values] = 0
        return sums

    def topology_slots(self, key: str) -> tuple[np.ndarray, int]:
        """Per node, the id of its value of label ``key`` (:meth:`topology`), or the number of values when it
        has none; and that number."""
        def compute() -> tuple[np.ndarray, int]:
            ids, values = self.topology(key)
            return np.where(ids >= 0, ids, len(values)), len(values)

        return self.node_cached(("topology slots", key), compute)

    def node_indices(self, pods: Iterable[Pod]) -> np.ndarray:
        index = self.index
        return np.fromiter((index[p.node_name] for p in pods), dtype=I64)

    def topology_mask(self, key: str, node_idx: np.ndarray) -> np.ndarray:
        """Nodes sharing label ``key``'s value with any of the nodes ``node_idx`` (NodesHaveSameTopologyKey)."""
        ids, values = self.topology(key)
        if not node_idx.size:
            return np.zeros(len(ids), dtype=bool)
        hit = np.zeros(len(values) + 1, dtype=bool)
        hit[ids[node_idx]] = True  # -1 lands in the extra last slot
        hit[-1] = False
        return hit[ids]

    def topology_sums(self, key: str, per_node: np.ndarray) -> np.ndarray:
        """Per node: the sum of the int64 ``per_node`` over the nodes in the same ``key`` domain (0 without the
        label); :meth:`topology_counts` with each node's entries summed first."""
        ids, values = self.topology(key)
        has = ids >= 0
        if not values:
            return np.zeros(len(ids), dtype=I64)
        per_value = np.rint(np.bincount(ids[has], weights=per_node[has], minlength=len(values))).astype(I64)
        return np.where(has, per_value[np.maximum(ids, 0)], 0)

    def topology_counts(self, key: str, node_idx: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Per node: the (weighted) number of ``node_idx`` entries in the same ``key`` domain."""
        ids, values = self.topology(key)
        if not node_idx.size or not values:
            return np.zeros(len(ids), dtype=I64)
        t = ids[node_idx]
        keep = t >= 0
        w = None if weights is None else weights[keep]
        per_value = np.bincount(t[keep], weights=w, minlength=len(values))
        per_value = np.rint(per_value).astype(I64) if w is not None else per_value.astype(I64)
        out = np.where(ids >= 0, per_value[np.maximum(ids, 0)], 0)
        return out.astype(I64)
