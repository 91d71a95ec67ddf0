"""The cached pods' inter-pod (anti-)affinity terms, grouped by what they match, counted per node.

For every pod it schedules, upstream 1.9 walks every cached pod with affinity terms: InterPodAffinityPriority
weighs the existing pods' terms that the incoming pod matches, and MatchInterPodAffinity rejects the nodes near
an existing pod whose required anti-affinity the incoming pod matches. The pods of one workload carry the same
terms, so :class:`AffinityTermIndex` groups the terms by (selector, namespaces, topology key) and keeps per
group and node how many terms of each kind the node's pods hold. A vectorised form then tests each group's
selector once against the incoming pod and takes the per-node counts of the groups it matches; the result is
the sum over the same terms as the walk, so it is the same integer.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from ..model.affinity import PodAffinityTerm
from ..model.labels import CompiledSelector
from ..model.pod import Pod
from ..model.topology import term_namespaces

# Rows of TermGroup.counts.
REQUIRED_AFFINITY = 0  # required pod-affinity terms
REQUIRED_ANTI_AFFINITY = 1  # required pod-anti-affinity terms
PREFERRED = 2  # preferred terms' weights: pod affinity positive, pod anti-affinity negative


@dataclass(slots=True)
class TermGroup:
    """Terms sharing a selector, namespace set and topology key."""

    selector: CompiledSelector
    namespaces: frozenset[str]
    topology_key: str
    counts: np.ndarray  # int64, rows above, a column per node
    terms: list[int] = field(default_factory=lambda: [0, 0, 0])  # how many terms of each row (weights may be 0)

    def matches(self, pod: Pod) -> bool:
        """Whether ``pod`` matches the terms (raises SelectorError for a selector that could not be built)."""
        return self.selector.get().matches(pod.labels) and pod.namespace in self.namespaces


class AffinityTermIndex:
    """The groups of the pods on ``size`` nodes, kept up to date by :meth:`add` and :meth:`remove`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.groups: dict[Hashable, TermGroup] = {}
        self._entries: dict[str, list[tuple[Hashable, int, int, int]]] = {}  # pod key -> (group, node, row, delta)

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
            namespaces = frozenset(term_namespaces(pod, term))
            key = (term.selector, namespaces, term.topology_key)
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = TermGroup(term.selector, namespaces, term.topology_key,
                                                     np.zeros((3, self.size), dtype=np.int64))
            group.counts[row, node] += delta
            group.terms[row] += 1
            entries.append((key, node, row, delta))

    def remove(self, pod_key: str) -> None:
        """Forget the terms counted for the pod with ``pod_key``."""
        for key, node, row, delta in self._entries.pop(pod_key, ()):
            group = self.groups[key]
            group.counts[row, node] -= delta
            group.terms[row] -= 1
            if not any(group.terms):
                del self.groups[key]
