"""The 1.9 priority functions (upstream ``plugin/pkg/scheduler/algorithm/priorities``).

Map functions are ``(pod, meta, node_info) -> int``; reduce functions ``(pod, meta, node_infos,
results) -> None``; legacy whole-list functions ``(pod, node_infos, nodes) -> list[HostPriority]``.
``meta`` is the :class:`PriorityMetadata` produced once per pod by :class:`PriorityMetadataFactory`
(or None: each function then recomputes what it needs).
"""

from .balanced_allocation import balanced_resource_allocation_map
from .equal import equal_priority_map
from .image_locality import image_locality_priority_map
from .interpod_affinity import new_inter_pod_affinity_priority
from .least_requested import least_requested_priority_map
from .metadata import PriorityMetadata, PriorityMetadataFactory
from .most_requested import most_requested_priority_map
from .node_affinity import calculate_node_affinity_priority_map, calculate_node_affinity_priority_reduce
from .node_label import new_node_label_priority
from .node_prefer_avoid_pods import calculate_node_prefer_avoid_pods_priority_map
from .reduce import normalize_reduce
from .resource_limits import resource_limits_priority_map
from .selector_spreading import new_selector_spread_priority
from .service_anti_affinity import new_service_anti_affinity_priority
from .taint_toleration import compute_taint_toleration_priority_map, compute_taint_toleration_priority_reduce

__all__ = [
    "PriorityMetadata",
    "PriorityMetadataFactory",
    "balanced_resource_allocation_map",
    "calculate_node_affinity_priority_map",
    "calculate_node_affinity_priority_reduce",
    "calculate_node_prefer_avoid_pods_priority_map",
    "compute_taint_toleration_priority_map",
    "compute_taint_toleration_priority_reduce",
    "equal_priority_map",
    "image_locality_priority_map",
    "least_requested_priority_map",
    "most_requested_priority_map",
    "new_inter_pod_affinity_priority",
    "new_node_label_priority",
    "new_selector_spread_priority",
    "new_service_anti_affinity_priority",
    "normalize_reduce",
    "resource_limits_priority_map",
]
