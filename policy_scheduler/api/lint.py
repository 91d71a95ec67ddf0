"""Warnings about Policies that Kubernetes 1.9 accepts but users regret.

:func:`lint_policy` returns one line per warning, each starting with the JSON path it concerns. Nothing
here is an error: :mod:`policy_scheduler.api.validation` has those, including :func:`unknown_names`
(re-exported here because it needs the same registered-name sets as ``lint_policy``).
"""

from __future__ import annotations

from collections.abc import Set

from .types import Policy, PredicatePolicy, PriorityPolicy
from .validation import unknown_names

__all__ = ["GENERAL_PREDICATES_MEMBERS", "lint_policy", "unknown_names"]

#: Registered predicates that ``GeneralPredicates`` already runs (``PodFitsPorts`` is an alias).
GENERAL_PREDICATES_MEMBERS = frozenset(
    {"PodFitsResources", "HostName", "PodFitsHostPorts", "PodFitsPorts", "MatchNodeSelector"}
)
GENERAL_PREDICATES = "GeneralPredicates"
#: Its default weight (10000) is meant to dominate every other priority.
NODE_PREFER_AVOID_PODS = "NodePreferAvoidPodsPriority"
INTER_POD_AFFINITY = "InterPodAffinityPriority"
#: How many times the sum of the other weights one priority's weight may be before it is flagged.
DOMINANCE_FACTOR = 100

EXTENDERS_IGNORED = "extenders is ignored without apiVersion: v1 (1.9 reads extenderConfigs)"
EXTENDER_CONFIGS_IGNORED = "extenderConfigs is ignored with apiVersion: v1 (the v1 key is extenders)"


def lint_policy(
    policy: Policy,
    known_predicates: Set[str] | None = None,
    known_priorities: Set[str] | None = None,
) -> list[str]:
    """Warnings for ``policy``, in the order: ignored keys, predicates, priorities, extenders.

    With ``known_predicates``/``known_priorities`` (the registered names) it also flags entries whose
    argument replaces a registered algorithm of the same name for the whole process.
    """
    return [
        *_ignored_keys(policy),
        *_absent_lists(policy),
        *_resource_check(policy),
        *_general_predicates_overlap(policy),
        *_duplicates("predicates", policy.predicates),
        *_replaced_builtins("predicates", "predicate", policy.predicates, known_predicates),
        *_dominant_weights(policy),
        *_duplicates("priorities", policy.priorities),
        *_replaced_builtins("priorities", "priority", policy.priorities, known_priorities),
        *_hard_affinity_weight_unused(policy),
        *_extender_timeouts(policy),
    ]


def _ignored_keys(policy: Policy) -> list[str]:
    warnings = []
    for path in policy.ignored_keys:
        if path == "extenders":
            warnings.append(EXTENDERS_IGNORED)
        elif path == "extenderConfigs":
            warnings.append(EXTENDER_CONFIGS_IGNORED)
        else:
            warnings.append(f"{path}: unknown key, ignored")
    return warnings


def _absent_lists(policy: Policy) -> list[str]:
    warnings = []
    if policy.predicates is None:
        warnings.append(
            "predicates: not set: in 1.9 this means no predicates beyond the mandatory CheckNodeCondition "
            "(1.10 uses the DefaultProvider predicates instead); list them, or write [] to mean none"
        )
    if policy.priorities is None:
        scoring = (
            "feasible nodes are ranked by the extenders' scores only"
            if any(extender.prioritize_verb for extender in policy.extenders or [])
            else "every feasible node scores equally: pure round-robin"
        )
        warnings.append(
            f"priorities: not set: in 1.9 {scoring} (1.10 uses the DefaultProvider priorities instead); "
            "list them, or write [] to mean none"
        )
    return warnings


def _plain_names(entries: list[PredicatePolicy] | None) -> set[str]:
    """Names of entries without an argument (those refer to registered algorithms)."""
    return {entry.name for entry in entries or [] if entry.argument is None}


def _resource_check(policy: Policy) -> list[str]:
    if not policy.predicates or _plain_names(policy.predicates) & {GENERAL_PREDICATES, "PodFitsResources"}:
        return []
    return [
        "predicates: neither GeneralPredicates nor PodFitsResources is listed: pods may be placed on nodes "
        "without room and rejected by the kubelet"
    ]


def _general_predicates_overlap(policy: Policy) -> list[str]:
    if GENERAL_PREDICATES not in _plain_names(policy.predicates):
        return []
    return [
        f"predicates[{index}]: {entry.name} is already part of GeneralPredicates: it is evaluated twice "
        "and its failures are counted twice"
        for index, entry in enumerate(policy.predicates or [])
        if entry.argument is None and entry.name in GENERAL_PREDICATES_MEMBERS
    ]


def _duplicates(section: str, entries: list[PredicatePolicy] | list[PriorityPolicy] | None) -> list[str]:
    first_seen: dict[str, int] = {}
    warnings = []
    for index, entry in enumerate(entries or []):
        if entry.name in first_seen:
            warnings.append(
                f"{section}[{index}]: {entry.name} is listed again (first at {section}[{first_seen[entry.name]}]): "
                "the last entry wins"
            )
        else:
            first_seen[entry.name] = index
    return warnings


def _replaced_builtins(
    section: str,
    noun: str,
    entries: list[PredicatePolicy] | list[PriorityPolicy] | None,
    known: Set[str] | None,
) -> list[str]:
    if known is None:
        return []
    return [
        f"{section}[{index}]: {entry.name} has an argument, so it replaces the registered {noun} {entry.name} "
        "for the whole process"
        for index, entry in enumerate(entries or [])
        if entry.argument is not None and entry.name in known
    ]


def _dominant_weights(policy: Policy) -> list[str]:
    # Duplicate names collapse upstream (last entry wins), so weigh the effective entries only.
    effective = {entry.name: (index, entry.weight) for index, entry in enumerate(policy.priorities or [])}
    total = sum(weight for _, weight in effective.values() if weight > 0)
    warnings = []
    for name, (index, weight) in effective.items():
        others = total - weight
        if name == NODE_PREFER_AVOID_PODS or weight <= 0 or others <= 0:
            continue
        if weight > DOMINANCE_FACTOR * others:
            warnings.append(
                f"priorities[{index}].weight: {name} has weight {weight}, more than {DOMINANCE_FACTOR} times "
                f"the sum of all other priority weights ({others}): the others can only break its ties"
            )
    return warnings


def _hard_affinity_weight_unused(policy: Policy) -> list[str]:
    if not policy.hard_pod_affinity_symmetric_weight or policy.priorities is None:
        return []
    if INTER_POD_AFFINITY in {entry.name for entry in policy.priorities}:
        return []
    return [
        "hardPodAffinitySymmetricWeight: set, but InterPodAffinityPriority is not listed, and it is the only "
        "priority that uses it"
    ]


def _extender_timeouts(policy: Policy) -> list[str]:
    return [
        f"extenders[{index}].httpTimeout: not set; each extender call may block scheduling for the 5s default"
        for index, extender in enumerate(policy.extenders or [])
        if extender.http_timeout_ns == 0
    ]
