"""NodePreferAvoidPodsPriority (upstream ``priorities/node_prefer_avoid_pods.go``:
``CalculateNodePreferAvoidPodsPriorityMap``; ``v1helper.GetAvoidPodsFromNodeAnnotations``).

A pod controlled by a ReplicationController or ReplicaSet scores 0 on a node whose
``scheduler.alpha.kubernetes.io/preferAvoidPods`` annotation lists that controller (same kind and UID),
10 everywhere else. An annotation that does not decode as ``AvoidPods`` counts as absent (10).

The annotation is decoded the way Go's ``encoding/json`` decodes it into ``v1.AvoidPods``: field names
match case-insensitively, ``null`` leaves a field at its zero value, a value of the wrong JSON type (or an
``evictionTime`` that is not RFC 3339) is an error. Entries whose ``podSignature.podController`` is null
are skipped (upstream dereferences the null pointer and crashes). Decoded annotations are memoised by
their text, so each distinct annotation is parsed once.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..algorithm import MAX_PRIORITY
from .metadata import node_or_error

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

PREFER_AVOID_PODS_ANNOTATION_KEY = "scheduler.alpha.kubernetes.io/preferAvoidPods"

_CONTROLLER_KINDS = ("ReplicationController", "ReplicaSet")


class _DecodeError(ValueError):
    pass


# Field types of the Go structs the annotation decodes into.
_STRING, _BOOL_PTR, _TIME = "string", "*bool", "time"
_OWNER_REFERENCE = {
    "apiVersion": _STRING, "kind": _STRING, "name": _STRING, "uid": _STRING,
    "controller": _BOOL_PTR, "blockOwnerDeletion": _BOOL_PTR,
}
_POD_SIGNATURE = {"podController": ("ptr", _OWNER_REFERENCE)}
_ENTRY = {"podSignature": ("struct", _POD_SIGNATURE), "evictionTime": _TIME, "reason": _STRING, "message": _STRING}
_AVOID_PODS = {"preferAvoidPods": ("slice", _ENTRY)}

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class _Pairs(tuple):
    """A JSON object as its (key, value) pairs, in document order (duplicates kept, as Go sees them)."""


def _check_time(value: Any) -> None:
    """``metav1.Time.UnmarshalJSON``: null, or a string ``time.Parse(time.RFC3339, ...)`` accepts."""
    if value is None:
        return
    if not isinstance(value, str):
        raise _DecodeError("evictionTime: expected a string")
    m = _RFC3339.fullmatch(value)
    if m is None:
        raise _DecodeError(f"evictionTime: cannot parse {value!r} as RFC3339")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if (month == 2 and leap) else _DAYS_IN_MONTH[month - 1] if 1 <= month <= 12 else 0
    if not (1 <= month <= 12 and 1 <= day <= days and hour < 24 and minute < 60 and second < 60):
        raise _DecodeError(f"evictionTime: {value!r} is out of range")


def _decode_struct(pairs: Any, fields: dict, target: dict) -> None:
    """Decode a JSON object into ``target`` (a struct as a dict), merging like ``encoding/json``."""
    if pairs is None:
        return
    if not isinstance(pairs, _Pairs):
        raise _DecodeError("expected an object")
    lowered = {name.lower(): name for name in fields}
    for key, value in pairs:
        name = key if key in fields else lowered.get(key.lower())
        if name is None:
            continue  # unknown fields are ignored
        _decode_field(fields[name], name, value, target)


def _decode_field(kind: Any, name: str, value: Any, target: dict) -> None:
    if kind == _STRING:
        if value is not None:
            if not isinstance(value, str):
                raise _DecodeError(f"{name}: expected a string")
            target[name] = value
    elif kind == _BOOL_PTR:
        if value is not None and not isinstance(value, bool):
            raise _DecodeError(f"{name}: expected a boolean")
        target[name] = value
    elif kind == _TIME:
        _check_time(value)
        target[name] = value
    elif kind[0] == "struct":
        _decode_struct(value, kind[1], target.setdefault(name, {}))
    elif kind[0] == "ptr":
        if value is None:
            target[name] = None
        else:
            existing = target.get(name)
            if existing is None:
                existing = target[name] = {}
            _decode_struct(value, kind[1], existing)
    else:  # slice of structs: elements decode into the existing ones, then the slice is truncated
        if value is None:
            target[name] = None
            return
        if not isinstance(value, list):
            raise _DecodeError(f"{name}: expected an array")
        items = target.get(name) or []
        for i, element in enumerate(value):
            if i >= len(items):
                items.append({})
            _decode_struct(element, kind[1], items[i])
        del items[len(value):]
        target[name] = items


def _reject_constant(text: str) -> Any:
    raise _DecodeError(f"invalid JSON constant {text}")


@lru_cache(maxsize=4096)
def avoided_controllers(annotation: str) -> frozenset[tuple[str, str]] | None:
    """``(kind, uid)`` of every non-null ``podController`` in the annotation; None if it does not decode."""
    try:
        doc = json.loads(annotation, object_pairs_hook=_Pairs, parse_constant=_reject_constant)
        avoid_pods: dict = {}
        _decode_struct(doc, _AVOID_PODS, avoid_pods)
    except (ValueError, RecursionError):
        return None
    out = set()
    for entry in avoid_pods.get("preferAvoidPods") or ():
        controller = (entry.get("podSignature") or {}).get("podController")
        if controller is None:
            continue
        out.add((controller.get("kind", ""), controller.get("uid", "")))
    return frozenset(out)


def calculate_node_prefer_avoid_pods_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``CalculateNodePreferAvoidPodsPriorityMap``."""
    node = node_or_error(node_info)
    ref = pod.controller_ref()
    if ref is None or ref.kind not in _CONTROLLER_KINDS:
        return MAX_PRIORITY
    annotation = node.annotations.get(PREFER_AVOID_PODS_ANNOTATION_KEY) if node.annotations else None
    if not annotation or not isinstance(annotation, str):
        return MAX_PRIORITY
    avoided = avoided_controllers(annotation)
    if avoided is None:
        return MAX_PRIORITY
    return 0 if (ref.kind, ref.uid) in avoided else MAX_PRIORITY
