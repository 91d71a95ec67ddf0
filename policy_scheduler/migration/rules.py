"""How each 1.9 predicate and priority carries over to v1: the plugins and decisions it becomes, how
faithfully, and why (``migration.md`` §1–2). Argument entries (``labelsPresence``, ``serviceAffinity``,
``serviceAntiAffinity``, ``labelPreference``) and the version-dependent cloud volume limits are built in
:mod:`.migrate`, which knows the whole Policy.

Statuses: ``exact``, the same decision for the same cluster (scores on v1's 0–100 scale, ten times
1.9's, so weights carry over 1:1); ``approximate``, a v1 plugin that decides differently in the ways
the note says; ``dropped``, nothing in v1 does it; ``implicit``, nothing to configure (v1 does it by
itself, or the entry had no effect in 1.9 either).
"""

from __future__ import annotations

from dataclasses import dataclass

from .versions import FILTER, SCORE

EXACT, APPROXIMATE, DROPPED, IMPLICIT = "exact", "approximate", "dropped", "implicit"
STATUSES = (EXACT, APPROXIMATE, DROPPED, IMPLICIT)


@dataclass(frozen=True)
class Rule:
    status: str
    uses: tuple[tuple[str, str], ...]  # (plugin, decision)
    note: str


def _filter(*plugins: str) -> tuple[tuple[str, str], ...]:
    return tuple((plugin, FILTER) for plugin in plugins)


FITS = "the same requests against the node's allocatable (cpu, memory, ephemeral storage, extended resources, pods)"
PREDICATES: dict[str, Rule] = {
    "PodFitsResources": Rule(EXACT, _filter("NodeResourcesFit"), f"NodeResourcesFit's filter: {FITS}"),
    "PodFitsHostPorts": Rule(EXACT, _filter("NodePorts"), "NodePorts: the same host port (protocol, IP) conflicts"),
    "PodFitsPorts": Rule(EXACT, _filter("NodePorts"), "PodFitsPorts is 1.0's name of PodFitsHostPorts: NodePorts"),
    "HostName": Rule(EXACT, _filter("NodeName"),
                     "NodeName: spec.nodeName must name the node (a pod that names one never reaches a scheduler, "
                     "in 1.9 or v1, so neither ever refuses one)"),
    "MatchNodeSelector": Rule(EXACT, _filter("NodeAffinity"),
                              "NodeAffinity's filter: spec.nodeSelector and required node affinity"),
    "GeneralPredicates": Rule(EXACT, _filter("NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"),
                              "its four checks are four plugins: NodeResourcesFit, NodeName, NodePorts, NodeAffinity"),
    "NoDiskConflict": Rule(EXACT, _filter("VolumeRestrictions"),
                           "VolumeRestrictions: the same GCE PD, AWS EBS, RBD and iSCSI conflicts "
                           "(v1 adds ReadWriteOncePod claims, which 1.9 never saw and this engine enforces under "
                           "--rules cluster whatever the Policy names)"),
    "NoVolumeZoneConflict": Rule(
        APPROXIMATE, _filter("VolumeZone"),
        "VolumeZone: a bound PV's failure-domain.beta.kubernetes.io zone and region must match the node's, as in "
        "1.9; v1 also reads topology.kubernetes.io/zone and /region, which 1.9 (and this engine under --rules 1.9) "
        "ignore: PVs provisioned since 1.17 carry only those, so v1 keeps their pods in the volume's zone where 1.9 "
        "did not"),
    "MatchInterPodAffinity": Rule(
        APPROXIMATE, _filter("InterPodAffinity"),
        "InterPodAffinity's filter: the same required pod affinity and anti-affinity, existing pods' anti-affinity "
        "included, except for the first pod of a group: 1.9 lets a pod that matches one of its own affinity terms "
        "ignore that term while no pod matches it (even on a node without the term's topology key); v1 only when no "
        "pod matches any of its terms and it matches all of them itself, and every node needs every term's "
        "topology key (measured: tests/migration/test_agreement.py)"),
    "PodToleratesNodeTaints": Rule(EXACT, _filter("TaintToleration"),
                                   "TaintToleration's filter: NoSchedule and NoExecute taints must be tolerated"),
    "CheckNodeMemoryPressure": Rule(
        DROPPED, (),
        "no v1 plugin: the node lifecycle controller taints a node under memory pressure "
        "node.kubernetes.io/memory-pressure:NoSchedule and TaintToleration's filter (always enabled here) refuses "
        "every pod without that toleration, where 1.9 refused only BestEffort pods; tolerate the taint in pods "
        "that should still land there"),
    "CheckNodeDiskPressure": Rule(
        DROPPED, (),
        "no v1 plugin: the node lifecycle controller taints a node under disk pressure "
        "node.kubernetes.io/disk-pressure:NoSchedule and TaintToleration's filter (always enabled here) refuses "
        "pods without that toleration, as 1.9 refused every pod"),
    "CheckNodeCondition": Rule(
        APPROXIMATE, _filter("NodeUnschedulable", "TaintToleration"),
        "nodes not Ready, out of disk, network-unavailable or unschedulable fit no pod in 1.9; in v1 "
        "NodeUnschedulable checks spec.unschedulable and the other conditions are taints the node lifecycle "
        "controller sets (node.kubernetes.io/not-ready, unreachable, network-unavailable), enforced by "
        "TaintToleration: pods tolerating them (DaemonSet pods) may land there, and TaintToleration also enforces "
        "the nodes' own NoSchedule taints"),
    "CheckVolumeBinding": Rule(
        APPROXIMATE, _filter("VolumeBinding"),
        "VolumeBinding: 1.9's check ran only with the VolumeScheduling gate (without it every node fits); v1's "
        "always runs, checks bound volumes' node affinity, and binds WaitForFirstConsumer claims at Reserve "
        "and PreBind"),
    "PodTopologySpread": Rule(EXACT, _filter("PodTopologySpread"),
                              "PodTopologySpread's filter over the pods' own DoNotSchedule constraints"),
    "NodeDeclaredFeatures": Rule(
        EXACT, _filter("NodeDeclaredFeatures"),
        "NodeDeclaredFeatures: a pod whose spec requires node features (a RestartAllContainers restart rule, "
        "hostNetwork with hostUsers false) fits only the nodes whose status.declaredFeatures list them all, "
        "as this engine decides under --rules cluster"),
    "DynamicResources": Rule(
        APPROXIMATE, _filter("DynamicResources"),
        "DynamicResources: a pod's ResourceClaims are allocated from the ResourceSlices as 1.36's structured "
        "allocator picks the devices and reserved for it, the pod fitting only where that succeeds, as this "
        "engine decides under --rules cluster; where an allocation would need a device with binding conditions "
        "or an extended resource backed by a DeviceClass, this engine "
        "refuses the pod by name and v1 allocates it; v1's PostFilter also deallocates a claim that blocks the "
        "pod"),
}
#: Where a predicate's plugin is registered (versions.REGISTERED) but its gate is still off by default.
GATE_OFF_NOTE = ("; kube-scheduler 1.{minor} registers {plugin} but its gate {gate} is alpha and off: it decides "
                 "nothing unless the gate is on in the kube-scheduler (and the API server and kubelets, which "
                 "otherwise drop the fields it reads)")

SPREAD_NOTE = ("v1 has no SelectorSpread: PodTopologySpread's system default constraints spread the pods of a "
               "Service, ReplicationController, ReplicaSet or StatefulSet over nodes (maxSkew 3) and zones "
               "(maxSkew 5), scored by skew where 1.9 counted matching pods (zones weighted 2/3); pods with their "
               "own topologySpreadConstraints are not defaulted")
RESOURCE_SCORE = ("NodeResourcesFit's score with scoringStrategy {type}, cpu and memory weighted 1: the same "
                  "formula on the 0-100 scale; a Policy can have only one of the resource strategies")
PRIORITIES: dict[str, Rule] = {
    "LeastRequestedPriority": Rule(EXACT, (("NodeResourcesFit", SCORE),), RESOURCE_SCORE.format(type="LeastAllocated")),
    "MostRequestedPriority": Rule(EXACT, (("NodeResourcesFit", SCORE),), RESOURCE_SCORE.format(type="MostAllocated")),
    "BalancedResourceAllocation": Rule(
        APPROXIMATE, (("NodeResourcesBalancedAllocation", SCORE),),
        "NodeResourcesBalancedAllocation scores 1 - (standard deviation of the cpu and memory fractions), i.e. "
        "100 - 50*|cpu - memory|, where 1.9 scored 10 - 10*|cpu - memory|: half the penalty for an imbalance; "
        "1.9 gave 0 to a node whose requests exceed capacity"),
    "SelectorSpreadPriority": Rule(APPROXIMATE, (("PodTopologySpread", SCORE),), SPREAD_NOTE),
    "ServiceSpreadingPriority": Rule(APPROXIMATE, (("PodTopologySpread", SCORE),),
                                     SPREAD_NOTE + "; 1.9's ServiceSpreadingPriority spread by Services only"),
    "InterPodAffinityPriority": Rule(
        APPROXIMATE, (("InterPodAffinity", SCORE),),
        "InterPodAffinity's score sums the same preferred (anti-)affinity terms of the pod and, symmetrically, of "
        "existing pods, but normalises between the lowest and the highest node where 1.9 normalised from 0: a node "
        "with fewer matches than the best scores 0 instead of its share, which changes the outcome once other "
        "priorities are weighed in (the best node alone is the same)"),
    "NodeAffinityPriority": Rule(EXACT, (("NodeAffinity", SCORE),),
                                 "NodeAffinity's score: summed weights of matching preferred terms, normalised to "
                                 "the best node as in 1.9"),
    "TaintTolerationPriority": Rule(EXACT, (("TaintToleration", SCORE),),
                                    "TaintToleration's score: fewer intolerable PreferNoSchedule taints score "
                                    "higher, normalised as in 1.9"),
    "ImageLocalityPriority": Rule(
        APPROXIMATE, (("ImageLocality", SCORE),),
        "ImageLocality scales each image's size by the share of nodes that already have it and caps the sum per "
        "container; 1.9 summed the sizes of the pod's images present on the node (23 MB to 1000 MB, linear)"),
    "NodePreferAvoidPodsPriority": Rule(
        DROPPED, (),
        "NodePreferAvoidPods was removed in 1.23: the scheduler.alpha.kubernetes.io/preferAvoidPods annotation is "
        "ignored; taint such nodes PreferNoSchedule instead (TaintTolerationPriority scores it)"),
    "EqualPriority": Rule(IMPLICIT, (), "every node scored 1: it changes no ranking, v1 needs nothing"),
    "ResourceLimitsPriority": Rule(DROPPED, (), "no v1 plugin scores resource limits"),
    "PodTopologySpread": Rule(EXACT, (("PodTopologySpread", SCORE),),
                              "PodTopologySpread's score over the pods' own ScheduleAnyway constraints"),
    "DynamicResources": Rule(APPROXIMATE, (("DynamicResources", SCORE),),
                             "DynamicResources' score: a node where a claim's prioritized list gets an earlier "
                             "subrequest scores higher (from 1.35); this engine scores it on 1.9's 0..10 scale "
                             "(upstream's 0..100 divided by 10, truncated), so close totals may rank differently"),
}
#: The priorities that become NodeResourcesFit's ``scoringStrategy``, and the strategy each names.
SCORING_STRATEGIES = {"LeastRequestedPriority": "LeastAllocated", "MostRequestedPriority": "MostAllocated"}
#: The 1.9 volume-count predicates and the in-tree plugins that replaced them (until 1.32).
CLOUD_LIMITS = {"MaxEBSVolumeCount": "EBSLimits", "MaxGCEPDVolumeCount": "GCEPDLimits",
                "MaxAzureDiskVolumeCount": "AzureDiskLimits"}


#: Under ``--rules cluster`` the engine reads what 1.9 never knew as v1 does: these entries agree exactly.
CLUSTER_RULES_PREDICATES: dict[str, Rule] = {
    "NoVolumeZoneConflict": Rule(
        EXACT, _filter("VolumeZone"),
        "VolumeZone: a bound PV's zone and region labels must match the node's, the GA topology.kubernetes.io ones "
        "as well as 1.9's failure-domain.beta.kubernetes.io ones (a PV's beta label answered by the node's beta "
        "label, else its GA one), as this engine reads them under --rules cluster"),
}


# -- notes that change with the target version ------------------------------------------------------
#: ``noderesources/balanced_allocation.go``: PreScore skips best-effort pods from 1.33 (#129138); 1.36's
#: ``balancedResourceScorer`` scores the change in balance the pod brings instead of the balance with it.
BALANCED_SKIPS_BEST_EFFORT_FROM, BALANCED_IMPROVEMENT_FROM = 33, 36
#: ``imagelocality/image_locality.go`` ``sumImageScores`` counts image volumes (``spec.volumes[].image``) from 1.36.
IMAGE_VOLUMES_FROM = 36
#: ``SchedulerAsyncPreemption``: beta and on from 1.33 (``preemption/executor.go`` ``prepareCandidateAsync``).
ASYNC_PREEMPTION_FROM = 33


def balanced_allocation_note(minor: int) -> str:
    """BalancedResourceAllocation's note for kube-scheduler ``1.minor``."""
    if minor >= BALANCED_IMPROVEMENT_FROM:
        note = ("NodeResourcesBalancedAllocation scores how much the pod improves the node's balance, "
                "50 + (50 + with - without)/2 with with and without = 100 - 50*|cpu - memory| (the requested "
                "fractions with and without the pod's requests), so 50 to 100 and 75 for a pod that changes "
                "nothing; 1.9 scored the balance with the pod alone, 10 - 10*|cpu - memory|, so a node that is "
                "already unbalanced ranks differently; 1.9 gave 0 to a node whose requests exceed capacity")
    else:
        note = PRIORITIES["BalancedResourceAllocation"].note
    if minor >= BALANCED_SKIPS_BEST_EFFORT_FROM:
        note += ("; a pod that requests neither cpu nor memory gets no NodeResourcesBalancedAllocation score at "
                 "all (PreScore skips best-effort pods since 1.33), where 1.9 scored it with the default requests")
    return note


def image_locality_note(minor: int) -> str:
    """ImageLocalityPriority's note for kube-scheduler ``1.minor``."""
    note = PRIORITIES["ImageLocalityPriority"].note
    if minor >= IMAGE_VOLUMES_FROM:
        note += ("; 1.36 also counts the images of the pod's image volumes (spec.volumes[].image, a field 1.9 "
                 "never knew)")
    return note


#: Priorities whose note depends on the target: name -> note for a minor version.
VERSIONED_NOTES = {"BalancedResourceAllocation": balanced_allocation_note, "ImageLocalityPriority": image_locality_note}
