"""Services and controllers, as the selector-spreading priorities and ServiceAffinity read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import check_label_selector, obj_field, object_identity, string_map
from .labels import CompiledSelector, Selector, compile_label_selector, selector_from_set


@dataclass(frozen=True, slots=True)
class Service:
    name: str
    namespace: str
    # spec.selector; None when absent (such a service selects no pods).
    selector: dict[str, str] | None
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Service:
        name, namespace, spec = _identity("Service", raw)
        sel = spec.get("selector")
        return cls(name, namespace, None if sel is None else string_map(f"Service {namespace}/{name}", "spec.selector", sel), raw)

    def label_selector(self) -> Selector:
        return selector_from_set(self.selector)


@dataclass(frozen=True, slots=True)
class ReplicationController:
    name: str
    namespace: str
    selector: dict[str, str] | None
    raw: dict

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ReplicationController:
        name, namespace, spec = _identity("ReplicationController", raw)
        sel = spec.get("selector")
        obj = f"ReplicationController {namespace}/{name}"
        return cls(name, namespace, None if sel is None else string_map(obj, "spec.selector", sel), raw)


@dataclass(frozen=True, slots=True)
class LabelSelectedController:
    """A ReplicaSet or StatefulSet: selected through a LabelSelector."""

    kind: str
    name: str
    namespace: str
    selector: CompiledSelector
    # True when spec.selector is null or has neither matchLabels nor matchExpressions.
    selector_empty: bool
    raw: dict

    @classmethod
    def from_dict(cls, kind: str, raw: dict[str, Any]) -> LabelSelectedController:
        name, namespace, spec = _identity(kind, raw)
        sel = check_label_selector(f"{kind} {namespace}/{name}", "spec.selector", spec.get("selector"))
        empty = sel is None or (not sel.get("matchLabels") and not sel.get("matchExpressions"))
        return cls(kind, name, namespace, compile_label_selector(sel), empty, raw)


def _identity(kind: str, raw: Any) -> tuple[str, str, dict[str, Any]]:
    """``(name, namespace, spec)`` of a namespaced object, wrong types raising :class:`ObjectError`."""
    _, name, namespace, obj = object_identity(kind, raw)
    return name, namespace, obj_field(obj, "spec", raw.get("spec"))
