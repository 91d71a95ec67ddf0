"""PriorityClass (``scheduling.k8s.io``) and a pod's priority as 1.9's ``Priority`` admission plugin sets it.

With the ``PodPriority`` gate on, the admission plugin (``plugin/pkg/admission/priority``) fills
``spec.priority`` when a pod is created: from the system classes ``system-cluster-critical`` /
``system-node-critical`` first, then from the PriorityClass named by ``spec.priorityClassName``; a pod
without a class gets the ``globalDefault`` class's value, or 0 when there is none. An unknown class
rejects the pod. The scheduler itself only reads ``spec.priority`` (``util.GetPodPriority``: 0 when
unset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ObjectError
from .fields import bool_field, int_field, object_identity, str_field
from .pod import PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER

PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)

#: ``HighestUserDefinablePriority`` x 2 and + 1000: resolved in memory by the admission plugin.
SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
#: ``scheduling.DefaultPriorityWhenNoDefaultClassExists``.
DEFAULT_PRIORITY = 0
#: The annotation a mirror (static) pod carries; the admission plugin leaves such pods alone.
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def int32_field(obj: str, path: str, raw: Any) -> int:
    """An ``int32`` field: Go's decoder refuses a number out of range."""
    value = int_field(obj, path, raw)
    if not INT32_MIN <= value <= INT32_MAX:
        raise ObjectError(obj, path, f"expected a 32-bit integer, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A ``scheduling.k8s.io`` PriorityClass (v1alpha1 in 1.9; v1beta1 and v1 read the same way)."""

    name: str
    value: int
    global_default: bool
    raw: dict
    # 1.15+ (GA 1.24): what the Priority admission plugin copies into spec.preemptionPolicy.
    preemption_policy: str = PREEMPT_LOWER_PRIORITY

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PriorityClass:
        _, name, _, obj = object_identity("PriorityClass", raw, namespaced=False)
        policy = str_field(obj, "preemptionPolicy", raw.get("preemptionPolicy")) or PREEMPT_LOWER_PRIORITY
        if policy not in PREEMPTION_POLICIES:
            values = ", ".join(f'"{v}"' for v in PREEMPTION_POLICIES)
            raise ObjectError(obj, "preemptionPolicy", f'Unsupported value: "{policy}": supported values: {values}')
        return cls(
            name,
            int32_field(obj, "value", raw.get("value")),
            bool_field(obj, "globalDefault", raw.get("globalDefault")),
            raw,
            policy,
        )


def admitted_priority(
    pod_ref: str, spec: dict[str, Any], annotations: dict[str, str],
    classes: dict[str, PriorityClass], default: PriorityClass | None,
) -> int | None:
    """The ``spec.priority`` the admission plugin would give a pod being created, None to leave it unset.

    ``spec`` is the pod's raw spec; a ``spec.priority`` already present is kept (the pod was read back
    from a cluster, where it was admitted). Raises :class:`ObjectError` for an unknown class.
    """
    obj = f"Pod {pod_ref}"
    if spec.get("priority") is not None:
        return int32_field(obj, "spec.priority", spec.get("priority"))
    if MIRROR_POD_ANNOTATION in annotations:
        return None
    name = str_field(obj, "spec.priorityClassName", spec.get("priorityClassName"))
    if not name:
        return default.value if default is not None else DEFAULT_PRIORITY
    if name in SYSTEM_PRIORITY_CLASSES:
        return SYSTEM_PRIORITY_CLASSES[name]
    pc = classes.get(name)
    if pc is None:
        raise ObjectError(obj, "spec.priorityClassName", f'no PriorityClass with name "{name}" was found')
    return pc.value


def admitted_preemption_policy(
    spec: dict[str, Any], annotations: dict[str, str], classes: dict[str, PriorityClass], default: PriorityClass | None,
) -> str | None:
    """The ``spec.preemptionPolicy`` the (1.15+) Priority admission plugin gives a pod being created: its
    class's, the default class's without one, ``PreemptLowerPriority`` for the system classes or with no
    class at all. None: leave the pod as it is (it carries one already, read back from a cluster, or it
    is a mirror pod). Call after :func:`admitted_priority`, which rejects an unknown class."""
    if spec.get("preemptionPolicy") or MIRROR_POD_ANNOTATION in annotations:
        return None
    name = spec.get("priorityClassName") or ""
    if not name:
        return default.preemption_policy if default is not None else PREEMPT_LOWER_PRIORITY
    pc = classes.get(name)
    return pc.preemption_policy if pc is not None else PREEMPT_LOWER_PRIORITY
