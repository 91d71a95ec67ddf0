"""SelectorSpreadPriority and ServiceSpreadingPriority (upstream ``priorities/selector_spreading.go``:
``NewSelectorSpreadPriority``, ``CalculateSpreadPriorityMap``, ``CalculateSpreadPriorityReduce``;
``pkg/util/node.GetZoneKey``).

Map: the number of pods on the node, in the incoming pod's namespace and not being deleted, matched by
any selector of a Service / RC / ReplicaSet / StatefulSet that selects the incoming pod. Reduce: fewer
matching pods score higher, per node and (with 2/3 of the weight) per zone when nodes carry zone labels
(the beta labels in 1.9; under the cluster's rules the GA ``topology.kubernetes.io`` ones first).

ServiceSpreadingPriority is this priority built with ``services_only=True``. **1.9 quirk, kept on
purpose:** the map step prefers the selectors of the shared priority metadata whenever metadata is
present, and that metadata always holds the RC/RS/StatefulSet selectors too, so ServiceSpreadingPriority
scores exactly like SelectorSpreadPriority; only without metadata does it count Service selectors alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..algorithm import (
    MAX_PRIORITY,
    HostPriority,
    PluginFactoryArgs,
    PriorityMapFunction,
    PriorityReduceFunction,
)
from ..features import Rules
from .metadata import PriorityMetadata, checked_node_info, get_selectors

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod

LABEL_ZONE_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE_FAILURE_DOMAIN = "failure-domain.beta.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# When zone information is present, 2/3 of the weighting goes to zone spreading, 1/3 to node spreading.
ZONE_WEIGHTING = 2.0 / 3.0


def get_zone_key(node: Node | None, ga_labels: bool = False) -> str:
    """``GetZoneKey``: ``"<region>:\\x00:<zone>"``, or "" when the node has neither label. 1.9 reads the
    beta labels; ``ga_labels`` (the cluster's rules) reads ``topology.kubernetes.io/zone|region`` first
    and the beta label where the GA one is absent, as 1.17+ does."""
    if node is None or not node.labels:
        return ""
    labels = node.labels
    if ga_labels:
        region = labels.get(LABEL_TOPOLOGY_REGION, labels.get(LABEL_ZONE_REGION, ""))
        zone = labels.get(LABEL_TOPOLOGY_ZONE, labels.get(LABEL_ZONE_FAILURE_DOMAIN, ""))
    else:
        region = labels.get(LABEL_ZONE_REGION, "")
        zone = labels.get(LABEL_ZONE_FAILURE_DOMAIN, "")
    if region == "" and zone == "":
        return ""
    return region + ":\x00:" + zone


def new_selector_spread_priority(
    args: PluginFactoryArgs, services_only: bool = False
) -> tuple[PriorityMapFunction, PriorityReduceFunction]:
    """``NewSelectorSpreadPriority``: the (map, reduce) pair.

    ``services_only=True`` builds ServiceSpreadingPriority (empty RC/RS/StatefulSet listers), which the
    metadata quirk described in the module docstring makes identical whenever metadata is present.
    """
    cluster = args.cluster

    def calculate_spread_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
        info = checked_node_info(node_info)
        if isinstance(meta, PriorityMetadata):
            selectors = meta.pod_selectors
        else:
            selectors = get_selectors(pod, cluster, services_only)
        if not selectors:
            return 0
        count = 0
        namespace = pod.namespace
        for node_pod in info.pods:
            if node_pod.namespace != namespace:
                continue
            # A pod being deleted (e.g. the failed pod this one replaces) does not count.
            if node_pod.deletion_timestamp is not None:
                continue
            labels = node_pod.labels
            if any(s.matches(labels) for s in selectors):
                count += 1
        return count

    return calculate_spread_priority_map, calculate_spread_priority_reduce


def calculate_spread_priority_reduce(
    pod: Pod | None, meta: object, node_infos: Mapping[str, NodeInfo], results: list[HostPriority]
) -> None:
    """``CalculateSpreadPriorityReduce``: combine node counts and (candidate-node) zone counts."""
    counts_by_zone: dict[str, int] = {}
    max_count_by_node = 0
    zones: list[str] = []
    ga_labels = pod is not None and pod.rules is Rules.CLUSTER
    for r in results:
        if r.score > max_count_by_node:
            max_count_by_node = r.score
        info = node_infos.get(r.host)
        zone = get_zone_key(info.node if info is not None else None, ga_labels)
        zones.append(zone)
        if zone == "":
            continue
        counts_by_zone[zone] = counts_by_zone.get(zone, 0) + r.score

    max_count_by_zone = 0
    for c in counts_by_zone.values():
        if c > max_count_by_zone:
            max_count_by_zone = c
    have_zones = len(counts_by_zone) != 0

    max_priority = float(MAX_PRIORITY)
    for r, zone in zip(results, zones, strict=True):
        f_score = max_priority
        if max_count_by_node > 0:
            f_score = max_priority * (float(max_count_by_node - r.score) / float(max_count_by_node))
        if have_zones and zone != "":
            zone_score = max_priority
            if max_count_by_zone > 0:
                zone_score = max_priority * (float(max_count_by_zone - counts_by_zone[zone]) / float(max_count_by_zone))
            f_score = (f_score * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
        r.score = int(f_score)
