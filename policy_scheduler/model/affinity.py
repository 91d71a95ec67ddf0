"""Node affinity and inter-pod (anti-)affinity, parsed once per pod.

Selectors are compiled at parse time; a selector that cannot be built keeps its error, which the
predicate or priority that uses it reports exactly where upstream would.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import (
    check_label_selector,
    check_requirements,
    int_field,
    obj_field,
    obj_list_field,
    opt_obj_field,
    str_field,
    str_list_field,
)
from .labels import CompiledSelector, compile_label_selector, compile_node_selector_requirements


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    selector: CompiledSelector


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    # None: requiredDuringSchedulingIgnoredDuringExecution is null (always satisfied).
    required_terms: tuple[CompiledSelector, ...] | None
    preferred: tuple[PreferredSchedulingTerm, ...] | None


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    selector: CompiledSelector
    namespaces: tuple[str, ...]
    topology_key: str
    raw: dict


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
    )


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


def _node_affinity(obj: str, path: str, raw: object) -> NodeAffinity | None:
    aff = opt_obj_field(obj, path, raw)
    if aff is None:
        return None
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    req = opt_obj_field(obj, req_path, aff.get("requiredDuringSchedulingIgnoredDuringExecution"))
    required = None
    if req is not None:
        terms_path = f"{req_path}.nodeSelectorTerms"
        required = tuple(
            compile_node_selector_requirements(
                check_requirements(obj, f"{terms_path}[{i}].matchExpressions", term.get("matchExpressions"))
            )
            for i, term in enumerate(obj_list_field(obj, terms_path, req.get("nodeSelectorTerms")))
        )
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    pref = aff.get("preferredDuringSchedulingIgnoredDuringExecution")
    preferred = None
    if pref is not None:
        preferred = tuple(
            PreferredSchedulingTerm(
                int_field(obj, f"{pref_path}[{i}].weight", t.get("weight")),
                compile_node_selector_requirements(
                    check_requirements(
                        obj, f"{pref_path}[{i}].preference.matchExpressions",
                        obj_field(obj, f"{pref_path}[{i}].preference", t.get("preference")).get("matchExpressions"),
                    )
                ),
            )
            for i, t in enumerate(obj_list_field(obj, pref_path, pref))
        )
    return NodeAffinity(required, preferred)


def parse_affinity(raw: object, obj: str = "Pod") -> Affinity | None:
    """``spec.affinity``; wrong field types raise :class:`ObjectError` naming ``obj`` and the path."""
    aff = opt_obj_field(obj, "spec.affinity", raw)
    if aff is None:
        return None
    return Affinity(
        node_affinity=_node_affinity(obj, "spec.affinity.nodeAffinity", aff.get("nodeAffinity")),
        pod_affinity=_pod_affinity(obj, "spec.affinity.podAffinity", aff.get("podAffinity")),
        pod_anti_affinity=_pod_affinity(obj, "spec.affinity.podAntiAffinity", aff.get("podAntiAffinity")),
    )
