"""DRA's CEL environment built on ``cel-expr-python`` (Google's cel-cpp, with its type checker).

Upstream (``k8s.io/dynamic-resource-allocation/cel``, compile.go) compiles selectors in the Kubernetes base
environment of the cluster's version (``environment.MustBaseEnvSet`` at 1.36, stored expressions) extended
with ``cel.bind`` and one variable, ``device`` of type ``kubernetes.DRADevice`` with the fields ``driver``,
``attributes`` (domain -> id -> value), ``capacity`` (domain -> id -> ``kubernetes.Quantity``) and, with
DRAConsumableCapacity (beta, on in 1.36), ``allowMultipleAllocations``. Here:

- the four fields are declared as the qualified variables ``device.driver`` ... (cel-cpp resolves
  ``device.driver`` to them), so that the checker knows ``device.driver`` is a string exactly as cel-go does;
- attribute values are ``dyn`` (upstream: the unknown type, which the result check treats alike);
- ``kubernetes.Quantity`` and ``kubernetes.Semver`` are one-field protobuf messages built at import time
  (see :mod:`policy_scheduler.dra.cel_values`), their functions Python callables with upstream's overloads;
- libraries: the standard library, ``strings`` (version 2, as 1.29+ pins), ``bindings``, ``lists`` (the
  highest version cel-cpp has, 2), ``sets``, two-variable comprehensions, optional types, and in Python the
  Kubernetes ``quantity``, ``semver``, ``regex`` (``find``/``findAll``) and ``lists`` (``isSorted``, ``sum``,
  ``min``, ``max``) libraries. That library's ``indexOf``/``lastIndexOf`` on lists are missing: cel-cpp
  cannot hold overloads of one function from two libraries, and the strings extension owns them. Not provided (an expression using them fails to
  compile with ``undeclared reference``): the URL, IP, CIDR, format and authz libraries, which no device
  selector has a use for; docs/dra-cel.md lists every deviation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from policy_scheduler.dra import cel_values as values

T = cel.Type

# --- the two object types as protobuf messages ------------------------------------------------------------

_POOL = descriptor_pool.DescriptorPool()
_FILE = descriptor_pb2.FileDescriptorProto(name="policy_scheduler/dra/kubernetes_cel.proto", package="kubernetes")
for _name in ("Quantity", "Semver"):
    _message = _FILE.message_type.add(name=_name)
    _message.field.add(
        name="text",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
_POOL.Add(_FILE)
QuantityMessage: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("kubernetes.Quantity"))
SemverMessage: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("kubernetes.Semver"))
QUANTITY = T("kubernetes.Quantity")
SEMVER = T("kubernetes.Semver")


def quantity_message(value: Fraction) -> Any:
    """A ``kubernetes.Quantity`` CEL value."""
    return QuantityMessage(text=values.quantity_text(value))


def semver_message(version: values.Semver) -> Any:
    """A ``kubernetes.Semver`` CEL value."""
    return SemverMessage(text=values.semver_text(version))


_quantity_values: dict[Fraction, Any] = {}
_semver_values: dict[str, Any] = {}


def quantity_value(value: Fraction) -> Any:
    """:func:`quantity_message`, memoised for the capacities devices share."""
    return values.memoised(_quantity_values, value, quantity_message)


def semver_value(text: str) -> Any:
    """The ``kubernetes.Semver`` value of a version attribute (blang's strict parse), memoised."""
    return values.memoised(_semver_values, text, lambda t: semver_message(values.parse_semver(t)))


class FunctionError(Exception):
    """Raised by a library function; the CEL runtime turns it into an error value with this text."""


def _q(message: Any) -> Fraction:
    return values.fraction_of(message.text)


def _s(message: Any) -> values.Semver:
    return values.semver_key(message.text)


# --- kubernetes.quantity ---------------------------------------------------------------------------------


_parsed_quantities: dict[str, Any] = {}


def _string_to_quantity(text: str) -> Any:
    message = _parsed_quantities.get(text)
    if message is None:
        try:
            message = quantity_message(values.parse_quantity(text))
        except values.ValueParseError as error:
            raise FunctionError(str(error)) from None
        if len(_parsed_quantities) < 4096:
            _parsed_quantities[text] = message
    return message


def _is_quantity(text: str) -> bool:
    try:
        values.parse_quantity(text)
    except values.ValueParseError:
        return False
    return True


def _sign(q: Any) -> int:
    v = _q(q)
    return (v > 0) - (v < 0)


def _as_integer(q: Any) -> int:
    v = values.as_int64(_q(q))
    if v is None:
        raise FunctionError("cannot convert value to integer")
    return v


def _cel_type(value: Any) -> str:
    if isinstance(value, QuantityMessage):
        return "kubernetes.Quantity"
    if isinstance(value, SemverMessage):
        return "kubernetes.Semver"
    return {bool: "bool", int: "int", float: "double", str: "string", bytes: "bytes"}.get(type(value), "dyn")


def _comparison(name: str) -> Callable[[Any, Any], int]:
    """``Quantity.Cmp`` or ``Version.Compare``, whichever the two values are; else cel-go's type-guard error."""

    def compare(a: Any, b: Any) -> int:
        if isinstance(a, QuantityMessage) and isinstance(b, QuantityMessage):
            x, y = _q(a), _q(b)
            return (x > y) - (x < y)
        if isinstance(a, SemverMessage) and isinstance(b, SemverMessage):
            return values.compare_semver(_s(a), _s(b))
        raise FunctionError(f"no such overload: {name}({_cel_type(a)}, {_cel_type(b)})")

    return compare


_greater, _less, _compare = _comparison("isGreaterThan"), _comparison("isLessThan"), _comparison("compareTo")


# --- kubernetes.Semver -----------------------------------------------------------------------------------


_parsed_semvers: dict[tuple[str, bool], Any] = {}


def _string_to_semver(text: str, normalize: bool = False) -> Any:
    message = _parsed_semvers.get((text, normalize))
    if message is None:
        try:
            parse = values.normalize_and_parse_semver if normalize else values.parse_semver
            message = semver_message(parse(text))
        except values.ValueParseError as error:
            raise FunctionError(str(error)) from None
        if len(_parsed_semvers) < 4096:
            _parsed_semvers[(text, normalize)] = message
    return message


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        (values.normalize_and_parse_semver if normalize else values.parse_semver)(text)
    except values.ValueParseError:
        return False
    return True


def _int64(number: int) -> int:
    """Go's ``types.Int(uint64)``: wraps into int64."""
    return number - 2**64 if number >= 2**63 else number


# --- kubernetes regex and lists libraries ----------------------------------------------------------------

_regexes: dict[str, re.Pattern[str]] = {}


def _compile_regex(pattern: str) -> re.Pattern[str]:
    compiled = _regexes.get(pattern)
    if compiled is None:
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise FunctionError(f"error parsing regexp: {error}") from None
        if len(_regexes) < 1024:
            _regexes[pattern] = compiled
    return compiled


def _find(text: str, pattern: str) -> str:
    match = _compile_regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in _compile_regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _comparable(value: Any) -> Any:
    if isinstance(value, QuantityMessage):
        return _q(value)
    if isinstance(value, SemverMessage):
        raise FunctionError("no such overload")
    return value


def _is_sorted(items: list[Any]) -> bool:
    keys = [_comparable(v) for v in items]
    return all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))


def _sum(items: list[Any]) -> Any:
    if not items:
        return 0
    total = items[0]
    for item in items[1:]:
        if type(item) is not type(total):
            raise FunctionError("no such overload")
        total = total + item
    if isinstance(total, int) and not isinstance(total, bool) and not -(2**63) <= total < 2**63:
        raise FunctionError("integer overflow")
    return total


def _extreme(items: list[Any], pick: Callable[..., Any]) -> Any:
    if not items:
        raise FunctionError("min called on empty list" if pick is min else "max called on empty list")
    return pick(items, key=_comparable)


def _overload(oid: str, result: Any, params: list[Any], impl: Callable[..., Any], member: bool = False) -> Any:
    return cel.Overload(oid, result, params, is_member=member, impl=impl)


def _functions() -> list[Any]:
    Q, S, STR, BOOL, INT, DBL, DYN = QUANTITY, SEMVER, T.STRING, T.BOOL, T.INT, T.DOUBLE, T.DYN
    LDYN = T.List(T.DYN)
    decls = {
        "quantity": [_overload("string_to_quantity", Q, [STR], _string_to_quantity)],
        "isQuantity": [_overload("is_quantity_string", BOOL, [STR], _is_quantity)],
        "sign": [_overload("quantity_sign", INT, [Q], _sign)],
        # cel-cpp's runtime tells overloads apart by argument kinds only, and both types are messages: one
        # implementation per function serves the Quantity and the Semver overload (the checker has chosen).
        "isGreaterThan": [
            _overload("quantity_is_greater_than", BOOL, [Q, Q], lambda a, b: _greater(a, b) == 1, True),
            cel.Overload("semver_is_greater_than", BOOL, [S, S], is_member=True),
        ],
        "isLessThan": [
            _overload("quantity_is_less_than", BOOL, [Q, Q], lambda a, b: _less(a, b) == -1, True),
            cel.Overload("semver_is_less_than", BOOL, [S, S], is_member=True),
        ],
        "compareTo": [
            _overload("quantity_compare_to", INT, [Q, Q], _compare, True),
            cel.Overload("semver_compare_to", INT, [S, S], is_member=True),
        ],
        "asApproximateFloat": [
            _overload("quantity_get_float", DBL, [Q], lambda q: values.approximate_float(_q(q)), True)
        ],
        "asInteger": [_overload("quantity_get_int", INT, [Q], _as_integer, True)],
        "isInteger": [_overload("quantity_is_integer", BOOL, [Q], lambda q: values.as_int64(_q(q)) is not None, True)],
        "add": [
            _overload("quantity_add", Q, [Q, Q], lambda a, b: quantity_message(_q(a) + _q(b)), True),
            _overload("quantity_add_int", Q, [Q, INT], lambda a, b: quantity_message(_q(a) + b), True),
        ],
        "sub": [
            _overload("quantity_sub", Q, [Q, Q], lambda a, b: quantity_message(_q(a) - _q(b)), True),
            _overload("quantity_sub_int", Q, [Q, INT], lambda a, b: quantity_message(_q(a) - b), True),
        ],
        "semver": [
            _overload("string_to_semver", S, [STR], _string_to_semver),
            _overload("string_bool_to_semver", S, [STR, BOOL], _string_to_semver),
        ],
        "isSemver": [
            _overload("is_semver_string", BOOL, [STR], _is_semver),
            _overload("is_semver_string_bool", BOOL, [STR, BOOL], _is_semver),
        ],
        "major": [_overload("semver_major", INT, [S], lambda v: _int64(_s(v)[0]), True)],
        "minor": [_overload("semver_minor", INT, [S], lambda v: _int64(_s(v)[1]), True)],
        "patch": [_overload("semver_patch", INT, [S], lambda v: _int64(_s(v)[2]), True)],
        "find": [_overload("string_find_string", STR, [STR, STR], _find, True)],
        "findAll": [
            _overload("string_find_all_string", T.List(STR), [STR, STR], _find_all, True),
            _overload("string_find_all_string_int", T.List(STR), [STR, STR, INT], _find_all, True),
        ],
        "isSorted": [_overload("list_is_sorted", BOOL, [LDYN], _is_sorted, True)],
        "sum": [_overload("list_sum", DYN, [LDYN], _sum, True)],
        "min": [_overload("list_min", DYN, [LDYN], lambda items: _extreme(items, min), True)],
        "max": [_overload("list_max", DYN, [LDYN], lambda items: _extreme(items, max), True)],
    }
    return [cel.FunctionDecl(name, overloads) for name, overloads in decls.items()]


_CONFIG = """
extensions:
  - name: "strings"
    version: 2
  - name: "bindings"
  - name: "lists"
    version: 2
  - name: "sets"
  - name: "two-var-comprehensions"
  - name: "optional"
    version: 2
"""

#: The variables of the environment, ``device``'s fields as qualified names.
VARIABLES = {
    "device.driver": T.STRING,
    "device.allowMultipleAllocations": T.BOOL,
    "device.attributes": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
    "device.capacity": T.Map(T.STRING, T.Map(T.STRING, QUANTITY)),
    # What lookups read after :mod:`policy_scheduler.dra.cel_rewrite` (no expression can name these).
    "device.attributes#lookup": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
    "device.capacity#lookup": T.Map(T.STRING, T.Map(T.STRING, QUANTITY)),
}


def new_env() -> Any:
    """A fresh ``cel.Env`` of DRA's environment."""
    return cel.NewEnv(
        _POOL,
        config=cel.NewEnvConfigFromYaml(_CONFIG),
        variables=VARIABLES,
        functions=_functions(),
    )
