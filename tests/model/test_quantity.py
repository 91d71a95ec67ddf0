"""Quantities parse exactly as apimachinery's resource.Quantity (Value/MilliValue round up)."""

from __future__ import annotations

import pytest

from policy_scheduler.model.quantity import QuantityError, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0", 0), ("1", 1), ("1Ki", 1024), ("1Mi", 1048576), ("128Mi", 134217728), ("1Gi", 1073741824),
        ("1Ti", 2**40), ("1Pi", 2**50), ("1Ei", 2**60), ("1k", 1000), ("1M", 10**6), ("1G", 10**9),
        ("1T", 10**12), ("1P", 10**15), ("1E", 10**18), ("1e3", 1000), ("1E3", 1000), ("1.5", 2),
        ("1500m", 2), ("1001m", 2), ("999m", 1), ("1n", 1), ("0.5Gi", 536870912), ("+5", 5), (".5", 1),
        ("2e-1", 1), (12, 12),
    ],
)
def test_value_rounds_up(text, expected):
    assert value(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [("100m", 100), ("0.1", 100), ("1", 1000), ("2", 2000), ("1.5m", 2), ("250m", 250), ("0m", 0), ("1u", 1), ("1e-3", 1)],
)
def test_milli_value(text, expected):
    assert milli_value(text) == expected


@pytest.mark.parametrize("text", ["", "1.2.3", "abc", "1Gb", "1 Gi", "Gi", "1ii", "--1", "1e", True, None, [1]])
def test_invalid_quantities(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)
