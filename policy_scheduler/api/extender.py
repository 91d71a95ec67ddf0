"""The scheduler-extender wire types (upstream ``plugin/pkg/scheduler/api/types.go``), as 1.9 puts them on
the wire and reads them back (``extender.md`` §3-§5).

Requests are built here as plain JSON values with 1.9's exact keys: ``ExtenderArgs``
(``pod``, ``nodes`` *or* ``nodenames``; the absent one omitted), ``ExtenderBindingArgs`` (no JSON tags in
1.9, so ``PodName``, ``PodNamespace``, ``PodUID``, ``Node``).

Responses are decoded the way Go's ``json.NewDecoder(body).Decode(&result)`` does: the first JSON value
only (anything after it is not read), keys matched case-insensitively, unknown keys ignored, ``null``
the zero value, and a value of the wrong type an error with Go's wording
(``json: cannot unmarshal string into Go struct field HostPriority.score of type int``). Syntax errors
carry Go's texts for the common cases (``EOF``, ``unexpected EOF``,
``invalid character 'x' looking for beginning of value``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ExtenderFilterResult",
    "WireError",
    "binding_args",
    "decode",
    "decode_binding_result",
    "decode_filter_result",
    "decode_host_priority_list",
    "filter_args",
]


class WireError(ValueError):
    """A response body that Go's decoder would reject; the message is Go's error text."""


@dataclass
class ExtenderFilterResult:
    """``ExtenderFilterResult``: ``nodes`` / ``node_names`` are None when absent or null."""

    nodes: list[dict[str, Any]] | None = None
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] = field(default_factory=dict)
    error: str = ""


# -- requests ---------------------------------------------------------------------------------------
def filter_args(pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]] | None,
                node_names: Sequence[str] | None) -> dict[str, Any]:
    """``ExtenderArgs``: exactly one of ``nodes`` (a ``v1.NodeList``) and ``nodenames`` is present."""
    args: dict[str, Any] = {"pod": pod}
    if nodes is not None:
        args["nodes"] = {"metadata": {}, "items": list(nodes)}
    if node_names is not None:
        args["nodenames"] = list(node_names)
    return args


def binding_args(name: str, namespace: str, uid: str, node: str) -> dict[str, str]:
    """``ExtenderBindingArgs`` (untagged Go fields: capitalised keys)."""
    return {"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node}


# -- decoding -----------------------------------------------------------------------------------------
class _Constant(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _reject_constant(name: str) -> Any:
    raise _Constant(name)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_MIN_INT, _MAX_INT = -(2**63), 2**63 - 1  # Go's int on 64-bit platforms
_WHITESPACE = " \t\n\r"


def decode(body: bytes) -> Any:
    """The first JSON value of ``body``, as ``json.Decoder.Decode`` reads it; WireError with Go's text."""
    text = body.decode("utf-8", errors="replace")
    start = len(text) - len(text.lstrip(_WHITESPACE))
    if start == len(text):
        raise WireError("EOF")
    try:
        value, _ = _DECODER.raw_decode(text, start)
    except _Constant as e:
        raise WireError(f"invalid character {_quote_char(e.name[0])} looking for beginning of value") from None
    except json.JSONDecodeError as e:
        raise WireError(_syntax_message(text, e)) from None
    except RecursionError:
        raise WireError("exceeded max depth") from None
    return value


def _quote_char(c: str) -> str:
    """Go's ``quoteChar``."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    return "'" + json.dumps(c)[1:-1] + "'"


def _innermost(text: str, pos: int) -> str:
    """The innermost container open at ``pos``: ``{`` or ``[`` (strings skipped)."""
    stack: list[str] = []
    in_string = escaped = False
    for c in text[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            stack.append(c)
        elif c in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _syntax_message(text: str, e: json.JSONDecodeError) -> str:
    if e.pos >= len(text.rstrip(_WHITESPACE)) or e.msg.startswith("Unterminated string"):
        return "unexpected EOF"
    c = _quote_char(text[e.pos])
    if e.msg == "Expecting value":
        return f"invalid character {c} looking for beginning of value"
    if e.msg.startswith("Expecting property name"):
        return f"invalid character {c} looking for beginning of object key string"
    if e.msg == "Expecting ':' delimiter":
        return f"invalid character {c} after object key"
    if e.msg == "Expecting ',' delimiter":
        where = "object key:value pair" if _innermost(text, e.pos) == "{" else "array element"
        return f"invalid character {c} after {where}"
    if e.msg.startswith("Invalid control character"):
        return f"invalid character {c} in string literal"
    if e.msg.startswith("Invalid \\escape"):
        return f"invalid character {_quote_char(text[e.pos + 1:e.pos + 2] or ' ')} in string escape code"
    return f"invalid character {c} ({e.msg})"


def _json_type(value: Any) -> str:
    """The JSON kind as Go's ``UnmarshalTypeError`` names it (numbers with their literal)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return f"number {json.dumps(value)}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class _Errors:
    """Go keeps decoding after a type mismatch and reports the first one at the end."""

    def __init__(self) -> None:
        self.first: str | None = None

    def mismatch(self, value: Any, go_type: str, struct_field: str | None = None) -> None:
        if self.first is not None:
            return
        into = f"Go struct field {struct_field}" if struct_field else "Go value"
        self.first = f"json: cannot unmarshal {_json_type(value)} into {into} of type {go_type}"

    def raise_first(self) -> None:
        if self.first is not None:
            raise WireError(self.first)


@functools.cache
def _folded(names: tuple[str, ...]) -> dict[str, str]:
    return {name.lower(): name for name in names}


def _fields(obj: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """Keys matched to ``names`` as Go does (exact, else case-insensitive); later keys win."""
    by_fold = _folded(names)
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = key if key in names else by_fold.get(key.lower())
        if name is not None:
            out[name] = value
    return out


def _string(value: Any, errors: _Errors, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.mismatch(value, "string", where)
        return ""
    return value


def _list_of(value: Any, errors: _Errors, where: str, go_type: str, item: Callable[[Any], Any | None]) -> list | None:
    if value is None:
        return None
    if not isinstance(value, list):
        errors.mismatch(value, go_type, where)
        return None
    return [x for x in (item(v) for v in value) if x is not None]


def decode_filter_result(body: bytes) -> ExtenderFilterResult:
    """``ExtenderFilterResult`` from a 200 response body."""
    value = decode(body)
    errors = _Errors()
    result = ExtenderFilterResult()
    if value is None:
        return result
    if not isinstance(value, dict):
        errors.mismatch(value, "api.ExtenderFilterResult")
        errors.raise_first()
    found = _fields(value, ("nodes", "nodenames", "failedNodes", "error"))
    nodes = found.get("nodes")
    if nodes is not None:
        if not isinstance(nodes, dict):
            errors.mismatch(nodes, "v1.NodeList", "ExtenderFilterResult.nodes")
        else:
            items = _fields(nodes, ("items",)).get("items")

            def node(v: Any) -> dict[str, Any] | None:
                if isinstance(v, dict):
                    return v
                if v is not None:
                    errors.mismatch(v, "v1.Node", "NodeList.items")
                return None

            result.nodes = _list_of(items, errors, "NodeList.items", "[]v1.Node", node) or []
    names = found.get("nodenames")
    if type(names) is list and all(type(v) is str for v in names):
        result.node_names = names
    else:
        result.node_names = _list_of(names, errors, "ExtenderFilterResult.nodenames", "[]string",
                                     lambda v: _string(v, errors, "ExtenderFilterResult.nodenames"))
    failed = found.get("failedNodes")
    if failed is not None:
        if not isinstance(failed, dict):
            errors.mismatch(failed, "api.FailedNodesMap", "ExtenderFilterResult.failedNodes")
        else:
            result.failed_nodes = {k: _string(v, errors, "ExtenderFilterResult.failedNodes") for k, v in failed.items()}
    result.error = _string(found.get("error"), errors, "ExtenderFilterResult.error")
    errors.raise_first()
    return result


def decode_host_priority_list(body: bytes) -> list[tuple[str, int]]:
    """``HostPriorityList``: ``[(host, score), ...]`` from a 200 response body."""
    value = decode(body)
    errors = _Errors()
    if value is None:
        return []
    if not isinstance(value, list):
        errors.mismatch(value, "api.HostPriorityList")
        errors.raise_first()
    out: list[tuple[str, int]] = []
    for item in value:
        if type(item) is dict and len(item) == 2:  # the usual {"host": "...", "score": n}: no folding needed
            host, score = item.get("host"), item.get("score")
            if type(host) is str and type(score) is int and _MIN_INT <= score <= _MAX_INT:
                out.append((host, score))
                continue
        if item is None:
            out.append(("", 0))
            continue
        if not isinstance(item, dict):
            errors.mismatch(item, "api.HostPriority")
            continue
        found = _fields(item, ("host", "score"))
        host = _string(found.get("host"), errors, "HostPriority.host")
        score = found.get("score")
        if score is None:
            score = 0
        elif not isinstance(score, int) or isinstance(score, bool) or not _MIN_INT <= score <= _MAX_INT:
            errors.mismatch(score, "int", "HostPriority.score")
            score = 0
        out.append((host, score))
    errors.raise_first()
    return out


def decode_binding_result(body: bytes) -> str:
    """``ExtenderBindingResult``: its ``Error`` text ("" for success)."""
    value = decode(body)
    errors = _Errors()
    if value is None:
        return ""
    if not isinstance(value, dict):
        errors.mismatch(value, "api.ExtenderBindingResult")
        errors.raise_first()
    message = _string(_fields(value, ("Error",)).get("Error"), errors, "ExtenderBindingResult.Error")
    errors.raise_first()
    return message
