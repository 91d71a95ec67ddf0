"""PodAnnotationMatchesNodeLabel, as a table in the style of upstream's predicate tests:
each row a pod, a node, the verdict and the failure reasons."""

from __future__ import annotations

import pytest
from policy_scheduler_example_plugin import ERR_RACK_MISMATCH, RACK_KEY, AnnotationMatchesLabel, RackMismatch

from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.errors import PredicateError
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod

predicate = AnnotationMatchesLabel(RACK_KEY)


def pod(annotations: dict[str, str] | None = None) -> Pod:
    return Pod({"metadata": {"name": "p", "namespace": "default", "annotations": annotations or {}},
                "spec": {"containers": [{}]}})


def node_info(labels: dict[str, str] | None = None) -> NodeInfo:
    return NodeInfo(Node({"metadata": {"name": "n", "labels": labels or {}}}))


@pytest.mark.parametrize(("test", "pod_annotations", "node_labels", "fits"), [
    ("no annotation fits an unlabelled node", None, None, True),
    ("no annotation fits a labelled node", None, {RACK_KEY: "a"}, True),
    ("same rack fits", {RACK_KEY: "a"}, {RACK_KEY: "a"}, True),
    ("another rack does not fit", {RACK_KEY: "a"}, {RACK_KEY: "b"}, False),
    ("an unlabelled node does not fit an annotated pod", {RACK_KEY: "a"}, {"other": "a"}, False),
    ("values are compared exactly", {RACK_KEY: "a"}, {RACK_KEY: "A"}, False),
    ("other annotations do not matter", {"example.com/zone": "z"}, {RACK_KEY: "a"}, True),
])
def test_pod_annotation_matches_node_label(test, pod_annotations, node_labels, fits):
    ok, reasons = predicate(pod(pod_annotations), None, node_info(node_labels))
    assert ok is fits, test
    assert reasons == ([] if fits else [ERR_RACK_MISMATCH]), test


def test_reason_object_carries_the_racks():
    _, [reason] = predicate(pod({RACK_KEY: "a"}), None, node_info({RACK_KEY: "b"}))
    assert isinstance(reason, RackMismatch)
    assert (str(reason), reason.wanted, reason.found) == ("node(s) didn't match the pod's rack annotation", "a", "b")
    _, [unlabelled] = predicate(pod({RACK_KEY: "a"}), None, node_info())
    assert unlabelled.found is None


def test_unknown_node_is_an_error_like_the_built_ins():
    with pytest.raises(PredicateError, match="node not found"):
        predicate(pod(), None, None)
    with pytest.raises(PredicateError, match="node not found"):
        predicate(pod(), None, NodeInfo())
