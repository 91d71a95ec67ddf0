"""The cached pods' inter-pod (anti-)affinity terms, grouped by what they match, counted per node.

For every pod it schedules, upstream 1.9 walks every cached pod with affinity terms: InterPodAffinityPriority
weighs the existing pods' terms that the incoming pod matches, and MatchInterPodAffinity rejects the nodes near
an existing pod whose required anti-affinity the incoming pod matches. The pods of one workload carry the same
terms, so :class:`AffinityTermIndex` groups the terms by (selector, namespaces, namespaceSelector, topology key)
and keeps per group and node how many terms of each kind the node's pods hold. A vectorised form then tests each
group's selectors once against the incoming pod (a namespaceSelector against the labels of the incoming pod's
namespace, read once per decision) and takes the per-node counts of the groups it matches; the result is the
sum over the same terms as the walk, so it is the same integer.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..features import Rules
from ..model.affinity import PodAffinityTerm
from ..model.labels import CompiledSelector, SelectorError
from ..model.pod import Pod
from ..model.topology import static_namespaces

# Rows of TermGroup.counts.
REQUIRED_AFFINITY = 0  # required pod-affinity terms
REQUIRED_ANTI_AFFINITY = 1  # required pod-anti-affinity terms
PREFERRED = 2  # preferred terms' weights: pod affinity positive, pod anti-affinity negative


@dataclass(slots=True)
class TermGroup:
    """Terms sharing a selector, namespace set, namespaceSelector (None: none that counts) and topology key."""

    selector: CompiledSelector
    namespaces: frozenset[str]
    topology_key: str
    counts: np.ndarray  # int64, rows above, a column per node
    terms: list[int] = field(default_factory=lambda: [0, 0, 0])  # how many terms of each row (weights may be 0)
    namespace_selector: CompiledSelector | None = None
    rows: dict[int, int] = field(default_factory=dict)  # node row -> terms counted there (its columns may be 0)

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
        """Whether ``pod``, whose namespace has the labels ``namespace_labels``, matches the terms
        (``AffinityTerm.Matches``; raises SelectorError for a selector that could not be built)."""
        selector = self.selector.get()
        if self.namespace_selector is None:
            return selector.matches(pod.labels) and pod.namespace in self.namespaces
        if pod.namespace in self.namespaces or self.namespace_selector.get().matches(namespace_labels):
            return selector.matches(pod.labels)
        return False


MAX_MATCHED = 1024  # pod label sets whose matching groups are kept at most (all are dropped beyond)


class AffinityTermIndex:
    """The groups of the pods on ``size`` nodes, kept up to date by :meth:`add` and :meth:`remove`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.groups: dict[Hashable, TermGroup] = {}
        self._entries: dict[str, list[tuple[Hashable, int, int, int]]] = {}  # pod key -> (group, node, row, delta)
        # Per (namespace, labels, namespace labels when a group has a namespaceSelector): what :meth:`matching`
        # found; dropped whenever a group comes or goes.
        self._matched: dict[Hashable, tuple[list[TermGroup], list[TermGroup]]] = {}
        self._namespace_selectors = 0  # groups with a namespaceSelector

    def matching(self, pod: Pod, namespace_labels: Mapping[str, str]) -> tuple[list[TermGroup], list[TermGroup]]:
        """The groups whose terms ``pod`` matches (``namespace_labels``: its namespace's labels) and the groups whose
        selectors could not be built (:meth:`TermGroup.matches` raises for them); found once per namespace and label
        set until a group comes or goes (the pods of a workload share them)."""
        key = (pod.namespace, frozenset(pod.labels.items()),
               frozenset(namespace_labels.items()) if self._namespace_selectors else None)
        found = self._matched.get(key)
        if found is None:
            matched: list[TermGroup] = []
            broken: list[TermGroup] = []
            for group in self.groups.values():
                try:
                    if group.matches(pod, namespace_labels):
                        matched.append(group)
                except SelectorError:
                    broken.append(group)
            if len(self._matched) >= MAX_MATCHED:
                self._matched.clear()
            found = self._matched[key] = (matched, broken)
        return found

    def add(self, pod: Pod, node: int) -> None:
        """Count the terms of ``pod``, placed on node row ``node``."""
        affinity = pod.affinity
        if affinity is None:
            return
        terms: list[tuple[PodAffinityTerm, int, int]] = []
        if affinity.pod_affinity is not None:
            terms += [(t, REQUIRED_AFFINITY, 1) for t in affinity.pod_affinity.required]
            terms += [(w.term, PREFERRED, w.weight) for w in affinity.pod_affinity.preferred]
        if affinity.pod_anti_affinity is not None:
            terms += [(t, REQUIRED_ANTI_AFFINITY, 1) for t in affinity.pod_anti_affinity.required]
            terms += [(w.term, PREFERRED, -w.weight) for w in affinity.pod_anti_affinity.preferred]
        if not terms:
            return
        entries = self._entries.setdefault(pod.key, [])
        for term, row, delta in terms:
            namespaces = static_namespaces(pod, term)
            # The namespaceSelector when it counts (the cluster's rules); one that cannot be built raises on use.
            ns_selector = term.namespace_selector if pod.rules is Rules.CLUSTER else None
            key = (term.selector, namespaces, ns_selector, term.topology_key)
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = TermGroup(term.selector, namespaces, term.topology_key,
                                                     np.zeros((3, self.size), dtype=np.int64),
                                                     namespace_selector=ns_selector)
                self._group_changed(group, 1)
            group.counts[row, node] += delta
            group.terms[row] += 1
            group.rows[node] = group.rows.get(node, 0) + 1
            entries.append((key, node, row, delta))

    def remove(self, pod_key: str) -> None:
        """Forget the terms counted for the pod with ``pod_key``."""
        for key, node, row, delta in self._entries.pop(pod_key, ()):
            group = self.groups[key]
            group.counts[row, node] -= delta
            group.terms[row] -= 1
            left = group.rows.pop(node) - 1
            if left:
                group.rows[node] = left
            if not any(group.terms):
                del self.groups[key]
                self._group_changed(group, -1)

    def _group_changed(self, group: TermGroup, sign: int) -> None:
        self._matched.clear()
        if group.namespace_selector is not None:
            self._namespace_selectors += sign
