"""NodeVolumeLimits: CSI attach limits as a modern cluster decides them (upstream 1.26
``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go``: ``CSILimits.Filter``,
``filterAttachableVolumes``, ``checkAttachableInlineVolume``, ``getCSIDriverInfo``,
``getCSIDriverInfoFromSC``, ``getVolumeLimits``; ``utils.go`` ``isCSIMigrationOn``).

A node may attach at most ``CSINode.spec.drivers[].allocatable.count`` volumes of each CSI driver. The
volumes counted, per node, are the unique ``<driver>/<volume handle>`` of the node's pods plus the pod's:

* a claim bound to a PV with ``spec.csi`` (its driver and handle);
* a claim bound to an in-tree PV (``awsElasticBlockStore``, ``gcePersistentDisk``, ``azureDisk``,
  ``cinder``) on a node that has a CSINode (their migration is always on in 1.26 and 1.32): the CSI
  driver that serves it;
* an inline in-tree volume of those kinds, likewise (inline ``csi`` volumes are never counted: they are
  not attached through the attach-detach controller);
* an unbound claim (or one whose PV is missing): its StorageClass's provisioner, with a placeholder
  handle per claim.

1.9 never knew CSI, so this applies under the cluster's rules to pods with such volumes, whatever the
Policy names (:func:`policy_scheduler.factory.pod_scoped_algorithms`). 1.9's MaxEBSVolumeCount & co. then
leave a node that has a CSINode to this predicate (1.26's ``nonCSILimits``: ``IsMigrated``), so a volume
is counted once. Limits come from the CSINode's drivers and the node's ``attachable-volumes-*``
allocatable (``getVolumeLimits``); a driver without a limit is not limited.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..cache.cluster import ListerError
from ..errors import PredicateError
from ..model.csi_translation import BY_NAME, TranslationError, in_tree_plugin, is_csi_migration_on
from ..model.quantity import QuantityError, parse_quantity
from .metadata import PredicateMetadata, require_claim_name, require_node
from .reasons import ERR_MAX_VOLUME_COUNT_EXCEEDED
from .volume_binder import ephemeral_not_owned
from .volume_count import random_volume_id_prefix

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod
    from ..model.volumes import CSINode, PersistentVolumeClaim

log = logging.getLogger(__name__)

NAME = "NodeVolumeLimits"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
RESOURCE_NAME_LENGTH_LIMIT = 63


def csi_attach_limit_key(driver: str) -> str:
    """``GetCSIAttachLimitKey``: ``attachable-volumes-csi-<driver>``, a long driver name shortened to its
    first 23 characters and 16 hex digits of its SHA-1."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + hashlib.sha1(driver.encode()).hexdigest()[:16]
    return CSI_ATTACH_LIMIT_PREFIX + driver


def volume_limits(node: Node, csi_node: CSINode | None) -> dict[str, int]:
    """``getVolumeLimits``: ``attachable-volumes-*`` of the node's allocatable, then each CSINode driver's
    ``allocatable.count`` under its attach-limit key."""
    limits: dict[str, int] = {}
    allocatable = (node.raw.get("status") or {}).get("allocatable") or {}
    for name, quantity in allocatable.items():
        if name.startswith(ATTACHABLE_VOLUMES_PREFIX):
            try:
                limits[name] = int(parse_quantity(quantity))
            except QuantityError:
                continue
    for driver in csi_node.drivers if csi_node is not None else ():
        if driver.allocatable_count is not None:
            limits[csi_attach_limit_key(driver.name)] = driver.allocatable_count
    return limits


class CSILimitsChecker:
    """Per decision the pod's volumes are resolved once (they depend on the node only through whether it
    has a CSINode), and each node's attached volumes and limits are kept until its pods, its CSINode or any
    PV, claim or StorageClass change (``NodeInfo.generation``, ``ClusterState.volume_generation``)."""

    def __init__(self, cluster: ClusterState, prefix: str) -> None:
        self.cluster = cluster
        self.random_volume_id_prefix = prefix
        self._pod_cache: tuple[Any, ...] = ()
        self._node_cache: dict[str, tuple[Any, ...]] = {}

    def applies(self, pod: Pod) -> bool:
        """Only where a CSI limit can exist: the pod has volumes and some node has a CSINode."""
        return bool(pod.volumes) and bool(self.cluster.csi_nodes)

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        if not pod.volumes:
            return True, []
        node = require_node(node_info)
        csi_node = self.cluster.get_csi_node(node.name)
        new = self._new_volumes(pod, csi_node)
        if not new:
            return True, []
        attached, attached_count, limits = self._node_state(node, node_info, csi_node)
        if not limits:
            return True, []
        new_count: dict[str, int] = {}
        for unique_name, key in new.items():
            if unique_name not in attached:  # a volume already attached to the node is not attached twice
                new_count[key] = new_count.get(key, 0) + 1
        for key, count in new_count.items():
            limit = limits.get(key)
            if limit is not None and attached_count[key] + count > limit:
                return False, [ERR_MAX_VOLUME_COUNT_EXCEEDED]
        return True, []

    def _new_volumes(self, pod: Pod, csi_node: CSINode | None) -> dict[str, str]:
        generation = self.cluster.volume_generation
        if not self._pod_cache or self._pod_cache[0] is not pod or self._pod_cache[1] != generation:
            self._pod_cache = (pod, generation, {})
        by_csi_node: dict[bool, dict[str, str]] = self._pod_cache[2]
        has_csi_node = csi_node is not None
        if has_csi_node not in by_csi_node:
            by_csi_node[has_csi_node] = self.attachable_volumes(pod, csi_node, new_pod=True)
        return by_csi_node[has_csi_node]

    def _node_state(self, node: Node, node_info: NodeInfo | None, csi_node: CSINode | None
                    ) -> tuple[dict[str, str], Counter[str], dict[str, int]]:
        """The node's attached volumes (unique name -> limit key), their count per key, and its limits."""
        generation = (getattr(node_info, "generation", 0), self.cluster.volume_generation)
        cached = self._node_cache.get(node.name)
        if (cached is not None and cached[0] is node_info and cached[1] is node and cached[2] is csi_node
                and cached[3] == generation):
            return cached[4]
        attached: dict[str, str] = {}
        for existing in node_info.pods if node_info is not None else ():
            attached.update(self.attachable_volumes(existing, csi_node, new_pod=False))
        state = (attached, Counter(attached.values()), volume_limits(node, csi_node))
        if node_info is not None and self.cluster.node_infos.get(node.name) is node_info:  # never preemption's copies
            self._node_cache[node.name] = (node_info, node, csi_node, generation, state)
        return state

    def attachable_volumes(self, pod: Pod, csi_node: CSINode | None, new_pod: bool) -> dict[str, str]:
        """``filterAttachableVolumes``: ``<driver>/<handle>`` -> attach-limit key, for the pod's volumes.
        For the pod being placed a claim that cannot be found is an error (it cannot run without it)."""
        result: dict[str, str] = {}
        for volume in pod.volumes:
            claim = volume.get("persistentVolumeClaim")
            if not isinstance(claim, Mapping):
                self._inline_volume(volume, csi_node, result)
                continue
            claim_name = require_claim_name(claim)
            try:
                pvc = self.cluster.get_pvc(pod.namespace, claim_name)
            except ListerError as e:
                if new_pod:
                    raise PredicateError(f"looking up PVC {pod.namespace}/{claim_name}: {e}") from None
                log.debug("Unable to look up PVC info for %s/%s: %s", pod.namespace, claim_name, e)
                continue
            if claim_name in pod.ephemeral_claims and not pvc.controlled_by(pod.uid):
                raise PredicateError(ephemeral_not_owned(pod, pvc))
            driver, handle = self._driver_info(csi_node, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = csi_attach_limit_key(driver)
        return result

    @staticmethod
    def _inline_volume(volume: Mapping[str, Any], csi_node: CSINode | None, result: dict[str, str]) -> None:
        """``checkAttachableInlineVolume``: a migratable in-tree volume, where the node migrated its plugin."""
        found = in_tree_plugin(volume)
        if found is None:
            return
        plugin, source = found
        if not is_csi_migration_on(csi_node, plugin.name):
            return
        try:
            handle = plugin.handle(source, {})
        except TranslationError as e:
            raise PredicateError(f"converting volume({volume.get('name') or ''}) from inline to csi: {e}") from None
        result[f"{plugin.driver}/{handle}"] = csi_attach_limit_key(plugin.driver)

    def _driver_info(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfo``: the driver and handle of the claim's PV (translated when in-tree and
        migrated), or of its StorageClass when it is unbound or its PV is missing."""
        if not pvc.volume_name:
            return self._driver_info_from_storage_class(csi_node, pvc)
        try:
            pv = self.cluster.get_pv(pvc.volume_name)
        except ListerError:
            return self._driver_info_from_storage_class(csi_node, pvc)
        csi = pv.spec.get("csi")
        if isinstance(csi, Mapping):
            return csi.get("driver") or "", csi.get("volumeHandle") or ""
        found = in_tree_plugin(pv.spec)
        if found is None or not is_csi_migration_on(csi_node, found[0].name):
            return "", ""
        plugin, source = found
        try:
            return plugin.driver, plugin.handle(source, pv.labels)
        except TranslationError:
            return "", ""

    def _driver_info_from_storage_class(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: the class's provisioner (its CSI driver, for a migrated in-tree
        provisioner) and a placeholder handle for the claim; a claim without a class is not counted."""
        if not pvc.storage_class_name:
            return "", ""
        try:
            storage_class = self.cluster.get_storage_class(pvc.storage_class_name)
        except ListerError:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{pvc.namespace}/{pvc.name}"
        plugin = BY_NAME.get(storage_class.provisioner)
        if plugin is not None:
            return (plugin.driver, handle) if is_csi_migration_on(csi_node, plugin.name) else ("", "")
        return storage_class.provisioner, handle


def new_csi_limits_predicate(args: PluginFactoryArgs) -> FitPredicate:
    return CSILimitsChecker(args.cluster, random_volume_id_prefix())
