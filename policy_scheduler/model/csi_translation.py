"""The in-tree volume plugins a modern cluster serves through CSI drivers, and the CSI volume handle of an
in-tree volume (upstream's ``staging/src/k8s.io/csi-translation-lib``: ``plugins/aws_ebs.go``,
``gce_pd.go``, ``azure_disk.go``, ``openstack_cinder.go``).

Only what attach limits need: which driver a volume counts against, and a handle that names the same disk
the same way whether it is reached through a PV or inline. A volume whose handle cannot be derived (an EBS
id in neither known format) is an error, as the translation is upstream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    from .volumes import CSINode

LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
UNSPECIFIED = "UNSPECIFIED"
_EBS_VOLUME_ID = re.compile(r"^vol-[^/]*$")


class TranslationError(ValueError):
    """The in-tree volume cannot be expressed as a CSI volume."""


def _ebs_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/vol-1`` → ``vol-1``; a bare id as it is."""
    volume_id = source.get("volumeID") or ""
    if not volume_id.startswith("aws://"):
        return volume_id
    url = urlparse(volume_id)
    handle = url.path.strip("/")
    if not _EBS_VOLUME_ID.match(handle):
        raise TranslationError(f"Invalid format for AWS volume ({volume_id})")
    return handle


def _gce_pd_handle(source: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """``projects/UNSPECIFIED/zones/<zone>/disks/<pd>`` (a regional disk: ``regions/<region>``); an inline
    volume, or a PV without a zone label, has an unspecified zone."""
    pd_name = source.get("pdName") or ""
    zone_label = labels.get(LABEL_ZONE) or labels.get(LABEL_ZONE_BETA) or ""
    zones = [z for z in zone_label.split("__") if z] if zone_label else []
    if len(zones) > 1:
        region = zones[0].rsplit("-", 1)[0]
        return f"projects/{UNSPECIFIED}/regions/{region}/disks/{pd_name}"
    zone = zones[0] if zones else UNSPECIFIED
    return f"projects/{UNSPECIFIED}/zones/{zone}/disks/{pd_name}"


def _field(name: str) -> Callable[[Mapping[str, Any], Mapping[str, str]], str]:
    return lambda source, labels: source.get(name) or ""


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    name: str  # the in-tree plugin (as CSINode's migrated-plugins annotation names it)
    driver: str  # the CSI driver that serves its volumes
    source: str  # the volume source key in a pod's volume or a PV's spec
    handle: Callable[[Mapping[str, Any], Mapping[str, str]], str]


AWS_EBS = InTreePlugin("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "awsElasticBlockStore", _ebs_handle)
GCE_PD = InTreePlugin("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "gcePersistentDisk", _gce_pd_handle)
AZURE_DISK = InTreePlugin("kubernetes.io/azure-disk", "disk.csi.azure.com", "azureDisk", _field("diskURI"))
CINDER = InTreePlugin("kubernetes.io/cinder", "cinder.csi.openstack.org", "cinder", _field("volumeID"))

#: The attachable in-tree plugins a modern cluster migrates (each always on since 1.25 / 1.26).
MIGRATED_PLUGINS: tuple[InTreePlugin, ...] = (AWS_EBS, GCE_PD, AZURE_DISK, CINDER)
BY_SOURCE: dict[str, InTreePlugin] = {p.source: p for p in MIGRATED_PLUGINS}
BY_NAME: dict[str, InTreePlugin] = {p.name: p for p in MIGRATED_PLUGINS}


def in_tree_plugin(spec: Mapping[str, Any]) -> tuple[InTreePlugin, Mapping[str, Any]] | None:
    """The migrated plugin of a pod volume or a PV spec, with its source object; None for other sources."""
    for key, plugin in BY_SOURCE.items():
        source = spec.get(key)
        if isinstance(source, Mapping):
            return plugin, source
    return None


def is_csi_migration_on(csi_node: CSINode | None, plugin_name: str) -> bool:
    """``isCSIMigrationOn`` (1.26, 1.32): the node has a CSINode, and the plugin is one whose migration is
    always on (EBS, GCE PD, Azure Disk, Cinder). Upstream reads the CSINode's migrated-plugins annotation
    only for plugins behind a gate (Portworx, not handled here)."""
    return csi_node is not None and plugin_name in BY_NAME
