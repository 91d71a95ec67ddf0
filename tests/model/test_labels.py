"""Selector semantics of apimachinery 1.9: set selectors, LabelSelectors, node selector requirements."""

from __future__ import annotations

import pytest

from policy_scheduler.model.labels import (
    SelectorError,
    label_selector,
    node_selector_requirements,
    selector_from_set,
)


def test_set_selector():
    assert selector_from_set({}).matches({})
    assert selector_from_set(None).matches({"a": "b"})
    assert selector_from_set({"a": "b"}).matches({"a": "b", "c": "d"})
    assert not selector_from_set({"a": "b"}).matches({"a": "c"})
    assert not selector_from_set({"a": "b"}).matches({})
    # An invalid key or value selects everything (labels.SelectorFromSet quirk).
    assert selector_from_set({"a b": "c"}).matches({"x": "y"})
    assert selector_from_set({"a": "-bad-"}).matches({})


def test_label_selector_null_and_empty():
    assert not label_selector(None).matches({"a": "b"})
    assert label_selector({}).matches({"a": "b"})
    assert label_selector({"matchLabels": {}, "matchExpressions": []}).matches({})


@pytest.mark.parametrize(
    "expr, labels, expected",
    [
        ({"key": "a", "operator": "In", "values": ["x", "y"]}, {"a": "y"}, True),
        ({"key": "a", "operator": "In", "values": ["x"]}, {}, False),
        ({"key": "a", "operator": "NotIn", "values": ["x"]}, {}, True),
        ({"key": "a", "operator": "NotIn", "values": ["x"]}, {"a": "x"}, False),
        ({"key": "a", "operator": "Exists"}, {"a": ""}, True),
        ({"key": "a", "operator": "DoesNotExist"}, {"a": ""}, False),
    ],
)
def test_label_selector_operators(expr, labels, expected):
    assert label_selector({"matchExpressions": [expr]}).matches(labels) is expected


@pytest.mark.parametrize(
    "expr, message",
    [
        ({"key": "a", "operator": "Gt", "values": ["1"]}, '"Gt" is not a valid pod selector operator'),
        ({"key": "a", "operator": "In", "values": []}, "for 'in', 'notin' operators, values set can't be empty"),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, "values set must be empty for exists and does not exist"),
    ],
)
def test_label_selector_errors(expr, message):
    with pytest.raises(SelectorError) as exc:
        label_selector({"matchExpressions": [expr]})
    assert str(exc.value) == message


def test_node_selector_requirements():
    assert not node_selector_requirements([]).matches({"a": "b"})
    gt = node_selector_requirements([{"key": "cores", "operator": "Gt", "values": ["4"]}])
    assert gt.matches({"cores": "8"})
    assert not gt.matches({"cores": "4"})
    assert not gt.matches({"cores": "eight"})
    assert not gt.matches({})
    lt = node_selector_requirements([{"key": "cores", "operator": "Lt", "values": ["4"]}])
    assert lt.matches({"cores": "-1"})


@pytest.mark.parametrize(
    "expr, message",
    [
        ({"key": "a", "operator": "Foo", "values": ["1"]}, '"Foo" is not a valid node selector operator'),
        ({"key": "a", "operator": "Gt", "values": ["1", "2"]}, "for 'Gt', 'Lt' operators, exactly one value is required"),
        ({"key": "a", "operator": "Lt", "values": ["x"]}, "for 'Gt', 'Lt' operators, the value must be an integer"),
    ],
)
def test_node_selector_errors(expr, message):
    with pytest.raises(SelectorError) as exc:
        node_selector_requirements([expr])
    assert str(exc.value) == message
