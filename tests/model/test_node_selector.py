"""Node selector terms as the modern scheduler reads them (``model/node_selector.py``): upstream
``newNodeSelectorTerm`` / ``nodeSelectorTerm.match`` (``k8s.io/component-helpers`` nodeaffinity, 1.26)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import ObjectError
from policy_scheduler.model.node_selector import match_node_selector_terms, parse_node_selector_term
from policy_scheduler.model.volumes import parse_volume_node_affinity


def parse(term: dict):
    return parse_node_selector_term("Pod ns/p", "t", term)


def name_in(*values: str, op: str = "In", key: str = "metadata.name") -> list[dict]:
    return [{"key": key, "operator": op, "values": list(values)}]


def test_expressions_and_fields_are_anded():
    t = parse({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}], "matchFields": name_in("n1")})
    assert t.matches({"zone": "a"}, "n1")
    assert not t.matches({"zone": "a"}, "n2")
    assert not t.matches({"zone": "b"}, "n1")


def test_a_node_without_a_name_has_no_fields_to_check():
    """``extractNodeFields`` of a nameless node is empty and ``match`` skips the fields (a PV's node affinity)."""
    assert parse({"matchFields": name_in("n1")}).matches({}, "")
    assert not parse({"matchFields": name_in("n1")}).matches({}, "n2")
    assert not parse({"matchExpressions": [{"key": "zone", "operator": "Exists"}], "matchFields": name_in("n1")}).matches({}, "")


def test_an_empty_term_selects_nothing():
    assert parse({}).empty and not parse({}).matches({}, "n1")
    assert parse({"matchExpressions": [], "matchFields": []}).empty


@pytest.mark.parametrize("term, error", [
    ({"matchFields": name_in("a", "b")}, 'unexpected number of value (2) for node field selector operator "In"'),
    ({"matchFields": name_in(op="NotIn")}, 'unexpected number of value (0) for node field selector operator "NotIn"'),
    ({"matchFields": [{"key": "metadata.name", "operator": "Gt", "values": ["1"]}]},
     '"Gt" is not a valid node field selector operator'),
    # the expressions are parsed first, and their error stops the term
    ({"matchExpressions": [{"key": "k", "operator": "Bogus"}], "matchFields": name_in("a", "b")},
     '"Bogus" is not a valid node selector operator'),
])
def test_a_term_that_cannot_be_parsed_matches_nothing_and_keeps_its_error(term, error):
    parsed = parse(term)
    assert parsed.error == error
    assert not parsed.matches({"k": "v"}, "a")
    assert match_node_selector_terms([parsed, parse({"matchFields": name_in("a")})], {}, "a")


def test_a_key_other_than_the_name_reads_the_empty_string():
    """The parser does not check the key (the API server does): ``fields.Set.Get`` of a missing field is ""."""
    assert not parse({"matchFields": name_in("x", key="metadata.uid")}).matches({}, "n1")
    assert parse({"matchFields": name_in("x", key="metadata.uid", op="NotIn")}).matches({}, "n1")
    assert parse({"matchFields": name_in("", key="metadata.uid")}).matches({}, "n1")


def test_wrong_types_name_the_field():
    with pytest.raises(ObjectError, match=r"t\.matchFields\[0\]\.values: expected a list"):
        parse({"matchFields": [{"key": "metadata.name", "operator": "In", "values": "n1"}]})


def test_a_pv_node_affinity_reads_the_labels_alone():
    """1.26 ``CheckNodeAffinity``: a node of the labels alone, so a term's matchFields are not checked."""
    affinity = parse_volume_node_affinity("PersistentVolume pv", "spec.nodeAffinity", {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}], "matchFields": name_in("n1")}]}})
    assert affinity is not None
    assert affinity.matches({"zone": "a"})
    assert not affinity.matches({"zone": "b"})
