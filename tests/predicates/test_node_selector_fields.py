"""MatchNodeSelector with node-affinity ``matchFields`` (``metadata.name``).

Upstream's rows: ``TestPodMatchesNodeSelectorAndAffinityTerms`` and ``TestNodeSelectorMatch``
(``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go``) and the matchFields rows
of ``TestNodeAffinity`` (``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go``), whose
Filter is what a pod carrying ``matchFields`` gets under the cluster's rules; and what 1.9 made of the same
pods (``Rules.V1_9``: ``matchFields`` ignored).
"""

from __future__ import annotations

import pytest

from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.predicates import general_predicates, pod_match_node_selector

from .conftest import expr, make_node, make_node_info, resource_list


def fields(op: str, *values: str, key: str = "metadata.name") -> dict:
    return {"key": key, "operator": op, "values": list(values)}


def term(exprs: list[dict] | None = None, flds: list[dict] | None = None) -> dict:
    t: dict = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if flds is not None:
        t["matchFields"] = flds
    return t


def pod(*terms: dict, rules: Rules = Rules.CLUSTER, node_selector: dict | None = None) -> Pod:
    spec: dict = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return Pod({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}, rules)


def fits(p: Pod, node_name: str, labels: dict | None = None) -> bool:
    fit, reasons = pod_match_node_selector(p, None, make_node_info(make_node(node_name, labels=labels)))
    assert reasons == ([] if fit else ["MatchNodeSelector"])
    return fit


FOO_BAR = [expr("foo", "In", "bar")]

# (name, terms, node name, node labels, under the cluster's rules, under 1.9's)
ROWS = [
    ("Pod with matchFields using In operator that matches the existing node",
     [term(flds=[fields("In", "node_1")])], "node_1", None, True, False),
    ("Pod with matchFields using In operator that does not match the existing node",
     [term(flds=[fields("In", "node_1")])], "node_2", None, False, False),
    ("Pod with two terms: matchFields does not match, but matchExpressions matches",
     [term(flds=[fields("In", "node_1")]), term(FOO_BAR)], "node_2", {"foo": "bar"}, True, True),
    ("Pod with one term: matchFields does not match, but matchExpressions matches",
     [term(FOO_BAR, [fields("In", "node_1")])], "node_2", {"foo": "bar"}, False, True),
    ("Pod with one term: both matchFields and matchExpressions match",
     [term(FOO_BAR, [fields("In", "node_1")])], "node_1", {"foo": "bar"}, True, True),
    ("Pod with two terms: both matchFields and matchExpressions do not match",
     [term(flds=[fields("In", "node_1")]), term([expr("foo", "In", "not-match-to-bar")])], "node_2", {"foo": "bar"},
     False, False),
    # node_affinity_test.go: a term's field requirements are ANDed (node1 AND node2: nothing).
    ("Pod with two terms: matchFields (node1 AND node2) does not match, but matchExpressions matches",
     [term(flds=[fields("In", "node1"), fields("In", "node2")]), term(FOO_BAR)], "node2", {"foo": "bar"}, True, True),
    ("Pod with two terms of node.Name affinity",
     [term(flds=[fields("In", "node1")]), term(flds=[fields("In", "node2")])], "node2", None, True, False),
    ("Pod with two conflicting mach field requirements",
     [term(flds=[fields("In", "node1"), fields("In", "node2")])], "node2", {"foo": "bar"}, False, False),
    # nodeaffinity_test.go TestNodeSelectorMatch.
    ("node matches field selector, but not labels",
     [term([expr("label_1", "In", "label_1_val")], [fields("In", "host_1")])], "host_1", None, False, False),
    ("node matches field selector and label selector",
     [term([expr("label_1", "In", "label_1_val")], [fields("In", "host_1")])], "host_1", {"label_1": "label_1_val"},
     True, True),
    ("second term matches",
     [term([expr("label_1", "In", "label_1_val")]), term(flds=[fields("In", "host_1")])], "host_1", None, True, False),
    # NotIn; an empty term; a term that cannot be parsed.
    ("NotIn the node's name", [term(flds=[fields("NotIn", "node_1")])], "node_1", None, False, False),
    ("NotIn another name", [term(flds=[fields("NotIn", "node_1")])], "node_2", None, True, False),
    ("an empty term selects nothing, the next is tried", [{}, term(flds=[fields("In", "n")])], "n", None, True, False),
    ("invalid field selector (two values), then a matching term: the next is tried (1.9: no expressions, next)",
     [term(flds=[fields("In", "host_1", "host_2")]), term([expr("label_1", "In", "label_1_val")], [fields("In", "host_2")])],
     "host_1", {"label_1": "label_1_val"}, False, True),
    ("invalid field selector (two values), then a term matching labels and fields",
     [term(flds=[fields("In", "host_1", "host_2")]), term([expr("label_1", "In", "label_1_val")], [fields("In", "host_1")])],
     "host_1", {"label_1": "label_1_val"}, True, True),
    ("an unparsable expression, then a matching fields term: the next is tried; 1.9's first error stops",
     [term([expr("foo", "NotIn", "invalid value: ___@#$%^")]), term(flds=[fields("In", "n")])], "n", {"foo": "bar"},
     True, False),
    ("an unknown field operator is a parse error", [term(flds=[fields("Exists")])], "n", None, False, False),
    ("a key other than metadata.name reads no field (\"\"): In fails", [term(flds=[fields("In", "n", key="spec.x")])],
     "n", None, False, False),
    ("a key other than metadata.name reads no field (\"\"): NotIn holds",
     [term(flds=[fields("NotIn", "n", key="spec.x")])], "n", None, True, False),
]


@pytest.mark.parametrize(("name", "terms", "node_name", "labels", "cluster", "legacy"), ROWS, ids=[r[0][:70] for r in ROWS])
def test_match_fields(name, terms, node_name, labels, cluster, legacy) -> None:
    assert fits(pod(*terms), node_name, labels) is cluster
    assert fits(pod(*terms, rules=Rules.V1_9), node_name, labels) is legacy


def test_the_node_selector_must_hold_too() -> None:
    p = pod(term(flds=[fields("In", "n")]), node_selector={"foo": "bar"})
    assert fits(p, "n", {"foo": "bar"}) is True
    assert fits(p, "n", {"foo": "baz"}) is False


def test_pods_without_match_fields_keep_1_9s_first_parse_error_rule() -> None:
    """Only terms carrying matchFields switch to the modern evaluation: without, 1.9's rule stands."""
    terms = [term([expr("foo", "Bogus", "bar")]), term(FOO_BAR)]
    assert fits(pod(*terms), "n", {"foo": "bar"}) is False
    assert fits(pod(*terms, rules=Rules.V1_9), "n", {"foo": "bar"}) is False


def test_preferred_match_fields_leave_the_required_terms_to_1_9() -> None:
    raw = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            term([expr("foo", "Bogus", "bar")]), term(FOO_BAR)]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": term(flds=[fields("In", "n")])}]}}}}
    assert fits(Pod(raw), "n", {"foo": "bar"}) is False


def test_general_predicates_include_the_fields() -> None:
    info = make_node_info(make_node("n1", allocatable={**resource_list(milli_cpu=1000, memory=1000), "pods": "10"}))
    assert general_predicates(pod(term(flds=[fields("In", "n1")])), None, info) == (True, [])
    assert general_predicates(pod(term(flds=[fields("In", "n2")])), None, info) == (False, ["MatchNodeSelector"])
