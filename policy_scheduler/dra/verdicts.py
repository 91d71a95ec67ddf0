"""The allocator's verdicts per node, kept across pods: a pod whose claims to allocate have the same *signature*
as an earlier pod's (the same specs: requests, classes, selectors, counts, allocation modes, admin access,
tolerations, capacity, subrequests, constraints, config; not the same claims) gets the node's earlier verdict
while nothing that verdict depends on has changed, its devices re-labelled for its own claims.

What :meth:`~policy_scheduler.dra.allocator.Allocator.allocate` reads for one node, and what keeps each valid:

* the node's name and labels (its pools, node selectors, per-device node selection): the entry is per node name
  and holds the labels it was decided for (compared on use);
* the slices (the node's pools: on the node, by node selector, ``allNodes``) and the classes: every entry is
  dropped when a slice or a class changes (``ClusterState.dra_verdicts`` is cleared);
* the devices of those pools that claims hold (allocated or assumed, dedicated or shared, capacity consumed):
  the entry holds the versions of the node's pools (``ClusterState.dra_pool_versions``, bumped for each pool a
  claim's results enter or leave) and is used only while they are the same;
* the compiler (CEL environment): part of the signature.

Not kept: a node whose pools have shared counters (the allocator keeps a pool's available counters by pool name
for the whole pod, so one node's answer may depend on another node's pool; it is decided afresh every time), an
error of the allocator (its message names the claim; it is raised afresh), and a solution with a device that
has binding conditions (refused afresh). What is kept: a solution, "cannot allocate" (None), and ``invalid
resource pools were encountered`` (the message names nothing of the pod).

A solution's share IDs name the claim (:func:`~policy_scheduler.dra.allocator.share_id_of`): re-labelled, they
are derived again for the new claim, as the allocator would have derived them.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..model.dra import RequestSpec, ResourceClaim
from .allocator import Allocator, DeviceResult, InvalidPoolsError, share_id_of

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState

INVALID_POOLS = "invalid resource pools were encountered"
_INVALID = object()  # the kept outcome of InvalidPoolsError
#: ``ClusterState.dra_verdicts[POOL_NODES]``: each pool -> the nodes whose kept verdicts read it (node names are
#: strings: a tuple key is apart from them).
POOL_NODES = ("pool nodes",)
#: Signatures kept per node (more, and the node's verdicts are dropped).
MAX_SIGNATURES = 64


def claims_signature(claims: Sequence[ResourceClaim], compiler: Any) -> Hashable:
    """What the allocator reads of the claims (their specs, in order), and the compiler."""
    return (compiler, tuple(json.dumps(c.raw.get("spec"), sort_keys=True, separators=(",", ":")) for c in claims))


def _specs(claim: ResourceClaim) -> dict[str, RequestSpec]:
    """The claim's request specs by the name a result carries: ``request`` or ``request/subrequest``."""
    out: dict[str, RequestSpec] = {}
    for request in claim.spec.requests:
        if request.exactly is not None:
            out[request.name] = request.exactly
        for sub in request.first_available:
            out[f"{request.name}/{sub.name}"] = sub
    return out


def relabel(solution: list[list[DeviceResult]], claims: Sequence[ResourceClaim]) -> list[list[DeviceResult]]:
    """A solution found for other claims of the same signature, for ``claims``: their request specs, their
    share IDs."""
    out = []
    for claim, devices in zip(claims, solution):
        specs = _specs(claim)
        out.append([DeviceResult(r.request, r.device_id, r.device, r.slice, specs[r.request],
                                 share_id_of(claim, r.request, r.device_id, i) if r.share_id else "", r.consumed)
                    for i, r in enumerate(devices)])
    return out


def allocate(cluster: ClusterState, allocator: Allocator, signature: Hashable, node_name: str,
             labels: Mapping[str, str], claims: Sequence[ResourceClaim]) -> tuple[list[list[DeviceResult]] | None, Any]:
    """``allocator.allocate(node_name, labels, claims)``, from the node's kept verdict where it is still valid; and
    the claims the solution's devices were found for (``claims``, or an earlier pod's claims of the same
    signature: :func:`relabel` makes it ``claims``'s solution)."""
    if not cluster.dra_keep_verdicts:
        return allocator.allocate(node_name, labels, claims), claims
    pools = allocator.pools_for(node_name, labels)
    for p in pools:
        if p.counter_sets:
            return allocator.allocate(node_name, labels, claims), claims
    get = cluster.dra_pool_versions.get
    versions = tuple([get((p.driver, p.pool), 0) for p in pools])
    per_node = cluster.dra_verdicts.get(node_name)
    if per_node is None or len(per_node) >= MAX_SIGNATURES:
        per_node = cluster.dra_verdicts[node_name] = {}
    kept = per_node.get(signature)
    if kept is not None and kept[0] == versions and kept[1] == labels:
        outcome = kept[2]
        if outcome is _INVALID:
            raise InvalidPoolsError(INVALID_POOLS)
        return outcome, kept[3]
    pool_nodes = cluster.dra_verdicts.get(POOL_NODES)
    if pool_nodes is None:
        pool_nodes = cluster.dra_verdicts[POOL_NODES] = {}
    for p in pools:
        pool_nodes.setdefault((p.driver, p.pool), set()).add(node_name)
    try:
        solution = allocator.allocate(node_name, labels, claims)
    except InvalidPoolsError as e:
        if e.message == INVALID_POOLS:
            per_node[signature] = (versions, dict(labels), _INVALID, claims)
        raise
    per_node[signature] = (versions, dict(labels), solution, claims)
    return solution, claims
