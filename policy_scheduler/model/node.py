"""The Node as the engine sees it: parsed once from a v1 Node dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ObjectError
from .quantity import QuantityError, parse_quantity
from .resources import Resource
from .taints import Taint


@dataclass(frozen=True, slots=True)
class NodeCondition:
    type: str
    status: str


@dataclass(frozen=True, slots=True)
class ContainerImage:
    names: tuple[str, ...]
    size_bytes: int


class Node:
    __slots__ = (
        "raw", "name", "labels", "annotations", "unschedulable", "taints", "conditions", "allocatable",
        "images",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        if not isinstance(raw, dict):
            raise ObjectError("Node", "", f"expected an object, got {type(raw).__name__}")
        self.raw = raw
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        self.name: str = meta.get("name") or ""
        obj = f"Node {self.name}"
        labels = meta.get("labels") or {}
        if not isinstance(labels, dict):
            raise ObjectError(obj, "metadata.labels", "expected a map of strings")
        for k, v in labels.items():
            if not isinstance(v, str):
                raise ObjectError(obj, f"metadata.labels.{k}", f"expected a string, got {v!r}")
        self.labels: dict[str, str] = labels
        self.annotations: dict[str, str] = meta.get("annotations") or {}
        self.unschedulable: bool = bool(spec.get("unschedulable"))
        self.taints = tuple(Taint.from_dict(t or {}) for t in spec.get("taints") or ())
        self.conditions = tuple(
            NodeCondition((c or {}).get("type") or "", (c or {}).get("status") or "")
            for c in status.get("conditions") or ()
        )
        allocatable = status.get("allocatable")
        if allocatable is not None and not isinstance(allocatable, dict):
            raise ObjectError(obj, "status.allocatable", "expected a map of resource quantities")
        for name, q in (allocatable or {}).items():
            try:
                parse_quantity(q)
            except QuantityError as e:
                raise ObjectError(obj, f"status.allocatable.{name}", str(e)) from None
        self.allocatable = Resource.from_list(allocatable)
        images = []
        for i, img in enumerate(status.get("images") or ()):
            size = (img or {}).get("sizeBytes") or 0
            if not isinstance(size, int) or isinstance(size, bool):
                raise ObjectError(obj, f"status.images[{i}].sizeBytes", f"expected an integer, got {size!r}")
            images.append(ContainerImage(tuple((img or {}).get("names") or ()), size))
        self.images = tuple(images)

    def condition_status(self, ctype: str) -> str:
        """Status of the last condition of this type, "" when absent."""
        status = ""
        for c in self.conditions:
            if c.type == ctype:
                status = c.status
        return status

    def __repr__(self) -> str:
        return f"Node({self.name})"
