"""The Node as the engine sees it: parsed once from a v1 Node dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ObjectError
from .fields import (
    bool_field,
    int_field,
    obj_field,
    obj_list_field,
    resource_list_field,
    str_field,
    str_list_field,
    string_map,
)
from .node_features import parse_declared_features
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
        "images", "declared_features",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        if not isinstance(raw, dict):
            raise ObjectError("Node", "", f"expected an object, got {type(raw).__name__}")
        self.raw = raw
        meta = obj_field("Node", "metadata", raw.get("metadata"))
        self.name: str = str_field("Node", "metadata.name", meta.get("name"))
        obj = f"Node {self.name}"
        spec = obj_field(obj, "spec", raw.get("spec"))
        status = obj_field(obj, "status", raw.get("status"))
        self.labels: dict[str, str] = string_map(obj, "metadata.labels", meta.get("labels"))
        self.annotations: dict[str, str] = string_map(obj, "metadata.annotations", meta.get("annotations"))
        self.unschedulable: bool = bool_field(obj, "spec.unschedulable", spec.get("unschedulable"))
        self.taints = tuple(
            Taint.from_dict(_check_strings(obj, f"spec.taints[{i}]", t, ("key", "value", "effect")))
            for i, t in enumerate(obj_list_field(obj, "spec.taints", spec.get("taints")))
        )
        self.conditions = tuple(
            NodeCondition(
                *(str_field(obj, f"status.conditions[{i}].{k}", c.get(k)) for k in ("type", "status"))
            )
            for i, c in enumerate(obj_list_field(obj, "status.conditions", status.get("conditions")))
        )
        allocatable = resource_list_field(obj, "status.allocatable", status.get("allocatable"))
        self.allocatable = Resource.from_list(allocatable)
        images = []
        for i, img in enumerate(obj_list_field(obj, "status.images", status.get("images"))):
            size = int_field(obj, f"status.images[{i}].sizeBytes", img.get("sizeBytes"))
            names = str_list_field(obj, f"status.images[{i}].names", img.get("names"))
            images.append(ContainerImage(tuple(names), size))
        self.images = tuple(images)
        # NodeDeclaredFeatures (1.36 beta): the features the node says it has, checked as the API server does.
        self.declared_features: frozenset[str] = frozenset(
            parse_declared_features(obj, status.get("declaredFeatures")))

    def condition_status(self, ctype: str) -> str:
        """Status of the last condition of this type, "" when absent."""
        status = ""
        for c in self.conditions:
            if c.type == ctype:
                status = c.status
        return status

    def __repr__(self) -> str:
        return f"Node({self.name})"


def _check_strings(obj: str, path: str, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    for key in keys:
        str_field(obj, f"{path}.{key}", raw.get(key))
    return raw
