"""The Python CEL runtimes compared on DRA's device selectors: correctness, then speed.

Runtimes (the two besides ours are the optional extra ``cel-compare``, not dependencies of the scheduler):

* ``cel-expr-python`` (Google's cel-cpp with its type checker): the one :mod:`policy_scheduler.dra.cel` uses;
* ``cel-python`` (``celpy``, pure Python on lark);
* ``common-expression-language`` (``cel``, Rust's cel-rust through PyO3).

Each gets the same device (driver ``dra.example.com``, attributes with and without a domain, a version and a
capacity) and, where the library lets a Python function be called from CEL, the Kubernetes functions DRA's
environment adds (``quantity``, ``semver``, their methods, ``find``, the lists library). The table's expected
outcomes are upstream's (cel-go in kube-scheduler 1.36, from compile_test.go and the libraries' sources):
``true``/``false``, ``compile error`` or ``runtime error``. Then the speed: compiles per second and
evaluations per device per second (building the runtime's view of the device included, as an allocator
does for a device it has not seen), and for ours the same with the per-key caches warm.

    pip install '.[cel-compare]'   # cel-python and common-expression-language, for the comparison only
    python benchmarks/cel_runtimes.py [--seconds 1.0] [--budget 5]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policy_scheduler.dra import cel as dracel  # noqa: E402
from policy_scheduler.dra import cel_values  # noqa: E402
from policy_scheduler.model.dra import DeviceAttribute  # noqa: E402

DRIVER = "dra.example.com"
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
EXPENSIVE = (
    f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, "
    f"{TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)
A = 'device.attributes["dra.example.com"]'

# (expression, upstream's outcome)
TABLE: list[tuple[str, str]] = [
    ('device.driver == "dra.example.com"', "true"),
    (f'{A}.model == "a100"', "true"),
    (f'{A}["model"] == "a100"', "true"),
    (f'"model" in {A}', "true"),
    ('device.attributes["other.example.com"].speed > 10', "true"),
    ('"no-such-domain" in device.attributes', "false"),
    ('device.attributes["no-such-domain"].x == 1', "runtime error"),
    (f"{A}.nope == 1", "runtime error"),
    (f"has({A}.model)", "true"),
    (f"{A}.cores >= 64 && {A}.mig == false", "true"),
    (f"cel.bind(dra, {A}, dra.cores > 100)", "true"),
    (f'{A}.driverVersion.isGreaterThan(semver("500.0.0"))', "true"),
    (f'{A}.driverVersion.compareTo(semver("535.1.0")) == 0', "true"),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', "true"),
    ('semver("1.2") == semver("1.2.0")', "runtime error"),
    ('semver("v1.2", true).major() == 1', "true"),
    ('isSemver("1.2.3") && !isSemver("v1.2.3")', "true"),
    ('device.capacity["dra.example.com"].memory.isGreaterThan(quantity("40Gi"))', "true"),
    ('device.capacity["dra.example.com"].memory.compareTo(quantity("80Gi")) == 0', "true"),
    ('quantity("1Gi") == quantity("1024Mi")', "true"),
    ('quantity("1500m").isGreaterThan(quantity("1"))', "true"),
    ('quantity("1").add(2).isLessThan(quantity("3001m"))', "true"),
    ('quantity("1.5").asInteger() == 1', "runtime error"),
    ('isQuantity("10Gi") && !isQuantity("10GB")', "true"),
    ('sign(quantity("-5m")) == -1', "true"),
    (f'{A}.model.lowerAscii() == "a100"', "true"),
    (f'{A}.product.split(" ").size() == 2', "true"),
    ('["a", "b"].join("-") == "a-b"', "true"),
    (f'{A}.product.substring(0, 6) == "NVIDIA"', "true"),
    (f'{A}.model.matches("^a[0-9]+$")', "true"),
    ('"gpu-42".find("[0-9]+") == "42"', "true"),
    ("[3, 1, 2].sort() == [1, 2, 3]", "true"),
    ("[1, 2, 3].sum() == 6", "true"),
    ("sets.contains([1, 2, 3], [2, 3])", "true"),
    ('device.attributes.exists_one(x, x == "dra.example.com")', "true"),
    ('device.attributes.exists(d, ids, "model" in ids)', "true"),
    ("device.allowMultipleAllocations == false", "true"),
    (f"{A}.model > 1", "runtime error"),
    (f"{A}.cores", "runtime error"),
    (f"{A}.cores / 0 == 1", "runtime error"),
    ("device.driver", "compile error"),
    ("1", "compile error"),
    ('device.model == "x"', "compile error"),
    ("?!", "compile error"),
    (EXPENSIVE, "runtime error"),
]


@dataclass
class Device:
    driver: str = DRIVER
    attributes: dict[str, DeviceAttribute] = field(default_factory=dict)
    capacity: dict[str, Fraction] = field(default_factory=dict)
    allow_multiple_allocations: bool = False


def sample_device(index: int = 0) -> Device:
    return Device(
        attributes={
            "model": DeviceAttribute("string", "a100"),
            "cores": DeviceAttribute("int", 108 + index % 2),
            "mig": DeviceAttribute("bool", False),
            "driverVersion": DeviceAttribute("version", "535.1.0"),
            "product": DeviceAttribute("string", "NVIDIA A100"),
            "index": DeviceAttribute("int", index),
            "other.example.com/speed": DeviceAttribute("int", 100),
        },
        capacity={"memory": Fraction(80 * 2**30)},
    )


def domains(device: Device, convert: Callable[[DeviceAttribute], Any], quantity: Callable[[Fraction], Any]):
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        domain, _, ident = name.rpartition("/")
        attributes.setdefault(domain or device.driver, {})[ident] = convert(attribute)
    capacity: dict[str, dict[str, Any]] = {}
    for name, amount in device.capacity.items():
        domain, _, ident = name.rpartition("/")
        capacity.setdefault(domain or device.driver, {})[ident] = quantity(amount)
    return attributes, capacity


# --- ours -------------------------------------------------------------------------------------------------


class Ours:
    name = "cel-expr-python (ours)"

    def compile(self, expression: str) -> Any:
        dracel.clear_caches()
        return dracel.compile_selector(expression)

    def outcome(self, expression: str, device: Device) -> tuple[str, str]:
        try:
            selector = dracel.compile_selector(expression)
        except dracel.CELCompileError as error:
            return "compile error", error.message
        try:
            return ("true" if selector.matches(device) else "false"), ""
        except dracel.CELRuntimeError as error:
            return "runtime error", error.message

    def evaluator(self, expression: str) -> Callable[[Device], Any]:
        selector = dracel.compile_selector(expression)
        return selector.matches


# --- the Kubernetes functions for the others, on plain Python values -----------------------------------------


class KQuantity:
    """A quantity for runtimes that carry Python objects (celpy)."""

    __slots__ = ("v",)

    def __init__(self, v: Fraction) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KQuantity) and self.v == other.v

    def __hash__(self) -> int:
        return hash(self.v)


class KSemver:
    __slots__ = ("v",)

    def __init__(self, v: cel_values.Semver) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KSemver) and self.v == other.v

    def __hash__(self) -> int:
        return hash(self.v)


def k8s_functions(wrap_q: Callable[[Fraction], Any], unwrap_q: Callable[[Any], Fraction],
                  wrap_s: Callable[[Any], Any], unwrap_s: Callable[[Any], Any]) -> dict[str, Callable[..., Any]]:
    def compare(a: Any, b: Any) -> int:
        try:
            x, y = unwrap_q(a), unwrap_q(b)
            return (x > y) - (x < y)
        except (TypeError, AttributeError, ValueError):
            return cel_values.compare_semver(unwrap_s(a), unwrap_s(b))

    def semver(text: str, normalize: bool = False) -> Any:
        parse = cel_values.normalize_and_parse_semver if normalize else cel_values.parse_semver
        return wrap_s(parse(str(text)))

    def is_semver(text: str, normalize: bool = False) -> bool:
        try:
            semver(text, normalize)
        except cel_values.ValueParseError:
            return False
        return True

    def is_quantity(text: str) -> bool:
        try:
            cel_values.parse_quantity(str(text))
        except cel_values.ValueParseError:
            return False
        return True

    def as_integer(q: Any) -> int:
        value = cel_values.as_int64(unwrap_q(q))
        if value is None:
            raise ValueError("cannot convert value to integer")
        return value

    import re

    return {
        "quantity": lambda text: wrap_q(cel_values.parse_quantity(str(text))),
        "isQuantity": is_quantity,
        "semver": semver,
        "isSemver": is_semver,
        "compareTo": compare,
        "isGreaterThan": lambda a, b: compare(a, b) == 1,
        "isLessThan": lambda a, b: compare(a, b) == -1,
        "add": lambda a, b: wrap_q(unwrap_q(a) + (b if isinstance(b, int) else unwrap_q(b))),
        "sub": lambda a, b: wrap_q(unwrap_q(a) - (b if isinstance(b, int) else unwrap_q(b))),
        "asInteger": as_integer,
        "isInteger": lambda q: cel_values.as_int64(unwrap_q(q)) is not None,
        "sign": lambda q: (unwrap_q(q) > 0) - (unwrap_q(q) < 0),
        "major": lambda v: unwrap_s(v)[0],
        "minor": lambda v: unwrap_s(v)[1],
        "patch": lambda v: unwrap_s(v)[2],
        "find": lambda s, p: (lambda m: m.group(0) if m else "")(re.search(str(p), str(s))),
        "sum": lambda items: sum(items),
    }


# --- celpy ----------------------------------------------------------------------------------------------------


class CelPython:
    name = "cel-python (celpy)"

    def __init__(self) -> None:
        import celpy
        from celpy import celtypes

        self.celpy = celpy
        self.t = celtypes
        self.env = celpy.Environment()
        functions = k8s_functions(KQuantity, _unwrap(KQuantity), KSemver, _unwrap(KSemver))

        def typed(fn: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any) -> Any:
                result = fn(*(self._plain(a) for a in args))
                return self._cel(result)

            return call

        self.functions = {name: typed(fn) for name, fn in functions.items()}

    def _plain(self, value: Any) -> Any:
        t = self.t
        if isinstance(value, t.BoolType):
            return bool(value)
        if isinstance(value, t.IntType):
            return int(value)
        if isinstance(value, t.StringType):
            return str(value)
        if isinstance(value, t.ListType):
            return [self._plain(v) for v in value]
        return value

    def _cel(self, value: Any) -> Any:
        t = self.t
        if isinstance(value, bool):
            return t.BoolType(value)
        if isinstance(value, int):
            return t.IntType(value)
        if isinstance(value, str):
            return t.StringType(value)
        return value

    def _device(self, device: Device) -> Any:
        t = self.t

        def convert(attribute: DeviceAttribute) -> Any:
            if attribute.kind == "version":
                return KSemver(cel_values.parse_semver(str(attribute.value)))
            return self._cel(attribute.value)

        attributes, capacity = domains(device, convert, KQuantity)

        def cmap(d: dict[str, Any]) -> Any:
            return t.MapType({t.StringType(k): cmap(v) if isinstance(v, dict) else v for k, v in d.items()})

        return t.MapType({
            t.StringType("driver"): t.StringType(device.driver),
            t.StringType("allowMultipleAllocations"): t.BoolType(device.allow_multiple_allocations),
            t.StringType("attributes"): cmap(attributes),
            t.StringType("capacity"): cmap(capacity),
        })

    def compile(self, expression: str) -> Any:
        return self.env.program(self.env.compile(expression), functions=self.functions)

    def outcome(self, expression: str, device: Device) -> tuple[str, str]:
        try:
            program = self.compile(expression)
        except Exception as error:  # noqa: BLE001 - any failure to compile is a compile error
            return "compile error", _first_line(error)
        try:
            result = program.evaluate({"device": self._device(device)})
        except Exception as error:  # noqa: BLE001
            return "runtime error", _first_line(error)
        if isinstance(result, self.t.BoolType):
            return ("true" if result else "false"), ""
        # DeviceMatches refuses a result that is not a bool: a runtime error, whatever the runtime.
        return "runtime error", f"result of type {type(result).__name__}"

    def evaluator(self, expression: str) -> Callable[[Device], Any]:
        program = self.compile(expression)
        return lambda device: program.evaluate({"device": self._device(device)})


# --- cel-rust -------------------------------------------------------------------------------------------------


class CelRust:
    name = "common-expression-language (cel-rust)"

    def __init__(self) -> None:
        import cel

        self.cel = cel
        # Values cross into Rust as plain data: quantities and versions travel as canonical strings.
        self.functions = k8s_functions(
            lambda v: "q:" + cel_values.quantity_text(v),
            lambda s: cel_values.fraction_of(s[2:]) if isinstance(s, str) and s.startswith("q:") else _raise(),
            lambda v: "v:" + cel_values.semver_text(v),
            lambda s: cel_values.semver_key(s[2:]),
        )

    def _context(self, device: Device) -> Any:
        def convert(attribute: DeviceAttribute) -> Any:
            if attribute.kind == "version":
                return "v:" + cel_values.semver_text(cel_values.parse_semver(str(attribute.value)))
            return attribute.value

        attributes, capacity = domains(device, convert, lambda v: "q:" + cel_values.quantity_text(v))
        device_value = {
            "driver": device.driver,
            "allowMultipleAllocations": device.allow_multiple_allocations,
            "attributes": attributes,
            "capacity": capacity,
        }
        return self.cel.Context(variables={"device": device_value}, functions=self.functions)

    def compile(self, expression: str) -> Any:
        return self.cel.compile(expression)

    def outcome(self, expression: str, device: Device) -> tuple[str, str]:
        try:
            program = self.compile(expression)
        except Exception as error:  # noqa: BLE001
            return "compile error", _first_line(error)
        try:
            result = program.execute(self._context(device))
        except Exception as error:  # noqa: BLE001
            return "runtime error", _first_line(error)
        if isinstance(result, bool):
            return ("true" if result else "false"), ""
        return "runtime error", f"result of type {type(result).__name__}"

    def evaluator(self, expression: str) -> Callable[[Device], Any]:
        program = self.compile(expression)
        return lambda device: program.execute(self._context(device))


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:80]


def _raise() -> Any:
    raise TypeError("not a quantity")


def _unwrap(kind: type) -> Callable[[Any], Any]:
    def unwrap(value: Any) -> Any:
        if not isinstance(value, kind):
            raise TypeError(f"not a {kind.__name__}")
        return value.v

    return unwrap


class Budget(BaseException):
    """Raised by the timer when an evaluation runs past its budget (the others have no cost limit)."""


def within(seconds: float, fn: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    """``fn()``, or ``("no cost limit", ...)`` when it runs longer than ``seconds``."""

    def expire(signum: int, frame: Any) -> None:
        raise Budget

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.perf_counter()
    stopped = ("no cost limit", f"still running after {seconds:g} s, stopped")
    try:
        outcome = fn()
        # A runtime that turns the timer's exception (raised in a Python callback) into its own error
        # was stopped all the same.
        return stopped if time.perf_counter() - start >= seconds else outcome
    except Budget:
        return stopped
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- the run ----------------------------------------------------------------------------------------------------

SPEED = [
    'device.driver == "dra.example.com"',
    f'{A}.model == "a100" && {A}.cores >= 64',
    'device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
    f'{A}.driverVersion.isGreaterThan(semver("500.0.0"))',
]


def rate(fn: Callable[[int], Any], seconds: float) -> float:
    count, start = 0, time.perf_counter()
    while True:
        for i in range(200):
            fn(count + i)
        count += 200
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return count / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per speed figure")
    parser.add_argument("--budget", type=float, default=5.0, help="seconds an evaluation of the others may take")
    args = parser.parse_args(argv)
    runtimes: list[Any] = [Ours()]
    for factory, package in ((CelPython, "cel-python"), (CelRust, "common-expression-language")):
        try:
            runtimes.append(factory())
        except ImportError:
            print(f"# {package} is not installed (pip install '.[cel-compare]'): left out")
    device = sample_device()

    print("## Correctness against upstream's outcomes\n")
    header = "| # | expression | upstream | " + " | ".join(r.name for r in runtimes) + " |"
    print(header)
    print("|" + "---|" * (3 + len(runtimes)))
    scores = [0] * len(runtimes)
    for number, (expression, expected) in enumerate(TABLE, 1):
        cells = []
        for i, runtime in enumerate(runtimes):
            if isinstance(runtime, Ours):
                outcome, detail = runtime.outcome(expression, device)
            else:
                outcome, detail = within(args.budget, lambda r=runtime, e=expression: r.outcome(e, device))
            ok = outcome == expected
            scores[i] += ok
            detail = detail.replace("|", "/")[:70]
            cells.append(("ok" if ok else f"**{outcome}**") + (f" ({detail})" if detail and not ok else ""))
        shown = expression if len(expression) <= 60 else expression[:57] + "..."
        print(f"| {number} | `{shown}` | {expected} | " + " | ".join(cells) + " |")
    print("\n| runtime | rows as upstream |\n|---|---|")
    for runtime, score in zip(runtimes, scores):
        print(f"| {runtime.name} | {score}/{len(TABLE)} |")

    print("\n## Speed (per second; evaluation includes building the runtime's view of a new device)\n")
    print("| runtime | compile | " + " | ".join(f"eval `{e[:40]}`" for e in SPEED) + " |")
    print("|" + "---|" * (2 + len(SPEED)))
    devices = [sample_device(i) for i in range(1000)]
    for runtime in runtimes:
        compile_rate = rate(lambda i, r=runtime: r.compile(f'{A}.cores >= {i}'), args.seconds)
        evals = []
        for expression in SPEED:
            evaluate = runtime.evaluator(expression)
            evals.append(rate(lambda i, ev=evaluate: ev(devices[i % 1000]), args.seconds))
        print(f"| {runtime.name} | {compile_rate:,.0f} | " + " | ".join(f"{e:,.0f}" for e in evals) + " |")
    dracel.clear_caches()
    warm = []
    for expression in SPEED:
        selector = dracel.compile_selector(expression)
        for i, d in enumerate(devices):
            selector.matches(d, key=i)
        warm.append(rate(lambda i, s=selector: s.matches(devices[i % 1000], key=i % 1000), args.seconds))
    print("| ours, result cached per (expression, key) | - | " + " | ".join(f"{e:,.0f}" for e in warm) + " |")
    dracel.clear_caches()
    shared = []
    for expression in SPEED:
        selector = dracel.compile_selector(expression)
        for i, d in enumerate(devices):  # the devices' values converted once, as another selector would have
            dracel._device_values(d, ("shared", i))
        # Evaluate without the result cache, with the device values found by key.
        shared.append(rate(lambda i, s=selector: s._evaluate(devices[i % 1000], ("shared", i % 1000)), args.seconds))
    print("| ours, device values shared by key | - | " + " | ".join(f"{e:,.0f}" for e in shared) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
