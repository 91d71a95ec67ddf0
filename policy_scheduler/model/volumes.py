"""PersistentVolumes, claims and storage classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import obj_field, object_identity, str_field, string_map


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
        meta, name, namespace, obj = object_identity("PersistentVolumeClaim", raw)
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
        _, name, _, obj = object_identity("StorageClass", raw, namespaced=False)
        mode = raw.get("volumeBindingMode")
        return cls(name, None if mode is None else str_field(obj, "volumeBindingMode", mode), raw)
