"""Node affinity and inter-pod (anti-)affinity, parsed once per pod.

Selectors are compiled at parse time; a selector that cannot be built keeps its error, which the
predicate or priority that uses it reports exactly where upstream would.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import (
    check_label_selector,
    int_field,
    obj_field,
    obj_list_field,
    opt_obj_field,
    str_field,
    str_list_field,
)
from .labels import CompiledSelector, compile_label_selector, compile_node_selector_requirements
from .node_selector import NodeSelectorTerm, has_match_fields, parse_node_selector_term


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    selector: CompiledSelector  # 1.9's view: the preference's matchExpressions
    term: NodeSelectorTerm | None = None  # the cluster's: matchExpressions AND matchFields


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    # None: requiredDuringSchedulingIgnoredDuringExecution is null (always satisfied).
    # 1.9's view of each required term: its matchExpressions (none: selects nothing).
    required_terms: tuple[CompiledSelector, ...] | None
    preferred: tuple[PreferredSchedulingTerm, ...] | None
    # The cluster's view of the same required terms (see ``model/node_selector.py``).
    required_node_selector: tuple[NodeSelectorTerm, ...] | None = None
    # A required / preferred term carries matchFields, which 1.9 never read: under the cluster's rules
    # those terms are evaluated the modern way (``predicates/node_selector.py``).
    required_match_fields: bool = False
    preferred_match_fields: bool = False


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    selector: CompiledSelector
    namespaces: tuple[str, ...]
    topology_key: str
    raw: dict
    # namespaceSelector (1.21+, GA 1.24): None when null (the term's namespaces, else the pod's own: 1.9's
    # meaning); ``{}`` compiles to the selector matching every namespace (see ``model/topology.py``).
    namespace_selector: CompiledSelector | None = None


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """Used for both podAffinity and podAntiAffinity (same shape)."""

    required: tuple[PodAffinityTerm, ...]
    preferred: tuple[WeightedPodAffinityTerm, ...]


@dataclass(frozen=True, slots=True)
class Affinity:
    node_affinity: NodeAffinity | None
    pod_affinity: PodAffinity | None
    pod_anti_affinity: PodAffinity | None


def _pod_affinity_term(obj: str, path: str, raw: dict) -> PodAffinityTerm:
    return PodAffinityTerm(
        selector=compile_label_selector(check_label_selector(obj, f"{path}.labelSelector", raw.get("labelSelector"))),
        namespaces=tuple(str_list_field(obj, f"{path}.namespaces", raw.get("namespaces"))),
        topology_key=str_field(obj, f"{path}.topologyKey", raw.get("topologyKey")),
        raw=raw,
        namespace_selector=_namespace_selector(obj, f"{path}.namespaceSelector", raw.get("namespaceSelector")),
    )


def _namespace_selector(obj: str, path: str, raw: object) -> CompiledSelector | None:
    """A term's namespaceSelector: None when null, else compiled as a labelSelector is (``{}``: everything)."""
    selector = check_label_selector(obj, path, raw)
    return None if selector is None else compile_label_selector(selector)


def _pod_affinity(obj: str, path: str, raw: object) -> PodAffinity | None:
    aff = opt_obj_field(obj, path, raw)
    if aff is None:
        return None
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required = tuple(
        _pod_affinity_term(obj, f"{req_path}[{i}]", t)
        for i, t in enumerate(obj_list_field(obj, req_path, aff.get("requiredDuringSchedulingIgnoredDuringExecution")))
    )
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    preferred = tuple(
        WeightedPodAffinityTerm(
            int_field(obj, f"{pref_path}[{i}].weight", t.get("weight")),
            _pod_affinity_term(
                obj, f"{pref_path}[{i}].podAffinityTerm",
                obj_field(obj, f"{pref_path}[{i}].podAffinityTerm", t.get("podAffinityTerm")),
            ),
        )
        for i, t in enumerate(obj_list_field(obj, pref_path, aff.get("preferredDuringSchedulingIgnoredDuringExecution")))
    )
    return PodAffinity(required, preferred)


_SELECTS_NOTHING = compile_node_selector_requirements([])


def _expressions_1_9(term: NodeSelectorTerm) -> CompiledSelector:
    """The term as 1.9 saw it: its matchExpressions alone (``NodeSelectorRequirementsAsSelector``; none
    selects nothing)."""
    return term.expressions if term.expressions is not None else _SELECTS_NOTHING


def _node_affinity(obj: str, path: str, raw: object) -> NodeAffinity | None:
    aff = opt_obj_field(obj, path, raw)
    if aff is None:
        return None
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    req = opt_obj_field(obj, req_path, aff.get("requiredDuringSchedulingIgnoredDuringExecution"))
    required = node_selector = None
    required_fields = False
    if req is not None:
        terms_path = f"{req_path}.nodeSelectorTerms"
        raw_terms = obj_list_field(obj, terms_path, req.get("nodeSelectorTerms"))
        node_selector = tuple(parse_node_selector_term(obj, f"{terms_path}[{i}]", t) for i, t in enumerate(raw_terms))
        required = tuple(_expressions_1_9(t) for t in node_selector)
        required_fields = has_match_fields(raw_terms)
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    pref = aff.get("preferredDuringSchedulingIgnoredDuringExecution")
    preferred = None
    preferred_fields = False
    if pref is not None:
        weighted = []
        preferences = []
        for i, t in enumerate(obj_list_field(obj, pref_path, pref)):
            weight = int_field(obj, f"{pref_path}[{i}].weight", t.get("weight"))
            preference = obj_field(obj, f"{pref_path}[{i}].preference", t.get("preference"))
            term = parse_node_selector_term(obj, f"{pref_path}[{i}].preference", preference)
            weighted.append(PreferredSchedulingTerm(weight, _expressions_1_9(term), term))
            preferences.append(preference)
        preferred = tuple(weighted)
        preferred_fields = has_match_fields(preferences)
    return NodeAffinity(required, preferred, node_selector, required_fields, preferred_fields)


MAX_PARSED = 4096  # distinct affinities kept parsed at most

_parsed: dict[str, Affinity] = {}


def parse_affinity(raw: object, obj: str = "Pod") -> Affinity | None:
    """``spec.affinity``; wrong field types raise :class:`ObjectError` naming ``obj`` and the path.

    The pods of one workload carry the same affinity: what parsed is kept by its text (``repr`` of the decoded
    JSON, which tells every JSON value apart) and shared, as the result is immutable and names no pod."""
    aff = opt_obj_field(obj, "spec.affinity", raw)
    if aff is None:
        return None
    key = repr(aff)
    parsed = _parsed.get(key)
    if parsed is None:
        if len(_parsed) >= MAX_PARSED:
            _parsed.clear()
        parsed = _parsed[key] = _parse_affinity(aff, obj)
    return parsed


def _parse_affinity(aff: dict, obj: str) -> Affinity:
    return Affinity(
        node_affinity=_node_affinity(obj, "spec.affinity.nodeAffinity", aff.get("nodeAffinity")),
        pod_affinity=_pod_affinity(obj, "spec.affinity.podAffinity", aff.get("podAffinity")),
        pod_anti_affinity=_pod_affinity(obj, "spec.affinity.podAntiAffinity", aff.get("podAntiAffinity")),
    )
