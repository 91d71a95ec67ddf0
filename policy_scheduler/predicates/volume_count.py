"""MaxEBSVolumeCount / MaxGCEPDVolumeCount / MaxAzureDiskVolumeCount (upstream
``NewMaxPDVolumeCountPredicate``, ``MaxPDVolumeCountChecker``, ``getMaxVols`` and the volume filters).

A node may attach at most ``max`` distinct volumes of one kind. Volume ids are collected from inline
volumes of the filtered kind and from PVCs bound to PVs of that kind. A PVC that cannot be resolved
(missing, unbound, or bound to a missing PV) counts as the placeholder ``<prefix>-<ns>/<claim>``, where
``prefix`` is a random 32-character string drawn once per predicate instance, so an unresolvable claim
counts against every one of the three limits.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cache.cluster import ListerError
from ..errors import ConfigurationError
from ..model.csi_translation import AWS_EBS, AZURE_DISK, GCE_PD, is_csi_migration_on
from .metadata import PredicateMetadata, require_claim_name
from .reasons import ERR_MAX_VOLUME_COUNT_EXCEEDED

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod
    from ..model.volumes import PersistentVolume

log = logging.getLogger(__name__)

KUBE_MAX_PD_VOLS = "KUBE_MAX_PD_VOLS"

EBS_VOLUME_FILTER_TYPE = "EBS"
GCE_PD_VOLUME_FILTER_TYPE = "GCE"
AZURE_DISK_VOLUME_FILTER_TYPE = "AzureDisk"

DEFAULT_MAX_EBS_VOLUMES = 39
DEFAULT_MAX_GCE_PD_VOLUMES = 16
DEFAULT_MAX_AZURE_DISK_VOLUMES = 16

# k8s.io/apimachinery/pkg/util/rand alphabet (no vowels, no confusable digits).
_RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_INT_RE = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class VolumeFilter:
    """Where a volume kind keeps its id, inline (``volume[source][key]``) and in a PV spec, and the
    in-tree plugin a modern cluster migrates to CSI (``IsMigrated``)."""

    source: str
    id_key: str
    plugin: str

    def filter_volume(self, volume: Mapping[str, Any]) -> str | None:
        src = volume.get(self.source)
        return (src.get(self.id_key) or "") if isinstance(src, Mapping) else None

    def filter_persistent_volume(self, pv: PersistentVolume) -> str | None:
        return self.filter_volume(pv.spec)


EBS_VOLUME_FILTER = VolumeFilter("awsElasticBlockStore", "volumeID", AWS_EBS.name)
GCE_PD_VOLUME_FILTER = VolumeFilter("gcePersistentDisk", "pdName", GCE_PD.name)
AZURE_DISK_VOLUME_FILTER = VolumeFilter("azureDisk", "diskName", AZURE_DISK.name)

_FILTERS: dict[str, tuple[VolumeFilter, int]] = {
    EBS_VOLUME_FILTER_TYPE: (EBS_VOLUME_FILTER, DEFAULT_MAX_EBS_VOLUMES),
    GCE_PD_VOLUME_FILTER_TYPE: (GCE_PD_VOLUME_FILTER, DEFAULT_MAX_GCE_PD_VOLUMES),
    AZURE_DISK_VOLUME_FILTER_TYPE: (AZURE_DISK_VOLUME_FILTER, DEFAULT_MAX_AZURE_DISK_VOLUMES),
}


def _atoi(text: str) -> int:
    """Go ``strconv.Atoi`` (64-bit): raise ValueError with Go's message on failure."""
    if not _INT_RE.fullmatch(text):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text, 10)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value


def get_max_vols(default: int, environ: Mapping[str, str] | None = None) -> int:
    """``getMaxVols``: ``KUBE_MAX_PD_VOLS`` if it is a positive integer, else ``default`` (logged)."""
    raw = (os.environ if environ is None else environ).get(KUBE_MAX_PD_VOLS, "")
    if not raw:
        return default
    try:
        parsed = _atoi(raw)
    except ValueError as e:
        log.error("Unable to parse maximum PD volumes value, using default of %d: %s", default, e)
        return default
    if parsed <= 0:
        log.error("Maximum PD volumes must be a positive value, using default of %d", default)
        return default
    return parsed


def random_volume_id_prefix() -> str:
    """32 random characters (``rand.String(32)``); only used to keep placeholders apart from real ids."""
    return "".join(secrets.choice(_RANDOM_ALPHABET) for _ in range(32))


class MaxPDVolumeCountChecker:
    """``MaxPDVolumeCountChecker``: counts distinct volume ids of one kind on a node. Under the cluster's
    rules a node that has a CSINode (the plugin migrated there) is left to NodeVolumeLimits (1.26's
    ``nonCSILimits.Filter``), which counts those volumes against the CSI driver's limit."""

    def __init__(self, volume_filter: VolumeFilter, max_volumes: int, cluster: ClusterState, prefix: str,
                 cluster_rules: bool = False) -> None:
        self.filter = volume_filter
        self.max_volumes = max_volumes
        self.cluster = cluster
        self.random_volume_id_prefix = prefix
        self.cluster_rules = cluster_rules

    def filter_volumes(self, volumes: Iterable[Mapping[str, Any]], namespace: str, ids: set[str]) -> None:
        """Add the ids of the relevant volumes to ``ids``; a PVC without a name is an error."""
        for volume in volumes:
            vid = self.filter.filter_volume(volume)
            if vid is not None:
                ids.add(vid)
                continue
            claim = volume.get("persistentVolumeClaim")
            if not isinstance(claim, Mapping):
                continue
            claim_name = require_claim_name(claim)
            pv_id = self._pv_id_of_claim(namespace, claim_name)
            if pv_id is not None:
                ids.add(pv_id)

    def _pv_id_of_claim(self, namespace: str, claim_name: str) -> str | None:
        placeholder = f"{self.random_volume_id_prefix}-{namespace}/{claim_name}"
        try:
            pvc = self.cluster.get_pvc(namespace, claim_name)
        except ListerError as e:
            log.debug("Unable to look up PVC info for %s/%s, assuming PVC matches predicate when counting limits: %s", namespace, claim_name, e)
            return placeholder
        if not pvc.volume_name:
            log.debug("PVC %s/%s is not bound, assuming PVC matches predicate when counting limits", namespace, claim_name)
            return placeholder
        try:
            pv = self.cluster.get_pv(pvc.volume_name)
        except ListerError as e:
            log.debug("Unable to look up PV info for %s/%s/%s, assuming PV matches predicate when counting limits: %s", namespace, claim_name, pvc.volume_name, e)
            return placeholder
        return self.filter.filter_persistent_volume(pv)

    def pod_volume_ids(self, pod: Pod) -> set[str]:
        """The ids of the pod's volumes of this kind (placeholders for unresolvable claims)."""
        ids: set[str] = set()
        self.filter_volumes(pod.volumes, pod.namespace, ids)
        return ids

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        if not pod.volumes:
            return True, []
        new = self.pod_volume_ids(pod)
        if not new:
            return True, []
        if self.cluster_rules and node_info is not None and node_info.node is not None and is_csi_migration_on(
                self.cluster.get_csi_node(node_info.node.name), self.filter.plugin):
            return True, []
        existing: set[str] = set()
        for existing_pod in node_info.pods if node_info is not None else ():
            self.filter_volumes(existing_pod.volumes, existing_pod.namespace, existing)
        new -= existing
        if len(existing) + len(new) > self.max_volumes:
            return False, [ERR_MAX_VOLUME_COUNT_EXCEEDED]
        return True, []


def new_max_pd_volume_count_predicate(filter_name: str, args: PluginFactoryArgs) -> FitPredicate:
    """The max-volume-count predicate for ``EBS``, ``GCE`` or ``AzureDisk``.

    ``KUBE_MAX_PD_VOLS`` is read now, once per predicate instance.
    """
    entry = _FILTERS.get(filter_name)
    if entry is None:
        raise ConfigurationError(
            f"Wrong filterName, Only Support {EBS_VOLUME_FILTER_TYPE} {GCE_PD_VOLUME_FILTER_TYPE} {AZURE_DISK_VOLUME_FILTER_TYPE} "
        )
    volume_filter, default = entry
    return MaxPDVolumeCountChecker(volume_filter, get_max_vols(default), args.cluster, random_volume_id_prefix(),
                                   args.feature_gates.cluster_rules)

