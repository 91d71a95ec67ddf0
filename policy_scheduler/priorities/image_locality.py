"""ImageLocalityPriority (upstream ``priorities/image_locality.go``: ``ImageLocalityPriorityMap``,
``calculateScoreFromSize``, ``totalImageSize``).

Favours nodes that already hold the images of the pod's regular containers: the summed size of those
images (exact name match against the node's image names; for a name listed under several images the
last one wins) is bucketed into ``0..10`` between 23 MiB and 1000 MiB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..algorithm import MAX_PRIORITY
from .metadata import checked_node_info
from .reduce import go_div

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

MB = 1024 * 1024
MIN_IMG_SIZE = 23 * MB
MAX_IMG_SIZE = 1000 * MB


def calculate_score_from_size(sum_size: int) -> int:
    """``calculateScoreFromSize``: 0 below the minimum, 10 from the maximum, else 1..10."""
    if sum_size == 0 or sum_size < MIN_IMG_SIZE:
        return 0
    if sum_size >= MAX_IMG_SIZE:
        return MAX_PRIORITY
    return go_div(MAX_PRIORITY * (sum_size - MIN_IMG_SIZE), MAX_IMG_SIZE - MIN_IMG_SIZE) + 1


def image_locality_priority_map(pod: Pod, meta: object, node_info: NodeInfo | None) -> int:
    """``ImageLocalityPriorityMap``; image sizes come from the NodeInfo (built from
    ``node.status.images`` exactly as ``totalImageSize`` builds its map)."""
    sizes = checked_node_info(node_info).image_sizes
    total = 0
    for c in pod.containers:
        size = sizes.get(c.image)
        if size is not None:
            total += size
    return calculate_score_from_size(total)
