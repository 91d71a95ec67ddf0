"""The scheduler-extender hook points (upstream ``algorithm.SchedulerExtender``).

The generic scheduler calls extenders through this interface; the HTTP implementation lives with the
daemon's I/O. Anything with these methods can be plugged in (tests use in-process fakes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..algorithm import HostPriority
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod


class SchedulerExtender(Protocol):
    name: str

    def filter(
        self, pod: Pod, nodes: list[Node], node_infos: Mapping[str, NodeInfo]
    ) -> tuple[list[Node], dict[str, str]]:
        """Return the nodes that fit and a message for each node that does not; raise on failure."""
        ...

    def prioritize(self, pod: Pod, nodes: list[Node]) -> tuple[list[HostPriority], int]:
        """Return per-host scores and this extender's weight; raise on failure (the caller ignores it)."""
        ...

    def is_binder(self) -> bool:
        ...

    def bind(self, pod: Pod, node_name: str) -> None:
        ...
