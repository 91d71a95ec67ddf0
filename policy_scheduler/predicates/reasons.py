"""Predicate failure reasons (upstream ``algorithm/predicates/error.go``).

Every constant holds the exact 1.9 ``GetReason()`` text, which is what 1.9 puts into events, pod
conditions and the ``0/N nodes are available: ...`` message. :data:`DESCRIPTIONS` maps each 1.9 text to
the human wording 1.10 introduced, for the offline ``explain`` table; :func:`describe` applies it and
passes through anything it does not know (``Insufficient <resource>``, extender messages).
"""

from __future__ import annotations

ERR_DISK_CONFLICT = "NoDiskConflict"
ERR_VOLUME_ZONE_CONFLICT = "NoVolumeZoneConflict"
ERR_NODE_SELECTOR_NOT_MATCH = "MatchNodeSelector"
ERR_POD_AFFINITY_NOT_MATCH = "MatchInterPodAffinity"
ERR_POD_AFFINITY_RULES_NOT_MATCH = "PodAffinityRulesNotMatch"
ERR_POD_ANTI_AFFINITY_RULES_NOT_MATCH = "PodAntiAffinityRulesNotMatch"
ERR_EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH = "ExistingPodsAntiAffinityRulesNotMatch"
ERR_TAINTS_TOLERATIONS_NOT_MATCH = "PodToleratesNodeTaints"
ERR_POD_NOT_MATCH_HOST_NAME = "HostName"
ERR_POD_NOT_FITS_HOST_PORTS = "PodFitsHostPorts"
ERR_NODE_LABEL_PRESENCE_VIOLATED = "CheckNodeLabelPresence"
ERR_SERVICE_AFFINITY_VIOLATED = "CheckServiceAffinity"
ERR_MAX_VOLUME_COUNT_EXCEEDED = "MaxVolumeCount"
ERR_NODE_UNDER_MEMORY_PRESSURE = "NodeUnderMemoryPressure"
ERR_NODE_UNDER_DISK_PRESSURE = "NodeUnderDiskPressure"
ERR_NODE_OUT_OF_DISK = "NodeOutOfDisk"
ERR_NODE_NOT_READY = "NodeNotReady"
ERR_NODE_NETWORK_UNAVAILABLE = "NodeNetworkUnavailable"
ERR_NODE_UNSCHEDULABLE = "NodeUnschedulable"
ERR_NODE_UNKNOWN_CONDITION = "NodeUnknownCondition"
ERR_VOLUME_NODE_CONFLICT = "VolumeNodeAffinityConflict"
ERR_VOLUME_BIND_CONFLICT = "VolumeBindingNoMatch"

#: Prefix of :class:`~policy_scheduler.algorithm.InsufficientResource` reasons.
INSUFFICIENT_RESOURCE_PREFIX = "Insufficient "

#: 1.9 reason text -> 1.10 human-readable text.
DESCRIPTIONS: dict[str, str] = {
    ERR_DISK_CONFLICT: "node(s) had no available disk",
    ERR_VOLUME_ZONE_CONFLICT: "node(s) had no available volume zone",
    ERR_NODE_SELECTOR_NOT_MATCH: "node(s) didn't match node selector",
    ERR_POD_AFFINITY_NOT_MATCH: "node(s) didn't match pod affinity/anti-affinity",
    ERR_POD_AFFINITY_RULES_NOT_MATCH: "node(s) didn't match pod affinity rules",
    ERR_POD_ANTI_AFFINITY_RULES_NOT_MATCH: "node(s) didn't match pod anti-affinity rules",
    ERR_EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH: "node(s) didn't satisfy existing pods anti-affinity rules",
    ERR_TAINTS_TOLERATIONS_NOT_MATCH: "node(s) had taints that the pod didn't tolerate",
    ERR_POD_NOT_MATCH_HOST_NAME: "node(s) didn't match the requested hostname",
    ERR_POD_NOT_FITS_HOST_PORTS: "node(s) didn't have free ports for the requested pod ports",
    ERR_NODE_LABEL_PRESENCE_VIOLATED: "node(s) didn't have the requested labels",
    ERR_SERVICE_AFFINITY_VIOLATED: "node(s) didn't match service affinity",
    ERR_MAX_VOLUME_COUNT_EXCEEDED: "node(s) exceed max volume count",
    ERR_NODE_UNDER_MEMORY_PRESSURE: "node(s) had memory pressure",
    ERR_NODE_UNDER_DISK_PRESSURE: "node(s) had disk pressure",
    ERR_NODE_OUT_OF_DISK: "node(s) were out of disk space",
    ERR_NODE_NOT_READY: "node(s) were not ready",
    ERR_NODE_NETWORK_UNAVAILABLE: "node(s) had unavailable network",
    ERR_NODE_UNSCHEDULABLE: "node(s) were unschedulable",
    ERR_NODE_UNKNOWN_CONDITION: "node(s) had unknown conditions",
    ERR_VOLUME_NODE_CONFLICT: "node(s) had volume node affinity conflict",
    ERR_VOLUME_BIND_CONFLICT: "node(s) didn't find available persistent volumes to bind",
}

#: Every fixed 1.9 reason text (``Insufficient <resource>`` is open-ended and not listed).
ALL_REASONS: frozenset[str] = frozenset(DESCRIPTIONS)


def describe(reason: str) -> str:
    """The 1.10 wording of a 1.9 reason; ``Insufficient <r>`` and unknown texts are returned unchanged."""
    return DESCRIPTIONS.get(reason, reason)


def is_insufficient_resource(reason: str) -> bool:
    """True for ``Insufficient <resource>`` reasons."""
    return reason.startswith(INSUFFICIENT_RESOURCE_PREFIX)


class UnresolvableReason(str):
    """A reason upstream gives as ``UnschedulableAndUnresolvable`` whose text varies (it names objects): evicting
    pods cannot cure it, and preemption's ``nodesWherePreemptionMightHelp`` skips the node (the fixed texts of
    that kind are listed in ``core/preemption.py``)."""


class PreFilterReason(UnresolvableReason):
    """A PreFilter's rejection (upstream: the pod is unschedulable on every node before any Filter runs): the
    reason every node gets; ``FitError`` then reads ``0/N nodes are available: <reason>.``, as upstream's
    ``Diagnosis.PreFilterMsg``, instead of counting it per node."""
