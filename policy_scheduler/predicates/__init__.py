"""Fit predicates of kube-scheduler 1.9 (upstream ``plugin/pkg/scheduler/algorithm/predicates``).

Plain predicates have the contract ``(pod, meta, node_info) -> (fits, reasons)`` and raise
:class:`~policy_scheduler.errors.PredicateError` when they cannot decide; factories take
:class:`~policy_scheduler.algorithm.PluginFactoryArgs` and return such a predicate. Per-pod data lives
in :class:`PredicateMetadata`, built once per scheduling attempt by :class:`PredicateMetadataFactory`.
"""

from __future__ import annotations

from .disk_conflict import no_disk_conflict
from .general import general_predicates
from .host import pod_fits_host
from .inter_pod_affinity import new_pod_affinity_predicate
from .label_presence import new_node_label_predicate
from .metadata import MatchingAntiAffinityTerm, MetadataError, PredicateMetadata, PredicateMetadataFactory
from .node_conditions import check_node_condition, check_node_disk_pressure, check_node_memory_pressure
from .node_selector import pod_match_node_selector
from .ports import pod_fits_host_ports, pod_fits_ports
from .reasons import DESCRIPTIONS, describe
from .resources import pod_fits_resources
from .service_affinity import new_service_affinity_predicate
from .taints import pod_tolerates_node_taints
from .volume_binder import new_volume_binding_predicate
from .volume_count import (
    AZURE_DISK_VOLUME_FILTER_TYPE,
    EBS_VOLUME_FILTER_TYPE,
    GCE_PD_VOLUME_FILTER_TYPE,
    new_max_pd_volume_count_predicate,
)
from .volume_zone import new_volume_zone_predicate

#: 1.10's ``predicates.Ordering()``: the order in which a deterministic evaluator runs predicates
#: (``generic_scheduler.md`` §3.1). Names not in it are run afterwards, in ascending order.
ORDERING: list[str] = [
    "CheckNodeCondition",
    "CheckNodeUnschedulable",
    "GeneralPredicates",
    "HostName",
    "PodFitsHostPorts",
    "MatchNodeSelector",
    "PodFitsResources",
    "NoDiskConflict",
    "PodToleratesNodeTaints",
    "PodToleratesNodeNoExecuteTaints",
    "CheckNodeLabelPresence",
    "CheckServiceAffinity",
    "MaxEBSVolumeCount",
    "MaxGCEPDVolumeCount",
    "MaxAzureDiskVolumeCount",
    "CheckVolumeBinding",
    "NoVolumeZoneConflict",
    "CheckNodeMemoryPressure",
    "CheckNodeDiskPressure",
    "MatchInterPodAffinity",
]

__all__ = [
    "AZURE_DISK_VOLUME_FILTER_TYPE",
    "DESCRIPTIONS",
    "EBS_VOLUME_FILTER_TYPE",
    "GCE_PD_VOLUME_FILTER_TYPE",
    "ORDERING",
    "MatchingAntiAffinityTerm",
    "MetadataError",
    "PredicateMetadata",
    "PredicateMetadataFactory",
    "check_node_condition",
    "check_node_disk_pressure",
    "check_node_memory_pressure",
    "describe",
    "general_predicates",
    "new_max_pd_volume_count_predicate",
    "new_node_label_predicate",
    "new_pod_affinity_predicate",
    "new_service_affinity_predicate",
    "new_volume_binding_predicate",
    "new_volume_zone_predicate",
    "no_disk_conflict",
    "pod_fits_host",
    "pod_fits_host_ports",
    "pod_fits_ports",
    "pod_fits_resources",
    "pod_match_node_selector",
    "pod_tolerates_node_taints",
]
