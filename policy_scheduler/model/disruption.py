"""PodDisruptionBudget (``policy/v1beta1``, ``policy/v1``) as 1.9's preemption reads it.

1.9 preemption (``filterPodsWithPDBViolation``) looks at two things only: the selector and the
controller-maintained status count of disruptions still allowed (``status.podDisruptionsAllowed`` in
``policy/v1beta1`` as 1.9 serves it, ``status.disruptionsAllowed`` in ``policy/v1`` and in later
servers' ``v1beta1``). ``minAvailable`` / ``maxUnavailable`` are not consulted. A budget without a
status allows no disruption (Go's zero value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import check_label_selector, obj_field, object_identity
from .labels import CompiledSelector, SelectorError, compile_label_selector
from .pod import Pod
from .priority import int32_field


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    name: str
    namespace: str
    selector: CompiledSelector
    disruptions_allowed: int
    raw: dict

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PodDisruptionBudget:
        _, name, namespace, obj = object_identity("PodDisruptionBudget", raw)
        spec = obj_field(obj, "spec", raw.get("spec"))
        status = obj_field(obj, "status", raw.get("status"))
        selector = check_label_selector(obj, "spec.selector", spec.get("selector"))
        if raw.get("apiVersion") == "policy/v1beta1" and status.get("podDisruptionsAllowed") is not None:
            allowed = int32_field(obj, "status.podDisruptionsAllowed", status.get("podDisruptionsAllowed"))
        else:
            allowed = int32_field(obj, "status.disruptionsAllowed", status.get("disruptionsAllowed"))
        return cls(name, namespace, compile_label_selector(selector), allowed, raw)

    def selects(self, pod: Pod) -> bool:
        """Whether this budget covers ``pod``: same namespace, a non-empty selector matching its labels.

        A pod without labels matches none; a selector that cannot be built, a null selector and an
        empty one match nothing (``filterPodsWithPDBViolation``).
        """
        if not pod.labels or self.namespace != pod.namespace:
            return False
        try:
            selector = self.selector.get()
        except SelectorError:
            return False
        return not selector.empty and selector.matches(pod.labels)
