"""Registers every 1.9 predicate and priority and the two providers (upstream
``algorithmprovider/defaults/defaults.go``), each name with the fast path's record of it
(:class:`~policy_scheduler.fastpath.forms.Forms`: vectorised form, reasons form, the reduce a priority form
includes, preemption's declaration) where it has one.

Importing this module fills :data:`policy_scheduler.registry.REGISTRY` once; :func:`register_defaults`
fills any other registry the same way (tests build fresh ones).
"""

from __future__ import annotations

import logging

from policy_scheduler.algorithm import PluginFactoryArgs, PriorityConfigFactory
from policy_scheduler.fastpath import dynamic_resources as fast_dynamic_resources
from policy_scheduler.fastpath import predicates as fast_predicates
from policy_scheduler.fastpath import preemption as fast_preemption
from policy_scheduler.fastpath import priorities as fast_priorities
from policy_scheduler.fastpath import topology_spread as fast_topology_spread
from policy_scheduler.fastpath.forms import Forms
from policy_scheduler.fastpath.preemption import (
    adds_up_requests,
    has_affinity_terms,
    has_host_ports,
    has_topology_spread,
    has_volumes,
    ignores_pods,
    ignores_pods_unless,
)
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
from policy_scheduler.predicates.dynamic_resources import NAME as DYNAMIC_RESOURCES
from policy_scheduler.predicates.dynamic_resources import new_dynamic_resources_predicate
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
from policy_scheduler.priorities.dynamic_resources import DEFAULT_WEIGHT as DYNAMIC_RESOURCES_WEIGHT
from policy_scheduler.priorities.dynamic_resources import new_dynamic_resources_priority
from policy_scheduler.priorities.topology_spread import DEFAULT_WEIGHT as TOPOLOGY_SPREAD_WEIGHT
from policy_scheduler.priorities.topology_spread import new_pod_topology_spread_priority
from policy_scheduler.registry import REGISTRY, Registry

log = logging.getLogger(__name__)

DEFAULT_PROVIDER = "DefaultProvider"
CLUSTER_AUTOSCALER_PROVIDER = "ClusterAutoscalerProvider"


# -- the fast path's records (the per-node functions stay the reference) ------------------------------
# Preemption's arithmetic may assume what each declaration says (fastpath.preemption); a predicate without one
# leaves preemption to the reference.
_UNLESS_VOLUMES = ignores_pods_unless(has_volumes)

POD_FITS_RESOURCES = Forms(vectorized=fast_predicates.pod_fits_resources,
                           reasons=fast_predicates.pod_fits_resources_reasons, preemption=adds_up_requests)
POD_FITS_HOST = Forms(vectorized=fast_predicates.pod_fits_host, preemption=ignores_pods)
POD_FITS_HOST_PORTS = Forms(vectorized=fast_predicates.pod_fits_host_ports,
                            preemption=ignores_pods_unless(has_host_ports))
POD_MATCH_NODE_SELECTOR = Forms(vectorized=fast_predicates.pod_match_node_selector, preemption=ignores_pods)
GENERAL_PREDICATES = Forms(vectorized=fast_predicates.general_predicates,
                           reasons=fast_predicates.general_predicates_reasons,
                           preemption=fast_preemption.general_predicates)
CHECK_NODE_CONDITION = Forms(vectorized=fast_predicates.check_node_condition, preemption=ignores_pods)
CHECK_NODE_MEMORY_PRESSURE = Forms(vectorized=fast_predicates.check_node_memory_pressure, preemption=ignores_pods)
CHECK_NODE_DISK_PRESSURE = Forms(vectorized=fast_predicates.check_node_disk_pressure, preemption=ignores_pods)
POD_TOLERATES_NODE_TAINTS = Forms(vectorized=fast_predicates.pod_tolerates_node_taints, preemption=ignores_pods)
NO_DISK_CONFLICT = Forms(vectorized=fast_predicates.no_disk_conflict, preemption=_UNLESS_VOLUMES)
#: A Policy's labelsPresence predicate (NodeLabelChecker) reads the node only.
LABELS_PRESENCE = Forms(preemption=ignores_pods)

LEAST_REQUESTED = Forms(vectorized=fast_priorities.least_requested)
MOST_REQUESTED = Forms(vectorized=fast_priorities.most_requested)
BALANCED_RESOURCE_ALLOCATION = Forms(vectorized=fast_priorities.balanced_resource_allocation)
NODE_PREFER_AVOID_PODS = Forms(vectorized=fast_priorities.node_prefer_avoid_pods)
NODE_AFFINITY = Forms(vectorized=fast_priorities.node_affinity, reduce=calculate_node_affinity_priority_reduce)
TAINT_TOLERATION = Forms(vectorized=fast_priorities.taint_toleration, reduce=compute_taint_toleration_priority_reduce)


def _volume_count(filter_name: str):
    def build(args: PluginFactoryArgs):
        return new_max_pd_volume_count_predicate(filter_name, args)
    return build


def _volume_forms(form_of):
    """A volume predicate's record: the form ``form_of(built checker, args)``; only a pod with volumes depends
    on the pods on the node."""
    return lambda checker, args: Forms(vectorized=form_of(checker, args), preemption=_UNLESS_VOLUMES)


VOLUME_COUNT = _volume_forms(lambda checker, args: fast_predicates.volume_count(checker))
VOLUME_ZONE = _volume_forms(lambda checker, args: fast_predicates.volume_zone(checker))
VOLUME_BINDING = _volume_forms(lambda checker, args: fast_predicates.volume_binding(args.feature_gates, checker))
NO_VOLUMES = Forms(vectorized=fast_predicates.no_volumes, preemption=_UNLESS_VOLUMES)  # ReadWriteOncePod, NodeVolumeLimits


def _node_declared_features_forms(checker, args: PluginFactoryArgs) -> Forms:
    # Reads the node and the pod only; its vectorised form is exact for every pod.
    return Forms(vectorized=fast_predicates.node_declared_features(checker), preemption=ignores_pods)


def _dynamic_resources_forms(checker, args: PluginFactoryArgs) -> Forms:
    return Forms(vectorized=fast_dynamic_resources.filter_form(checker))


def _pod_affinity_forms(checker, args: PluginFactoryArgs) -> Forms:
    return Forms(vectorized=fast_predicates.inter_pod_affinity(checker), preemption=ignores_pods_unless(has_affinity_terms))


def _pod_topology_spread_predicate_forms(predicate, args: PluginFactoryArgs) -> Forms:
    return Forms(vectorized=fast_topology_spread.filter_form(args.feature_gates.cluster_rules),
                 preemption=ignores_pods_unless(has_topology_spread))


def _selector_spread(args: PluginFactoryArgs, services_only: bool = False):
    return new_selector_spread_priority(args, services_only=services_only)


def _selector_spread_forms(config, args: PluginFactoryArgs) -> Forms:
    # The form includes the reduce the factory built.
    return Forms(vectorized=fast_priorities.selector_spread, reduce=config.reduce)


def _inter_pod_affinity_forms(config, args: PluginFactoryArgs) -> Forms:
    return Forms(vectorized=fast_priorities.inter_pod_affinity(args))


def _pod_topology_spread_priority_forms(config, args: PluginFactoryArgs) -> Forms:
    return Forms(vectorized=fast_topology_spread.score_form(args.feature_gates.cluster_rules))


#: The modern cluster's PodTopologySpread (not a 1.9 name; in no provider): a Policy may name and weight
#: it; under the cluster rules it applies to every pod carrying constraints even when the Policy does not
#: (:func:`policy_scheduler.factory.create_from_keys`).
POD_TOPOLOGY_SPREAD = "PodTopologySpread"


def _default_predicates(reg: Registry) -> set[str]:
    return {
        reg.register_fit_predicate_factory("NoVolumeZoneConflict", new_volume_zone_predicate, VOLUME_ZONE),
        reg.register_fit_predicate_factory("MaxEBSVolumeCount", _volume_count("EBS"), VOLUME_COUNT),
        reg.register_fit_predicate_factory("MaxGCEPDVolumeCount", _volume_count("GCE"), VOLUME_COUNT),
        reg.register_fit_predicate_factory("MaxAzureDiskVolumeCount", _volume_count("AzureDisk"), VOLUME_COUNT),
        reg.register_fit_predicate_factory("MatchInterPodAffinity", new_pod_affinity_predicate, _pod_affinity_forms),
        reg.register_fit_predicate("NoDiskConflict", no_disk_conflict, NO_DISK_CONFLICT),
        reg.register_fit_predicate("GeneralPredicates", general_predicates, GENERAL_PREDICATES),
        reg.register_fit_predicate("CheckNodeMemoryPressure", check_node_memory_pressure, CHECK_NODE_MEMORY_PRESSURE),
        reg.register_fit_predicate("CheckNodeDiskPressure", check_node_disk_pressure, CHECK_NODE_DISK_PRESSURE),
        reg.register_mandatory_fit_predicate("CheckNodeCondition", check_node_condition, CHECK_NODE_CONDITION),
        reg.register_fit_predicate("PodToleratesNodeTaints", pod_tolerates_node_taints, POD_TOLERATES_NODE_TAINTS),
        reg.register_fit_predicate_factory("CheckVolumeBinding", new_volume_binding_predicate, VOLUME_BINDING),
    }


def _default_priorities(reg: Registry) -> set[str]:
    return {
        reg.register_priority_config_factory(
            "SelectorSpreadPriority",
            PriorityConfigFactory(1, map_reduce=_selector_spread),
            _selector_spread_forms,
        ),
        reg.register_priority_config_factory(
            "InterPodAffinityPriority",
            PriorityConfigFactory(1, function=new_inter_pod_affinity_priority),
            _inter_pod_affinity_forms,
        ),
        reg.register_priority_function2("LeastRequestedPriority", least_requested_priority_map, None, 1, LEAST_REQUESTED),
        reg.register_priority_function2(
            "BalancedResourceAllocation", balanced_resource_allocation_map, None, 1, BALANCED_RESOURCE_ALLOCATION
        ),
        reg.register_priority_function2(
            "NodePreferAvoidPodsPriority", calculate_node_prefer_avoid_pods_priority_map, None, 10000,
            NODE_PREFER_AVOID_PODS,
        ),
        reg.register_priority_function2(
            "NodeAffinityPriority", calculate_node_affinity_priority_map, calculate_node_affinity_priority_reduce, 1,
            NODE_AFFINITY,
        ),
        reg.register_priority_function2(
            "TaintTolerationPriority", compute_taint_toleration_priority_map, compute_taint_toleration_priority_reduce, 1,
            TAINT_TOLERATION,
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
    reg.register_fit_predicate("PodFitsPorts", pod_fits_host_ports, POD_FITS_HOST_PORTS)
    reg.register_fit_predicate("PodFitsHostPorts", pod_fits_host_ports, POD_FITS_HOST_PORTS)
    reg.register_fit_predicate("PodFitsResources", pod_fits_resources, POD_FITS_RESOURCES)
    reg.register_fit_predicate("HostName", pod_fits_host, POD_FITS_HOST)
    reg.register_fit_predicate("MatchNodeSelector", pod_match_node_selector, POD_MATCH_NODE_SELECTOR)
    reg.register_argument_forms("labelsPresence", LABELS_PRESENCE)

    reg.register_priority_config_factory(
        "ServiceSpreadingPriority",
        PriorityConfigFactory(1, map_reduce=lambda args: _selector_spread(args, services_only=True)),
        _selector_spread_forms,
    )
    reg.register_priority_function2("EqualPriority", equal_priority_map, None, 1)
    reg.register_priority_function2("ImageLocalityPriority", image_locality_priority_map, None, 1)
    reg.register_priority_function2("MostRequestedPriority", most_requested_priority_map, None, 1, MOST_REQUESTED)

    reg.register_fit_predicate_factory(POD_TOPOLOGY_SPREAD, new_pod_topology_spread_predicate,
                                       _pod_topology_spread_predicate_forms)
    # The modern cluster's volume rules 1.9 never knew (not 1.9 names; in no provider): a Policy may name
    # them; under the cluster rules they apply to the pods they concern whatever the Policy names.
    reg.register_fit_predicate_factory(READ_WRITE_ONCE_POD, new_read_write_once_pod_predicate, NO_VOLUMES)
    reg.register_fit_predicate_factory(NODE_VOLUME_LIMITS, new_csi_limits_predicate, NO_VOLUMES)
    # NodeDeclaredFeatures (1.36): likewise for the pods that require a feature of the node.
    reg.register_fit_predicate_factory(NODE_DECLARED_FEATURES, new_node_declared_features_predicate,
                                       _node_declared_features_forms)
    # DynamicResources (issue 45): likewise for the pods with ResourceClaims. Its vectorised form asks the predicate
    # only on the nodes whose verdict may have changed (fastpath/dynamic_resources.py); preemption is left to the
    # reference (its reasons are unresolvable).
    reg.register_fit_predicate_factory(DYNAMIC_RESOURCES, new_dynamic_resources_predicate, _dynamic_resources_forms)
    reg.register_priority_config_factory(
        DYNAMIC_RESOURCES, PriorityConfigFactory(DYNAMIC_RESOURCES_WEIGHT, function=new_dynamic_resources_priority))
    reg.register_priority_config_factory(
        POD_TOPOLOGY_SPREAD, PriorityConfigFactory(TOPOLOGY_SPREAD_WEIGHT, function=new_pod_topology_spread_priority),
        _pod_topology_spread_priority_forms,
    )


def apply_feature_gates(reg: Registry, gates: FeatureGates) -> None:
    """``ApplyFeatureGates``, run on a scheduler's registry after the flags are parsed.

    ``ResourceLimitsPriority`` is registered here when its gate is on (1.10 behaviour: in 1.9 the
    gate was read before flag parsing, so the priority could never be enabled).
    """
    if gates.enabled("TaintNodesByCondition"):
        reg.remove_fit_predicate("CheckNodeCondition")
        reg.remove_predicate_key_from_algorithm_provider_map("CheckNodeCondition")
        reg.register_mandatory_fit_predicate("PodToleratesNodeTaints", pod_tolerates_node_taints,
                                             POD_TOLERATES_NODE_TAINTS)
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
