"""PersistentVolumes, claims and storage classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import obj_field, str_field, string_map


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: dict[str, str]
    spec: dict
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PersistentVolume:
        meta = obj_field("PersistentVolume", "metadata", raw.get("metadata"))
        name = str_field("PersistentVolume", "metadata.name", meta.get("name"))
        obj = f"PersistentVolume {name}"
        labels = string_map(obj, "metadata.labels", meta.get("labels"))
        return cls(name, labels, obj_field(obj, "spec", raw.get("spec")), raw)


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    name: str
    namespace: str
    volume_name: str
    storage_class_name: str
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PersistentVolumeClaim:
        meta = obj_field("PersistentVolumeClaim", "metadata", raw.get("metadata"))
        name = str_field("PersistentVolumeClaim", "metadata.name", meta.get("name"))
        namespace = str_field(f"PersistentVolumeClaim {name}", "metadata.namespace", meta.get("namespace"))
        obj = f"PersistentVolumeClaim {namespace}/{name}"
        spec = obj_field(obj, "spec", raw.get("spec"))
        # The beta annotation wins over the field in 1.9 (v1helper.GetPersistentVolumeClaimClass).
        annotations = string_map(obj, "metadata.annotations", meta.get("annotations"))
        if "volume.beta.kubernetes.io/storage-class" in annotations:
            sc = annotations["volume.beta.kubernetes.io/storage-class"]
        else:
            sc = str_field(obj, "spec.storageClassName", spec.get("storageClassName"))
        volume_name = str_field(obj, "spec.volumeName", spec.get("volumeName"))
        return cls(name, namespace, volume_name, sc or "", raw)


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    volume_binding_mode: str | None
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StorageClass:
        meta = obj_field("StorageClass", "metadata", raw.get("metadata"))
        name = str_field("StorageClass", "metadata.name", meta.get("name"))
        mode = raw.get("volumeBindingMode")
        return cls(name, None if mode is None else str_field(f"StorageClass {name}", "volumeBindingMode", mode), raw)
