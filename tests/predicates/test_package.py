"""The package's public names and the 1.10 evaluation order."""

from __future__ import annotations

import inspect

import policy_scheduler.predicates as predicates


def test_public_api() -> None:
    plain = [
        "pod_fits_resources", "pod_fits_host", "pod_fits_host_ports", "pod_match_node_selector", "general_predicates",
        "no_disk_conflict", "pod_tolerates_node_taints", "check_node_memory_pressure", "check_node_disk_pressure",
        "check_node_condition",
    ]
    for name in plain:
        assert list(inspect.signature(getattr(predicates, name)).parameters) == ["pod", "meta", "node_info"]
    factories = {
        "new_max_pd_volume_count_predicate": ["filter_name", "args"],
        "new_volume_zone_predicate": ["args"],
        "new_pod_affinity_predicate": ["args"],
        "new_service_affinity_predicate": ["args", "labels"],
        "new_node_label_predicate": ["labels", "presence"],
        "new_volume_binding_predicate": ["args"],
    }
    for name, params in factories.items():
        assert list(inspect.signature(getattr(predicates, name)).parameters) == params
    assert predicates.pod_fits_ports is predicates.pod_fits_host_ports
    assert set(predicates.__all__) <= set(dir(predicates))


def test_ordering_is_the_1_10_list() -> None:
    """generic_scheduler.md §3.1 (predicates.Ordering() in v1.10.0)."""
    assert predicates.ORDERING == [
        "CheckNodeCondition", "CheckNodeUnschedulable", "GeneralPredicates", "HostName", "PodFitsHostPorts",
        "MatchNodeSelector", "PodFitsResources", "NoDiskConflict", "PodToleratesNodeTaints",
        "PodToleratesNodeNoExecuteTaints", "CheckNodeLabelPresence", "CheckServiceAffinity", "MaxEBSVolumeCount",
        "MaxGCEPDVolumeCount", "MaxAzureDiskVolumeCount", "CheckVolumeBinding", "NoVolumeZoneConflict",
        "CheckNodeMemoryPressure", "CheckNodeDiskPressure", "MatchInterPodAffinity",
    ]
