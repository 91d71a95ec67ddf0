"""Building a generic scheduler from keys, a named provider or a Policy (upstream ``factory.go``).

Every build works on a copy of the registry with the feature gates applied, so a Policy's custom
predicates and priorities (and its weights for built-ins) never leak into other schedulers built in
the same process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from algorithmprovider.defaults import apply_feature_gates

from .algorithm import PluginFactoryArgs, PriorityConfig
from .api.types import ExtenderConfig, Policy
from .api.validation import aggregate_message, validate_policy
from .cache.cluster import ClusterState
from .core.extender import SchedulerExtender
from .core.generic_scheduler import GenericScheduler, PodScoped
from .errors import PolicyError
from .fastpath.decision import VectorisedPath
from .fastpath.forms import bind_predicate, bind_priority
from .features import DEFAULT_FEATURE_GATES, FeatureGates
from .registry import DEFAULT_PROVIDER, REGISTRY, Registry, RegistryError

log = logging.getLogger(__name__)

ExtenderFactory = Callable[[ExtenderConfig], SchedulerExtender]


def prepared_registry(registry: Registry | None, feature_gates: FeatureGates) -> Registry:
    """A copy of ``registry`` (default the process registry) with the feature gates applied."""
    prepared = (registry or REGISTRY).copy()
    apply_feature_gates(prepared, feature_gates)
    return prepared


def create_from_keys(
    predicate_keys: Iterable[str],
    priority_keys: Iterable[str],
    extenders: Sequence[SchedulerExtender] = (),
    *,
    cluster: ClusterState,
    registry: Registry | None = None,
    hard_pod_affinity_symmetric_weight: int = 1,
    feature_gates: FeatureGates = DEFAULT_FEATURE_GATES,
    vectorized: bool = True,
    _prepared_registry: Registry | None = None,
) -> GenericScheduler:
    """``CreateFromKeys``: resolve predicate and priority names and build the generic scheduler.

    The scheduler is given the vectorised path (:class:`~policy_scheduler.fastpath.decision.VectorisedPath`);
    ``vectorized=False`` keeps it on the per-node reference path (for verification).
    """
    weight = hard_pod_affinity_symmetric_weight
    if weight < 1 or weight > 100:
        raise RegistryError(f"invalid hardPodAffinitySymmetricWeight: {weight}, must be in the range 1-100")
    reg = _prepared_registry or prepared_registry(registry, feature_gates)
    args = PluginFactoryArgs(cluster, weight, feature_gates)
    predicates = reg.get_fit_predicate_functions(predicate_keys, args)
    prioritizers = reg.get_priority_function_configs(priority_keys, args)
    predicate_meta = reg.predicate_metadata_producer(args, reg) if reg.predicate_metadata_producer else None
    priority_meta = reg.priority_metadata_producer(args) if reg.priority_metadata_producer else None
    scoped = pod_scoped_algorithms(reg, args, predicates, prioritizers) if feature_gates.cluster_rules else []
    fast_path = vectorised_path(reg, args, predicates, prioritizers, scoped) if vectorized else None
    return GenericScheduler(
        cluster, predicates, prioritizers, predicate_meta, priority_meta, extenders, fast_path, pod_scoped=scoped
    )


def vectorised_path(
    reg: Registry, args: PluginFactoryArgs, predicates: Mapping[str, Any], prioritizers: Sequence[PriorityConfig],
    scoped: Sequence[PodScoped],
) -> VectorisedPath:
    """The fast path of a scheduler built from ``reg``: the registry's record of each of its predicates and
    priorities (the pod-scoped ones too), bound to what was built."""
    predicate_forms: dict[str, Any] = {}
    priority_forms: dict[str, Any] = {}
    for name, predicate in [*predicates.items(), *(s.predicate for s in scoped if s.predicate is not None)]:
        forms = bind_predicate(reg.predicate_forms.get(name), predicate, args)
        if forms is not None:
            predicate_forms[name] = forms
    for config in [*prioritizers, *(s.priority for s in scoped if s.priority is not None)]:
        forms = bind_priority(reg.priority_forms.get(config.name), config, args)
        if forms is not None:
            priority_forms[config.name] = forms
    return VectorisedPath(args.cluster, predicate_forms, priority_forms)


def pod_scoped_algorithms(
    reg: Registry, args: PluginFactoryArgs, predicates: Mapping[str, Any], prioritizers: Sequence[PriorityConfig]
) -> list[PodScoped]:
    """Under the cluster rules, what a modern cluster applies to pods carrying fields 1.9 never knew,
    when the algorithm does not name it: PodTopologySpread's filter for pods with a DoNotSchedule
    constraint, its score (at the registered default weight, 2) for pods with a ScheduleAnyway one;
    ReadWriteOncePod for pods with such a claim; NodeVolumeLimits (CSI attach limits) for pods with
    volumes a CSI driver attaches; NodeDeclaredFeatures for pods that require a feature of the node;
    DynamicResources for pods with ResourceClaims (or extended resources a DeviceClass backs), its score (weight
    2) for pods whose claims have a ``firstAvailable`` request. A Policy
    naming one of them gets the named entry (and its weight)."""
    from .predicates.csi_limits import NAME as NODE_VOLUME_LIMITS
    from .predicates.dynamic_resources import NAME as DYNAMIC_RESOURCES
    from .predicates.node_declared_features import NAME as NODE_DECLARED_FEATURES
    from .predicates.read_write_once_pod import NAME as READ_WRITE_ONCE_POD
    from .predicates.topology_spread import NAME, has_hard_constraints, has_soft_constraints
    from .priorities.dynamic_resources import has_prioritized_list

    # name -> which pods it applies to, given the built predicate
    scoped_predicates: dict[str, Callable[[Any], Callable[[Any], bool]]] = {
        NAME: lambda _: lambda pod: bool(pod.topology_spread) and has_hard_constraints(pod),
        READ_WRITE_ONCE_POD: lambda predicate: predicate.applies,
        NODE_VOLUME_LIMITS: lambda predicate: predicate.applies,
        NODE_DECLARED_FEATURES: lambda predicate: predicate.applies,
        DYNAMIC_RESOURCES: lambda predicate: predicate.applies,
    }
    scoped: list[PodScoped] = []
    for name, applies in scoped_predicates.items():
        if name not in predicates and name in reg.fit_predicates:
            predicate = reg.fit_predicates[name](args)
            scoped.append(PodScoped(applies=applies(predicate), predicate=(name, predicate)))
    if all(c.name != NAME for c in prioritizers) and NAME in reg.priorities:
        (config,) = reg.get_priority_function_configs([NAME], args)
        scoped.append(PodScoped(
            applies=lambda pod: bool(pod.topology_spread) and has_soft_constraints(pod),
            priority=config,
        ))
    if all(c.name != DYNAMIC_RESOURCES for c in prioritizers) and DYNAMIC_RESOURCES in reg.priorities:
        (config,) = reg.get_priority_function_configs([DYNAMIC_RESOURCES], args)
        scoped.append(PodScoped(applies=lambda pod: has_prioritized_list(args.cluster, pod), priority=config))
    return scoped


def create_from_provider(
    name: str,
    *,
    cluster: ClusterState,
    registry: Registry | None = None,
    hard_pod_affinity_symmetric_weight: int = 1,
    feature_gates: FeatureGates = DEFAULT_FEATURE_GATES,
    vectorized: bool = True,
) -> GenericScheduler:
    """``CreateFromProvider``."""
    log.debug("Creating scheduler from algorithm provider '%s'", name)
    reg = prepared_registry(registry, feature_gates)
    provider = reg.get_algorithm_provider(name)
    return create_from_keys(
        provider.fit_predicate_keys,
        provider.priority_function_keys,
        cluster=cluster,
        hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight,
        feature_gates=feature_gates,
        vectorized=vectorized,
        _prepared_registry=reg,
    )


def create(*, cluster: ClusterState, **kwargs) -> GenericScheduler:
    """``Create()``: the DefaultProvider."""
    return create_from_provider(DEFAULT_PROVIDER, cluster=cluster, **kwargs)


def create_from_policy(
    policy: Policy,
    *,
    cluster: ClusterState,
    registry: Registry | None = None,
    hard_pod_affinity_symmetric_weight: int = 1,
    feature_gates: FeatureGates = DEFAULT_FEATURE_GATES,
    extender_factory: ExtenderFactory | None = None,
    vectorized: bool = True,
) -> GenericScheduler:
    """``CreateFromConfig``: validate, register the Policy's custom algorithms, build extenders, build.

    An absent or null predicate/priority list means what it means in 1.9: none (beyond the mandatory
    predicates); with no priorities and no extenders every feasible node scores 1.
    """
    log.debug("Creating scheduler from configuration: %s", policy)
    errors = validate_policy(policy)
    if errors:
        raise PolicyError(aggregate_message(errors))
    reg = prepared_registry(registry, feature_gates)
    predicate_keys: set[str] = set()
    for entry in policy.predicates or ():
        log.debug("Registering predicate: %s", entry.name)
        predicate_keys.add(reg.register_custom_fit_predicate(entry))
    priority_keys: set[str] = set()
    for entry in policy.priorities or ():
        log.debug("Registering priority: %s", entry.name)
        priority_keys.add(reg.register_custom_priority_function(entry))
    extenders: list[SchedulerExtender] = []
    for config in policy.extenders or ():
        if extender_factory is None:
            raise PolicyError(f"extender {config.url_prefix}: this command cannot call scheduler extenders")
        log.debug("Creating extender with config %s", config)
        extenders.append(extender_factory(config))
    weight = hard_pod_affinity_symmetric_weight
    if policy.hard_pod_affinity_symmetric_weight != 0:
        weight = policy.hard_pod_affinity_symmetric_weight
    return create_from_keys(
        predicate_keys,
        priority_keys,
        extenders,
        cluster=cluster,
        hard_pod_affinity_symmetric_weight=weight,
        feature_gates=feature_gates,
        vectorized=vectorized,
        _prepared_registry=reg,
    )
