"""InterPodAffinityPriority (upstream ``priorities/interpod_affinity.go``: ``NewInterPodAffinityPriority``,
``CalculateInterPodAffinityPriority``, ``podAffinityPriorityMap.processTerm(s)``).

A legacy whole-list function. For every existing pod ``E`` (all pods when the incoming pod has pod
affinity or anti-affinity, else only pods that have some themselves), weights are added to every
candidate node in the same topology domain as ``E``'s node:

1. the incoming pod's preferred affinity terms that ``E`` matches: ``+weight``;
2. the incoming pod's preferred anti-affinity terms that ``E`` matches: ``-weight``;
3. ``E``'s required affinity terms that the incoming pod matches: ``+H`` (hard pod affinity symmetric
   weight, skipped when ``H`` is 0), and ``E``'s preferred affinity terms: ``+weight``;
4. ``E``'s preferred anti-affinity terms that the incoming pod matches: ``-weight``.

The float counts are then normalised to ``0..10`` between ``min(0, min count)`` and ``max(0, max count)``.

Under the cluster's rules a term's ``namespaceSelector`` counts (``model/topology.py``): the incoming pod's terms
(1, 2) are resolved against the Namespace objects once per call, as upstream's PreScore merges them; the existing
pods' terms (3, 4) are matched with the labels of the incoming pod's namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY, HostPriority, PluginFactoryArgs, PriorityFunction
from ..cache.cluster import ListerError
from ..errors import PriorityError
from ..model.labels import SelectorError
from ..model.topology import TermNamespaces, pod_matches_term, term_matches_pod, term_namespaces

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.affinity import PodAffinityTerm, WeightedPodAffinityTerm
    from ..model.node import Node
    from ..model.pod import Pod


class _Counts:
    """``podAffinityPriorityMap``: float counts per candidate node name.

    ``NodesHaveSameTopologyKey(candidate, fixed, key)`` holds exactly when both nodes carry label ``key``
    with equal values (and ``key`` is non-empty), so candidate nodes are indexed once per topology key by
    label value instead of being scanned for every matching term. Each node still receives the same
    sequence of additions as upstream's scan.
    """

    __slots__ = ("nodes", "counts", "_index", "_namespace_objects", "_resolved")

    def __init__(self, nodes: list[Node], namespace_objects: Mapping[str, Mapping[str, str]]) -> None:
        self.nodes = nodes
        self.counts: dict[str, float] = {}
        self._index: dict[str, dict[str, list[str]]] = {}
        self._namespace_objects = namespace_objects
        self._resolved: dict[int, TermNamespaces] = {}  # id(term) -> namespaces, the incoming pod's terms

    def _same_topology(self, fixed_node: Node, key: str) -> list[str]:
        if not key:
            return []
        value = fixed_node.labels.get(key)
        if value is None:
            return []
        index = self._index.get(key)
        if index is None:
            index = {}
            for node in self.nodes:
                v = node.labels.get(key)
                if v is not None:
                    index.setdefault(v, []).append(node.name)
            self._index[key] = index
        return index.get(value, [])

    def _incoming_namespaces(self, pod: Pod, term: PodAffinityTerm) -> TermNamespaces:
        """The namespaces of a term of the incoming pod, its namespaceSelector resolved once per call (upstream
        merges them into the term in PreScore)."""
        namespaces = self._resolved.get(id(term))
        if namespaces is None:
            namespaces = self._resolved[id(term)] = term_namespaces(pod, term, self._namespace_objects)
        return namespaces

    def process_term(
        self, term: PodAffinityTerm, defining_pod: Pod, pod_to_check: Pod, fixed_node: Node, weight: float,
        namespace_labels: Mapping[str, str] | None = None,
    ) -> None:
        """``processTerm``: if ``pod_to_check`` matches ``term`` (of ``defining_pod``), add ``weight`` to
        every candidate node sharing ``term.topology_key`` with ``fixed_node``. ``namespace_labels`` None: the
        term is the incoming pod's (its namespaces resolved); else it is an existing pod's, matched against
        the incoming ``pod_to_check`` whose namespace has these labels."""
        try:
            selector = term.selector.get()
            if namespace_labels is None:
                matches = pod_matches_term(pod_to_check, self._incoming_namespaces(defining_pod, term), selector)
            else:
                matches = term_matches_pod(defining_pod, term, pod_to_check, namespace_labels)
        except SelectorError as e:
            raise PriorityError(str(e)) from None
        if not matches:
            return
        counts = self.counts
        for name in self._same_topology(fixed_node, term.topology_key):
            counts[name] = counts.get(name, 0.0) + weight

    def process_terms(
        self,
        terms: Iterable[WeightedPodAffinityTerm],
        defining_pod: Pod,
        pod_to_check: Pod,
        fixed_node: Node,
        multiplier: int,
        namespace_labels: Mapping[str, str] | None = None,
    ) -> None:
        """``processTerms``: each weighted term with weight ``term.weight * multiplier``."""
        for t in terms:
            self.process_term(t.term, defining_pod, pod_to_check, fixed_node, float(t.weight * multiplier),
                              namespace_labels)


def new_inter_pod_affinity_priority(args: PluginFactoryArgs) -> PriorityFunction:
    """``NewInterPodAffinityPriority(info, nodeLister, podLister, hardPodAffinityWeight)``.

    Existing pods' nodes are looked up through ``args.cluster.get_node``; a pod whose node is not found
    is skipped. ``args.hard_pod_affinity_symmetric_weight`` is ``H``.
    """
    cluster = args.cluster
    hard_weight = args.hard_pod_affinity_symmetric_weight

    def calculate_inter_pod_affinity_priority(
        pod: Pod, node_infos: Mapping[str, NodeInfo], nodes: list[Node]
    ) -> list[HostPriority]:
        affinity = pod.affinity
        pod_affinity = affinity.pod_affinity if affinity is not None else None
        pod_anti_affinity = affinity.pod_anti_affinity if affinity is not None else None
        all_pods = pod_affinity is not None or pod_anti_affinity is not None

        pm = _Counts(nodes, cluster.namespaces)
        namespace_labels = cluster.namespace_labels(pod.namespace)  # the existing pods' terms match against them

        def process_pod(existing: Pod) -> None:
            try:
                existing_node = cluster.get_node(existing.node_name)
            except ListerError:
                # Upstream logs "Node not found" and skips the pod.
                return
            existing_affinity = existing.affinity
            if pod_affinity is not None:
                pm.process_terms(pod_affinity.preferred, pod, existing, existing_node, 1)
            if pod_anti_affinity is not None:
                pm.process_terms(pod_anti_affinity.preferred, pod, existing, existing_node, -1)
            if existing_affinity is None:
                return
            if existing_affinity.pod_affinity is not None:
                if hard_weight > 0:
                    for term in existing_affinity.pod_affinity.required:
                        pm.process_term(term, existing, pod, existing_node, float(hard_weight), namespace_labels)
                pm.process_terms(existing_affinity.pod_affinity.preferred, existing, pod, existing_node, 1,
                                 namespace_labels)
            if existing_affinity.pod_anti_affinity is not None:
                pm.process_terms(existing_affinity.pod_anti_affinity.preferred, existing, pod, existing_node, -1,
                                 namespace_labels)

        for info in node_infos.values():
            if info.node is None:
                continue
            for existing in info.pods if all_pods else info.pods_with_affinity:
                process_pod(existing)

        counts = pm.counts
        max_count = 0.0
        min_count = 0.0
        for node in nodes:
            c = counts.get(node.name, 0.0)
            if c > max_count:
                max_count = c
            if c < min_count:
                min_count = c

        result: list[HostPriority] = []
        for node in nodes:
            f_score = 0.0
            if (max_count - min_count) > 0:
                f_score = float(MAX_PRIORITY) * ((counts.get(node.name, 0.0) - min_count) / (max_count - min_count))
            result.append(HostPriority(node.name, int(f_score)))
        return result

    return calculate_inter_pod_affinity_priority
