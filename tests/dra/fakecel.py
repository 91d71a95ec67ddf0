"""A test-local stand-in for the CEL environment (``policy_scheduler.dra.cel``'s interface): enough of DRA's
CEL for the allocator's tables (``device.driver``, ``device.attributes["domain"].id``, ``device.capacity[...]``,
``device.allowMultipleAllocations``, ``==``, ``!=``, ``<``, ``&&``, ``||``, ``!``, ``quantity("1Gi")``),
evaluated by translating to Python. Never shipped: the real environment is the "cel" helper's module."""

from __future__ import annotations

import re
from collections.abc import Hashable
from fractions import Fraction
from typing import Any

from policy_scheduler.dra.allocator import CELEnvironment
from policy_scheduler.model.quantity import parse_quantity


class FakeCELError(Exception):
    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class FakeCompileError(FakeCELError):
    pass


class FakeRuntimeError(FakeCELError):
    pass


class _Quantity(Fraction):
    """A quantity value in CEL: compared only through ``compareTo`` (DRA's quantity library has no ``<``)."""

    def compareTo(self, other: Fraction) -> int:  # noqa: N802 - CEL's name
        return (Fraction(self) > Fraction(other)) - (Fraction(self) < Fraction(other))

    def _no_overload(self, other: object) -> bool:
        raise FakeRuntimeError("found no matching overload for comparing kubernetes.Quantity values")

    __lt__ = __le__ = __gt__ = __ge__ = _no_overload


def quantity(text: str) -> _Quantity:
    return _Quantity(parse_quantity(text))


class _Domain:
    def __init__(self, values: dict[str, Any], what: str, domain: str) -> None:
        self._values, self._what, self._domain = values, what, domain

    def __getattr__(self, name: str) -> Any:
        key = f"{self._domain}/{name}"
        if key not in self._values:
            raise FakeRuntimeError(f"no such key: {name}")
        return self._values[key]


class _Map:
    def __init__(self, values: dict[str, Any], what: str) -> None:
        self._values, self._what = values, what

    def __getitem__(self, domain: str) -> _Domain:
        return _Domain(self._values, self._what, domain)


class _Device:
    def __init__(self, device: Any) -> None:
        self.driver = device.driver
        self.attributes = _Map({k: a.value for k, a in device.attributes.items()}, "attributes")
        self.capacity = _Map({k: _Quantity(v) for k, v in device.capacity.items()}, "capacity")
        self.allowMultipleAllocations = device.allow_multiple_allocations


class FakeSelector:
    def __init__(self, expression: str, code: Any, counter: dict[str, int]) -> None:
        self.expression = expression
        self._code = code
        self._cache: dict[Hashable, bool] = {}
        self._counter = counter

    def matches(self, device: Any, key: Hashable | None = None) -> bool:
        if key is not None and key in self._cache:
            return self._cache[key]
        self._counter["evaluations"] = self._counter.get("evaluations", 0) + 1
        try:
            result = eval(self._code, {"quantity": quantity, "device": _Device(device)})  # noqa: S307
        except FakeRuntimeError:
            raise
        except Exception as e:  # a type error and the like
            raise FakeRuntimeError(str(e)) from None
        if not isinstance(result, bool):
            raise FakeRuntimeError(f"expression must evaluate to a bool, got {type(result).__name__}")
        if key is not None:
            self._cache[key] = result
        return result


def _translate(expression: str) -> str:
    text = expression.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    if re.search(r"\bnoSuchVar\b", text):  # CEL checks references when compiling
        raise SyntaxError("undeclared reference to 'noSuchVar'")
    return text.replace("true", "True").replace("false", "False")


def fake_cel() -> tuple[CELEnvironment, dict[str, int]]:
    """A fresh environment and its evaluation counter."""
    counter: dict[str, int] = {}
    cache: dict[str, FakeSelector] = {}

    def compile_selector(expression: str) -> FakeSelector:
        selector = cache.get(expression)
        if selector is None:
            try:
                code = compile(_translate(expression), "<cel>", "eval")
            except SyntaxError as e:
                raise FakeCompileError(f"ERROR: <input>:1:{(e.offset or 1)}: {e.msg}") from None
            selector = cache[expression] = FakeSelector(expression, code, counter)
        return selector

    return CELEnvironment(compile_selector, FakeCompileError, FakeRuntimeError), counter
