"""The worst-case cost of a checked CEL selector, as cel-go's ``checker.Cost`` estimates it for DRA; cel-go's
checks cel-cpp lacks.

cel-cpp (our runtime) does not count cost the way cel-go does, and upstream enforces
``resourceapi.CELSelectorExpressionMaxCost`` (1,000,000) on cel-go's *actual* cost while evaluating. What we
can do honestly is bound it: :class:`CostModel` reads the checked AST (``Expression.serialize()``, a
``cel.expr.CheckedExpr`` inside a ``google.protobuf.Any``, decoded here from the protobuf wire format) and
computes cel-go's worst-case estimate with its rules (``checker/cost.go``: identifiers and selections 1,
literals 0, list/map/message literals 10/30/40, string traversals 0.1 a character, regular expressions 0.25
a pattern character, comprehensions ``range x (condition + step)``, ``cel.bind`` without its empty list's
loop) and the Kubernetes library's (``apiserver/pkg/cel/library/cost.go``: quantity/semver parsing,
``split``, ``replace``, ``find``, the lists library, O(1) equality of quantities and versions), with the
sizes DRA's environment declares (driver names 63 characters, 32 domains of at most 63 and 32 ids of at
most 32 characters, attribute values 64). Since the actual cost never exceeds this estimate, an expression
whose estimate stays within the limit can never hit it. :meth:`CostModel.estimate` with a device's maps
recomputes the bound with that device's real sizes instead of the declared maxima.

Functions this module has no rule for cost 1 (cel-go's default) and results of unknown size are
unbounded, as in cel-go.

The same decoded AST serves :func:`check`: the rules of cel-go's checker and of the Kubernetes base
environment's validators that cel-cpp's checker does not apply (attribute values of the unknown type,
homogeneous aggregate literals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

UNBOUNDED = 2**64 - 1
_STRING_FACTOR = 0.1
_REGEX_FACTOR = 0.25

# DRA's declared maxima (resourceapi): DriverNameMaxLength, DeviceMaxDomainLength, DeviceMaxIDLength,
# ResourceSliceMaxAttributesAndCapacitiesPerDevice, DeviceAttributeMaxValueLength.
DRIVER_MAX = 63
DOMAIN_MAX = 63
ID_MAX = 32
ENTRIES_MAX = 32
VALUE_MAX = 64


def _add(*values: int) -> int:
    return min(sum(values), UNBOUNDED)


def _mul(x: int, y: int) -> int:
    return min(x * y, UNBOUNDED)


def _factor(size: int, factor: float) -> int:
    if size >= UNBOUNDED:
        return UNBOUNDED
    return min(math.ceil(size * factor), UNBOUNDED)


# --- protobuf wire format ------------------------------------------------------------------------------


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message; length-delimited values stay bytes."""
    out: list[tuple[int, int, Any]] = []
    pos, end = 0, len(data)

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7

    while pos < end:
        tag = varint()
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            out.append((number, wire, varint()))
        elif wire == 1:
            out.append((number, wire, data[pos : pos + 8]))
            pos += 8
        elif wire == 2:
            length = varint()
            out.append((number, wire, data[pos : pos + length]))
            pos += length
        elif wire == 5:
            out.append((number, wire, data[pos : pos + 4]))
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return out


def _first(fields: list[tuple[int, int, Any]], number: int) -> Any:
    for n, _, value in fields:
        if n == number:
            return value
    return None


def _all(fields: list[tuple[int, int, Any]], number: int) -> list[Any]:
    return [value for n, _, value in fields if n == number]


@dataclass
class Node:
    """One ``cel.expr.Expr``: ``kind`` is const/ident/select/call/list/map/struct/comprehension."""

    id: int
    kind: str
    name: str = ""  # identifier, selected field, function
    literal: Any = None  # the constant (a str for strings, True/False, a number, or None)
    test_only: bool = False
    target: Node | None = None
    args: list[Node] = field(default_factory=list)
    # comprehension
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""


def _constant(data: bytes) -> Any:
    fields = _fields(data)
    if not fields:
        return None
    number, _, value = fields[0]
    if number == 2:
        return bool(value)
    if number == 6:
        return value.decode("utf-8")
    if number == 7:
        return bytes(value)
    if number in (3, 4):
        return int(value)
    return 0.0 if number == 5 else None


def _expr(data: bytes) -> Node:
    fields = _fields(data)
    node_id = _first(fields, 2) or 0
    for number, _, value in fields:
        if number == 3:
            return Node(node_id, "const", literal=_constant(value))
        if number == 4:
            return Node(node_id, "ident", name=(_first(_fields(value), 1) or b"").decode())
        if number == 5:
            sel = _fields(value)
            operand = _first(sel, 1)
            return Node(
                node_id,
                "select",
                name=(_first(sel, 2) or b"").decode(),
                test_only=bool(_first(sel, 3)),
                target=_expr(operand) if operand is not None else None,
            )
        if number == 6:
            call = _fields(value)
            target = _first(call, 1)
            return Node(
                node_id,
                "call",
                name=(_first(call, 2) or b"").decode(),
                target=_expr(target) if target is not None else None,
                args=[_expr(a) for a in _all(call, 3)],
            )
        if number == 7:
            return Node(node_id, "list", args=[_expr(e) for e in _all(_fields(value), 1)])
        if number == 8:
            struct = _fields(value)
            values = []
            is_map = False
            for entry in _all(struct, 2):
                entry_fields = _fields(entry)
                key = _first(entry_fields, 3)
                if key is not None:
                    is_map = True
                    values.append(_expr(key))
                values.append(_expr(_first(entry_fields, 4)))
            return Node(node_id, "map" if is_map or not _first(struct, 1) else "struct", args=values)
        if number == 9:
            comp = _fields(value)
            parts = [_first(comp, n) for n in (2, 4, 5, 6, 7)]
            return Node(
                node_id,
                "comprehension",
                iter_var=(_first(comp, 1) or b"").decode(),
                iter_var2=(_first(comp, 8) or b"").decode(),
                accu_var=(_first(comp, 3) or b"").decode(),
                args=[_expr(p) if p is not None else Node(0, "const") for p in parts],
            )
    return Node(node_id, "const")


def _type_kind(data: bytes) -> tuple[str, Any]:
    """A ``cel.expr.Type`` as (kind, detail): kinds dyn/primitive/list/map/message/abstract/other."""
    fields = _fields(data)
    if not fields:
        return "other", None
    number, _, value = fields[0]
    if number == 1:
        return "dyn", None
    if number == 3:
        return "primitive", {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}.get(value)
    if number == 6:
        elem = _first(_fields(value), 1)
        return "list", _type_kind(elem) if elem is not None else None
    if number == 7:
        return "map", None
    if number == 9:
        return "message", value.decode()
    if number == 5:
        return "primitive", {1: "any", 2: "timestamp", 3: "duration"}.get(value)
    if number == 14:
        return "abstract", (_first(_fields(value), 1) or b"").decode()
    return "other", None


def checked_fields(serialized: bytes) -> list[tuple[int, int, Any]]:
    """The fields of a serialized CheckedExpr (unwrapped from an ``Any`` where it comes in one)."""
    outer = _fields(serialized)
    return _fields(_first(outer, 2) if _first(outer, 1) is not None else serialized)


def reference_names(fields: list[tuple[int, int, Any]]) -> dict[int, str]:
    """A CheckedExpr's ``reference_map``: the referenced name by node id (nodes without a name left out)."""
    names: dict[int, str] = {}
    for entry in _all(fields, 2):
        entry_fields = _fields(entry)
        name = _first(_fields(_first(entry_fields, 2) or b""), 1)
        if name:
            names[_first(entry_fields, 1) or 0] = name.decode()
    return names


def decode_checked(serialized: bytes) -> tuple[Node, dict[int, tuple[str, Any]], dict[int, str]]:
    """(root expression, types by node id, referenced names by node id) of a serialized checked expression."""
    fields = checked_fields(serialized)
    types: dict[int, tuple[str, Any]] = {}
    for entry in _all(fields, 3):
        entry_fields = _fields(entry)
        types[_first(entry_fields, 1) or 0] = _type_kind(_first(entry_fields, 2) or b"")
    return _expr(_first(fields, 4) or b""), types, reference_names(fields)


# --- sizes -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The largest size of a value and, for lists and maps, of its keys and elements."""

    size: int = UNBOUNDED
    key: Shape | None = None
    elem: Shape | None = None


UNKNOWN = Shape()
SCALAR = Shape(1)


def device_shapes(
    attributes: dict[str, dict[str, Any]] | None = None,
    capacity: dict[str, dict[str, Any]] | None = None,
    driver: str | None = None,
) -> dict[str, Shape]:
    """The shapes of ``device``'s fields: DRA's declared maxima, or one device's real sizes."""
    if attributes is None or capacity is None or driver is None:
        inner = Shape(ENTRIES_MAX, Shape(ID_MAX), Shape(VALUE_MAX))
        caps = Shape(ENTRIES_MAX, Shape(ID_MAX), SCALAR)
        return {
            "device.driver": Shape(DRIVER_MAX),
            "device.allowMultipleAllocations": SCALAR,
            "device.attributes": Shape(ENTRIES_MAX, Shape(DOMAIN_MAX), inner),
            "device.capacity": Shape(ENTRIES_MAX, Shape(DOMAIN_MAX), caps),
        }

    def outer(maps: dict[str, dict[str, Any]], value_size: int) -> Shape:
        entries = max((len(m) for m in maps.values()), default=0)
        ids = max((len(i) for m in maps.values() for i in m), default=0)
        domains = max((len(d) for d in maps), default=0)
        return Shape(len(maps), Shape(domains), Shape(entries, Shape(ids), Shape(value_size)))

    longest = max(
        (len(v) if isinstance(v, str) else 1 for m in attributes.values() for v in m.values()), default=0
    )
    return {
        "device.driver": Shape(len(driver)),
        "device.allowMultipleAllocations": SCALAR,
        "device.attributes": outer(attributes, longest),
        "device.capacity": outer(capacity, 1),
    }


_QUANTITY_SEMVER = {"kubernetes.Quantity", "kubernetes.Semver"}
_STRING_SIZED = {"lowerAscii", "upperAscii", "substring", "trim"}
_K8S_LISTS = {"isSorted", "sum", "max", "min"}
_PARSERS = {"quantity", "isQuantity", "semver", "isSemver"}
_ORDERING = {"_<_", "_<=_", "_>_", "_>=_"}
_ACCUMULATORS = {"@result", "__result__"}
_LIST_EXTENSION = {"lists.range", "slice", "reverse", "flatten", "distinct", "sort", "@sortByAssociatedKeys"}


def _int_literal(node: Node, default: int) -> int:
    """cel-go's ``nodeAsIntValue``: a literal int argument, else the default."""
    if node.kind == "const" and isinstance(node.literal, int) and not isinstance(node.literal, bool):
        return max(node.literal, 0)
    return default


class CostModel:
    """cel-go's worst-case cost of one checked expression (see the module docstring)."""

    def __init__(self, serialized: bytes) -> None:
        self.root, self.types, self.names = decode_checked(serialized)
        self._static: int | None = None

    def estimate(
        self,
        attributes: dict[str, dict[str, Any]] | None = None,
        capacity: dict[str, dict[str, Any]] | None = None,
        driver: str | None = None,
    ) -> int:
        """The worst-case cost: over every device DRA allows, or over devices of this one's sizes."""
        static = attributes is None
        if static and self._static is not None:
            return self._static
        run = _Estimator(self.types, self.names, device_shapes(attributes, capacity, driver))
        cost = run.cost(self.root)
        if static:
            self._static = cost
        return cost


class _Estimator:
    def __init__(self, types: dict[int, tuple[str, Any]], names: dict[int, str], roots: dict[str, Shape]) -> None:
        self.types = types
        self.names = names
        self.roots = roots
        self.shapes: dict[int, Shape] = {}
        self.scopes: list[tuple[str, Shape]] = []

    # sizes
    def shape(self, node: Node) -> Shape:
        known = self.shapes.get(node.id)
        if known is not None:
            return known
        if node.kind == "const":
            if isinstance(node.literal, str):
                return Shape(len(node.literal))
            if isinstance(node.literal, bytes):
                return Shape(len(node.literal))
            return SCALAR
        if node.kind in ("list", "map"):
            return Shape(len(node.args) if node.kind == "list" else len(node.args) // 2)
        if node.kind == "ident":
            for name, shape in reversed(self.scopes):
                if name == node.name:
                    return shape
        kind, detail = self.types.get(node.id, ("other", None))
        if kind == "primitive" and detail in ("bool", "int", "uint", "double", "timestamp", "duration"):
            return SCALAR
        return UNKNOWN

    def size(self, node: Node) -> int:
        return self.shape(node).size

    def is_local(self, name: str) -> bool:
        return any(n == name for n, _ in self.scopes)

    # costs
    def cost(self, node: Node) -> int:
        kind = node.kind
        if kind == "const":
            return 0
        if kind == "ident":
            reference = self.names.get(node.id, node.name)
            if not self.is_local(node.name) and reference in self.roots:
                self.shapes[node.id] = self.roots[reference]
                return reference.count(".") + 1  # ``device`` and each selection cost 1 in cel-go
            return 1
        if kind == "select":
            reference = self.names.get(node.id)
            if reference in self.roots and node.target is not None and not self.is_local(node.target.name):
                self.shapes[node.id] = self.roots[reference]
                return reference.count(".") + 1
            assert node.target is not None
            total = self.cost(node.target)
            if node.test_only:
                return total  # PresenceTestHasCost(false)
            operand = self.types.get(node.target.id, ("other", None))[0]
            if operand in ("map", "message"):
                total = _add(total, 1)
            elem = self.shape(node.target).elem
            if elem is not None:
                self.shapes[node.id] = elem
            return total
        if kind == "call":
            return self.call(node)
        if kind == "list":
            elems = [self.cost(e) for e in node.args]
            widest = max((self.size(e) for e in node.args), default=0)
            self.shapes[node.id] = Shape(len(node.args), SCALAR, Shape(widest))
            return _add(10, *elems)
        if kind == "map":
            return _add(30, *(self.cost(e) for e in node.args))
        if kind == "struct":
            return _add(40, *(self.cost(e) for e in node.args))
        if kind == "comprehension":
            return self.comprehension(node)
        return 0

    def comprehension(self, node: Node) -> int:
        iter_range, accu_init, condition, step, result = node.args
        bind = (
            iter_range.kind == "list"
            and not iter_range.args
            and condition.kind == "const"
            and condition.literal is False
            and node.accu_var not in _ACCUMULATORS
        )
        total = _add(self.cost(iter_range), self.cost(accu_init))
        if bind:
            self.scopes.append((node.accu_var, self.shape(accu_init)))
            total = _add(total, self.cost(result))
            self.shapes[node.id] = self.shape(result)
            self.scopes.pop()
            return total
        range_shape = self.shape(iter_range)
        range_kind = self.types.get(iter_range.id, ("other", None))[0]
        key_shape = range_shape.key or (SCALAR if range_kind == "list" else UNKNOWN)
        elem_shape = range_shape.elem or UNKNOWN
        self.scopes.append((node.accu_var, self.shape(accu_init)))
        if node.iter_var2:
            self.scopes.append((node.iter_var, key_shape))
            self.scopes.append((node.iter_var2, elem_shape))
        else:
            self.scopes.append((node.iter_var, elem_shape if range_kind == "list" else key_shape))
        loop = _add(self.cost(condition), self.cost(step))
        self.scopes.pop()
        if node.iter_var2:
            self.scopes.pop()
        total = _add(total, self.cost(result))
        self.scopes.pop()
        if accu_init.kind in ("list", "map"):
            # map/filter: at most one element per iteration, each as large as the step appends.
            self.shapes[node.id] = Shape(range_shape.size, SCALAR, self.shape(step).elem)
        elif accu_init.kind == "const":
            self.shapes[node.id] = self.shape(accu_init)
        return _add(total, _mul(range_shape.size, loop))

    def list_extension(self, node: Node, name: str, target: Node | None, args: list[Node]) -> int:
        """ext/lists.go's estimators (version 3, as 1.34+ pins): ``ceil(size x factor) + 1``, plus 10 for
        the list it allocates; the result has that size."""
        if name == "lists.range" and target is None and len(args) == 1:
            size, factor = _int_literal(args[0], UNBOUNDED), 1.0
        elif name == "slice" and target is not None and len(args) == 2:
            whole = self.size(target)
            size, factor = max(_int_literal(args[1], whole) - _int_literal(args[0], 0), 0), 1.0
        elif name == "reverse" and target is not None and not args and self.types.get(target.id, ("", None))[0] == "list":
            size, factor = self.size(target), 1.0
        elif name == "flatten" and target is not None and len(args) <= 1:
            size = self.size(target)
            factor = float(_int_literal(args[0], UNBOUNDED)) if args else 1.0
        elif name in ("distinct", "sort", "@sortByAssociatedKeys"):
            # ``sortBy``'s expansion calls ``list.@sortByAssociatedKeys(keys)``: the list is the target.
            listed = target if target is not None else (args[0] if args else None)
            if listed is None:
                return 1
            whole = self.size(listed)
            size = whole
            factor = 2.0
            if name != "distinct":
                keys = target if name == "sort" else (args[-1] if args else None)
                kind = self.types.get(keys.id, ("", None)) if keys is not None else ("", None)
                if kind[0] == "list" and kind[1] in (("primitive", "string"), ("primitive", "bytes")):
                    factor += _STRING_FACTOR
            self.shapes[node.id] = Shape(size, SCALAR, self.shape(listed).elem)
            return _add(_factor(_mul(whole, whole), factor), 1, 10)
        else:
            return 1
        elem = self.shape(target).elem if target is not None and name != "flatten" else None
        self.shapes[node.id] = Shape(size, SCALAR, elem if name != "lists.range" else SCALAR)
        return _add(_factor(size, factor), 1, 10)

    def call(self, node: Node) -> int:
        name = node.name
        args = node.args
        target = node.target
        if name == "dyn" and args:
            cost = _add(1, self.cost(args[0]))
            self.shapes[node.id] = self.shape(args[0])
            return cost
        arg_costs = [self.cost(a) for a in args]
        total = self.cost(target) if target is not None else 0
        arg_sum = _add(*arg_costs)
        types = [self.types.get(a.id, ("other", None)) for a in args]

        if name in ("_&&_", "_||_"):
            return _add(total, arg_sum)
        if name == "_?_:_":
            a, b = self.shape(args[1]), self.shape(args[2])
            self.shapes[node.id] = a if a.size >= b.size else b
            return _add(total, arg_costs[0], max(arg_costs[1], arg_costs[2]))
        if name == "_[_]":
            elem = self.shape(args[0]).elem
            if elem is not None:
                self.shapes[node.id] = elem
            return _add(total, 1, arg_sum)
        if name == "@in":
            if types[1][0] == "list":
                return _add(total, self.size(args[1]), arg_sum)
            return _add(total, 1, arg_sum)
        if name in ("_==_", "_!=_") or name in _ORDERING and all(t == ("primitive", "string") for t in types):
            if (
                name == "_==_"
                and types[0] == types[1]
                and types[0][0] == "message"
                and types[0][1] in _QUANTITY_SEMVER
            ):
                return _add(total, 1, arg_sum)
            smallest = min(self.size(args[0]), self.size(args[1]))
            return _add(total, _factor(smallest, _STRING_FACTOR), arg_sum)
        if name == "_+_" and len(args) == 2:
            left, right = self.shape(args[0]), self.shape(args[1])
            elems = [e for e in (left.elem, right.elem) if e is not None]
            elem = max(elems, key=lambda e: e.size) if len(elems) == 2 else None
            result = Shape(_add(left.size, right.size), SCALAR if elem else None, elem)
            self.shapes[node.id] = result
            if types[0][0] == "list":
                return _add(total, 1, arg_sum)
            if types[0] == ("primitive", "string") or types[0] == ("primitive", "bytes"):
                return _add(total, _factor(result.size, _STRING_FACTOR), arg_sum)
            return _add(total, 1, arg_sum)
        if name in ("startsWith", "endsWith") and args:
            return _add(total, _factor(self.size(args[0]), _STRING_FACTOR), arg_sum)
        if name == "contains" and target is not None and args:
            return _add(
                total,
                _mul(_factor(self.size(target), _STRING_FACTOR), _factor(self.size(args[0]), _STRING_FACTOR)),
                arg_sum,
            )
        if name in ("matches", "find", "findAll") and target is not None and args:
            text = _factor(_add(self.size(target), 1), _STRING_FACTOR)
            regex = _factor(self.size(args[0]), _REGEX_FACTOR)
            if name == "findAll":
                self.shapes[node.id] = Shape(self.size(target), None, Shape(self.size(target)))
            elif name == "find":
                self.shapes[node.id] = Shape(self.size(target))
            return _add(total, _mul(text, regex), arg_sum)
        if name in _STRING_SIZED and target is not None:
            self.shapes[node.id] = Shape(self.size(target))
            return _add(total, _factor(self.size(target), _STRING_FACTOR), arg_sum)
        if name == "split" and target is not None:
            size = self.size(target)
            limit = size
            if len(args) > 1 and args[1].kind == "const" and isinstance(args[1].literal, int):
                limit = args[1].literal
            self.shapes[node.id] = Shape(limit, SCALAR, Shape(size))
            return _add(total, _factor(size, 2 * _STRING_FACTOR), arg_sum)
        if name == "replace" and target is not None:
            return _add(total, _factor(self.size(target), 2 * _STRING_FACTOR), arg_sum)
        if name == "join" and target is not None:
            shape = self.shape(target)
            elem = shape.elem.size if shape.elem is not None else 0
            size = _mul(shape.size, elem)
            if args:
                size = _add(size, _mul(self.size(args[0]), max(shape.size - 1, 0)))
            self.shapes[node.id] = Shape(size)
            return _add(total, _factor(size, _STRING_FACTOR), arg_sum)
        if name in _K8S_LISTS and target is not None:
            shape = self.shape(target)
            element = 1
            if shape.elem is not None and self.types.get(target.id, ("other", None))[0] == "list":
                element = _add(1, _factor(shape.elem.size, _STRING_FACTOR)) if shape.elem.size > 1 else 1
            return _add(total, _mul(shape.size, element), arg_sum)
        if name in _LIST_EXTENSION:
            return _add(total, self.list_extension(node, name, target, args), arg_sum)
        if name in _PARSERS and args:
            return _add(total, _factor(self.size(args[0]), _STRING_FACTOR), arg_sum)
        if name in ("string", "strings.quote") and args:
            return _add(total, _factor(self.size(args[0]), _STRING_FACTOR), arg_sum)
        return _add(total, 1, arg_sum)


# --- the base environment's homogeneous aggregate literals ---------------------------------------------------

_PRIMITIVE_NAMES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "timestamp", 3: "duration"}


def format_type(data: bytes) -> str:
    """A ``cel.expr.Type`` as cel-go's ``FormatCELType`` writes it (``int``, ``list(string)``, ``map(K, V)``)."""
    fields = _fields(data)
    if not fields:
        return "dyn"
    number, _, value = fields[0]
    if number == 1:
        return "dyn"
    if number == 2:
        return "null"
    if number == 3:
        return _PRIMITIVE_NAMES.get(value, "dyn")
    if number == 4:
        return f"wrapper({_PRIMITIVE_NAMES.get(value, 'dyn')})"
    if number == 5:
        return _WELL_KNOWN.get(value, "dyn")
    if number == 6:
        elem = _first(_fields(value), 1)
        return f"list({format_type(elem or b'')})"
    if number == 7:
        parts = _fields(value)
        return f"map({format_type(_first(parts, 1) or b'')}, {format_type(_first(parts, 2) or b'')})"
    if number in (9, 10):
        return value.decode()
    if number == 11:
        return f"type({format_type(value)})"
    if number == 12:
        return "!error!"
    if number == 14:
        parts = _fields(value)
        name = (_first(parts, 1) or b"").decode()
        params = [format_type(p) for p in _all(parts, 2)]
        return f"{name}({', '.join(params)})" if params else name
    return "dyn"


@dataclass
class CheckResult:
    """What cel-go's checker and the base environment's validators would say that cel-cpp's checker did not."""

    errors: list[str]
    #: The expression's value has the unknown type (an attribute value, cel-go's ``any``) ...
    unknown_result: bool
    #: ... or an explicit ``dyn(...)``, which upstream's result check refuses (``not dyn``).
    dyn_result: bool


_OUTER, _INNER, _ANY, _DYN = "outer", "inner", "any", "dyn"


def check(serialized: bytes, expression: str) -> CheckResult:
    """cel-go's rules that cel-cpp does not apply, on the checked AST:

    - attribute values have cel-go's unknown type ``any`` (``dyn`` here): a comprehension over one is
      ``expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)``
      (DRAListTypeAttributes, off in 1.36, is what turns them into ``dyn``);
    - ``cel.ValidateHomogeneousAggregateLiterals`` (Kubernetes' base environment since 1.29): every element of
      a list literal, and every key and every value of a map literal, has the type of the first one
      (``format`` arguments are exempt). cel-cpp infers ``list(dyn)`` for ``[1, "a"]`` instead.

    Errors come in cel-go's form (``ERROR: <input>:L:C: ...``, the source line, the caret), by position."""
    fields = checked_fields(serialized)
    types: dict[int, str] = {}
    for entry in _all(fields, 3):
        entry_fields = _fields(entry)
        types[_first(entry_fields, 1) or 0] = format_type(_first(entry_fields, 2) or b"")
    names = reference_names(fields)
    positions: dict[int, int] = {}
    source_info = _first(fields, 5)
    if source_info is not None:
        for entry in _all(_fields(source_info), 4):
            entry_fields = _fields(entry)
            positions[_first(entry_fields, 1) or 0] = _first(entry_fields, 2) or 0
    root = _expr(_first(fields, 4) or b"")
    errors: list[tuple[int, str]] = []
    tags: dict[int, str] = {}

    def report(node: Node, message: str) -> None:
        offset = positions.get(node.id, 0)
        line = expression.count("\n", 0, offset) + 1
        start = expression.rfind("\n", 0, offset) + 1
        column = offset - start + 1
        text = expression.split("\n")[line - 1]
        errors.append((offset, f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * (column - 1)}^"))

    def type_of(node: Node) -> str:
        return _ANY if tags.get(node.id) == _ANY else types.get(node.id, "dyn")

    def tag(node: Node, scopes: list[tuple[str, str | None]]) -> str | None:
        """Walks the tree; returns what the node is: the attributes map, a domain's map, a value, dyn(...)."""
        kind = node.kind
        result: str | None = None
        if kind == "ident":
            for name, bound in reversed(scopes):
                if name == node.name:
                    result = bound
                    break
            else:
                if names.get(node.id, node.name) == "device.attributes":
                    result = _OUTER
        elif kind == "select":
            assert node.target is not None
            operand = tag(node.target, scopes)
            if names.get(node.id) == "device.attributes" and not any(n == node.target.name for n, _ in scopes):
                result = _OUTER
            elif not node.test_only:
                result = {_OUTER: _INNER, _INNER: _ANY}.get(operand or "")
        elif kind == "comprehension":
            iter_range, accu_init, condition, step, final = node.args
            range_tag = tag(iter_range, scopes)
            init_tag = tag(accu_init, scopes)
            bind = (
                iter_range.kind == "list" and not iter_range.args and condition.kind == "const"
                and condition.literal is False and node.accu_var not in _ACCUMULATORS
            )
            if bind:
                result = tag(final, [*scopes, (node.accu_var, init_tag)])
            else:
                if range_tag == _ANY:
                    report(
                        iter_range,
                        "expression of type 'any' cannot be range of a comprehension (must be list, map, or dynamic)",
                    )
                inner = [*scopes, (node.accu_var, None)]
                if node.iter_var2:
                    value = {_OUTER: _INNER, _INNER: _ANY}.get(range_tag or "")
                    inner += [(node.iter_var, None), (node.iter_var2, value)]
                else:
                    inner += [(node.iter_var, None)]
                tag(condition, inner)
                tag(step, inner)
                tag(final, [*scopes, (node.accu_var, None)])
        else:
            child_tags = []
            if node.target is not None:
                child_tags.append(tag(node.target, scopes))
            child_tags += [tag(child, scopes) for child in node.args]
            if kind == "call":
                if node.name in ("_[_]",) and child_tags:
                    result = {_OUTER: _INNER, _INNER: _ANY}.get(child_tags[0] or "")
                elif node.name == "dyn":
                    result = _DYN
                elif node.name == "_?_:_" and _ANY in child_tags[1:]:
                    result = _ANY
        if result is not None:
            tags[node.id] = result
        return result

    root_tag = tag(root, [])

    def literals(node: Node, exempt: bool) -> None:
        inner_exempt = exempt or (node.kind == "call" and node.name == "format")
        if node.kind == "list" and not exempt and len(node.args) > 1:
            first = type_of(node.args[0])
            for element in node.args[1:]:
                if type_of(element) != first:
                    report(element, f"expected type '{first}' but found '{type_of(element)}'")
                    break
        if node.kind == "map" and not exempt and len(node.args) > 2:
            key_type, value_type = type_of(node.args[0]), type_of(node.args[1])
            for i in range(2, len(node.args) - 1, 2):
                if type_of(node.args[i]) != key_type:
                    report(node.args[i], f"expected type '{key_type}' but found '{type_of(node.args[i])}'")
                if type_of(node.args[i + 1]) != value_type:
                    report(node.args[i + 1], f"expected type '{value_type}' but found '{type_of(node.args[i + 1])}'")
        if node.target is not None:
            literals(node.target, inner_exempt)
        for child in node.args:
            literals(child, inner_exempt)

    literals(root, False)
    return CheckResult(
        errors=[message for _, message in sorted(errors, key=lambda e: e[0])],
        unknown_result=root_tag == _ANY,
        dyn_result=root_tag == _DYN,
    )
