"""CheckNodeLabelPresence (policy ``labelsPresence``): upstream ``TestNodeLabelPresence``, every row."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.predicates import new_node_label_predicate

from .conftest import make_node, make_node_info

CASES = [
    ("label does not match, presence true", ["baz"], True, False),
    ("label does not match, presence false", ["baz"], False, True),
    ("one label matches, presence true", ["foo", "baz"], True, False),
    ("one label matches, presence false", ["foo", "baz"], False, False),
    ("all labels match, presence true", ["foo", "bar"], True, True),
    ("all labels match, presence false", ["foo", "bar"], False, False),
]


@pytest.mark.parametrize(("name", "labels", "presence", "fits"), CASES, ids=[c[0] for c in CASES])
def test_node_label_presence(name, labels, presence, fits) -> None:
    """Upstream TestNodeLabelPresence (nil pod, nil metadata)."""
    node_info = make_node_info(make_node(labels={"foo": "bar", "bar": "foo"}))
    predicate = new_node_label_predicate(labels, presence)
    assert predicate(None, None, node_info) == (fits, [] if fits else ["CheckNodeLabelPresence"])


def test_empty_label_list_fits() -> None:
    assert new_node_label_predicate([], True)(None, None, make_node_info(make_node())) == (True, [])


def test_values_are_ignored() -> None:
    node_info = make_node_info(make_node(labels={"retiring": ""}))
    assert new_node_label_predicate(["retiring"], False)(None, None, node_info) == (False, ["CheckNodeLabelPresence"])


def test_null_node_is_an_error() -> None:
    with pytest.raises(PredicateError, match="^node not found$"):
        new_node_label_predicate(["a"], True)(None, None, make_node_info())
