"""What ``explain`` records for one pod: every node's predicate verdicts, priority scores and extender verdicts,
the extender calls, and the host or the error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .fit_error import FitError
from .preemption import PreemptionResult


@dataclass(slots=True)
class PredicateResult:
    fit: bool
    reasons: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(slots=True)
class ExtenderVerdict:
    """One extender's say on one node: its filter verdict (None: the node was not sent to its filter),
    its ``failedNodes`` message, and its prioritize score and weight (None: not scored)."""

    fit: bool | None = None
    reasons: list[str] = field(default_factory=list)
    score: int | None = None
    weight: int | None = None


@dataclass(slots=True)
class ExtenderCall:
    """What became of one extender verb for the pod: ``called``, ``not interested`` (managedResources),
    ``no verb``, ``error`` (the attempt failed, or for prioritize: its scores dropped) or
    ``ignored error`` (an ignorable extender's filter failed and was skipped)."""

    extender: str
    verb: str
    outcome: str
    error: str | None = None


@dataclass(slots=True)
class NodeExplanation:
    fit: bool
    predicates: dict[str, PredicateResult] = field(default_factory=dict)
    priorities: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (score, weight)
    total: int | None = None
    extenders: dict[str, ExtenderVerdict] = field(default_factory=dict)  # extender name (urlPrefix) -> verdict
    nominated_pods: list[str] = field(default_factory=list)  # pods nominated here, counted in the first pass

    def extender(self, name: str) -> ExtenderVerdict:
        return self.extenders.setdefault(name, ExtenderVerdict())


@dataclass(slots=True)
class Explanation:
    pod: str
    host: str | None = None
    error: str | None = None
    nodes: dict[str, NodeExplanation] = field(default_factory=dict)
    extenders: list[ExtenderCall] = field(default_factory=list)
    node_name: str = ""  # the pod's spec.nodeName: bound by name, never scheduled
    preemption: PreemptionResult | None = None  # gate PodPriority: what preemption would do
    fit_error: FitError | None = field(default=None, repr=False)
    volumes: list[Any] = field(default_factory=list)  # the cluster's rules: VolumeActions on the host (late-bound claims)
    gates: tuple[str, ...] = ()  # the pod is gated (cluster rules): never decided while these remain
