"""PersistentVolumes, claims and storage classes.

Besides what 1.9 read, the fields a modern cluster schedules late-bound (``WaitForFirstConsumer``)
volumes with: a PV's GA ``spec.nodeAffinity`` (1.10+), its ``status.phase`` and ``volumeMode``; a
claim's ``volume.kubernetes.io/selected-node`` annotation, ``status.phase`` and ``deletionTimestamp``;
a StorageClass's ``provisioner`` and ``allowedTopologies``; the ``spec.volumeAttributesClassName`` of
PVs and claims (1.29 alpha, GA 1.34: a claim binds only a PV of the same class, none with none).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .fields import (
    bool_field,
    check_label_selector,
    int_field,
    obj_field,
    obj_list_field,
    object_identity,
    opt_obj_field,
    resource_list_field,
    resource_version,
    str_field,
    str_list_field,
    string_map,
)
from .labels import IN, SelectorError, new_requirement
from .node_selector import NodeSelectorTerm, match_node_selector_terms, parse_node_selector_term

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


@dataclass(frozen=True, slots=True)
class VolumeNodeAffinity:
    """``spec.nodeAffinity`` of a PV; ``required`` None when ``required`` is null (no constraint)."""

    required: tuple[NodeSelectorTerm, ...] | None

    def matches(self, labels: Mapping[str, str], node_name: str = "") -> bool:
        """1.26's ``CheckNodeAffinity``: ``MatchNodeSelectorTerms`` of a node made of the labels alone
        (callers pass no name), so the node has no fields and a term's ``matchFields`` are not checked
        (``nodeSelectorTerm.match``: ``len(nodeFields) > 0``); its ``matchExpressions`` still are."""
        if self.required is None:
            return True
        return match_node_selector_terms(self.required, labels, node_name)


def parse_volume_node_affinity(obj: str, path: str, raw: Any) -> VolumeNodeAffinity | None:
    aff = opt_obj_field(obj, path, raw)
    if aff is None:
        return None
    req = opt_obj_field(obj, f"{path}.required", aff.get("required"))
    if req is None:
        return VolumeNodeAffinity(None)
    terms_path = f"{path}.required.nodeSelectorTerms"
    return VolumeNodeAffinity(tuple(
        parse_node_selector_term(obj, f"{terms_path}[{i}]", term)
        for i, term in enumerate(obj_list_field(obj, terms_path, req.get("nodeSelectorTerms")))
    ))


@dataclass(frozen=True, slots=True)
class TopologyTerm:
    """One ``allowedTopologies`` term: ``(key, values)`` requirements, ANDed (``In``)."""

    requirements: tuple[tuple[str, frozenset[str]], ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``TopologySelectorRequirementsAsSelector`` + ``Matches``; an empty or invalid term selects nothing."""
        if not self.requirements:
            return False
        try:
            reqs = [new_requirement(key, IN, sorted(values)) for key, values in self.requirements]
        except SelectorError:
            return False
        return all(r.matches(labels) for r in reqs)


def match_topology_selector_terms(terms: tuple[TopologyTerm, ...], labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no terms admit every node; else any term must match."""
    if not terms:
        return True
    return any(term.matches(labels) for term in terms)

# Fields of the volume sources the volume predicates read, with their types (pods' volumes and PVs).
VOLUME_SOURCE_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "gcePersistentDisk": (("pdName", "str"), ("readOnly", "bool")),
    "awsElasticBlockStore": (("volumeID", "str"), ("readOnly", "bool")),
    "azureDisk": (("diskName", "str"), ("diskURI", "str"), ("readOnly", "bool")),
    "iscsi": (("iqn", "str"), ("targetPortal", "str"), ("readOnly", "bool")),
    "rbd": (("monitors", "strs"), ("pool", "str"), ("image", "str"), ("readOnly", "bool")),
    "persistentVolumeClaim": (("claimName", "str"), ("readOnly", "bool")),
}
_READERS = {"str": str_field, "bool": bool_field, "strs": str_list_field}


def check_volume_source(obj: str, path: str, key: str, source: Any) -> dict[str, Any]:
    """One volume source (``spec.volumes[i].<key>`` or a PV's ``spec.<key>``): an object whose fields
    the predicates read have their types."""
    src = obj_field(obj, path, source)
    for name, kind in VOLUME_SOURCE_FIELDS.get(key, ()):
        _READERS[kind](obj, f"{path}.{name}", src.get(name))
    return src


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: dict[str, str]
    spec: dict
    raw: dict
    node_affinity: VolumeNodeAffinity | None = None  # the GA spec.nodeAffinity (1.10+)
    phase: str = ""
    volume_attributes_class: str = ""  # spec.volumeAttributesClassName ("" when absent)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PersistentVolume:
        meta, name, _, obj = object_identity("PersistentVolume", raw, namespaced=False)
        labels = string_map(obj, "metadata.labels", meta.get("labels"))
        string_map(obj, "metadata.annotations", meta.get("annotations"))
        spec = obj_field(obj, "spec", raw.get("spec"))
        for key in VOLUME_SOURCE_FIELDS.keys() & spec.keys():
            check_volume_source(obj, f"spec.{key}", key, spec[key])
        resource_list_field(obj, "spec.capacity", spec.get("capacity"))
        str_field(obj, "spec.storageClassName", spec.get("storageClassName"))
        str_list_field(obj, "spec.accessModes", spec.get("accessModes"))
        ref = opt_obj_field(obj, "spec.claimRef", spec.get("claimRef"))
        for key in ("namespace", "name", "uid"):
            str_field(obj, f"spec.claimRef.{key}", (ref or {}).get(key))
        str_field(obj, "spec.volumeMode", spec.get("volumeMode"))
        str_field(obj, "metadata.deletionTimestamp", meta.get("deletionTimestamp"))
        affinity = parse_volume_node_affinity(obj, "spec.nodeAffinity", spec.get("nodeAffinity"))
        status = obj_field(obj, "status", raw.get("status"))
        phase = str_field(obj, "status.phase", status.get("phase"))
        vac = str_field(obj, "spec.volumeAttributesClassName", spec.get("volumeAttributesClassName"))
        return cls(name, labels, spec, raw, affinity, phase, vac or "")

    @property
    def resource_version(self) -> int:
        return resource_version(self.raw)

    def bound_to(self, pvc: PersistentVolumeClaim) -> PersistentVolume:
        """``GetBindVolumeToClaim``: this PV pre-bound to ``pvc`` (claimRef, and ``bound-by-controller``
        unless it was already bound to the claim by the user)."""
        meta = dict(self.raw.get("metadata") or {})
        annotations = dict(meta.get("annotations") or {})
        ref = self.spec.get("claimRef") or {}
        already = (ref.get("name") == pvc.name and ref.get("namespace") == pvc.namespace
                   and (not ref.get("uid") or ref.get("uid") == pvc.uid))
        if not already:
            annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
        claim_ref = {"kind": "PersistentVolumeClaim", "namespace": pvc.namespace, "name": pvc.name,
                     "uid": pvc.uid, "apiVersion": "v1", "resourceVersion": (pvc.raw.get("metadata") or {}).get("resourceVersion") or ""}
        claim_ref = {k: v for k, v in claim_ref.items() if v}
        spec = {**self.spec, "claimRef": claim_ref}
        if annotations:
            meta["annotations"] = annotations
        raw = {**self.raw, "metadata": meta, "spec": spec}
        return replace(self, spec=spec, raw=raw)


#: ``v1.ReadWriteOncePod`` (1.22 alpha, GA 1.29): one pod in the whole cluster may use the claim.
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


@dataclass(frozen=True, slots=True)
class OwnerRef:
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    name: str
    namespace: str
    volume_name: str
    storage_class_name: str
    raw: dict
    selected_node: str | None = None  # the volume.kubernetes.io/selected-node annotation (None: absent)
    phase: str = ""
    deleting: bool = False  # metadata.deletionTimestamp is set
    uid: str = ""
    access_modes: tuple[str, ...] = ()
    owners: tuple[OwnerRef, ...] = ()
    volume_attributes_class: str = ""  # spec.volumeAttributesClassName ("" when absent or empty)

    def controlled_by(self, uid: str) -> bool:
        """``metav1.IsControlledBy``: the controller owner reference names ``uid``."""
        return any(o.controller and o.uid == uid for o in self.owners)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PersistentVolumeClaim:
        meta, name, namespace, obj = object_identity("PersistentVolumeClaim", raw)
        spec = obj_field(obj, "spec", raw.get("spec"))
        # The beta annotation wins over the field in 1.9 (v1helper.GetPersistentVolumeClaimClass).
        annotations = string_map(obj, "metadata.annotations", meta.get("annotations"))
        if "volume.beta.kubernetes.io/storage-class" in annotations:
            sc = annotations["volume.beta.kubernetes.io/storage-class"]
        else:
            sc = str_field(obj, "spec.storageClassName", spec.get("storageClassName"))
        volume_name = str_field(obj, "spec.volumeName", spec.get("volumeName"))
        str_field(obj, "metadata.uid", meta.get("uid"))
        access_modes = tuple(str_list_field(obj, "spec.accessModes", spec.get("accessModes")))
        check_label_selector(obj, "spec.selector", spec.get("selector"))
        resources = obj_field(obj, "spec.resources", spec.get("resources"))
        resource_list_field(obj, "spec.resources.requests", resources.get("requests"))
        str_field(obj, "spec.volumeMode", spec.get("volumeMode"))
        vac = str_field(obj, "spec.volumeAttributesClassName", spec.get("volumeAttributesClassName"))
        deleting = bool(str_field(obj, "metadata.deletionTimestamp", meta.get("deletionTimestamp")))
        phase = str_field(obj, "status.phase", obj_field(obj, "status", raw.get("status")).get("phase"))
        owners = tuple(
            OwnerRef(str_field(obj, f"metadata.ownerReferences[{i}].uid", o.get("uid")),
                     bool_field(obj, f"metadata.ownerReferences[{i}].controller", o.get("controller")))
            for i, o in enumerate(obj_list_field(obj, "metadata.ownerReferences", meta.get("ownerReferences"))))
        return cls(name, namespace, volume_name, sc or "", raw, annotations.get(ANN_SELECTED_NODE), phase,
                   deleting, meta.get("uid") or "", access_modes, owners, vac or "")

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def resource_version(self) -> int:
        return resource_version(self.raw)

    @property
    def fully_bound(self) -> bool:
        """Bound by the PV controller: ``spec.volumeName`` set and the binding completed. Upstream reads
        the ``bind-completed`` annotation; the ``Bound`` phase the controller writes with it counts too."""
        annotations = (self.raw.get("metadata") or {}).get("annotations") or {}
        return bool(self.volume_name) and (ANN_BIND_COMPLETED in annotations or self.phase == "Bound")

    def with_selected_node(self, node: str) -> PersistentVolumeClaim:
        """A copy annotated ``volume.kubernetes.io/selected-node: <node>`` (dynamic provisioning there)."""
        meta = dict(self.raw.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node}
        return replace(self, raw={**self.raw, "metadata": meta}, selected_node=node)


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    volume_binding_mode: str | None
    raw: dict
    provisioner: str = ""
    allowed_topologies: tuple[TopologyTerm, ...] = ()

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StorageClass:
        _, name, _, obj = object_identity("StorageClass", raw, namespaced=False)
        mode = raw.get("volumeBindingMode")
        provisioner = str_field(obj, "provisioner", raw.get("provisioner"))
        terms = []
        for i, term in enumerate(obj_list_field(obj, "allowedTopologies", raw.get("allowedTopologies"))):
            path = f"allowedTopologies[{i}].matchLabelExpressions"
            reqs = []
            for j, expr in enumerate(obj_list_field(obj, path, term.get("matchLabelExpressions"))):
                key = str_field(obj, f"{path}[{j}].key", expr.get("key"))
                reqs.append((key, frozenset(str_list_field(obj, f"{path}[{j}].values", expr.get("values")))))
            terms.append(TopologyTerm(tuple(reqs)))
        return cls(name, None if mode is None else str_field(obj, "volumeBindingMode", mode), raw, provisioner,
                   tuple(terms))


#: ``v1.MigratedPluginsAnnotationKey``: the in-tree plugins whose volumes the node's CSI drivers serve.
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str
    allocatable_count: int | None  # spec.drivers[].allocatable.count (None: no limit reported)


@dataclass(frozen=True, slots=True)
class CSINode:
    """A ``storage.k8s.io/v1`` CSINode (named after its node): the CSI drivers the kubelet registered there,
    each with the number of volumes it may attach, and the in-tree plugins its annotation says are migrated
    (read by upstream only for gated plugins; EBS, GCE PD, Azure Disk and Cinder are migrated always)."""

    name: str
    drivers: tuple[CSINodeDriver, ...]
    migrated_plugins: frozenset[str]
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CSINode:
        meta, name, _, obj = object_identity("CSINode", raw, namespaced=False)
        annotations = string_map(obj, "metadata.annotations", meta.get("annotations"))
        spec = obj_field(obj, "spec", raw.get("spec"))
        drivers = []
        for i, d in enumerate(obj_list_field(obj, "spec.drivers", spec.get("drivers"))):
            path = f"spec.drivers[{i}]"
            allocatable = opt_obj_field(obj, f"{path}.allocatable", d.get("allocatable"))
            count = (allocatable or {}).get("count")
            drivers.append(CSINodeDriver(
                str_field(obj, f"{path}.name", d.get("name")),
                str_field(obj, f"{path}.nodeID", d.get("nodeID")),
                None if count is None else int_field(obj, f"{path}.allocatable.count", count),
            ))
            str_list_field(obj, f"{path}.topologyKeys", d.get("topologyKeys"))
        migrated = annotations.get(ANN_MIGRATED_PLUGINS, "")
        return cls(name, tuple(drivers), frozenset(migrated.split(",")) if migrated else frozenset(), raw)
