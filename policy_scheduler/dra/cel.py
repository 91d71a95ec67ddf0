"""CEL device selectors as DRA's structured allocator evaluates them (``k8s.io/dynamic-resource-allocation/cel``).

:func:`compile_selector` compiles an expression once (cached per expression) in DRA's environment
(:mod:`policy_scheduler.dra.cel_env`: ``device.driver``, ``device.attributes``, ``device.capacity``,
``device.allowMultipleAllocations``, quantities, semantic versions, the string/list/set extensions); an
expression that does not compile, or whose type is neither bool nor the unknown type, raises
:class:`CELCompileError` with upstream's text (``compilation failed: ERROR: <input>:1:3: ...``, ``must evaluate
to bool or the unknown type, not int``). :meth:`Selector.matches` evaluates it for one device:

- an attribute name without a domain (``"model"``) belongs to the device's driver; a lookup of a domain the
  device has no attribute in gives an empty map (so ``device.attributes["other.io"].x`` fails with ``no such
  key: x``, as upstream's ``mapper`` with its default value does) while ``in``, ``size`` and iteration see
  the device's real domains (:mod:`policy_scheduler.dra.cel_rewrite`);
- runtime errors carry cel-go's texts (``no such key: x``, ``no such overload: _>_(string, int)``,
  ``division by zero``, ``CEL result of type int could not be converted to bool: ...``);
- the cost limit (``resourceapi.CELSelectorExpressionMaxCost``, 1,000,000): cel-cpp does not count cost the
  way cel-go does, so :mod:`policy_scheduler.dra.cel_cost` bounds it from the checked AST: an expression
  whose worst case (DRA's size limits) stays within the limit is evaluated freely; otherwise the bound is
  recomputed with the device's real sizes and, if that still exceeds the limit, the evaluation fails with
  upstream's ``operation cancelled: actual cost limit exceeded`` (docs/dra-cel.md: where this may refuse an
  evaluation cel-go would have finished under the limit).

Results are cached per (expression, key) when the caller passes a key that changes whenever the device
does (a bounded LRU, :data:`RESULT_CACHE_SIZE` entries over all expressions), so that a 5,000-node cluster
with 8 devices a node evaluates each selector once per device, not once per pod. The key names the
device's content for every expression: the device converted into CEL values is kept under it too
(:data:`DEVICE_CACHE_SIZE` devices), shared by all selectors evaluated for that device. A
``(slice name, slice generation, device name)`` tuple is such a key. The caches are plain dicts (the
engine is single-threaded).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from policy_scheduler.dra import cel_cost, cel_env, cel_rewrite, cel_values
from policy_scheduler.model.dra import DeviceAttribute

#: ``resourceapi.CELSelectorExpressionMaxCost``.
COST_LIMIT = 1_000_000
#: How many compiled expressions are kept (upstream's scheduler keeps 10; compiling is the dear part here).
COMPILE_CACHE_SIZE = 1024
#: How many (expression, key) results are kept: 5,000 nodes x 8 devices x 6 selectors, with room.
RESULT_CACHE_SIZE = 262_144
#: How many devices' CEL values (keyed like results) are kept, shared by every expression.
DEVICE_CACHE_SIZE = 65_536


class CELError(Exception):
    """A CEL selector that failed; ``message`` is upstream's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CELCompileError(CELError):
    """The expression does not compile in DRA's environment (the allocator says ``CEL compile error: ...``)."""


class CELRuntimeError(CELError):
    """The expression failed for this device (the allocator says ``CEL runtime error: ...``)."""


class CELDevice(Protocol):
    """What a selector sees of a device: attribute and capacity names are ``domain/id`` (or a bare id)."""

    driver: str
    attributes: Mapping[str, DeviceAttribute]
    capacity: Mapping[str, Fraction]
    allow_multiple_allocations: bool


_env: Any = None
_compiled: OrderedDict[str, Selector | CELCompileError] = OrderedDict()
_results: OrderedDict[tuple[str, Hashable], bool | CELRuntimeError] = OrderedDict()
_devices: OrderedDict[Hashable, _DeviceValues | CELRuntimeError] = OrderedDict()
#: Every domain a compiled selector looks up (or an evaluation missed): the lookup maps hold each, empty
#: where the device has nothing in it; bumping the version makes cached activations rebuild.
_lookup_domains: set[str] = set()
_lookup_version = 0


def _add_lookup_domains(domains: set[str]) -> None:
    global _lookup_version
    if not domains <= _lookup_domains:
        _lookup_domains.update(domains)
        _lookup_version += 1


def _environment() -> Any:
    global _env
    if _env is None:
        _env = cel_env.new_env()
    return _env


def _cached(cache: OrderedDict, key: Hashable, make: Callable[[], Any], error: type[CELError], size: int) -> Any:
    """``make()`` through a bounded LRU ``cache`` that keeps an ``error`` it raises as its outcome (raised again on
    every later lookup) as well as a value."""
    cached = cache.get(key)
    if cached is None:
        try:
            cached = make()
        except error as e:
            cached = e
        cache[key] = cached
        if len(cache) > size:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    if isinstance(cached, error):
        raise cached
    return cached


def compile_selector(expression: str) -> Selector:
    """The compiled selector (cached per expression); :class:`CELCompileError` with upstream's text."""
    return _cached(_compiled, expression, lambda: Selector(expression), CELCompileError, COMPILE_CACHE_SIZE)


def clear_caches() -> None:
    """Forget every compiled expression and cached result (tests and benchmarks)."""
    _compiled.clear()
    _results.clear()
    _devices.clear()


# --- messages ------------------------------------------------------------------------------------------

_STATUS = re.compile(r"^[A-Z_]+: ")
_STATUS_TAIL = re.compile(r" \[[A-Z_]+\]$")
_PRIMITIVES = {
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
    "BOOL": "bool",
    "NULL": "null_type",
    "DYN": "dyn",
    "ERROR": "error",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "int64": "int",
    "uint64": "uint",
}


def _type_name(name: str) -> str:
    """cel-cpp's spelling of a type (``LIST<INT>``, ``int64``) in cel-go's (``list(int)``, ``int``)."""
    out: list[str] = []
    for token in re.split(r"([<>(),]\s*)", name):
        if token.startswith("<") or token.startswith("("):
            out.append("(")
        elif token.startswith(">") or token.startswith(")"):
            out.append(")")
        elif token.startswith(","):
            out.append(", ")
        elif token:
            lowered = {"LIST": "list", "MAP": "map", "TYPE": "type", "OPTIONAL_TYPE": "optional_type"}.get(token)
            out.append(lowered or _PRIMITIVES.get(token, token))
    return "".join(out)


_NO_MATCHING = re.compile(r"ERROR: <input>:(\d+):(\d+): found no matching overload for '([^']+)' applied to '\((.*)\)'")


def _split_types(text: str) -> list[str]:
    """``int, map(string, dyn)`` -> ``["int", "map(string, dyn)"]``."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text.strip():
        parts.append(text[start:].strip())
    return parts


def _compile_message(raw: str, expression: str) -> str:
    text = _STATUS_TAIL.sub("", _STATUS.sub("", raw.strip()))
    # ``device`` is an object in cel-go, so a field it does not have is an undefined field there.
    text = re.sub(r"undeclared reference to 'device\.([^'.]+)' \(in container ''\)", r"undefined field '\1'", text)
    lines = expression.split("\n")

    def member_call(match: re.Match[str]) -> str:
        # cel-go writes a member call's signature as ``target.(args)``; cel-cpp lists the target first.
        line, column, name, args = int(match.group(1)), int(match.group(2)), match.group(3), match.group(4)
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        before = source[: column - 1]
        types = _split_types(args)
        if types and before.endswith("." + name):
            signature = f"{types[0]}.({', '.join(types[1:])})"
        else:
            signature = f"({args})"
        return f"ERROR: <input>:{line}:{column}: found no matching overload for '{name}' applied to '{signature}'"

    text = _NO_MATCHING.sub(member_call, text)
    return "compilation failed: " + text


_NOT_FOUND = re.compile(r'^Key not found in map : "?(.*?)"?$')
_NO_OVERLOAD = re.compile(r"^No matching overloads found : ([^(]+)\((.*)\)$")
_NO_MEMBER_OVERLOAD = re.compile(r"^No matching overloads found : \(([^)]*)\)\.([^(]+)\((.*)\)$")
_INDEX = re.compile(r"^Index error: index=(-?\d+) size=(\d+)$")
_RUNTIME_TEXTS = {"divide by zero": "division by zero", "modulus by zero": "modulus by zero"}


def _runtime_message(raw: str) -> str:
    text = _STATUS.sub("", str(raw).strip())
    match = _NOT_FOUND.match(text)
    if match:
        return f"no such key: {match.group(1)}"
    match = _NO_MEMBER_OVERLOAD.match(text)
    if match:
        # cel-go's dispatch lists the receiver as the first argument: ``startsWith(int, string)``.
        types = [match.group(1), *match.group(3).split(",")]
        arguments = ", ".join(_type_name(a.strip()) for a in types if a.strip())
        return f"no such overload: {match.group(2).strip()}({arguments})"
    match = _NO_OVERLOAD.match(text)
    if match:
        arguments = ", ".join(_type_name(a.strip()) for a in match.group(2).split(",") if a.strip())
        return f"no such overload: {match.group(1).strip()}({arguments})"
    match = _INDEX.match(text)
    if match:
        return f"index '{match.group(1)}' out of range in list size '{match.group(2)}'"
    return _RUNTIME_TEXTS.get(text, text)


#: cel-go's ``ConvertToNative(bool)`` error of each result type.
_NOT_BOOL = {
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "double": "type conversion error from Double to 'bool'",
    "string": "unsupported native conversion from string to 'bool'",
    "bytes": "type conversion error from Bytes to 'bool'",
    "null_type": "type conversion error from 'null_type' to 'bool'",
    "list": "type conversion error from list to 'bool'",
    "map": "type conversion error from map to 'bool'",
    "kubernetes.Quantity": "type conversion error from 'Quantity' to 'bool'",
    "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'",
}


def _not_bool(type_name: str) -> str:
    kind = type_name.split("(", 1)[0]
    name = kind if kind in ("list", "map") else type_name
    reason = _NOT_BOOL.get(kind, f"type conversion error from '{type_name}' to 'bool'")
    return f"CEL result of type {name} could not be converted to bool: {reason}"


# --- the selector ---------------------------------------------------------------------------------------

_ATTRIBUTE_KINDS = ("bool", "int", "string")


def _split(name: str, driver: str) -> tuple[str, str]:
    """``parseQualifiedName``: a name without a domain belongs to the driver."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


class Selector:
    """One compiled CEL selector; :meth:`matches` evaluates it for a device."""

    __slots__ = ("expression", "max_cost", "_program", "_cost", "_aliased")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        env = _environment()
        try:
            program = env.compile(expression)
        except RuntimeError as error:
            raise CELCompileError(_compile_message(str(error), expression)) from None
        serialized = program.serialize()
        try:
            checked = cel_cost.check(serialized, expression)
        except (ValueError, IndexError, RecursionError) as error:  # a checked AST we cannot read
            raise CELCompileError(f"unexpected compilation error: {error}") from None
        if checked.errors:
            raise CELCompileError("compilation failed: " + "\n".join(checked.errors))
        output = _type_name(program.return_type().name())
        if output not in ("bool", "dyn") or output == "dyn" and checked.dyn_result:
            raise CELCompileError(f"must evaluate to bool or the unknown type, not {output}")
        try:
            lookups = cel_rewrite.rewrite(serialized)
            if lookups.serialized is not None:
                program = env.deserialize(lookups.serialized)
        except (ValueError, IndexError, RecursionError, RuntimeError) as error:
            raise CELCompileError(f"unexpected compilation error: {error}") from None
        _add_lookup_domains(lookups.domains)
        self._aliased = lookups.aliased
        self._program = program
        try:
            self._cost = cel_cost.CostModel(serialized)
            #: Worst-case cost over every device DRA's limits allow (cel-go's ``MaxCost`` analogue).
            self.max_cost = self._cost.estimate()
        except (ValueError, IndexError, RecursionError) as error:
            raise CELCompileError(f"cost estimation failed: {error}") from None

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"

    def matches(self, device: CELDevice, key: Hashable | None = None) -> bool:
        """Whether the device satisfies the selector; :class:`CELRuntimeError` with upstream's text."""
        if key is None:
            return self._evaluate(device)
        return _cached(_results, (self.expression, key), lambda: self._evaluate(device, key), CELRuntimeError,
                       RESULT_CACHE_SIZE)

    def _evaluate(self, device: CELDevice, key: Hashable | None = None) -> bool:
        values = _device_values(device, key)
        if self.max_cost > COST_LIMIT and (
            self._cost.estimate(values.attributes, values.capacity, values.driver) > COST_LIMIT
        ):
            raise CELRuntimeError("operation cancelled: actual cost limit exceeded")
        activation = _activation(values)
        learnt: set[str] = set()
        attributes, capacity = values.attributes, values.capacity
        while True:
            try:
                result = self._program.eval(activation)
            except RuntimeError as error:
                raise CELRuntimeError(_runtime_message(str(error))) from None
            result_type = result.type()
            if result_type == _BOOL:
                return bool(result.value())
            type_name = _type_name(result_type.name())
            if type_name != "error":
                raise CELRuntimeError(_not_bool(type_name))
            message = _runtime_message(str(result.value()))
            missing = message[len("no such key: ") :] if message.startswith("no such key: ") else None
            if missing is None:
                raise CELRuntimeError(message)
            if missing not in _lookup_domains and missing not in learnt:
                # Perhaps a domain looked up with a computed key (``device.attributes[device.driver]``): this
                # evaluation's lookup maps learn it and it runs again. (If it was a missing attribute id, the
                # empty domain of that name is only ever seen by lookups: the same error comes back.)
                learnt.add(missing)
            elif self._aliased and (missing not in attributes or missing not in capacity):
                # A lookup through a name bound to an outer map reads the real map: give it the domain too
                # (docs/dra-cel.md: ``in``/``size``/iteration through that name then see it).
                attributes = {missing: {}, **attributes}
                capacity = {missing: {}, **capacity}
            else:
                raise CELRuntimeError(message)
            try:
                activation = _environment().Activation(
                    _variables(values.driver, values.multiple, attributes, capacity, learnt)
                )
            except (RuntimeError, TypeError, ValueError, OverflowError) as error:
                raise CELRuntimeError(f"unsupported attribute value: {error}") from None


_BOOL = cel_env.T.BOOL


@dataclass
class _DeviceValues:
    """A device as CEL values: the domain maps and the runtime's activation of them (built for one version
    of the lookup domains)."""

    driver: str
    multiple: bool
    attributes: dict[str, dict[str, Any]]
    capacity: dict[str, dict[str, Any]]
    activation: Any = None
    version: int = -1


def _variables(
    driver: str,
    multiple: bool,
    attributes: dict[str, Any],
    capacity: dict[str, Any],
    learnt: set[str] = frozenset(),  # type: ignore[assignment]
) -> dict[str, Any]:
    attributes_lookup = dict(attributes)
    capacity_lookup = dict(capacity)
    for domain in (*_lookup_domains, *learnt):
        attributes_lookup.setdefault(domain, {})
        capacity_lookup.setdefault(domain, {})
    return {
        "device.driver": driver,
        "device.allowMultipleAllocations": multiple,
        "device.attributes": attributes,
        "device.capacity": capacity,
        "device.attributes#lookup": attributes_lookup,
        "device.capacity#lookup": capacity_lookup,
    }


def _activation(values: _DeviceValues) -> Any:
    """The device's activation, rebuilt when selectors have looked up new domains since it was built."""
    if values.version != _lookup_version:
        try:
            values.activation = _environment().Activation(
                _variables(values.driver, values.multiple, values.attributes, values.capacity)
            )
        except (RuntimeError, TypeError, ValueError, OverflowError) as error:
            raise CELRuntimeError(f"unsupported attribute value: {error}") from None
        values.version = _lookup_version
    return values.activation


def _device_values(device: CELDevice, key: Hashable | None) -> _DeviceValues:
    """The device's CEL values (cached by key: every expression evaluated for that device shares them)."""
    if key is not None:
        cached = _devices.get(key)
        if cached is not None:
            _devices.move_to_end(key)
            if isinstance(cached, CELRuntimeError):
                raise cached
            return cached
    try:
        values: _DeviceValues | CELRuntimeError = _convert(device)
    except CELRuntimeError as error:
        values = error
    if key is not None:
        _devices[key] = values
        if len(_devices) > DEVICE_CACHE_SIZE:
            _devices.popitem(last=False)
    if isinstance(values, CELRuntimeError):
        raise values
    return values


def _convert(device: CELDevice) -> _DeviceValues:
    """``DeviceMatches``' conversion: attributes and capacities into domain -> id -> value maps."""
    driver = device.driver
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        if attribute.kind in _ATTRIBUTE_KINDS:
            value: Any = attribute.value
        elif attribute.kind == "version":
            try:
                value = cel_env.semver_value(str(attribute.value))
            except cel_values.ValueParseError as error:
                raise CELRuntimeError(f"attribute {name}: parse semantic version: {error}") from None
        else:
            raise CELRuntimeError(f"attribute {name}: unsupported attribute value")
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, amount in device.capacity.items():
        domain, ident = _split(name, driver)
        capacity.setdefault(domain, {})[ident] = cel_env.quantity_value(Fraction(amount))
    values = _DeviceValues(driver, bool(device.allow_multiple_allocations), attributes, capacity)
    _activation(values)
    return values
