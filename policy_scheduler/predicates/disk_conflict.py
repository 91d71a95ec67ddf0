"""NoDiskConflict (upstream ``predicates.NoDiskConflict`` and ``isVolumeConflict``).

Only inline pod volumes are compared (PVC-backed volumes are not resolved):

* GCE PD: same ``pdName`` unless both mounts are read-only;
* AWS EBS: same ``volumeID`` (read-only does not help);
* iSCSI: same ``iqn`` unless both are read-only;
* Ceph RBD: overlapping ``monitors`` and same ``pool`` and ``image``, unless both are read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .metadata import PredicateMetadata
from .reasons import ERR_DISK_CONFLICT

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

_CHECKED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def _source(volume: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    src = volume.get(kind)
    return src if isinstance(src, Mapping) else None


def _both_read_only(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return bool(a.get("readOnly")) and bool(b.get("readOnly"))


def _gce_conflict(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("pdName") or "") == (b.get("pdName") or "") and not _both_read_only(a, b)


def _ebs_conflict(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("volumeID") or "") == (b.get("volumeID") or "")


def _iscsi_conflict(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (a.get("iqn") or "") == (b.get("iqn") or "") and not _both_read_only(a, b)


def _rbd_conflict(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    overlap = bool(set(a.get("monitors") or ()) & set(b.get("monitors") or ()))
    return (
        overlap
        and (a.get("pool") or "") == (b.get("pool") or "")
        and (a.get("image") or "") == (b.get("image") or "")
        and not _both_read_only(a, b)
    )


_RULES = (
    ("gcePersistentDisk", _gce_conflict),
    ("awsElasticBlockStore", _ebs_conflict),
    ("iscsi", _iscsi_conflict),
    ("rbd", _rbd_conflict),
)


def may_conflict(pod: Pod) -> bool:
    """The pod has a volume of a kind that can conflict (inline GCE PD, EBS, RBD, iSCSI)."""
    return any(_source(v, kind) is not None for v in pod.volumes for kind in _CHECKED)


def is_volume_conflict(volume: Mapping[str, Any], existing_pod: Pod) -> bool:
    """``isVolumeConflict``: does ``volume`` conflict with any volume of ``existing_pod``?"""
    if not any(_source(volume, kind) is not None for kind in _CHECKED):
        return False
    for existing in existing_pod.volumes:
        for kind, rule in _RULES:
            mine, theirs = _source(volume, kind), _source(existing, kind)
            if mine is not None and theirs is not None and rule(mine, theirs):
                return True
    return False


def no_disk_conflict(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Fits iff no volume of the pod conflicts with a volume of a pod already on the node."""
    existing_pods = node_info.pods if node_info is not None else []
    for volume in pod.volumes:
        for existing in existing_pods:
            if is_volume_conflict(volume, existing):
                return False, [ERR_DISK_CONFLICT]
    return True, []
