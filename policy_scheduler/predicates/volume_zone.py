"""NoVolumeZoneConflict (upstream ``NewVolumeZonePredicate`` / ``VolumeZoneChecker.predicate`` and
``volumeutil.LabelZonesToSet``).

A pod's bound PVCs must use PVs whose zone/region labels admit the node's zone/region. A PV label value
may list several zones separated by ``__``. Unbound claims are an error, except, with the
``VolumeScheduling`` gate, claims of a ``WaitForFirstConsumer`` storage class (left to CheckVolumeBinding).

1.9 reads the beta labels only. Under the cluster's rules the GA labels ``topology.kubernetes.io/zone``
and ``/region`` count too, as 1.17+'s VolumeZone reads them: a node with any of the four labels is
constrained, and a PV's beta label is matched against the node's beta label, else its GA one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..cache.cluster import ListerError
from ..errors import PredicateError
from .metadata import PredicateMetadata, require_claim_name, require_node
from .reasons import ERR_VOLUME_ZONE_CONFLICT
from .storage_class import delays_binding

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.cluster import ClusterState
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod
    from ..model.volumes import PersistentVolume, PersistentVolumeClaim

log = logging.getLogger(__name__)

LABEL_ZONE_FAILURE_DOMAIN = "failure-domain.beta.kubernetes.io/zone"
LABEL_ZONE_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_MULTI_ZONE_DELIMITER = "__"
ZONE_LABELS = (LABEL_ZONE_FAILURE_DOMAIN, LABEL_ZONE_REGION)
#: 1.17+'s ``topologyLabels``: the beta labels and their GA successors.
TOPOLOGY_LABELS = (LABEL_ZONE_FAILURE_DOMAIN, LABEL_ZONE_REGION, LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
#: ``translateToGALabel``.
GA_LABEL = {LABEL_ZONE_FAILURE_DOMAIN: LABEL_TOPOLOGY_ZONE, LABEL_ZONE_REGION: LABEL_TOPOLOGY_REGION}


def label_zones_to_set(value: str) -> set[str]:
    """``LabelZonesToSet``: split on ``__``, trim; an empty item is a ValueError with upstream's text."""
    zones = set()
    for zone in value.split(LABEL_MULTI_ZONE_DELIMITER):
        trimmed = zone.strip()
        if not trimmed:
            raise ValueError(f'"{LABEL_MULTI_ZONE_DELIMITER}" separated list ("{value}") must not contain an empty string')
        zones.add(trimmed)
    return zones


class VolumeZoneChecker:
    """``VolumeZoneChecker``; ``volume_scheduling`` is the ``VolumeScheduling`` feature gate."""

    def __init__(self, cluster: ClusterState, volume_scheduling: bool, cluster_rules: bool = False) -> None:
        self.cluster = cluster
        self.volume_scheduling = volume_scheduling
        self.cluster_rules = cluster_rules
        self.labels = TOPOLOGY_LABELS if cluster_rules else ZONE_LABELS

    def __call__(self, pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        if not pod.volumes:
            return True, []
        node = require_node(node_info)
        constraints = {k: v for k, v in node.labels.items() if k in self.labels}
        if not constraints:
            return True, []
        for volume in pod.volumes:
            claim = volume.get("persistentVolumeClaim")
            if not isinstance(claim, Mapping):
                continue
            pv = self._bound_pv(pod, claim)
            if pv is not None and not self._pv_admits(pod, node, pv, constraints, self.labels):
                return False, [ERR_VOLUME_ZONE_CONFLICT]
        return True, []

    def has_zoned_volume(self, pod: Pod) -> bool:
        """Some claim of the pod is bound to a PV with a zone or region label (errors as the predicate's)."""
        for volume in pod.volumes:
            claim = volume.get("persistentVolumeClaim")
            if isinstance(claim, Mapping):
                pv = self._bound_pv(pod, claim)
                if pv is not None and any(key in self.labels for key in pv.labels):
                    return True
        return False

    def _bound_pv(self, pod: Pod, claim: Mapping[str, Any]) -> PersistentVolume | None:
        """The PV bound to the claim; None when the claim is skipped (delayed binding); else errors."""
        claim_name = require_claim_name(claim)
        try:
            pvc = self.cluster.get_pvc(pod.namespace, claim_name)
        except ListerError as e:
            raise PredicateError(str(e)) from None
        pv_name = pvc.volume_name
        if not pv_name:
            if self._binding_delayed(pvc):
                return None
            raise PredicateError(f'PersistentVolumeClaim is not bound: "{claim_name}"')
        try:
            return self.cluster.get_pv(pv_name)
        except ListerError as e:
            raise PredicateError(str(e)) from None

    def _binding_delayed(self, pvc: PersistentVolumeClaim) -> bool:
        """True for an unbound claim of a WaitForFirstConsumer class (gate on); errors for an unset mode.
        Under the cluster's rules such claims are always skipped (CheckVolumeBinding places them), and a
        class without a mode is ``Immediate`` (the API server's default)."""
        if self.cluster_rules and not self.volume_scheduling:
            from .volume_binder import delay_binding_mode

            return delay_binding_mode(self.cluster, pvc)
        if not self.volume_scheduling:
            return False
        # 1.9 reads the spec field here, not the beta storage-class annotation.
        class_name = (pvc.raw.get("spec") or {}).get("storageClassName") or ""
        return delays_binding(self.cluster, class_name)

    @staticmethod
    def _pv_admits(pod: Pod, node: Node, pv: PersistentVolume, constraints: Mapping[str, str],
                   labels: tuple[str, ...]) -> bool:
        for key, value in pv.labels.items():
            if key not in labels:
                continue
            try:
                zones = label_zones_to_set(value)
            except ValueError as e:
                log.warning('Failed to parse label for "%s": "%s". Ignoring the label. err=%s. ', key, value, e)
                continue
            node_value = constraints.get(key)
            if node_value is None and labels is TOPOLOGY_LABELS:
                node_value = constraints.get(GA_LABEL.get(key, key))
            if (node_value or "") not in zones:
                log.debug('Won\'t schedule pod "%s" onto node "%s" due to volume "%s" (mismatch on "%s")', pod.name, node.name, pv.name, key)
                return False
        return True


def new_volume_zone_predicate(args: PluginFactoryArgs) -> FitPredicate:
    """NoVolumeZoneConflict over the cluster's PVC, PV and StorageClass listers."""
    gates = args.feature_gates
    return VolumeZoneChecker(args.cluster, gates.enabled("VolumeScheduling"), gates.cluster_rules)
