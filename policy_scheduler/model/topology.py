"""Topology helpers shared by inter-pod affinity predicates and priorities (``priorities/util``), and the
namespaces a pod (anti-)affinity term applies to.

A term's namespaces (upstream 1.26 ``framework/types.go``: ``newAffinityTerm``,
``getNamespacesFromPodAffinityTerm``, ``AffinityTerm.Matches``; ``interpodaffinity/plugin.go``:
``mergeAffinityTermNamespacesIfNotEmpty``, ``GetNamespaceLabelsSnapshot``):

- without a ``namespaceSelector`` (and for every term under ``Rules.V1_9``, as 1.9 ignored the field): its
  ``namespaces``, or the defining pod's own namespace when it lists none (1.9's meaning, unchanged);
- with one, under the cluster's rules: the union of its ``namespaces`` (the pod's own is no longer implied)
  and the namespaces whose Namespace object's labels the selector matches; ``{}`` matches every namespace.

The incoming pod's terms are resolved once per decision into a set of names (:func:`term_namespaces`, upstream's
PreFilter / PreScore merge: the selector lists the cluster's Namespace objects; ``{}`` is left unmerged and
matches every pod, :data:`ALL_NAMESPACES`), so the vectorised indexes still look pods up by namespace. An
existing pod's term is matched against the incoming pod with the labels of the incoming pod's namespace
(:func:`term_matches_pod`, upstream's ``Matches(pod, nsLabels)``); a namespace without a Namespace object has
no labels.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType

from ..features import Rules
from .affinity import PodAffinityTerm
from .labels import Selector, SelectorError
from .node import Node
from .pod import Pod

#: The labels of a namespace that has no Namespace object (``GetNamespaceLabelsSnapshot``'s empty set).
NO_LABELS: Mapping[str, str] = MappingProxyType({})


class AllNamespaces:
    """Every namespace (a ``namespaceSelector: {}``): contains any name. It cannot be enumerated; code that
    walks a term's namespaces asks ``is ALL_NAMESPACES`` first."""

    __slots__ = ()

    def __contains__(self, namespace: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ALL_NAMESPACES"


ALL_NAMESPACES = AllNamespaces()

#: What :func:`term_namespaces` returns: names, or every namespace.
TermNamespaces = Collection[str] | AllNamespaces


def namespace_selector(pod: Pod, term: PodAffinityTerm) -> Selector | None:
    """``term``'s namespaceSelector as it counts for ``pod``'s terms: None when null, or under ``Rules.V1_9``;
    raises :class:`SelectorError` for one that could not be built."""
    if term.namespace_selector is None or pod.rules is not Rules.CLUSTER:
        return None
    return term.namespace_selector.get()


def required_anti_affinity_error(pod: Pod) -> str | None:
    """Why one of ``pod``'s required anti-affinity terms cannot be evaluated against an incoming pod: its
    label selector or its namespaceSelector cannot be built (None: every term can)."""
    affinity = pod.affinity
    anti = affinity.pod_anti_affinity if affinity is not None else None
    for term in anti.required if anti is not None else ():
        if term.selector.selector is None:
            return term.selector.error or "invalid selector"
        try:
            namespace_selector(pod, term)
        except SelectorError as e:
            return str(e)
    return None


def static_namespaces(pod: Pod, term: PodAffinityTerm) -> frozenset[str]:
    """``getNamespacesFromPodAffinityTerm``: the term's namespaces, or the defining pod's own when it lists none
    and has no namespaceSelector that counts."""
    if term.namespaces or (term.namespace_selector is not None and pod.rules is Rules.CLUSTER):
        return frozenset(term.namespaces)
    return frozenset((pod.namespace,))


def term_namespaces(pod: Pod, term: PodAffinityTerm,
                    namespaces: Mapping[str, Mapping[str, str]]) -> TermNamespaces:
    """The namespaces a term of the incoming ``pod`` applies to, its namespaceSelector resolved against the
    cluster's Namespace objects ``namespaces`` (name -> labels): ``mergeAffinityTermNamespacesIfNotEmpty``.
    Raises :class:`SelectorError` for a namespaceSelector that could not be built."""
    selector = namespace_selector(pod, term)
    names = static_namespaces(pod, term)
    if selector is None:
        return names
    if selector.empty:
        return ALL_NAMESPACES
    return names.union(name for name, labels in namespaces.items() if selector.matches(labels))


def pod_matches_term(target: Pod, namespaces: TermNamespaces, selector: Selector) -> bool:
    """``PodMatchesTermsNamespaceAndSelector``."""
    return target.namespace in namespaces and selector.matches(target.labels)


def term_matches_pod(defining: Pod, term: PodAffinityTerm, target: Pod, target_namespace_labels: Mapping[str, str]) -> bool:
    """``AffinityTerm.Matches(target, nsLabels)`` for a term of ``defining`` (an existing or waiting pod, whose
    terms are not resolved): ``target``'s namespace is among the term's namespaces or its labels
    ``target_namespace_labels`` match the namespaceSelector, and the labelSelector matches ``target``. Raises
    :class:`SelectorError` for a selector that could not be built (the labelSelector first)."""
    selector = term.selector.get()
    ns_selector = namespace_selector(defining, term)
    if ns_selector is None:
        return pod_matches_term(target, static_namespaces(defining, term), selector)
    if target.namespace in term.namespaces or ns_selector.matches(target_namespace_labels):
        return selector.matches(target.labels)
    return False


def matches_required_pod_affinity(waiting: Pod, assigned: Pod,
                                  namespace_labels: Callable[[str], Mapping[str, str]] | None = None) -> bool:
    """Whether ``assigned`` matches one of ``waiting``'s required pod-affinity terms (the priority
    queue's test for moving an unschedulable pod when a pod is assigned); a bad selector matches nothing.
    ``namespace_labels`` gives a namespace's labels (upstream's namespace lister; None: no Namespace objects)."""
    affinity = waiting.affinity
    if affinity is None or affinity.pod_affinity is None:
        return False
    labels: Mapping[str, str] | None = None
    for term in affinity.pod_affinity.required:
        if labels is None and term.namespace_selector is not None:
            labels = namespace_labels(assigned.namespace) if namespace_labels is not None else NO_LABELS
        try:
            if term_matches_pod(waiting, term, assigned, labels if labels is not None else NO_LABELS):
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
