"""PersistentVolumes, claims and storage classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: dict[str, str]
    spec: dict
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PersistentVolume:
        meta = raw.get("metadata") or {}
        return cls(meta.get("name") or "", meta.get("labels") or {}, raw.get("spec") or {}, raw)


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    name: str
    namespace: str
    volume_name: str
    storage_class_name: str
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PersistentVolumeClaim:
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        # The beta annotation wins over the field in 1.9 (v1helper.GetPersistentVolumeClaimClass).
        annotations = meta.get("annotations") or {}
        if "volume.beta.kubernetes.io/storage-class" in annotations:
            sc = annotations["volume.beta.kubernetes.io/storage-class"]
        else:
            sc = spec.get("storageClassName")
        return cls(meta.get("name") or "", meta.get("namespace") or "", spec.get("volumeName") or "", sc or "", raw)


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    volume_binding_mode: str | None
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StorageClass:
        meta = raw.get("metadata") or {}
        return cls(meta.get("name") or "", raw.get("volumeBindingMode"), raw)
