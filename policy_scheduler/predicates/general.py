"""GeneralPredicates (upstream ``predicates.GeneralPredicates``, ``noncriticalPredicates``,
``EssentialPredicates``): PodFitsResources, then PodFitsHost, PodFitsHostPorts, PodMatchNodeSelector.

All four run; their reasons are concatenated in that order. An error from any of them propagates at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .host import pod_fits_host
from .metadata import PredicateMetadata
from .node_selector import pod_match_node_selector
from .ports import pod_fits_host_ports
from .resources import pod_fits_resources

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

NONCRITICAL = (pod_fits_resources,)
ESSENTIAL = (pod_fits_host, pod_fits_host_ports, pod_match_node_selector)


def general_predicates(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Resources, host name, host ports and node selector, reasons concatenated in that order."""
    reasons: list[str] = []
    for predicate in NONCRITICAL + ESSENTIAL:
        fits, failed = predicate(pod, meta, node_info)
        if not fits:
            reasons.extend(failed)
    return not reasons, reasons
