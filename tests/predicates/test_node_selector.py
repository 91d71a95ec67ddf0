"""PodMatchNodeSelector (registered ``MatchNodeSelector``): upstream ``TestPodFitsSelector``, every row,
plus the operators and parse-error rules of predicates.md §0.5 and §5."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.predicates import pod_match_node_selector

from .conftest import expr, make_node, make_node_info, make_pod, metadata, node_affinity_terms


def sel_pod(node_selector=None, node_affinity=None):
    spec = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if node_affinity is not None:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return make_pod(**spec)


CASES = [
    ("no selector", make_pod(), None, True),
    ("missing labels", sel_pod({"foo": "bar"}), None, False),
    ("same labels", sel_pod({"foo": "bar"}), {"foo": "bar"}, True),
    ("node labels are superset", sel_pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, True),
    ("node labels are subset", sel_pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, False),
    ("Pod with matchExpressions using In operator that matches the existing node",
     sel_pod(node_affinity=node_affinity_terms([expr("foo", "In", "bar", "value2")])), {"foo": "bar"}, True),
    ("Pod with matchExpressions using Gt operator that matches the existing node",
     sel_pod(node_affinity=node_affinity_terms([expr("kernel-version", "Gt", "0204")])), {"kernel-version": "0206"}, True),
    ("Pod with matchExpressions using NotIn operator that matches the existing node",
     sel_pod(node_affinity=node_affinity_terms([expr("mem-type", "NotIn", "DDR", "DDR2")])), {"mem-type": "DDR3"}, True),
    ("Pod with matchExpressions using Exists operator that matches the existing node",
     sel_pod(node_affinity=node_affinity_terms([expr("GPU", "Exists")])), {"GPU": "NVIDIA-GRID-K1"}, True),
    ("Pod with affinity that don't match node's labels won't schedule onto the node",
     sel_pod(node_affinity=node_affinity_terms([expr("foo", "In", "value1", "value2")])), {"foo": "bar"}, False),
    ("Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
     sel_pod(node_affinity={"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": None}}), {"foo": "bar"}, False),
    ("Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
     sel_pod(node_affinity={"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}), {"foo": "bar"}, False),
    ("Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
     sel_pod(node_affinity=node_affinity_terms([])), {"foo": "bar"}, False),
    ("Pod with no Affinity will schedule onto a node", make_pod(), {"foo": "bar"}, True),
    ("Pod with Affinity but nil NodeSelector will schedule onto a node",
     sel_pod(node_affinity={"requiredDuringSchedulingIgnoredDuringExecution": None}), {"foo": "bar"}, True),
    ("Pod with multiple matchExpressions ANDed that matches the existing node",
     sel_pod(node_affinity=node_affinity_terms([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])), {"GPU": "NVIDIA-GRID-K1"}, True),
    ("Pod with multiple matchExpressions ANDed that doesn't match the existing node",
     sel_pod(node_affinity=node_affinity_terms([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")])), {"GPU": "NVIDIA-GRID-K1"}, False),
    ("Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
     sel_pod(node_affinity=node_affinity_terms([expr("foo", "In", "bar", "value2")], [expr("diffkey", "In", "wrong", "value2")])), {"foo": "bar"}, True),
    ("Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
     sel_pod({"foo": "bar"}, node_affinity_terms([expr("foo", "Exists")])), {"foo": "bar"}, True),
    ("Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
     sel_pod({"foo": "bar"}, node_affinity_terms([expr("foo", "Exists")])), {"foo": "barrrrrr"}, False),
]


@pytest.mark.parametrize(("name", "pod", "labels", "fits"), CASES, ids=[c[0][:60] for c in CASES])
def test_pod_fits_selector(name, pod, labels, fits) -> None:
    """Upstream TestPodFitsSelector."""
    node_info = make_node_info(make_node(labels=labels))
    assert pod_match_node_selector(pod, metadata(pod), node_info) == (fits, [] if fits else ["MatchNodeSelector"])


EXTRA = [
    ("Lt matches", [[expr("n", "Lt", "10")]], {"n": "9"}, True),
    ("Lt is strict", [[expr("n", "Lt", "10")]], {"n": "10"}, False),
    ("Gt is strict", [[expr("n", "Gt", "10")]], {"n": "10"}, False),
    ("Gt with an unparsable node value does not match", [[expr("n", "Gt", "1")]], {"n": "v2"}, False),
    ("Gt with the key absent does not match", [[expr("n", "Gt", "1")]], {}, False),
    ("DoesNotExist matches an absent key", [[expr("gpu", "DoesNotExist")]], {"cpu": "x"}, True),
    ("DoesNotExist rejects a present key", [[expr("gpu", "DoesNotExist")]], {"gpu": "x"}, False),
    ("NotIn matches an absent key", [[expr("gpu", "NotIn", "a")]], {}, True),
    ("a parse error in the first term stops even if the second matches",
     [[expr("foo", "Bogus", "bar")], [expr("foo", "In", "bar")]], {"foo": "bar"}, False),
    ("a matching term before an unparsable one wins",
     [[expr("foo", "In", "bar")], [expr("foo", "Bogus", "bar")]], {"foo": "bar"}, True),
    ("a non-matching term before an unparsable one stops",
     [[expr("foo", "In", "x")], [expr("foo", "Gt", "a")], [expr("foo", "In", "bar")]], {"foo": "bar"}, False),
    ("In without values is a parse error", [[expr("foo", "In")], [expr("foo", "Exists")]], {"foo": "bar"}, False),
    ("Exists with values is a parse error", [[expr("foo", "Exists", "bar")], [expr("foo", "Exists")]], {"foo": "bar"}, False),
    ("Gt with two values is a parse error", [[expr("n", "Gt", "1", "2")], [expr("n", "Exists")]], {"n": "5"}, False),
    ("a term without matchExpressions matches nothing", [None, [expr("foo", "Exists")]], {"foo": "bar"}, True),
]


@pytest.mark.parametrize(("name", "terms", "labels", "fits"), EXTRA, ids=[c[0] for c in EXTRA])
def test_node_affinity_operators(name, terms, labels, fits) -> None:
    pod = sel_pod(node_affinity=node_affinity_terms(*terms))
    assert pod_match_node_selector(pod, None, make_node_info(make_node(labels=labels)))[0] is fits


def test_invalid_node_selector_value_matches_everything() -> None:
    """Set selector quirk: an invalid label value makes ``SelectorFromSet`` select everything."""
    pod = sel_pod({"foo": "not a valid value!"})
    assert pod_match_node_selector(pod, None, make_node_info(make_node(labels={})))[0] is True


def test_preferred_node_affinity_is_ignored() -> None:
    pod = sel_pod(node_affinity={"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [expr("foo", "In", "x")]}}]})
    assert pod_match_node_selector(pod, None, make_node_info(make_node(labels={"foo": "bar"})))[0] is True


def test_null_node_is_an_error() -> None:
    with pytest.raises(PredicateError, match="^node not found$"):
        pod_match_node_selector(make_pod(), None, None)
