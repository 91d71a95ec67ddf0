"""DRA's CEL selectors: upstream's compile_test.go table (results, errors, cost estimates) and more rows."""

from __future__ import annotations

from fractions import Fraction

import pytest

from benchmarks.cel_runtimes import Device  # a plain CELDevice (the benchmark's too)
from policy_scheduler.dra import cel
from policy_scheduler.dra.cel import CELCompileError, CELRuntimeError, compile_selector
from policy_scheduler.dra.cel_values import (
    ERR_FORMAT_WRONG,
    ERR_SUFFIX,
    ValueParseError,
    compare_semver,
    normalize_and_parse_semver,
    parse_quantity,
    parse_semver,
)
from policy_scheduler.model.dra import DeviceAttribute


def attrs(**values: object) -> dict[str, DeviceAttribute]:
    out = {}
    for name, value in values.items():
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        if isinstance(value, tuple):
            kind, value = value
        out[name] = DeviceAttribute(kind, value)
    return out


ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
EXPENSIVE = (
    f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, "
    f"{TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)
MI = Fraction(2**20)

# name: (expression, device, expected match or error text, upstream's expectCost or None)
UPSTREAM = {
    "true": ("true", Device(), True, 0),
    "false": ("false", Device(), False, 0),
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        Device(), CELRuntimeError("no such key: noSuchAttr"), 6,
    ),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        Device(), CELRuntimeError("no such key: noSuchAttr"), 6,
    ),
    "domain-check-negative": ('"no-such-domain" in device.attributes', Device(), False, 3),
    "domain-check-positive": (
        '"dra.example.com" in device.attributes', Device(attributes=attrs(**{"dra.example.com/something": True})),
        True, 3,
    ),
    "empty-driver-name": ('device.driver == ""', Device(driver=""), True, 2),
    "real-driver-name": ('device.driver == "dra.example.com"', Device(), True, 4),
    "driver-name-qualifier": ('device.attributes["dra.example.com"].name', Device(attributes=attrs(name=True)), True, 4),
    "driver-name-qualifier-map-lookup": (
        'device.attributes["dra.example.com"]["name"]', Device(attributes=attrs(name=True)), True, 4,
    ),
    "bind": (
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)', Device(attributes=attrs(name=True)), True, 15,
    ),
    "qualified-attribute-name": (
        'device.attributes["other.example.com"].name',
        Device(attributes=attrs(**{"other.example.com/name": True})), True, 4,
    ),
    "bool": ('device.attributes["dra.example.com"].name', Device(attributes=attrs(name=True)), True, 4),
    "int": ('device.attributes["dra.example.com"].name > 0', Device(attributes=attrs(name=1)), True, 5),
    "string": ('device.attributes["dra.example.com"].name == "fish"', Device(attributes=attrs(name="fish")), True, 5),
    "version": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        Device(attributes=attrs(name=("version", "1.0.0"))), True, 6,
    ),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        Device(attributes=attrs(name=("version", "1.0.0"))), True, 7,
    ),
    "quantity": (
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', Device(capacity={"name": MI}), True, 6,
    ),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        Device(capacity={"name": MI}), True, 10,
    ),
    "check-negative": (
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        Device(), True, 11,
    ),
    "all": (
        ALL,
        Device(
            attributes=attrs(bool=True, int=1, string="fish", version=("version", "1.0.0")),
            capacity={"quantity": MI},
        ),
        True, 52,
    ),
    "many": (
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
        'device.attributes["dra.example.com"].c',
        Device(attributes=attrs(a=True, b=True, c=True)), True, 12,
    ),
    "check_attribute_domains": (
        'device.attributes.exists_one(x, x == "dra.example.com")',
        Device(attributes=attrs(services="some_example_value")), True, 164,
    ),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        Device(attributes=attrs(services="some_example_value")), True, 133,
    ),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        Device(attributes=attrs(services="some_example_value")), True, 19,
    ),
    "regexp_attribute": (
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        Device(attributes=attrs(services="asymetric")), True, 18,
    ),
    "check_capacity_domains": (
        'device.capacity.exists_one(x, x == "dra.example.com")', Device(capacity={"memory": MI}), True, 164,
    ),
    "check_capacity_ids": (
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")', Device(capacity={"memory": MI}), True, 133,
    ),
    "expensive": (
        EXPENSIVE,
        Device(attributes={f"dra.example.com/{'x' * (32 - len(f'-{i}'))}-{i}": DeviceAttribute("string", "abc")
                           for i in range(32)}),
        CELRuntimeError("operation cancelled: actual cost limit exceeded"), 85555551,
    ),
    "allow_multiple_allocations": (
        "device.allowMultipleAllocations == true", Device(allow_multiple_allocations=True), True, 3,
    ),
    "allow_multiple_allocations_default": ("device.allowMultipleAllocations == false", Device(), True, 3),
    "syntax-error": ("?!", Device(), CELCompileError("Syntax error"), None),
    "type-error": ("1", Device(), CELCompileError("must evaluate to bool or the unknown type, not int"), None),
    "includes-function-undeclared-error": (
        'device.attributes["dra.example.com"].name.includes("fish")', Device(),
        CELCompileError("undeclared reference to 'includes'"), None,
    ),
}

# More rows: the string/list extensions, quantities and versions, type and lookup errors, non-bool results.
MORE = {
    "unqualified-and-qualified-agree": (
        'device.attributes["dra.example.com"].model == device.attributes["dra.example.com"]["model"]',
        Device(attributes=attrs(**{"dra.example.com/model": "a100"})), True,
    ),
    "driver-domain-is-the-device-driver": (
        '"model" in device.attributes["gpu.example.com"]',
        Device(driver="gpu.example.com", attributes=attrs(model="a100")), True,
    ),
    "bare-name-is-not-in-other-domain": (
        '"model" in device.attributes["dra.example.com"]',
        Device(driver="gpu.example.com", attributes=attrs(model="a100")), False,
    ),
    "missing-attribute": (
        'device.attributes["dra.example.com"].model == "a100"', Device(attributes=attrs(other=1)),
        CELRuntimeError("no such key: model"),
    ),
    "has-missing-attribute": ('has(device.attributes["dra.example.com"].model)', Device(), False),
    # The outer maps answer a lookup of any domain (upstream's mapper.Find with a default) but ``in``, size
    # and iteration see the device's real domains.
    "lookup-default-does-not-add-a-domain": (
        'size(device.attributes["zz"]) == 0 && !("zz" in device.attributes) && device.attributes.size() == 1',
        Device(attributes=attrs(model="a100")), True,
    ),
    "has-on-the-outer-map-finds-any-domain": ("has(device.attributes.zz)", Device(), True),
    "optional-select-on-the-outer-map": ("device.attributes.?zz.hasValue()", Device(), True),
    "computed-domain": (
        'device.attributes[device.driver + ".x"].size() == 0 && size(device.capacity) == 0', Device(), True,
    ),
    "lookup-through-a-bound-outer-map": (
        'cel.bind(m, device.attributes, m["bound.example.com"].size() == 0)', Device(attributes=attrs(model="a")),
        True,
    ),
    "missing-id-through-a-bound-outer-map": (
        'cel.bind(m, device.attributes, m["dra.example.com"].nope == 1)', Device(attributes=attrs(model="a")),
        CELRuntimeError("no such key: nope"),
    ),
    "iteration-sees-real-domains": (
        'device.attributes["zz"].size() == 0 && !device.attributes.exists(d, d == "zz")', Device(), True,
    ),
    "in-guards-a-missing-attribute": (
        '"model" in device.attributes["dra.example.com"] && device.attributes["dra.example.com"].model == "x"',
        Device(), False,
    ),
    "string-vs-int": (
        'device.attributes["dra.example.com"].model > 1', Device(attributes=attrs(model="a100")),
        CELRuntimeError("no such overload: _>_(string, int)"),
    ),
    "member-on-wrong-type": (
        'device.attributes["dra.example.com"].cores.startsWith("a")', Device(attributes=attrs(cores=8)),
        CELRuntimeError("no such overload: startsWith(int, string)"),
    ),
    "version-compared-with-quantity": (
        'device.attributes["dra.example.com"].v.isGreaterThan(quantity("1"))',
        Device(attributes=attrs(v=("version", "1.0.0"))),
        CELRuntimeError("no such overload: isGreaterThan(kubernetes.Semver, kubernetes.Quantity)"),
    ),
    "int-result": (
        'device.attributes["dra.example.com"].cores', Device(attributes=attrs(cores=8)),
        CELRuntimeError("CEL result of type int could not be converted to bool: "
                        "unsupported type conversion from 'int' to bool"),
    ),
    "string-result": (
        'device.attributes["dra.example.com"].model', Device(attributes=attrs(model="a100")),
        CELRuntimeError("CEL result of type string could not be converted to bool: "
                        "unsupported native conversion from string to 'bool'"),
    ),
    "version-result": (
        'device.attributes["dra.example.com"].v', Device(attributes=attrs(v=("version", "1.2.3"))),
        CELRuntimeError("CEL result of type kubernetes.Semver could not be converted to bool: "
                        "type conversion error from 'Semver' to 'bool'"),
    ),
    "string-compile-error": ("device.driver", Device(), CELCompileError(
        "must evaluate to bool or the unknown type, not string")),
    "quantity-compile-error": ('quantity("1")', Device(), CELCompileError(
        "must evaluate to bool or the unknown type, not kubernetes.Quantity")),
    "list-compile-error": ("[true]", Device(), CELCompileError(
        "must evaluate to bool or the unknown type, not list(bool)")),
    "undefined-field": ("device.model == 1", Device(), CELCompileError(
        "compilation failed: ERROR: <input>:1:7: undefined field 'model'\n | device.model == 1\n | ......^")),
    "undeclared-function": ('device.driver.frobnicate()', Device(), CELCompileError(
        "compilation failed: ERROR: <input>:1:25: undeclared reference to 'frobnicate' (in container '')")),
    "division-by-zero": (
        'device.attributes["dra.example.com"].cores / 0 == 1', Device(attributes=attrs(cores=8)),
        CELRuntimeError("division by zero"),
    ),
    "quantity-equality-is-by-value": ('quantity("1Gi") == quantity("1024Mi")', Device(), True),
    "quantity-compare": ('quantity("1500m").compareTo(quantity("1.5")) == 0', Device(), True),
    "quantity-add-int": ('quantity("1").add(2).isLessThan(quantity("3001m"))', Device(), True),
    "quantity-sub": ('quantity("1Ki").sub(quantity("24")).asInteger() == 1000', Device(), True),
    "quantity-sign": ('sign(quantity("-5m")) == -1', Device(), True),
    "quantity-is-integer": ('!quantity("1.5").isInteger() && quantity("2k").isInteger()', Device(), True),
    "quantity-as-integer-error": (
        'quantity("1.5").asInteger() == 1', Device(), CELRuntimeError("cannot convert value to integer"),
    ),
    "quantity-float": ('quantity("1.5").asApproximateFloat() == 1.5', Device(), True),
    "quantity-parse-error": ('quantity("1.2.3") == quantity("1")', Device(), CELRuntimeError(ERR_FORMAT_WRONG)),
    "quantity-suffix-error": ('quantity("1K") == quantity("1")', Device(), CELRuntimeError(ERR_SUFFIX)),
    "is-quantity": ('isQuantity("10Gi") && !isQuantity("10GB")', Device(), True),
    "capacity-vs-quantity": (
        'device.capacity["dra.example.com"].memory.isGreaterThan(quantity("40Gi"))',
        Device(capacity={"memory": Fraction(80 * 2**30)}), True,
    ),
    "semver-compare": ('semver("1.2.3").compareTo(semver("1.10.0")) == -1', Device(), True),
    "semver-prerelease": ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', Device(), True),
    "semver-parts": ('semver("2.3.4").major() == 2 && semver("2.3.4").minor() == 3 && semver("2.3.4").patch() == 4',
                     Device(), True),
    "semver-build-ignored": ('semver("1.0.0+build1") == semver("1.0.0+build2")', Device(), True),
    "semver-strict": ('semver("1.2") == semver("1.2.0")', Device(), CELRuntimeError(
        "No Major.Minor.Patch elements found")),
    "semver-normalized": ('semver("v01.2", true) == semver("1.2.0")', Device(), True),
    "is-semver": ('isSemver("1.2.3") && !isSemver("v1.2.3")', Device(), True),
    "bad-version-attribute": (
        "true", Device(attributes=attrs(v=("version", "1.2"))),
        CELRuntimeError("attribute v: parse semantic version: No Major.Minor.Patch elements found"),
    ),
    "version-attribute": (
        'device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
        Device(attributes=attrs(driverVersion=("version", "1.2.0-rc.1"))), True,
    ),
    "strings-extension": (
        'device.attributes["dra.example.com"].model.lowerAscii().startsWith("a1") && '
        'device.attributes["dra.example.com"].model.substring(1) == "100" && '
        '"a,b".split(",").join("-") == "a-b" && "  x ".trim() == "x" && "abc".indexOf("c") == 2',
        Device(attributes=attrs(model="A100")), True,
    ),
    "strings-v3-not-there": ('"abc".reverse() == "cba"', Device(), CELCompileError(
        "found no matching overload for 'reverse' applied to 'string.()'")),
    "no-matching-global-overload": ("quantity(1) == quantity(1)", Device(), CELCompileError(
        "ERROR: <input>:1:9: found no matching overload for 'quantity' applied to '(int)'")),
    "no-matching-member-overload": ('quantity("1").isGreaterThan(semver("1.0.0"))', Device(), CELCompileError(
        "found no matching overload for 'isGreaterThan' applied to 'kubernetes.Quantity.(kubernetes.Semver)'")),
    "regex-find": ('"gpu-42".find("[0-9]+") == "42" && "a1b2".findAll("[0-9]") == ["1", "2"]', Device(), True),
    "lists-library": ("[1, 2, 3].sum() == 6 && [1, 2, 3].isSorted() && [3, 1, 2].max() == 3", Device(), True),
    "lists-extension": ("[3, 1, 2].sort() == [1, 2, 3] && [1, 1, 2].distinct() == [1, 2]", Device(), True),
    "sets-extension": ("sets.contains([1, 2, 3], [2, 3]) && sets.intersects([1], [1, 4])", Device(), True),
    "two-variable-comprehension": (
        'device.attributes.exists(domain, ids, domain == "dra.example.com" && "model" in ids)',
        Device(attributes=attrs(model="a100")), True,
    ),
    "optional": ('device.attributes["dra.example.com"].?model.orValue("none") == "none"', Device(), True),
    "matches": ('device.attributes["dra.example.com"].model.matches("^a[0-9]+$")', Device(attributes=attrs(model="a100")),
                True),
    # the base environment's homogeneous aggregate literals (cel-cpp alone would infer list(dyn))
    "mixed-list-literal": ('device.attributes["dra.example.com"].model in ["a100", 100]', Device(), CELCompileError(
        "compilation failed: ERROR: <input>:1:56: expected type 'string' but found 'int'\n"
        ' | device.attributes["dra.example.com"].model in ["a100", 100]\n | ' + "." * 55 + "^")),
    "mixed-map-literal": ('{"a": 1, "b": "x"}.size() == 2', Device(), CELCompileError(
        "expected type 'int' but found 'string'")),
    "attribute-in-mixed-literal": ('[device.attributes["dra.example.com"].x, 1].size() == 2', Device(), CELCompileError(
        "expected type 'any' but found 'int'")),
    # An attribute value has cel-go's unknown type ``any``, which cannot be a comprehension's range (the
    # 1.36 default, DRAListTypeAttributes off); compile_test.go's macro-exists-on-* rows run with it on.
    "macro-exists-on-attribute": (
        'device.attributes["dra.example.com"].name.exists(x, x > 0)', Device(attributes=attrs(name=1)),
        CELCompileError(
            "compilation failed: ERROR: <input>:1:37: expression of type 'any' cannot be range of a comprehension"
            " (must be list, map, or dynamic)\n"
            ' | device.attributes["dra.example.com"].name.exists(x, x > 0)\n | ' + "." * 36 + "^"
        ),
    ),
    "macro-exists-on-bound-attribute": (
        'cel.bind(d, device.attributes["dra.example.com"], d.names.all(n, n != ""))', Device(),
        CELCompileError("expression of type 'any' cannot be range of a comprehension"),
    ),
    "macro-on-a-domain-is-fine": (
        'device.attributes["dra.example.com"].exists(id, id == "name")', Device(attributes=attrs(name=1)), True,
    ),
    "dyn-result": ("dyn(true)", Device(), CELCompileError("must evaluate to bool or the unknown type, not dyn")),
    "conditional-unknown-result": (
        'true ? device.attributes["dra.example.com"].b : false', Device(attributes=attrs(b=True)), True,
    ),
    "format-arguments-are-exempt": ('"%s %d".format(["a", 1]) == "a 1"', Device(), True),
    "homogeneous-list-literal": ('device.attributes["dra.example.com"].model in ["a100", "h100"]',
                                 Device(attributes=attrs(model="h100")), True),
    # allocator_testing.go's selectors
    "allocator-invalid-cel": ("noSuchVar", Device(), CELCompileError(
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')\n"
        " | noSuchVar\n | ^")),
    "allocator-driver-and-multi-allocation": (
        'device.driver == "dra.example.com" && device.allowMultipleAllocations == true',
        Device(allow_multiple_allocations=True), True,
    ),
    "allocator-memory-at-least": (
        'device.capacity["dra.example.com"].memory.compareTo(quantity("2Gi")) >= 0',
        Device(capacity={"memory": Fraction(2 * 2**30)}), True,
    ),
    "allocator-memory-too-small": (
        'device.capacity["dra.example.com"].memory.compareTo(quantity("2Gi")) >= 0',
        Device(capacity={"memory": Fraction(2**30)}), False,
    ),
    "allocator-memory-missing": (
        'device.capacity["dra.example.com"].memory.compareTo(quantity("2Gi")) >= 0',
        Device(attributes=attrs(model="x")), CELRuntimeError("no such key: memory"),
    ),
    "index-out-of-range": ("[1][3] == 1", Device(), CELRuntimeError("index '3' out of range in list size '1'")),
}


def _check(expression: str, device: Device, expected: object) -> cel.Selector | None:
    if isinstance(expected, CELCompileError):
        with pytest.raises(CELCompileError) as caught:
            compile_selector(expression)
        assert expected.message in caught.value.message
        return None
    selector = compile_selector(expression)
    if isinstance(expected, CELRuntimeError):
        with pytest.raises(CELRuntimeError) as caught:
            selector.matches(device)
        assert caught.value.message == expected.message
    else:
        assert selector.matches(device) is expected
    return selector


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_upstream_table(name: str) -> None:
    expression, device, expected, cost = UPSTREAM[name]
    selector = _check(expression, device, expected)
    if selector is not None and cost is not None:
        assert selector.max_cost == cost


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_rows(name: str) -> None:
    expression, device, expected = MORE[name]
    _check(expression, device, expected)


def test_compile_messages_are_upstreams_format() -> None:
    with pytest.raises(CELCompileError) as caught:
        compile_selector("device.driver ==")
    message = caught.value.message
    assert message.startswith("compilation failed: ERROR: <input>:1:17: Syntax error: ")
    assert message.endswith(" | device.driver ==\n | ................^")
    assert str(caught.value) == message


def test_compile_is_cached_per_expression() -> None:
    expression = 'device.driver == "cached.example.com"'
    assert compile_selector(expression) is compile_selector(expression)
    with pytest.raises(CELCompileError) as first:
        compile_selector("(")
    with pytest.raises(CELCompileError) as second:
        compile_selector("(")
    assert first.value is second.value


def test_results_are_cached_per_key_and_reevaluated_under_a_new_key() -> None:
    selector = compile_selector('device.attributes["dra.example.com"].cores >= 8')
    device = Device(attributes=attrs(cores=8))
    assert selector.matches(device, key=("node-1", "gpu-0", 1)) is True
    device.attributes = attrs(cores=4)
    # Same key: the caller promised the device did not change, so the cached answer stands.
    assert selector.matches(device, key=("node-1", "gpu-0", 1)) is True
    # A new key (the device changed): evaluated again.
    assert selector.matches(device, key=("node-1", "gpu-0", 2)) is False
    # Without a key nothing is cached.
    assert selector.matches(device) is False


def test_runtime_errors_are_cached_too() -> None:
    selector = compile_selector('device.attributes["dra.example.com"].cores >= 8')
    device = Device()
    with pytest.raises(CELRuntimeError, match="no such key: cores"):
        selector.matches(device, key="err-1")
    device.attributes = attrs(cores=9)
    with pytest.raises(CELRuntimeError, match="no such key: cores"):
        selector.matches(device, key="err-1")
    assert selector.matches(device, key="err-2") is True


def test_result_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel, "RESULT_CACHE_SIZE", 8)
    monkeypatch.setattr(cel, "DEVICE_CACHE_SIZE", 4)
    cel.clear_caches()
    selector = compile_selector('device.attributes["dra.example.com"].cores >= 8')
    for i in range(50):
        selector.matches(Device(attributes=attrs(cores=i)), key=i)
    assert len(cel._results) == 8
    assert len(cel._devices) == 4
    # The oldest keys were dropped: key 0 is evaluated afresh against the device given now.
    assert selector.matches(Device(attributes=attrs(cores=100)), key=0) is True


def test_a_devices_values_are_shared_by_its_key_across_expressions() -> None:
    device = Device(attributes=attrs(cores=8, model="a100"))
    assert compile_selector('device.attributes["dra.example.com"].cores == 8').matches(device, key="shared-1")
    assert "shared-1" in cel._devices
    # A second expression under the same key evaluates against the values converted for the first one.
    assert compile_selector('device.attributes["dra.example.com"].model == "a100"').matches(device, key="shared-1")


def test_the_same_key_under_two_expressions_is_two_entries() -> None:
    device = Device(attributes=attrs(cores=8))
    assert compile_selector('device.attributes["dra.example.com"].cores == 8').matches(device, key="k") is True
    assert compile_selector('device.attributes["dra.example.com"].cores == 9').matches(device, key="k") is False


def test_cost_bound_uses_the_devices_real_sizes() -> None:
    # Four nested loops over the domains: 32^4 iterations at DRA's declared maximum exceed the limit ...
    expression = (
        "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
        'device.attributes.all(d, a + b + c + d != ""))))'
    )
    selector = compile_selector(expression)
    assert selector.max_cost > cel.COST_LIMIT
    # ... but a device with two domains stays far below it, so it is evaluated (cel-go's actual cost is small).
    device = Device(attributes=attrs(**{"a.example.com/x": 1, "b.example.com/y": 2}))
    assert selector.matches(device) is True


def test_cost_limit_refuses_what_exceeds_it_even_for_small_devices() -> None:
    selector = compile_selector(EXPENSIVE)
    assert selector.max_cost == 85555551
    with pytest.raises(CELRuntimeError) as caught:
        selector.matches(Device())
    assert caught.value.message == "operation cancelled: actual cost limit exceeded"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1Gi", 2**30), ("1.5", Fraction(3, 2)), ("1n", Fraction(1, 10**9)), ("0.1n", Fraction(1, 10**9)),
        ("-0.1n", Fraction(-1, 10**9)), ("1e3", 1000), ("1E", 10**18), (".", 0), ("+.5", Fraction(1, 2)),
        ("9223372036854775807Ei", 2**63 - 1), ("1e-12", Fraction(1, 10**9)), ("0", 0), ("00.5k", 500),
    ],
)
def test_quantity_parsing(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [("", ERR_FORMAT_WRONG), ("abc", ERR_FORMAT_WRONG), ("1.2.3", ERR_FORMAT_WRONG), ("1K", ERR_SUFFIX),
     ("1e", ERR_SUFFIX), ("1i", ERR_SUFFIX)],
)
def test_quantity_errors(text: str, message: str) -> None:
    with pytest.raises(ValueParseError) as caught:
        parse_quantity(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "Version string empty"),
        ("1.2", "No Major.Minor.Patch elements found"),
        ("01.2.3", 'Major number must not contain leading zeroes "01"'),
        ("1.x.3", 'Invalid character(s) found in minor number "x"'),
        ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.2.3-a..b", "Prerelease is empty"),
        ("1.2.3+", "Build meta data is empty"),
        ("1.2.3+a_b", 'Invalid character(s) found in build meta data "a_b"'),
        ("1..3", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("99999999999999999999.0.0", 'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
    ],
)
def test_semver_errors(text: str, message: str) -> None:
    with pytest.raises(ValueParseError) as caught:
        parse_semver(text)
    assert str(caught.value) == message


def test_semver_order_is_blangs() -> None:
    order = ["1.0.0-1", "1.0.0-2", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    parsed = [parse_semver(v) for v in order]
    for i, a in enumerate(parsed):
        for j, b in enumerate(parsed):
            assert compare_semver(a, b) == (i > j) - (i < j)
    assert normalize_and_parse_semver("v1") == (1, 0, 0, ())
    with pytest.raises(ValueParseError, match="short version cannot contain PreRelease/Build meta data"):
        normalize_and_parse_semver("1.2-rc")


def test_list_extension_costs_follow_cel_gos_estimators() -> None:
    # ext/lists.go: ceil(size x factor) + 1 + 10 for the list allocated.
    assert compile_selector("lists.range(3).size() == 3").max_cost == 14 + 1 + 1
    huge = compile_selector("lists.range(1000000).size() > 0")
    assert huge.max_cost > cel.COST_LIMIT
    with pytest.raises(CELRuntimeError, match="^operation cancelled: actual cost limit exceeded$"):
        huge.matches(Device())


def test_map_and_filter_results_are_bounded_by_their_range() -> None:
    # Upstream's TestInterrupt expression: map/filter keep the size of what they iterate, so the estimate
    # stays finite and far below the limit.
    selector = compile_selector(
        'device.attributes["dra.example.com"].map(key, device.attributes["dra.example.com"][key] * 20)'
        ".filter(e, e > 50).exists(e, e == 60)"
    )
    assert selector.max_cost < cel.COST_LIMIT
    assert selector.matches(Device(attributes=attrs(a=3, b=2))) is True


def test_the_benchmark_table_is_upstreams_outcome_for_ours() -> None:
    from benchmarks import cel_runtimes

    ours, device = cel_runtimes.Ours(), cel_runtimes.sample_device()
    wrong = [
        (expression, expected, ours.outcome(expression, device))
        for expression, expected in cel_runtimes.TABLE
        if ours.outcome(expression, device)[0] != expected
    ]
    assert wrong == []
    assert len(cel_runtimes.TABLE) == 45
