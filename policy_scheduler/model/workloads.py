"""Services and controllers, as the selector-spreading priorities and ServiceAffinity read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        return cls(meta.get("name") or "", meta.get("namespace") or "", spec.get("selector"), raw)

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
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        return cls(meta.get("name") or "", meta.get("namespace") or "", spec.get("selector"), raw)


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
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        sel = spec.get("selector")
        empty = sel is None or (not sel.get("matchLabels") and not sel.get("matchExpressions"))
        return cls(kind, meta.get("name") or "", meta.get("namespace") or "", compile_label_selector(sel), empty, raw)
