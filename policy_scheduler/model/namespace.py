"""A v1 Namespace, as the scheduler reads it: its name and labels (what a pod (anti-)affinity term's
``namespaceSelector`` selects on, upstream's namespace lister in 1.21+)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import object_identity, string_map


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    labels: dict[str, str]

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Namespace:
        meta, name, _, obj = object_identity("Namespace", raw, namespaced=False)
        return cls(name, string_map(obj, "metadata.labels", meta.get("labels")))
