"""PreferLabelledRack: the map's raw scores and the reduce's normalisation, upstream-style: a list of
nodes in, the expected ``HostPriority`` list out (map over every node, then reduce)."""

from __future__ import annotations

import pytest
from policy_scheduler_example_plugin import RACK_KEY, prefer_labelled_rack_map, prefer_labelled_rack_reduce

from policy_scheduler.algorithm import HostPriority
from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.errors import PriorityError
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod


def pod(rack: str | None = None) -> Pod:
    annotations = {RACK_KEY: rack} if rack is not None else {}
    return Pod({"metadata": {"name": "p", "namespace": "default", "annotations": annotations}, "spec": {"containers": [{}]}})


def node_infos(racks: dict[str, str | None]) -> dict[str, NodeInfo]:
    return {
        name: NodeInfo(Node({"metadata": {"name": name, "labels": {RACK_KEY: rack} if rack is not None else {}}}))
        for name, rack in racks.items()
    }


def prioritize(p: Pod, infos: dict[str, NodeInfo]) -> list[HostPriority]:
    """What the generic scheduler does with a map/reduce priority (before the weight)."""
    results = [HostPriority(name, prefer_labelled_rack_map(p, None, info)) for name, info in infos.items()]
    prefer_labelled_rack_reduce(p, None, infos, results)
    return results


@pytest.mark.parametrize(("test", "rack", "racks", "expected"), [
    ("own rack 10, other rack 5, unlabelled 0", "a", {"n1": "a", "n2": "b", "n3": None}, [10, 5, 0]),
    ("unannotated pod: every labelled rack 10", None, {"n1": "a", "n2": "b", "n3": None}, [10, 10, 0]),
    ("no node in the pod's rack: labelled racks 10", "c", {"n1": "a", "n2": None}, [10, 0]),
    ("no labelled node: all 0", "a", {"n1": None, "n2": None}, [0, 0]),
    ("no nodes", "a", {}, []),
])
def test_prefer_labelled_rack(test, rack, racks, expected):
    infos = node_infos(racks)
    assert prioritize(pod(rack), infos) == [HostPriority(n, s) for n, s in zip(infos, expected)], test


def test_raw_map_scores():
    infos = node_infos({"n1": "a", "n2": "b", "n3": None})
    assert [prefer_labelled_rack_map(pod("a"), None, i) for i in infos.values()] == [2, 1, 0]


def test_unknown_node_is_an_error_like_the_built_ins():
    with pytest.raises(PriorityError, match="node not found"):
        prefer_labelled_rack_map(pod(), None, None)
