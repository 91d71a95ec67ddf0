"""NodePreferAvoidPodsPriority (upstream ``TestNodePreferAvoidPriority`` in node_prefer_avoid_pods_test.go)."""

from __future__ import annotations

import json

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import calculate_node_prefer_avoid_pods_priority_map
from policy_scheduler.priorities.node_prefer_avoid_pods import (
    PREFER_AVOID_PODS_ANNOTATION_KEY,
    avoided_controllers,
)

from .conftest import make_cluster, make_node, make_pod, prioritize


def _annotation(kind: str, uid: str) -> str:
    """The annotation text of upstream's ``annotations1`` / ``annotations2``."""
    template = """
        {
            "preferAvoidPods": [
                {
                    "podSignature": {
                        "podController": {
                            "apiVersion": "v1",
                            "kind": "KIND",
                            "name": "foo",
                            "uid": "UID",
                            "controller": true
                        }
                    },
                    "reason": "some reason",
                    "message": "some message"
                }
            ]
        }"""
    return template.replace("KIND", kind).replace("UID", uid)


TEST_NODES = [
    make_node("machine1", annotations={PREFER_AVOID_PODS_ANNOTATION_KEY: _annotation("ReplicationController", "abcdef123456")}),
    make_node("machine2", annotations={PREFER_AVOID_PODS_ANNOTATION_KEY: _annotation("ReplicaSet", "qwert12345")}),
    make_node("machine3"),
]


def _owned(kind: str, uid: str, controller: bool | None = True):
    ref = {"kind": kind, "name": "foo", "uid": uid}
    if controller is not None:
        ref["controller"] = controller
    return make_pod(namespace="default", owner_references=[ref])


TABLE = [
    pytest.param(
        _owned("ReplicationController", "abcdef123456"), (0, 10, 10),
        id="0: pod managed by ReplicationController should avoid a node, this node get lowest priority score",
    ),
    pytest.param(
        _owned("RandomController", "abcdef123456"), (10, 10, 10), id="1: ownership by random controller should be ignored",
    ),
    pytest.param(
        _owned("ReplicationController", "abcdef123456", None), (10, 10, 10),
        id="2: owner without Controller field set should be ignored",
    ),
    pytest.param(
        _owned("ReplicaSet", "qwert12345"), (10, 0, 10),
        id="3: pod managed by ReplicaSet should avoid a node, this node get lowest priority score",
    ),
]


@pytest.mark.parametrize(("pod", "expected"), TABLE)
def test_node_prefer_avoid_priority(pod, expected) -> None:
    """Upstream TestNodePreferAvoidPriority (all 4 rows)."""
    cluster = make_cluster(TEST_NODES)
    got = prioritize(calculate_node_prefer_avoid_pods_priority_map, None, pod, None, cluster.node_infos, TEST_NODES)
    assert got == [(n.name, s) for n, s in zip(TEST_NODES, expected, strict=True)]


def _score(annotation: str) -> int:
    node = make_node("n", annotations={PREFER_AVOID_PODS_ANNOTATION_KEY: annotation})
    info = make_cluster([node]).node_infos["n"]
    return calculate_node_prefer_avoid_pods_priority_map(_owned("ReplicaSet", "u1"), None, info)


def _entries(*controllers) -> str:
    return json.dumps({"preferAvoidPods": [{"podSignature": {"podController": c}} for c in controllers]})


def test_null_pod_controller_entries_are_skipped() -> None:
    """Upstream dereferences a null podController and crashes; the reference recommends skipping it."""
    assert _score(_entries(None, {"kind": "ReplicaSet", "uid": "u1"})) == 0
    assert _score(_entries(None)) == 10
    assert _score(json.dumps({"preferAvoidPods": [{}]})) == 10


@pytest.mark.parametrize(
    "annotation",
    [
        "not json",
        "[]",
        '{"preferAvoidPods": {}}',
        '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": 5, "uid": "u1"}}}]}',
        '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1", "controller": "yes"}}}]}',
        '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1"}}, "evictionTime": "yesterday"}]}',
        '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1"}}, "evictionTime": 5}]}',
        '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1"}}, "reason": 1}]}',
        '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1"}}}]} x',
        '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": NaN}}}]}',
    ],
)
def test_annotation_that_does_not_decode_counts_as_absent(annotation: str) -> None:
    """``GetAvoidPodsFromNodeAnnotations`` returns an error => the node scores 10."""
    assert avoided_controllers(annotation) is None
    assert _score(annotation) == 10


@pytest.mark.parametrize(
    ("annotation", "score"),
    [
        ("", 10),
        ("null", 10),
        ("{}", 10),
        ('{"preferAvoidPods": null}', 10),
        ('{"PreferAvoidPods": [{"PodSignature": {"PodController": {"Kind": "ReplicaSet", "UID": "u1"}}}]}', 0),
        ('{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1"}},'
         ' "evictionTime": "2016-05-10T00:00:00Z", "unknown": [1, 2]}]}', 0),
        ('{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1"}},'
         ' "evictionTime": "2016-05-10T00:00:00.5+02:00", "reason": null}]}', 0),
        ('{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u2"}}}]}', 10),
        ('{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicationController", "uid": "u1"}}}]}', 10),
    ],
)
def test_annotation_decoding(annotation: str, score: int) -> None:
    """Go ``encoding/json`` semantics: case-insensitive field names, unknown fields ignored, null leaves
    the zero value; kind and UID must both match."""
    assert _score(annotation) == score


def test_duplicate_keys_merge_like_go() -> None:
    """A repeated struct key decodes into the same struct (Go merges), a later null pointer clears it."""
    merged = '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet"}, "podController": {"uid": "u1"}}}]}'
    assert _score(merged) == 0
    cleared = '{"preferAvoidPods": [{"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "u1"}, "podController": null}}]}'
    assert _score(cleared) == 10


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        calculate_node_prefer_avoid_pods_priority_map(make_pod(), None, None)
