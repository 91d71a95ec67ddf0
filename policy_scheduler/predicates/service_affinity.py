"""CheckServiceAffinity, a policy-defined predicate (upstream ``NewServiceAffinityPredicate``,
``ServiceAffinity.serviceAffinityMetadataProducer`` and ``checkServiceAffinity``).

Pods of the same service are kept on nodes with equal values for the configured labels. Labels the pod
pins in its ``nodeSelector`` are taken from there; the others are copied from the node of the first
already-scheduled pod that carries all the incoming pod's labels (in its namespace), when the pod belongs
to a service. "First" is the first such pod in the cluster cache's order (insertion order) — upstream's
order is unspecified.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..cache.cluster import ListerError
from ..errors import PredicateError
from ..model.labels import selector_from_set
from .metadata import MetadataProducer, PredicateMetadata, require_node
from .reasons import ERR_SERVICE_AFFINITY_VIOLATED

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod
    from ..model.workloads import Service

log = logging.getLogger(__name__)


def find_labels_in_set(labels_to_keep: Sequence[str], selector: Mapping[str, str]) -> dict[str, str]:
    """``FindLabelsInSet``: the listed keys that ``selector`` has, with their values."""
    return {label: selector[label] for label in labels_to_keep if label in selector}


def add_unset_labels_to_map(target: dict[str, str], labels_to_add: Sequence[str], label_set: Mapping[str, str]) -> None:
    """``AddUnsetLabelsToMap``: backfill missing keys from ``label_set`` without overwriting."""
    for label in labels_to_add:
        if label not in target and label in label_set:
            target[label] = label_set[label]


def filter_pods_by_namespace(pods: Sequence[Pod], namespace: str) -> list[Pod]:
    return [p for p in pods if p.namespace == namespace]


def filter_out_pods(node_info: NodeInfo | None, pods: Sequence[Pod]) -> list[Pod]:
    """``NodeInfo.FilterOutPods``: drop pods of this node that its NodeInfo does not hold."""
    node = node_info.node if node_info is not None else None
    if node is None:
        return list(pods)
    keys = {p.key for p in node_info.pods}  # type: ignore[union-attr]
    return [p for p in pods if p.node_name != node.name or p.key in keys]


class ServiceAffinity:
    def __init__(self, cluster: ClusterState, labels: Sequence[str]) -> None:
        self.cluster = cluster
        self.labels = tuple(labels)

    def precompute(self, meta: PredicateMetadata) -> None:
        """``serviceAffinityMetadataProducer``: the pod's services and the cached pods matching its labels."""
        pod = meta.pod
        if pod is None:
            log.error("Cannot precompute service affinity, a pod is required to calculate service affinity.")
            return
        meta.service_affinity_in_use = True
        services, pods = self._compute(pod)
        meta.service_affinity_services = services
        meta.service_affinity_matching_pods = pods

    def _compute(self, pod: Pod) -> tuple[list[Service], list[Pod]]:
        try:
            services = list(self.cluster.get_pod_services(pod))
        except ListerError as e:
            log.error("Some Error were found while precomputing svc affinity: \nservices:%s , \npods:%s", e, None)
            services = []
        selector = selector_from_set(pod.labels)
        matches = [p for p in self.cluster.list_pods() if selector.matches(p.labels)]
        return services, filter_pods_by_namespace(matches, pod.namespace)

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        if meta is not None and (meta.service_affinity_matching_pods is not None or meta.service_affinity_services is not None):
            services = meta.service_affinity_services or []
            pods = meta.service_affinity_matching_pods or []
        else:
            services, pods = self._compute(pod)
        filtered = filter_out_pods(node_info, pods)
        node = require_node(node_info)
        affinity_labels = find_labels_in_set(self.labels, pod.node_selector)
        if len(self.labels) > len(affinity_labels) and services and filtered:
            first = filtered[0]
            try:
                first_node = self.cluster.get_node(first.node_name)
            except ListerError as e:
                raise PredicateError(str(e)) from None
            add_unset_labels_to_map(affinity_labels, self.labels, first_node.labels)
        if selector_from_set(affinity_labels).matches(node.labels):
            return True, []
        return False, [ERR_SERVICE_AFFINITY_VIOLATED]


def new_service_affinity_predicate(args: PluginFactoryArgs, labels: Sequence[str]) -> tuple[FitPredicate, MetadataProducer]:
    """The ServiceAffinity predicate for ``labels`` and its metadata precompute function."""
    affinity = ServiceAffinity(args.cluster, labels)
    return affinity, affinity.precompute
