"""The scheduler-extender hook points (upstream ``algorithm.SchedulerExtender``).

The generic scheduler calls extenders through this interface only. The HTTP implementation is
:mod:`policy_scheduler.core.http_extender`; anything with these methods can be plugged in (tests use
in-process fakes).

Two methods come from later releases and are optional: ``is_interested(pod)`` (1.10's
``IsInterested``: False skips the extender for that pod, as ``managedResources`` asks) and
``is_ignorable()`` (a failing filter call is skipped with a warning instead of failing the pod). An
extender without them is interested in every pod and not ignorable, as in 1.9; use
:func:`interested` and :func:`ignorable` to ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from ..errors import SchedulingError

if TYPE_CHECKING:
    from ..algorithm import HostPriority
    from ..cache.node_info import NodeInfo
    from ..model.node import Node
    from ..model.pod import Pod


class ExtenderError(SchedulingError):
    """An extender call failed (transport, status, decoding, or the extender's own ``error``)."""


class ExtenderFailure(str):
    """A ``failedNodes`` message in a FitError's reasons (upstream ``predicates.NewFailureReason``).

    It reads like any reason, but it is never one of the predicates' own failure reasons, even when
    the text is the same: preemption's ``nodesWherePreemptionMightHelp`` compares reason identities.
    """


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


def interested(extender: SchedulerExtender, pod: Pod) -> bool:
    """Whether ``extender`` wants to see ``pod`` (True unless it says otherwise)."""
    method = getattr(extender, "is_interested", None)
    return True if method is None else bool(method(pod))


def ignorable(extender: SchedulerExtender) -> bool:
    """Whether a failing filter call of ``extender`` is skipped rather than failing the attempt."""
    method = getattr(extender, "is_ignorable", None)
    return False if method is None else bool(method())


def filters(extender: SchedulerExtender) -> bool:
    """Whether ``extender`` has a filter verb (an extender without the attribute is assumed to)."""
    return bool(getattr(extender, "filter_verb", True))


def prioritizes(extender: SchedulerExtender) -> bool:
    """Whether ``extender`` has a prioritize verb (an extender without the attribute is assumed to)."""
    return bool(getattr(extender, "prioritize_verb", True))


def binder_for(extenders: list[SchedulerExtender] | tuple[SchedulerExtender, ...], pod: Pod) -> SchedulerExtender | None:
    """The extender that binds ``pod`` (the first binder interested in it), or None: the API server binds."""
    for extender in extenders:
        if extender.is_binder() and interested(extender, pod):
            return extender
    return None
