"""``spec.topologySpreadConstraints``, parsed once per pod.

The fields the 1.26 and 1.32 API servers keep: ``maxSkew``, ``topologyKey``, ``whenUnsatisfiable``,
``labelSelector``, ``minDomains``, ``nodeAffinityPolicy``, ``nodeTaintsPolicy``, ``matchLabelKeys``. The
selector is compiled here, as upstream's ``filterTopologySpreadConstraints`` builds it: the
``labelSelector`` ANDed with ``key=value`` for every ``matchLabelKeys`` key the pod itself carries
(``mergeLabelSetWithSelector``; a null ``labelSelector`` then selects by those labels alone, because
upstream merges only the requirements a selector has and a null one has none). A selector that cannot
be built keeps its error; the predicate and the priority report it where upstream does.

Defaults are upstream's: ``minDomains`` 1, ``nodeAffinityPolicy`` Honor, ``nodeTaintsPolicy`` Ignore.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .fields import check_label_selector, int_field, list_field, obj_field, str_field, str_list_field
from .labels import IN, CompiledSelector, Requirement, Selector, compile_label_selector

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """One constraint as the pod carries it (``*_raw``: None when the field is absent) and as the
    scheduler reads it (``selector``, ``min_domains``, the two policies with their defaults)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: dict[str, Any] | None
    min_domains_raw: int | None
    node_affinity_policy_raw: str | None
    node_taints_policy_raw: str | None
    match_label_keys: tuple[str, ...]
    selector: CompiledSelector

    @property
    def min_domains(self) -> int:
        return 1 if self.min_domains_raw is None else self.min_domains_raw

    @property
    def honor_node_affinity(self) -> bool:
        """``nodeAffinityPolicy`` Honor (the default): only nodes matching the pod's nodeSelector and
        required node affinity are domains."""
        return self.node_affinity_policy_raw != IGNORE

    @property
    def honor_node_taints(self) -> bool:
        """``nodeTaintsPolicy`` Honor (default Ignore): nodes with a NoSchedule/NoExecute taint the pod
        does not tolerate are not domains."""
        return self.node_taints_policy_raw == HONOR

    @property
    def hard(self) -> bool:
        return self.when_unsatisfiable == DO_NOT_SCHEDULE

    @property
    def soft(self) -> bool:
        return self.when_unsatisfiable == SCHEDULE_ANYWAY


def parse_topology_spread_constraints(
    obj: str, raw: Any, pod_labels: Mapping[str, str]
) -> tuple[TopologySpreadConstraint, ...]:
    """``spec.topologySpreadConstraints`` (wrong field types raise :class:`ObjectError`)."""
    path = "spec.topologySpreadConstraints"
    out = []
    for i, item in enumerate(list_field(obj, path, raw)):
        here = f"{path}[{i}]"
        c = obj_field(obj, here, item)
        selector_raw = check_label_selector(obj, f"{here}.labelSelector", c.get("labelSelector"))
        min_domains = c.get("minDomains")
        keys = tuple(str_list_field(obj, f"{here}.matchLabelKeys", c.get("matchLabelKeys")))
        out.append(TopologySpreadConstraint(
            max_skew=int_field(obj, f"{here}.maxSkew", c.get("maxSkew")),
            topology_key=str_field(obj, f"{here}.topologyKey", c.get("topologyKey")),
            when_unsatisfiable=str_field(obj, f"{here}.whenUnsatisfiable", c.get("whenUnsatisfiable")),
            label_selector=selector_raw,
            min_domains_raw=None if min_domains is None else int_field(obj, f"{here}.minDomains", min_domains),
            node_affinity_policy_raw=_optional_str(obj, f"{here}.nodeAffinityPolicy", c.get("nodeAffinityPolicy")),
            node_taints_policy_raw=_optional_str(obj, f"{here}.nodeTaintsPolicy", c.get("nodeTaintsPolicy")),
            match_label_keys=keys,
            selector=_selector(selector_raw, keys, pod_labels),
        ))
    return tuple(out)


def _optional_str(obj: str, path: str, raw: Any) -> str | None:
    return None if raw is None else str_field(obj, path, raw)


def _selector(raw: dict[str, Any] | None, match_label_keys: tuple[str, ...], pod_labels: Mapping[str, str]) -> CompiledSelector:
    compiled = compile_label_selector(raw)
    if compiled.selector is None or not match_label_keys:
        return compiled
    extra = {key: pod_labels[key] for key in match_label_keys if key in pod_labels}
    if not extra:
        return compiled
    reqs = [Requirement(key, IN, frozenset((value,))) for key, value in extra.items()]
    reqs.extend(compiled.selector.requirements or ())
    reqs.sort(key=lambda r: r.key)
    return CompiledSelector(Selector(tuple(reqs)))
