"""What the reference path asks of a fast path: the one interface between them.

The generic scheduler computes every decision node by node (the reference). A fast path, when the factory gives
it one (:class:`policy_scheduler.fastpath.decision.VectorisedPath`), is asked first and answers with the same
decision or with None, when the reference must decide (it alone explains, builds FitError messages and raises
errors). Nothing in ``core/`` imports the fast path: it sees only this protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.disruption import PodDisruptionBudget
    from ..model.node import Node
    from ..model.pod import Pod
    from .victims import Victims, VictimSelection


class VictimSelector(Protocol):
    """``selectVictimsOnNode`` for one preemptor, asked node by node."""

    def select(self, info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> VictimSelection | None:
        """The node's victims (or why none make room), or None to let the reference decide."""
        ...


class VictimCandidates(Protocol):
    """The nodes where evictions make room, as ``Preempt`` walks them: the pick, the picked node's victims, and
    dropping a node an extender rejects."""

    def pick(self) -> str | None:
        ...

    def victims(self, name: str) -> Victims:
        ...

    def drop(self, name: str) -> None:
        ...


class FastPath(Protocol):
    """A faster way to the reference's decisions, asked before the reference path."""

    def schedule(self, scheduler: Any, pod: Pod) -> str | None:
        """The host for ``pod`` (raising FitError when no node fits, with the reference's reasons), or None to let
        the reference path decide."""
        ...

    def victims_by_arithmetic(self, scheduler: Any, pod: Pod, meta: Any) -> VictimSelector | None:
        """Preemption's victims on a node without running the predicates, or None when that cannot be sure."""
        ...

    def victim_candidates(
        self, scheduler: Any, pod: Pod, meta: Any, potential: Sequence[Node], pdbs: Sequence[PodDisruptionBudget],
        reference: Callable[[NodeInfo | None], VictimSelection],
    ) -> VictimCandidates | None:
        """One preemption's candidate nodes, picked as the reference picks them, or None (the reference then
        computes every node's victims); ``reference`` decides a node it cannot."""
        ...

    def close(self) -> None:
        """Stop following the cache (the scheduler was replaced)."""
        ...
