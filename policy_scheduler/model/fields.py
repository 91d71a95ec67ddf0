"""Typed access to the fields of a decoded Kubernetes object.

Go's JSON decoder refuses a value of the wrong type for a field; these helpers do the same, raising
:class:`ObjectError` with the object and the field path. ``null`` is the field's zero value, as in Go.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import ObjectError
from .quantity import QuantityError, parse_quantity


def describe(value: Any) -> str:
    """A short, one-line JSON-like rendering of a value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + '..."'
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class Identity(NamedTuple):
    """An object's metadata, name and namespace, and how messages name it (``Kind namespace/name``)."""

    meta: dict[str, Any]
    name: str
    namespace: str
    obj: str


def object_identity(kind: str, raw: Any, namespaced: bool = True) -> Identity:
    """Read ``metadata``, ``metadata.name`` and (``namespaced``) ``metadata.namespace`` of a ``kind``."""
    if not isinstance(raw, dict):
        raise ObjectError(kind, "", f"expected an object, got {describe(raw)}")
    meta = obj_field(kind, "metadata", raw.get("metadata"))
    name = str_field(kind, "metadata.name", meta.get("name"))
    if not namespaced:
        return Identity(meta, name, "", f"{kind} {name}")
    namespace = str_field(f"{kind} {name}", "metadata.namespace", meta.get("namespace"))
    return Identity(meta, name, namespace, f"{kind} {namespace}/{name}")


def obj_field(obj: str, path: str, raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ObjectError(obj, path, f"expected an object, got {describe(raw)}")
    return raw


def opt_obj_field(obj: str, path: str, raw: Any) -> dict[str, Any] | None:
    return None if raw is None else obj_field(obj, path, raw)


def list_field(obj: str, path: str, raw: Any) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ObjectError(obj, path, f"expected a list, got {describe(raw)}")
    return raw


def obj_list_field(obj: str, path: str, raw: Any) -> list[dict[str, Any]]:
    """A list of objects (a ``null`` item is an empty object)."""
    return [obj_field(obj, f"{path}[{i}]", item) for i, item in enumerate(list_field(obj, path, raw))]


def str_field(obj: str, path: str, raw: Any) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise ObjectError(obj, path, f"expected a string, got {describe(raw)}")
    return raw


def str_list_field(obj: str, path: str, raw: Any) -> list[str]:
    items = list_field(obj, path, raw)
    for i, v in enumerate(items):
        if not isinstance(v, str):
            raise ObjectError(obj, f"{path}[{i}]", f"expected a string, got {describe(v)}")
    return items


def bool_field(obj: str, path: str, raw: Any) -> bool:
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise ObjectError(obj, path, f"expected a boolean, got {describe(raw)}")
    return raw


def int_field(obj: str, path: str, raw: Any) -> int:
    if raw is None:
        return 0
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise ObjectError(obj, path, f"expected an integer, got {describe(raw)}")
    return raw


def string_map(obj: str, path: str, raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ObjectError(obj, path, f"expected a map of strings, got {describe(raw)}")
    for k, v in raw.items():
        if not isinstance(k, str):
            raise ObjectError(obj, path, f"expected a map of strings, got key {describe(k)}")
        if not isinstance(v, str):
            raise ObjectError(obj, f"{path}.{k}", f"expected a string, got {describe(v)}")
    return raw


def check_label_selector(obj: str, path: str, raw: Any) -> dict[str, Any] | None:
    """A ``metav1.LabelSelector``'s field types (operators and values are checked when compiled),
    returned with null requirements as empty objects, as Go decodes them."""
    sel = opt_obj_field(obj, path, raw)
    if sel is None:
        return None
    string_map(obj, f"{path}.matchLabels", sel.get("matchLabels"))
    exprs = check_requirements(obj, f"{path}.matchExpressions", sel.get("matchExpressions"))
    return {**sel, "matchExpressions": exprs} if exprs else sel


def check_requirements(obj: str, path: str, raw: Any) -> list[dict[str, Any]]:
    """A list of label or node selector requirements: ``key``, ``operator``, ``values``."""
    exprs = obj_list_field(obj, path, raw)
    for i, expr in enumerate(exprs):
        str_field(obj, f"{path}[{i}].key", expr.get("key"))
        str_field(obj, f"{path}[{i}].operator", expr.get("operator"))
        str_list_field(obj, f"{path}[{i}].values", expr.get("values"))
    return exprs


def resource_list_field(obj: str, path: str, rl: Any) -> dict[str, Any]:
    """A ``ResourceList`` (requests, limits, allocatable): resource names to valid quantities."""
    if rl is None:
        return {}
    if not isinstance(rl, dict):
        raise ObjectError(obj, path, f"expected a map of resource quantities, got {describe(rl)}")
    for name, q in rl.items():
        if not isinstance(name, str):
            raise ObjectError(obj, path, f"expected a resource name, got {describe(name)}")
        try:
            parse_quantity(q)
        except QuantityError as e:
            raise ObjectError(obj, f"{path}.{name}", str(e)) from None
    return rl


def resource_version(raw: Mapping[str, Any]) -> int:
    """``metadata.resourceVersion`` as a number (0 when absent or not numeric, as in manifests): what orders two
    copies of one object (etcd's revisions), as upstream's assume caches order them."""
    meta = raw.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return int(rv) if isinstance(rv, str) and rv.isdigit() else 0
