"""PodToleratesNodeTaints: upstream ``TestPodToleratesTaints``, every row."""

from __future__ import annotations

import pytest

from policy_scheduler.predicates import pod_tolerates_node_taints

from .conftest import make_node, make_node_info, make_pod, metadata


def taint(key, value, effect):
    return {"key": key, "value": value, "effect": effect}


def toleration(key, value="", effect="", operator=None):
    t = {"key": key, "value": value, "effect": effect}
    if operator is not None:
        t["operator"] = operator
    return t


def tol_pod(name, *tolerations, image="pod2:V1"):
    return make_pod(name=name, containers=[{"image": image}], tolerations=list(tolerations))


CASES = [
    ("a pod having no tolerations can't be scheduled onto a node with nonempty taints",
     make_pod(name="pod0"), [taint("dedicated", "user1", "NoSchedule")], False),
    ("a pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     tol_pod("pod1", toleration("dedicated", "user1", "NoSchedule"), image="pod1:V1"), [taint("dedicated", "user1", "NoSchedule")], True),
    ("a pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     tol_pod("pod2", toleration("dedicated", "user2", "NoSchedule", "Equal")), [taint("dedicated", "user1", "NoSchedule")], False),
    ("a pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
     tol_pod("pod2", toleration("foo", effect="NoSchedule", operator="Exists")), [taint("foo", "bar", "NoSchedule")], True),
    ("a pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
     tol_pod("pod2", toleration("dedicated", "user2", "NoSchedule", "Equal"), toleration("foo", effect="NoSchedule", operator="Exists")),
     [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")], True),
    ("a pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
     tol_pod("pod2", toleration("foo", "bar", "PreferNoSchedule", "Equal")), [taint("foo", "bar", "NoSchedule")], False),
    ("The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
     tol_pod("pod2", toleration("foo", "bar", operator="Equal")), [taint("foo", "bar", "NoSchedule")], True),
    ("The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNochedule. Pod can be scheduled onto the node",
     tol_pod("pod2", toleration("dedicated", "user2", "NoSchedule", "Equal")), [taint("dedicated", "user1", "PreferNoSchedule")], True),
    ("The pod has no toleration, but the effect of taint on node is PreferNochedule. Pod can be scheduled onto the node",
     tol_pod("pod2"), [taint("dedicated", "user1", "PreferNoSchedule")], True),
]


@pytest.mark.parametrize(("name", "pod", "taints", "fits"), CASES, ids=[c[0][:70] for c in CASES])
def test_pod_tolerates_taints(name, pod, taints, fits) -> None:
    """Upstream TestPodToleratesTaints."""
    node_info = make_node_info(make_node(taints=taints))
    assert pod_tolerates_node_taints(pod, metadata(pod), node_info) == (fits, [] if fits else ["PodToleratesNodeTaints"])


def test_no_execute_taints_count() -> None:
    node_info = make_node_info(make_node(taints=[taint("k", "v", "NoExecute")]))
    assert pod_tolerates_node_taints(make_pod(), None, node_info) == (False, ["PodToleratesNodeTaints"])
    tolerated = make_pod(tolerations=[toleration("", operator="Exists")])
    assert pod_tolerates_node_taints(tolerated, None, node_info) == (True, [])


def test_unknown_operator_tolerates_nothing() -> None:
    node_info = make_node_info(make_node(taints=[taint("k", "v", "NoSchedule")]))
    pod = make_pod(tolerations=[toleration("k", "v", operator="Gt")])
    assert pod_tolerates_node_taints(pod, None, node_info)[0] is False


def test_null_node_info_has_no_taints() -> None:
    assert pod_tolerates_node_taints(make_pod(), None, None) == (True, [])
