"""PersistentVolumes, claims and storage classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import (
    bool_field,
    check_label_selector,
    obj_field,
    object_identity,
    opt_obj_field,
    resource_list_field,
    str_field,
    str_list_field,
    string_map,
)

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
        return cls(name, labels, spec, raw)


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    name: str
    namespace: str
    volume_name: str
    storage_class_name: str
    raw: dict

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
        str_list_field(obj, "spec.accessModes", spec.get("accessModes"))
        check_label_selector(obj, "spec.selector", spec.get("selector"))
        resources = obj_field(obj, "spec.resources", spec.get("resources"))
        resource_list_field(obj, "spec.resources.requests", resources.get("requests"))
        return cls(name, namespace, volume_name, sc or "", raw)


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    volume_binding_mode: str | None
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StorageClass:
        _, name, _, obj = object_identity("StorageClass", raw, namespaced=False)
        mode = raw.get("volumeBindingMode")
        return cls(name, None if mode is None else str_field(obj, "volumeBindingMode", mode), raw)
