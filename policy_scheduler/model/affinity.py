"""Node affinity and inter-pod (anti-)affinity, parsed once per pod.

Selectors are compiled at parse time; a selector that cannot be built keeps its error, which the
predicate or priority that uses it reports exactly where upstream would.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _pod_affinity_term(raw: dict) -> PodAffinityTerm:
    return PodAffinityTerm(
        selector=compile_label_selector(raw.get("labelSelector")),
        namespaces=tuple(raw.get("namespaces") or ()),
        topology_key=raw.get("topologyKey") or "",
        raw=raw,
    )


def _pod_affinity(raw: dict | None) -> PodAffinity | None:
    if raw is None:
        return None
    required = tuple(_pod_affinity_term(t or {}) for t in raw.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
    preferred = tuple(
        WeightedPodAffinityTerm(int((t or {}).get("weight") or 0), _pod_affinity_term((t or {}).get("podAffinityTerm") or {}))
        for t in raw.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    return PodAffinity(required, preferred)


def _node_affinity(raw: dict | None) -> NodeAffinity | None:
    if raw is None:
        return None
    req = raw.get("requiredDuringSchedulingIgnoredDuringExecution")
    required = None
    if req is not None:
        required = tuple(
            compile_node_selector_requirements((term or {}).get("matchExpressions"))
            for term in req.get("nodeSelectorTerms") or ()
        )
    pref = raw.get("preferredDuringSchedulingIgnoredDuringExecution")
    preferred = None
    if pref is not None:
        preferred = tuple(
            PreferredSchedulingTerm(
                int((t or {}).get("weight") or 0),
                compile_node_selector_requirements(((t or {}).get("preference") or {}).get("matchExpressions")),
            )
            for t in pref
        )
    return NodeAffinity(required, preferred)


def parse_affinity(raw: dict | None) -> Affinity | None:
    if raw is None:
        return None
    return Affinity(
        node_affinity=_node_affinity(raw.get("nodeAffinity")),
        pod_affinity=_pod_affinity(raw.get("podAffinity")),
        pod_anti_affinity=_pod_affinity(raw.get("podAntiAffinity")),
    )
