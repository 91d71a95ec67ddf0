"""DynamicResources, the score half (upstream ``dynamicresources.go`` ``Score`` / ``computeScore``, 1.36, in the
default profile with weight 2): a node where a claim's ``firstAvailable`` request gets an earlier subrequest
scores higher.

Per node, for each of the pod's claims (allocated already: its allocation; else the allocator's solution on
that node), every request with subrequests adds ``8 - i`` when its subrequest ``i`` was chosen
(``FirstAvailableDeviceRequestMaxSize - index``); a node without a solution scores 0. NormalizeScore is
``DefaultNormalizeScore(100)``: ``100 * score / max`` (all 0 when the largest is 0).

**Score scale.** As for PodTopologySpread (``priorities/topology_spread.py``): upstream's 0..100 becomes a 1.9
priority's 0..10 by Go integer arithmetic, ``score * 10 / 100``, then weighted. Under the cluster's rules it
applies, whatever the Policy names, to pods whose claims have a ``firstAvailable`` request
(:func:`policy_scheduler.factory.pod_scoped_algorithms`); every other pod would score 0 on every node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY, HostPriority, PluginFactoryArgs, PriorityFunction
from ..dra.claims import PodClaimError, claim_name
from ..features import Rules
from ..model.dra import FIRST_AVAILABLE_MAX_SIZE
from ..predicates.dynamic_resources import DynamicResourcesChecker

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.dra import ResourceClaim
    from ..model.node import Node
    from ..model.pod import Pod

NAME = "DynamicResources"
#: The default profile's weight of DynamicResources' score (``applyDynamicResources``, 1.36).
DEFAULT_WEIGHT = 2
MAX_NODE_SCORE = 100


def has_prioritized_list(cluster: ClusterState, pod: Pod) -> bool:
    """The pod (cluster rules) names a claim with a ``firstAvailable`` request."""
    if pod.rules is not Rules.CLUSTER or not pod.resource_claims:
        return False
    for entry in pod.resource_claims:
        try:
            name, _ = claim_name(pod, entry)
        except PodClaimError:
            continue
        claim = cluster.api_resource_claim(pod.namespace, name) if name else None
        if claim is not None and any(r.first_available for r in claim.spec.requests):
            return True
    return False


def compute_score(claims: list[ResourceClaim], chosen: list[set[str]]) -> int:
    """``computeScore``: ``chosen[i]`` holds the request names of claim ``i``'s allocation."""
    score = 0
    for claim, requests in zip(claims, chosen):
        for request in claim.spec.requests:
            for i, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in requests:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score


def new_dynamic_resources_priority(args: PluginFactoryArgs) -> PriorityFunction:
    checker = DynamicResourcesChecker(args.cluster)

    def dynamic_resources(pod: Pod, node_infos: Mapping[str, NodeInfo], nodes: list[Node]) -> list[HostPriority]:
        scores = [node_score(checker, pod, node_infos.get(node.name)) for node in nodes]
        top = max(scores, default=0)
        normalised = [MAX_NODE_SCORE * s // top if top else 0 for s in scores]
        return [HostPriority(node.name, s * MAX_PRIORITY // MAX_NODE_SCORE) for node, s in zip(nodes, normalised)]

    return dynamic_resources


def node_score(checker: DynamicResourcesChecker, pod: Pod, info: NodeInfo | None) -> int:
    """The node's raw score (0 where the claims have no allocation on it)."""
    if not checker.applies(pod):
        return 0
    state = checker.state(pod)
    if not state.claims or info is None or info.node is None:
        return 0
    reasons, solution = checker.filter(pod, info)
    if reasons:
        return 0
    pending = iter(solution or [])
    chosen = []
    for claim in state.claims:
        if claim.allocated:
            chosen.append({r.request for r in claim.results})
        else:
            chosen.append({r.request for r in next(pending, [])})
    return compute_score(state.claims, chosen)
