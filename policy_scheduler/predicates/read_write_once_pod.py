"""ReadWriteOncePod: a claim with that access mode is used by one pod in the whole cluster (upstream's
VolumeRestrictions plugin, its ``ReadWriteOncePod`` half: 1.26 ``PreFilter``, 1.27+ ``Filter`` with
``AddPod`` / ``RemovePod``).

1.9 never knew the access mode, so this applies under the cluster's rules to every pod with such a claim,
whatever the Policy names (:func:`policy_scheduler.factory.pod_scoped_algorithms`). A pod whose
``ReadWriteOncePod`` claim another cached pod (bound or assumed) already uses fits no node, with the reason
of the cluster's line (``ClusterState.kubernetes_line``: 1.34 reworded it). The count is cluster-wide, as upstream's ``PVCRefCounts`` summed over the nodes; on a node copy
from which preemption removed pods, the removed users no longer count (1.32's ``RemovePod``), so a
higher-priority pod may preempt the holder on the holder's node. 1.26 checks this in PreFilter, where
preemption cannot remove the holder ("docs/deviations.md").

Claims that are missing are left to CheckVolumeBinding, which reports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cache.cluster import ListerError
from ..features import KubernetesLine, by_line
from ..model.pod import pod_claim_names
from ..model.volumes import READ_WRITE_ONCE_POD
from .metadata import PredicateMetadata

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

NAME = "ReadWriteOncePod"
#: ``volumerestrictions.ErrReasonReadWriteOncePodConflict`` of 1.22 to 1.33 (1.26, 1.32) ...
ERR_READ_WRITE_ONCE_POD_CONFLICT_1_22 = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode")
#: ... and of 1.34 on (1.36): the newest line's.
ERR_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod")
_CONFLICT_BY_LINE = {(1, 22): ERR_READ_WRITE_ONCE_POD_CONFLICT_1_22, (1, 34): ERR_READ_WRITE_ONCE_POD_CONFLICT}


def read_write_once_pod_conflict(line: KubernetesLine) -> str:
    """The reason of a ReadWriteOncePod conflict as upstream's scheduler of ``line`` words it."""
    return by_line(line, _CONFLICT_BY_LINE)


def read_write_once_pod_claims(cluster: ClusterState, pod: Pod) -> list[tuple[str, str]]:
    """The pod's claims (namespace, name) that exist and ask for ``ReadWriteOncePod``."""
    out = []
    for name in pod_claim_names(pod):
        try:
            pvc = cluster.get_pvc(pod.namespace, name)
        except ListerError:
            continue
        if READ_WRITE_ONCE_POD in pvc.access_modes:
            out.append(pvc.key)
    return out


def _users_on(node_info: NodeInfo | None, key: tuple[str, str]) -> int:
    if node_info is None:
        return 0
    return sum(1 for p in node_info.pods if p.namespace == key[0] and key[1] in pod_claim_names(p))


class ReadWriteOncePodChecker:
    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster

    def applies(self, pod: Pod) -> bool:
        return bool(pod.volumes) and bool(read_write_once_pod_claims(self.cluster, pod))

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        for key in read_write_once_pod_claims(self.cluster, pod):
            users = self.cluster.claim_users.get(key, 0)
            if users and node_info is not None and node_info.node is not None:
                cached = self.cluster.node_infos.get(node_info.node.name)
                if cached is not node_info:  # preemption's copy: count what it holds, not what the cache holds
                    users += _users_on(node_info, key) - _users_on(cached, key)
            if users > 0:
                return False, [read_write_once_pod_conflict(self.cluster.kubernetes_line)]
        return True, []


def new_read_write_once_pod_predicate(args: PluginFactoryArgs) -> FitPredicate:
    return ReadWriteOncePodChecker(args.cluster)
