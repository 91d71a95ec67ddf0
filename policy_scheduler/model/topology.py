"""Topology helpers shared by inter-pod affinity predicates and priorities (``priorities/util``)."""

from __future__ import annotations

from collections.abc import Collection

from .affinity import PodAffinityTerm
from .labels import Selector, SelectorError
from .node import Node
from .pod import Pod


def term_namespaces(pod: Pod, term: PodAffinityTerm) -> Collection[str]:
    """``GetNamespacesFromPodAffinityTerm``: the term's namespaces, or the defining pod's own."""
    if term.namespaces:
        return frozenset(term.namespaces)
    return frozenset((pod.namespace,))


def pod_matches_term(target: Pod, namespaces: Collection[str], selector: Selector) -> bool:
    """``PodMatchesTermsNamespaceAndSelector``."""
    return target.namespace in namespaces and selector.matches(target.labels)


def matches_required_pod_affinity(waiting: Pod, assigned: Pod) -> bool:
    """Whether ``assigned`` matches one of ``waiting``'s required pod-affinity terms (the priority
    queue's test for moving an unschedulable pod when a pod is assigned); a bad selector matches nothing."""
    affinity = waiting.affinity
    if affinity is None or affinity.pod_affinity is None:
        return False
    for term in affinity.pod_affinity.required:
        try:
            if pod_matches_term(assigned, term_namespaces(waiting, term), term.selector.get()):
                return True
        except SelectorError:
            continue
    return False


def nodes_have_same_topology_key(a: Node | None, b: Node | None, key: str) -> bool:
    """``NodesHaveSameTopologyKey``: both nodes carry label ``key`` with equal values; empty key → False."""
    if not key or a is None or b is None:
        return False
    if not a.labels or not b.labels:
        return False
    va = a.labels.get(key)
    if va is None:
        return False
    vb = b.labels.get(key)
    return vb is not None and va == vb
