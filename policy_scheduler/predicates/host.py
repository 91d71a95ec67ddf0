"""PodFitsHost, registered as ``HostName`` (upstream ``predicates.PodFitsHost``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .metadata import PredicateMetadata, require_node
from .reasons import ERR_POD_NOT_MATCH_HOST_NAME

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod


def pod_fits_host(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """A pod naming a node (``spec.nodeName``) fits only that node; a pod naming none fits anywhere."""
    if not pod.node_name:
        return True, []
    node = require_node(node_info)
    if pod.node_name == node.name:
        return True, []
    return False, [ERR_POD_NOT_MATCH_HOST_NAME]
