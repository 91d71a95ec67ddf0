"""Registers every 1.9 predicate and priority and the two providers (upstream
``algorithmprovider/defaults/defaults.go``).

Importing this module fills :data:`policy_scheduler.registry.REGISTRY` once; :func:`register_defaults`
fills any other registry the same way (tests build fresh ones).
"""

from __future__ import annotations

import logging

from policy_scheduler import fastpath
from policy_scheduler.algorithm import PluginFactoryArgs, PriorityConfigFactory
from policy_scheduler.fastpath import predicates as fast_predicates
from policy_scheduler.fastpath import preemption as fast_preemption
from policy_scheduler.fastpath import priorities as fast_priorities
from policy_scheduler.fastpath import topology_spread as fast_topology_spread
from policy_scheduler.features import FeatureGates
from policy_scheduler.predicates import (
    PredicateMetadataFactory,
    check_node_condition,
    check_node_disk_pressure,
    check_node_memory_pressure,
    general_predicates,
    new_max_pd_volume_count_predicate,
    new_pod_affinity_predicate,
    new_volume_binding_predicate,
    new_volume_zone_predicate,
    no_disk_conflict,
    pod_fits_host,
    pod_fits_host_ports,
    pod_fits_resources,
    pod_match_node_selector,
    pod_tolerates_node_taints,
)
from policy_scheduler.predicates.csi_limits import NAME as NODE_VOLUME_LIMITS
from policy_scheduler.predicates.csi_limits import new_csi_limits_predicate
from policy_scheduler.predicates.label_presence import NodeLabelChecker
from policy_scheduler.predicates.node_declared_features import NAME as NODE_DECLARED_FEATURES
from policy_scheduler.predicates.node_declared_features import new_node_declared_features_predicate
from policy_scheduler.predicates.read_write_once_pod import NAME as READ_WRITE_ONCE_POD
from policy_scheduler.predicates.read_write_once_pod import new_read_write_once_pod_predicate
from policy_scheduler.predicates.topology_spread import new_pod_topology_spread_predicate
from policy_scheduler.priorities import (
    PriorityMetadataFactory,
    balanced_resource_allocation_map,
    calculate_node_affinity_priority_map,
    calculate_node_affinity_priority_reduce,
    calculate_node_prefer_avoid_pods_priority_map,
    compute_taint_toleration_priority_map,
    compute_taint_toleration_priority_reduce,
    equal_priority_map,
    image_locality_priority_map,
    least_requested_priority_map,
    most_requested_priority_map,
    new_inter_pod_affinity_priority,
    new_selector_spread_priority,
    resource_limits_priority_map,
)
from policy_scheduler.priorities.topology_spread import DEFAULT_WEIGHT as TOPOLOGY_SPREAD_WEIGHT
from policy_scheduler.priorities.topology_spread import new_pod_topology_spread_priority
from policy_scheduler.registry import REGISTRY, Registry

log = logging.getLogger(__name__)

DEFAULT_PROVIDER = "DefaultProvider"
CLUSTER_AUTOSCALER_PROVIDER = "ClusterAutoscalerProvider"


# Vectorised forms of the plain built-ins (the per-node functions stay the reference).
for _reference, _form in (
    (pod_fits_resources, fast_predicates.pod_fits_resources),
    (pod_fits_host, fast_predicates.pod_fits_host),
    (pod_fits_host_ports, fast_predicates.pod_fits_host_ports),
    (pod_match_node_selector, fast_predicates.pod_match_node_selector),
    (general_predicates, fast_predicates.general_predicates),
    (check_node_condition, fast_predicates.check_node_condition),
    (check_node_memory_pressure, fast_predicates.check_node_memory_pressure),
    (check_node_disk_pressure, fast_predicates.check_node_disk_pressure),
    (pod_tolerates_node_taints, fast_predicates.pod_tolerates_node_taints),
    (no_disk_conflict, fast_predicates.no_disk_conflict),
    (least_requested_priority_map, fast_priorities.least_requested),
    (most_requested_priority_map, fast_priorities.most_requested),
    (balanced_resource_allocation_map, fast_priorities.balanced_resource_allocation),
    (calculate_node_prefer_avoid_pods_priority_map, fast_priorities.node_prefer_avoid_pods),
):
    fastpath.attach(_reference, _form)
fastpath.attach_reasons(pod_fits_resources, fast_predicates.pod_fits_resources_reasons)
fastpath.attach_reasons(general_predicates, fast_predicates.general_predicates_reasons)
# What preemption's arithmetic may assume about each (fastpath.preemption); undeclared ones leave it to the reference.
for _reference, _declaration in (
    (pod_fits_resources, fast_preemption.adds_up_requests),
    (general_predicates, fast_preemption.general_predicates),
    (pod_fits_host, fast_preemption.ignores_pods),
    (pod_fits_host_ports, fast_preemption.ignores_pods_unless(fast_preemption.has_host_ports)),
    (pod_match_node_selector, fast_preemption.ignores_pods),
    (check_node_condition, fast_preemption.ignores_pods),
    (check_node_memory_pressure, fast_preemption.ignores_pods),
    (check_node_disk_pressure, fast_preemption.ignores_pods),
    (pod_tolerates_node_taints, fast_preemption.ignores_pods),
    (no_disk_conflict, fast_preemption.ignores_pods_unless(fast_preemption.has_volumes)),
    (NodeLabelChecker, fast_preemption.ignores_pods),
):
    fast_preemption.declare(_reference, _declaration)
_UNLESS_VOLUMES = fast_preemption.ignores_pods_unless(fast_preemption.has_volumes)
fastpath.attach(calculate_node_affinity_priority_map, fast_priorities.node_affinity, calculate_node_affinity_priority_reduce)
fastpath.attach(compute_taint_toleration_priority_map, fast_priorities.taint_toleration, compute_taint_toleration_priority_reduce)


def _volume_count(filter_name: str):
    def build(args: PluginFactoryArgs):
        checker = new_max_pd_volume_count_predicate(filter_name, args)
        return _volume_predicate(checker, fast_predicates.volume_count(checker))
    return build


def _volume_zone(args: PluginFactoryArgs):
    checker = new_volume_zone_predicate(args)
    return _volume_predicate(checker, fast_predicates.volume_zone(checker))


def _volume_binding(args: PluginFactoryArgs):
    checker = new_volume_binding_predicate(args)
    return _volume_predicate(checker, fast_predicates.volume_binding(args.feature_gates, checker))


def _volume_predicate(predicate, form):
    fast_preemption.declare(predicate, _UNLESS_VOLUMES)
    return fastpath.attach(predicate, form)


def _read_write_once_pod(args: PluginFactoryArgs):
    return _volume_predicate(new_read_write_once_pod_predicate(args), fast_predicates.no_volumes)


def _csi_limits(args: PluginFactoryArgs):
    return _volume_predicate(new_csi_limits_predicate(args), fast_predicates.no_volumes)


def _node_declared_features(args: PluginFactoryArgs):
    # Reads the node and the pod only; its vectorised form is exact for every pod.
    checker = new_node_declared_features_predicate(args)
    fast_preemption.declare(checker, fast_preemption.ignores_pods)
    return fastpath.attach(checker, fast_predicates.node_declared_features(checker))


def _pod_affinity(args: PluginFactoryArgs):
    checker = new_pod_affinity_predicate(args)
    fast_preemption.declare(checker, fast_preemption.ignores_pods_unless(fast_preemption.has_affinity_terms))
    return fastpath.attach(checker, fast_predicates.inter_pod_affinity(checker))


def _selector_spread(args: PluginFactoryArgs, services_only: bool = False):
    map_fn, reduce_fn = new_selector_spread_priority(args, services_only=services_only)
    fastpath.attach(map_fn, fast_priorities.selector_spread, reduce_fn)
    return map_fn, reduce_fn


def _inter_pod_affinity(args: PluginFactoryArgs):
    return fastpath.attach(new_inter_pod_affinity_priority(args), fast_priorities.inter_pod_affinity(args))


def _pod_topology_spread_predicate(args: PluginFactoryArgs):
    form = fast_topology_spread.filter_form(args.feature_gates.cluster_rules)
    predicate = new_pod_topology_spread_predicate(args)
    fast_preemption.declare(predicate, fast_preemption.ignores_pods_unless(fast_preemption.has_topology_spread))
    return fastpath.attach(predicate, form)


def _pod_topology_spread_priority(args: PluginFactoryArgs):
    form = fast_topology_spread.score_form(args.feature_gates.cluster_rules)
    return fastpath.attach(new_pod_topology_spread_priority(args), form)


#: The modern cluster's PodTopologySpread (not a 1.9 name; in no provider): a Policy may name and weight
#: it; under the cluster rules it applies to every pod carrying constraints even when the Policy does not
#: (:func:`policy_scheduler.factory.create_from_keys`).
POD_TOPOLOGY_SPREAD = "PodTopologySpread"


def _default_predicates(reg: Registry) -> set[str]:
    return {
        reg.register_fit_predicate_factory("NoVolumeZoneConflict", _volume_zone),
        reg.register_fit_predicate_factory("MaxEBSVolumeCount", _volume_count("EBS")),
        reg.register_fit_predicate_factory("MaxGCEPDVolumeCount", _volume_count("GCE")),
        reg.register_fit_predicate_factory("MaxAzureDiskVolumeCount", _volume_count("AzureDisk")),
        reg.register_fit_predicate_factory("MatchInterPodAffinity", _pod_affinity),
        reg.register_fit_predicate("NoDiskConflict", no_disk_conflict),
        reg.register_fit_predicate("GeneralPredicates", general_predicates),
        reg.register_fit_predicate("CheckNodeMemoryPressure", check_node_memory_pressure),
        reg.register_fit_predicate("CheckNodeDiskPressure", check_node_disk_pressure),
        reg.register_mandatory_fit_predicate("CheckNodeCondition", check_node_condition),
        reg.register_fit_predicate("PodToleratesNodeTaints", pod_tolerates_node_taints),
        reg.register_fit_predicate_factory("CheckVolumeBinding", _volume_binding),
    }


def _default_priorities(reg: Registry) -> set[str]:
    return {
        reg.register_priority_config_factory(
            "SelectorSpreadPriority",
            PriorityConfigFactory(1, map_reduce=_selector_spread),
        ),
        reg.register_priority_config_factory(
            "InterPodAffinityPriority",
            PriorityConfigFactory(1, function=_inter_pod_affinity),
        ),
        reg.register_priority_function2("LeastRequestedPriority", least_requested_priority_map, None, 1),
        reg.register_priority_function2("BalancedResourceAllocation", balanced_resource_allocation_map, None, 1),
        reg.register_priority_function2(
            "NodePreferAvoidPodsPriority", calculate_node_prefer_avoid_pods_priority_map, None, 10000
        ),
        reg.register_priority_function2(
            "NodeAffinityPriority", calculate_node_affinity_priority_map, calculate_node_affinity_priority_reduce, 1
        ),
        reg.register_priority_function2(
            "TaintTolerationPriority", compute_taint_toleration_priority_map, compute_taint_toleration_priority_reduce, 1
        ),
    }


def _copy_and_replace(keys: set[str], replace: str, with_: str) -> set[str]:
    result = set(keys)
    if replace in result:
        result.discard(replace)
        result.add(with_)
    return result


def register_defaults(reg: Registry) -> None:
    """Everything ``defaults.go``'s ``init`` registers, in the same order."""
    reg.register_predicate_metadata_producer_factory(
        lambda args, r: PredicateMetadataFactory(
            args.cluster, r.predicate_metadata_producers, topology_spread=args.feature_gates.cluster_rules
        ).get_metadata
    )
    reg.register_priority_metadata_producer_factory(lambda args: PriorityMetadataFactory(args.cluster).get_metadata)

    predicates = _default_predicates(reg)
    priorities = _default_priorities(reg)
    reg.register_algorithm_provider(DEFAULT_PROVIDER, predicates, priorities)
    reg.register_algorithm_provider(
        CLUSTER_AUTOSCALER_PROVIDER,
        predicates,  # the same set object, as upstream
        _copy_and_replace(priorities, "LeastRequestedPriority", "MostRequestedPriority"),
    )

    # 1.0 compatibility alias, and the members of GeneralPredicates under their own names.
    reg.register_fit_predicate("PodFitsPorts", pod_fits_host_ports)
    reg.register_fit_predicate("PodFitsHostPorts", pod_fits_host_ports)
    reg.register_fit_predicate("PodFitsResources", pod_fits_resources)
    reg.register_fit_predicate("HostName", pod_fits_host)
    reg.register_fit_predicate("MatchNodeSelector", pod_match_node_selector)

    reg.register_priority_config_factory(
        "ServiceSpreadingPriority",
        PriorityConfigFactory(1, map_reduce=lambda args: _selector_spread(args, services_only=True)),
    )
    reg.register_priority_function2("EqualPriority", equal_priority_map, None, 1)
    reg.register_priority_function2("ImageLocalityPriority", image_locality_priority_map, None, 1)
    reg.register_priority_function2("MostRequestedPriority", most_requested_priority_map, None, 1)

    reg.register_fit_predicate_factory(POD_TOPOLOGY_SPREAD, _pod_topology_spread_predicate)
    # The modern cluster's volume rules 1.9 never knew (not 1.9 names; in no provider): a Policy may name
    # them; under the cluster rules they apply to the pods they concern whatever the Policy names.
    reg.register_fit_predicate_factory(READ_WRITE_ONCE_POD, _read_write_once_pod)
    reg.register_fit_predicate_factory(NODE_VOLUME_LIMITS, _csi_limits)
    # NodeDeclaredFeatures (1.36): likewise for the pods that require a feature of the node.
    reg.register_fit_predicate_factory(NODE_DECLARED_FEATURES, _node_declared_features)
    reg.register_priority_config_factory(
        POD_TOPOLOGY_SPREAD, PriorityConfigFactory(TOPOLOGY_SPREAD_WEIGHT, function=_pod_topology_spread_priority)
    )


def apply_feature_gates(reg: Registry, gates: FeatureGates) -> None:
    """``ApplyFeatureGates``, run on a scheduler's registry after the flags are parsed.

    ``ResourceLimitsPriority`` is registered here when its gate is on (1.10 behaviour: in 1.9 the
    gate was read before flag parsing, so the priority could never be enabled).
    """
    if gates.enabled("TaintNodesByCondition"):
        reg.remove_fit_predicate("CheckNodeCondition")
        reg.remove_predicate_key_from_algorithm_provider_map("CheckNodeCondition")
        reg.register_mandatory_fit_predicate("PodToleratesNodeTaints", pod_tolerates_node_taints)
        reg.insert_predicate_key_to_algorithm_provider_map("PodToleratesNodeTaints")
        log.warning("TaintNodesByCondition is enabled, PodToleratesNodeTaints predicate is mandatory")
    if gates.cluster_rules:
        # Late-bound volumes (WaitForFirstConsumer) and PVs with node affinity: the filter must run
        # whatever the Policy names, or a pod lands where its volume can never be (1.9's own
        # precedent: TaintNodesByCondition makes PodToleratesNodeTaints mandatory, above).
        reg.make_fit_predicate_mandatory("CheckVolumeBinding")
    if gates.enabled("ResourceLimitsPriorityFunction"):
        reg.register_priority_function2("ResourceLimitsPriority", resource_limits_priority_map, None, 1)


register_defaults(REGISTRY)
