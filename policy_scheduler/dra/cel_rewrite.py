"""Lookups in ``device.attributes``/``device.capacity`` read a twin variable that knows every domain.

Upstream wraps both outer maps so that *looking up* a domain the device has nothing in finds an empty map
(``mapper.Find`` with a default), while ``in``, ``size`` and iteration see the device's real domains.
cel-cpp evaluates plain maps, so the checked AST is rewritten: every identifier ``device.attributes`` (or
``device.capacity``) that is the operand of an index (``m[k]``, ``m[?k]``) or a selection (``m.k``,
``has(m.k)``, ``m.?k``) is renamed to ``device.attributes#lookup``, a variable no expression can name
(``#`` does not parse) that the evaluation binds to the real map plus an empty map for every domain a
selector looks up. Everything else keeps reading the real map. The rewrite re-encodes the
``cel.expr.CheckedExpr`` protobuf (:mod:`policy_scheduler.dra.cel_cost` decodes it) and cel-cpp
deserialises the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policy_scheduler.dra.cel_cost import Node, _expr, _fields, _first, reference_names

OUTER_MAPS = ("device.attributes", "device.capacity")
LOOKUP_SUFFIX = "#lookup"
_INDEXES = ("_[_]", "_[?_]")
_OPTIONAL_SELECT = "_?._"


@dataclass
class Rewrite:
    """The rewritten expression (``None`` when nothing looks up a domain) and the domains it names."""

    serialized: bytes | None
    domains: set[str] = field(default_factory=set)
    #: The expression binds an outer map to a name (``cel.bind(m, device.attributes, m["d"])``): lookups
    #: through that name still read the real map.
    aliased: bool = False


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _encode(fields: list[tuple[int, int, object]]) -> bytes:
    out = bytearray()
    for number, wire, value in fields:
        out += _varint(number << 3 | wire)
        if wire == 0:
            out += _varint(value)  # type: ignore[arg-type]
        elif wire == 2:
            out += _varint(len(value)) + value  # type: ignore[arg-type, operator]
        else:
            out += value  # type: ignore[operator]
    return bytes(out)


# Which fields of each message hold an Expr (or, for struct entries, an Entry holding Exprs).
_EXPR_FIELDS = {5: (1,), 6: (1, 3), 7: (1,), 9: (2, 4, 5, 6, 7)}


def _rewrite_expr(data: bytes, renamed: dict[int, str]) -> bytes:
    fields = _fields(data)
    node_id = _first(fields, 2) or 0
    out: list[tuple[int, int, object]] = []
    for number, wire, value in fields:
        if number == 4 and node_id in renamed:
            value = _encode([(1, 2, renamed[node_id].encode())])
        elif number in _EXPR_FIELDS:
            inner = [
                (n, w, _rewrite_expr(v, renamed) if n in _EXPR_FIELDS[number] and w == 2 else v)
                for n, w, v in _fields(value)
            ]
            value = _encode(inner)
        elif number == 8:
            inner = []
            for n, w, v in _fields(value):
                if n == 2 and w == 2:
                    v = _encode(
                        [(en, ew, _rewrite_expr(ev, renamed) if en in (3, 4) and ew == 2 else ev) for en, ew, ev in _fields(v)]
                    )
                inner.append((n, w, v))
            value = _encode(inner)
        out.append((number, wire, value))
    return _encode(out)


def rewrite(serialized: bytes) -> Rewrite:
    """Rename the outer maps where they are looked up (see the module docstring)."""
    outer = _fields(serialized)
    is_any = _first(outer, 1) is not None
    checked = _first(outer, 2) if is_any else serialized
    fields = _fields(checked)
    names = reference_names(fields)
    root = _expr(_first(fields, 4) or b"")
    renamed: dict[int, str] = {}
    result = Rewrite(None)

    def outer_map(node: Node | None) -> str | None:
        if node is not None and node.kind == "ident":
            name = names.get(node.id, node.name)
            if name in OUTER_MAPS:
                return name
        return None

    def walk(node: Node) -> None:
        if node.kind == "select":
            name = outer_map(node.target)
            if name is not None and node.target is not None:
                renamed[node.target.id] = name + LOOKUP_SUFFIX
                result.domains.add(node.name)
        elif node.kind == "call" and node.args:
            name = outer_map(node.args[0])
            if name is not None and (node.name in _INDEXES or node.name == _OPTIONAL_SELECT):
                renamed[node.args[0].id] = name + LOOKUP_SUFFIX
                if len(node.args) > 1 and node.args[1].kind == "const" and isinstance(node.args[1].literal, str):
                    result.domains.add(node.args[1].literal)
        elif node.kind == "comprehension":
            accu_init = node.args[1]
            if outer_map(accu_init) is not None and node.accu_var not in ("@result", "__result__"):
                result.aliased = True
        if node.target is not None:
            walk(node.target)
        for child in node.args:
            walk(child)

    walk(root)
    if not renamed:
        return result
    new_fields: list[tuple[int, int, object]] = []
    for number, wire, value in fields:
        if number == 4:
            value = _rewrite_expr(value, renamed)  # type: ignore[arg-type]
        elif number == 2:
            entry_fields = _fields(value)  # type: ignore[arg-type]
            key = _first(entry_fields, 1) or 0
            if key in renamed:
                reference = [
                    (n, w, renamed[key].encode() if n == 1 else v)
                    for n, w, v in _fields(_first(entry_fields, 2) or b"")
                ]
                value = _encode([(1, 0, key), (2, 2, _encode(reference))])
        new_fields.append((number, wire, value))
    rewritten = _encode(new_fields)
    if is_any:
        rewritten = _encode([(1, 2, _first(outer, 1)), (2, 2, rewritten)])
    result.serialized = rewritten
    return result
