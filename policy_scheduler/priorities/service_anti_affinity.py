"""ServiceAntiAffinity, the Policy's ``serviceAntiAffinity: {label}`` priority (upstream 1.9
``priorities/selector_spreading.go``: ``NewServiceAntiAffinityPriority``,
``CalculateAntiAffinityPriority``, ``getNodeClassificationByLabels``).

Spreads the pods of the incoming pod's (first) Service over the values of a node label: a labelled
candidate node scores ``10 * (n - pods of the service on nodes with the same label value) / n``,
unlabelled nodes score 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY, HostPriority, PluginFactoryArgs, PriorityFunction
from ..model.labels import selector_from_set

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod


def classify_nodes_by_label(nodes: list[Node], label: str) -> tuple[dict[str, str], list[str]]:
    """``getNodeClassificationByLabels``: ({labelled node name: label value}, [unlabelled node names])."""
    labelled: dict[str, str] = {}
    unlabelled: list[str] = []
    for node in nodes:
        if label in node.labels:
            labelled[node.name] = node.labels[label]
        else:
            unlabelled.append(node.name)
    return labelled, unlabelled


def new_service_anti_affinity_priority(args: PluginFactoryArgs, label: str) -> PriorityFunction:
    """``NewServiceAntiAffinityPriority(podLister, serviceLister, label)`` as a legacy whole-list function.

    Deliberate deviation from 1.9 (the reference's recommended fix): the returned scores are aligned to
    the candidate node order by host name, whereas 1.9 returned labelled nodes in random map order followed
    by unlabelled ones while its caller credited element *i* to candidate node *i*.
    """
    cluster = args.cluster

    def calculate_anti_affinity_priority(
        pod: Pod, node_infos: Mapping[str, NodeInfo], nodes: list[Node]
    ) -> list[HostPriority]:
        service_pods: list[Pod] = []
        services = cluster.get_pod_services(pod)
        if services:
            # Only the first service is considered, and only its pods in the incoming pod's namespace.
            selector = selector_from_set(services[0].selector)
            service_pods = [
                p for p in cluster.list_pods() if selector.matches(p.labels) and p.namespace == pod.namespace
            ]

        labelled, _ = classify_nodes_by_label(nodes, label)
        pod_counts: dict[str, int] = {}
        for p in service_pods:
            value = labelled.get(p.node_name)
            if value is None:
                continue
            pod_counts[value] = pod_counts.get(value, 0) + 1
        num_service_pods = len(service_pods)

        result: list[HostPriority] = []
        for node in nodes:
            value = labelled.get(node.name)
            if value is None:
                result.append(HostPriority(node.name, 0))
                continue
            f_score = float(MAX_PRIORITY)
            if num_service_pods > 0:
                f_score = float(MAX_PRIORITY) * (
                    float(num_service_pods - pod_counts.get(value, 0)) / float(num_service_pods)
                )
            result.append(HostPriority(node.name, int(f_score)))
        return result

    return calculate_anti_affinity_priority
