"""ImageLocalityPriority (upstream ``TestImageLocalityPriority`` in image_locality_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.priorities import image_locality_priority_map
from policy_scheduler.priorities.image_locality import (
    MAX_IMG_SIZE,
    MB,
    MIN_IMG_SIZE,
    calculate_score_from_size,
)

from .conftest import container, make_cluster, make_node, make_pod, prioritize

NODE_40_140_2000 = [(["gcr.io/40", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB), (["gcr.io/140", "gcr.io/140:v1"], 140 * MB),
                    (["gcr.io/2000"], 2000 * MB)]
NODE_250_10 = [(["gcr.io/250"], 250 * MB), (["gcr.io/10", "gcr.io/10:v1"], 10 * MB)]


def _pod(*images: str):
    return make_pod(containers=[container(image=i) for i in images])


TABLE = [
    pytest.param(_pod("gcr.io/40", "gcr.io/250"), (1, 3), id="0: two images spread on two nodes, prefer the larger image one"),
    pytest.param(_pod("gcr.io/40", "gcr.io/140"), (2, 0), id="1: two images on one node, prefer this node"),
    pytest.param(_pod("gcr.io/10", "gcr.io/2000"), (10, 0), id="2: if exceed limit, use limit"),
]


@pytest.mark.parametrize(("pod", "expected"), TABLE)
def test_image_locality_priority(pod, expected) -> None:
    """Upstream TestImageLocalityPriority (all 3 rows)."""
    nodes = [make_node("machine1", images=NODE_40_140_2000), make_node("machine2", images=NODE_250_10)]
    cluster = make_cluster(nodes)
    got = prioritize(image_locality_priority_map, None, pod, None, cluster.node_infos, nodes)
    assert got == [("machine1", expected[0]), ("machine2", expected[1])]


@pytest.mark.parametrize(
    ("size", "score"),
    [(0, 0), (MIN_IMG_SIZE - 1, 0), (MIN_IMG_SIZE, 1), (MAX_IMG_SIZE - 1, 10), (MAX_IMG_SIZE, 10), (10**12, 10),
     (MIN_IMG_SIZE + (MAX_IMG_SIZE - MIN_IMG_SIZE) // 2, 6)],
)
def test_calculate_score_from_size(size: int, score: int) -> None:
    assert calculate_score_from_size(size) == score


def test_exact_names_last_image_wins_and_init_containers_ignored() -> None:
    node = make_node("n", images=[(["img"], 30 * MB), (["img", "other"], 600 * MB)])
    info = make_cluster([node]).node_infos["n"]
    assert image_locality_priority_map(_pod("img"), None, info) == 6
    assert image_locality_priority_map(_pod("img:latest", "docker.io/img"), None, info) == 0
    pod = make_pod(containers=[], init_containers=[container(image="img")])
    assert image_locality_priority_map(pod, None, info) == 0


def test_node_not_found() -> None:
    with pytest.raises(PriorityError, match="node not found"):
        image_locality_priority_map(_pod("x"), None, None)
