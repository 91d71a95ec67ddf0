"""The extension contracts (upstream ``algorithm/types.go``, ``factory/plugins.go`` types).

* A **fit predicate** is ``predicate(pod, meta, node_info) -> (fits, reasons)``. ``meta`` is the
  per-pod predicate metadata (may be None: compute what you need), ``node_info`` may be None for a node
  the cache does not know yet. Reasons are strings (upstream's ``GetReason()`` texts). A predicate that
  cannot decide raises :class:`~policy_scheduler.errors.PredicateError`; that aborts the attempt.
* A **priority** is either a map ``(pod, meta, node_info) -> int`` with an optional reduce
  ``(pod, meta, node_infos, results: list[HostPriority]) -> None`` that rewrites the scores in place,
  or a legacy whole-list function ``(pod, node_infos, nodes) -> list[HostPriority]`` whose element *i*
  is credited to ``nodes[i]``. Failures raise :class:`~policy_scheduler.errors.PriorityError`.
* A **factory** receives :class:`PluginFactoryArgs` once, when a scheduler is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .api.types import MAX_PRIORITY as MAX_PRIORITY  # re-exported: part of the extension contract
from .features import DEFAULT_FEATURE_GATES, FeatureGates

if TYPE_CHECKING:
    from .cache.cluster import ClusterState
    from .cache.node_info import NodeInfo
    from .model.node import Node
    from .model.pod import Pod



class InsufficientResource(str):
    """``Insufficient <resource>``, carrying the numbers upstream's InsufficientResourceError has."""

    resource_name: str
    requested: int
    used: int
    capacity: int

    def __new__(cls, resource_name: str, requested: int, used: int, capacity: int) -> InsufficientResource:
        self = super().__new__(cls, f"Insufficient {resource_name}")
        self.resource_name = resource_name
        self.requested = requested
        self.used = used
        self.capacity = capacity
        return self

    def error(self) -> str:
        return (
            f"Node didn't have enough resource: {self.resource_name}, requested: {self.requested}, "
            f"used: {self.used}, capacity: {self.capacity}"
        )


FitPredicate = Callable[["Pod", Any, "NodeInfo | None"], tuple[bool, list[str]]]
PriorityMapFunction = Callable[["Pod", Any, "NodeInfo | None"], int]
PriorityReduceFunction = Callable[["Pod", Any, Mapping[str, "NodeInfo"], list["HostPriority"]], None]
PriorityFunction = Callable[["Pod", Mapping[str, "NodeInfo"], list["Node"]], list["HostPriority"]]
MetadataProducer = Callable[["Pod", Mapping[str, "NodeInfo"]], Any]


@dataclass(slots=True)
class HostPriority:
    host: str
    score: int


@dataclass(slots=True)
class PluginFactoryArgs:
    """What every predicate/priority factory receives when a scheduler is built.

    ``cluster`` serves every lister upstream passes separately (pods, services, controllers,
    ReplicaSets, StatefulSets, nodes, PVs, PVCs, storage classes).
    """

    cluster: ClusterState
    hard_pod_affinity_symmetric_weight: int = 1
    feature_gates: FeatureGates = field(default_factory=lambda: DEFAULT_FEATURE_GATES)


@dataclass(slots=True)
class PriorityConfig:
    """A built priority: ``function`` (legacy) or ``map``/``reduce``, with its weight."""

    name: str
    weight: int
    map: PriorityMapFunction | None = None
    reduce: PriorityReduceFunction | None = None
    function: PriorityFunction | None = None


FitPredicateFactory = Callable[[PluginFactoryArgs], FitPredicate]


@dataclass(slots=True)
class PriorityConfigFactory:
    """Exactly one of ``function`` / ``map_reduce`` is set."""

    weight: int
    function: Callable[[PluginFactoryArgs], PriorityFunction] | None = None
    map_reduce: Callable[[PluginFactoryArgs], tuple[PriorityMapFunction, PriorityReduceFunction | None]] | None = None
