"""CheckVolumeBinding under the cluster's rules: upstream 1.26 ``binder_test.go`` ``TestFindPodVolumesWithoutProvisioning``,
``TestFindPodVolumesWithProvisioning``, ``TestAssumePodVolumes`` and ``TestCheckBindings`` rows that fit (no CSI
migration, no storage capacity), plus ``volume_binding_test.go``'s PreFilter errors and the predicate's reach."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.features import Rules
from policy_scheduler.model.volumes import ANN_SELECTED_NODE, PersistentVolume, PersistentVolumeClaim
from policy_scheduler.predicates import new_volume_binding_predicate
from policy_scheduler.predicates.reasons import ERR_VOLUME_BIND_CONFLICT, ERR_VOLUME_NODE_CONFLICT
from policy_scheduler.predicates.volume_binder import (
    ERR_REASON_PV_NOT_EXIST,
    ClusterVolumeBinder,
    ClusterVolumeBindingChecker,
    VolumeBindingError,
    assume_pod_volumes,
    check_bindings,
    decide_pod_volumes,
    revert_assumed_pod_volumes,
)

from .conftest import make_args, make_cluster, make_node, make_node_info, make_pod

NS = "testns"
WAIT, IMMEDIATE, WAIT_NO_PROV, TOPO = "waitClass", "immediateClass", "waitClassNoProvisioner", "topologyClass"
CLASSES = [
    {"metadata": {"name": WAIT}, "volumeBindingMode": "WaitForFirstConsumer", "provisioner": "test-provisioner"},
    {"metadata": {"name": IMMEDIATE}, "volumeBindingMode": "Immediate", "provisioner": "test-provisioner"},
    {"metadata": {"name": WAIT_NO_PROV}, "volumeBindingMode": "WaitForFirstConsumer", "provisioner": "kubernetes.io/no-provisioner"},
    {"metadata": {"name": TOPO}, "volumeBindingMode": "WaitForFirstConsumer", "provisioner": "test-provisioner",
     "allowedTopologies": [{"matchLabelExpressions": [{"key": "key1", "values": ["node1"]}]}]},
]
NODE1 = make_node("node1", {"key1": "node1"})
NODE2 = make_node("node2", {"key1": "node2"})


def pvc(name, size, state="unbound", pv_name="", class_name=WAIT, selected_node=None):
    """``makeTestPVC``: state "unbound", "prebound" (volumeName, binding not completed) or "bound"."""
    meta = {"name": name, "namespace": NS, "uid": f"{name}-uid", "resourceVersion": "1"}
    annotations = {}
    if state == "bound":
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
    if selected_node:
        annotations[ANN_SELECTED_NODE] = selected_node
    if annotations:
        meta["annotations"] = annotations
    spec = {"resources": {"requests": {"storage": size}}, "storageClassName": class_name}
    if state in ("bound", "prebound"):
        spec["volumeName"] = pv_name
    return {"metadata": meta, "spec": spec}


def pv(name, node, capacity, bound_to=None, class_name=WAIT, phase="Available"):
    """``makeTestPV``: the GA node affinity ``key1 In [node]``."""
    spec = {"capacity": {"storage": capacity}, "storageClassName": class_name}
    if node:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "key1", "operator": "In", "values": [node]}]}]}}
    meta = {"name": name, "resourceVersion": "1"}
    if bound_to is not None:
        ref = bound_to["metadata"]
        spec["claimRef"] = {"name": ref["name"], "namespace": NS, "uid": ref["uid"]}
        meta["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
        phase = "Bound"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


UNBOUND = pvc("unbound-pvc", "1G")
UNBOUND2 = pvc("unbound-pvc2", "5G")
PREBOUND = pvc("prebound-pvc", "1G", "prebound", "pv-node1a")
BOUND = pvc("bound-pvc", "1G", "bound", "pv-bound")
BOUND2 = pvc("bound-pvc2", "1G", "bound", "pv-bound2")
BOUND_NO_PV = pvc("bound-pvc", "1G", "bound", "pv-missing")
IMMEDIATE_UNBOUND = pvc("immediate-unbound-pvc", "1G", class_name=IMMEDIATE)
IMMEDIATE_BOUND = pvc("immediate-bound-pvc", "1G", "bound", "pv-bound-immediate", IMMEDIATE)
PROVISIONED = pvc("provisioned-pvc", "1G")
PROVISIONED_SELECTED = pvc("provisioned-pvc", "1G", selected_node="node1")
NO_PROVISIONER = pvc("no-provisioner-pvc", "1G", class_name=WAIT_NO_PROV)
TOPOLOGY = pvc("topology-pvc", "1G", class_name=TOPO)
NO_CLASS = pvc("no-class-pvc", "1G", class_name="")

PV_NODE1A = pv("pv-node1a", "node1", "5G")
PV_NODE1B = pv("pv-node1b", "node1", "10G")
PV_NODE1C = pv("pv-node1c", "node1", "5G")
PV_NODE2 = pv("pv-node2", "node2", "1G")
PV_BOUND = pv("pv-bound", "node1", "1G", BOUND)
PV_BOUND2 = pv("pv-bound2", "node1", "1G", BOUND2)
PV_NODE1A_PREBOUND = pv("pv-node1a", "node1", "5G", PREBOUND)
PV_BOUND_IMMEDIATE = pv("pv-bound-immediate", "node1", "1G", IMMEDIATE_BOUND, IMMEDIATE)
PV_BOUND_IMMEDIATE_NODE2 = pv("pv-bound-immediate", "node2", "1G", IMMEDIATE_BOUND, IMMEDIATE)


def pod_with(claims):
    return make_pod(name="test-pod", namespace=NS,
                    volumes=[{"name": f"vol{i}", "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}}
                             for i, c in enumerate(claims)])


def find(claims, pvs, node=NODE1):
    cluster = make_cluster(nodes=[NODE1, NODE2], pvcs=claims, pvs=pvs, storage_classes=CLASSES)
    binder = ClusterVolumeBinder(cluster, all_claims=True)
    pod = pod_with(claims)
    volumes, reasons = binder.find_pod_volumes(pod, binder.pod_volume_claims(pod), node)
    return ({c.name: p.name for c, p in volumes.static_bindings}, [c.name for c in volumes.dynamic_provisions], reasons)


# TestFindPodVolumesWithoutProvisioning (1.26) -------------------------------------------------------------
WITHOUT_PROVISIONING = {
    "bound-pvc": ([BOUND], [PV_BOUND], {}, []),
    "bound-pvc,pv-not-exists": ([BOUND_NO_PV], [], {}, [ERR_REASON_PV_NOT_EXIST]),
    "unbound-pvc,pv-same-node": ([UNBOUND], [PV_NODE2, PV_NODE1A, PV_NODE1B], {"unbound-pvc": "pv-node1a"}, []),
    "unbound-pvc,pv-different-node": ([UNBOUND], [PV_NODE2], {}, [ERR_VOLUME_BIND_CONFLICT]),
    "two-unbound-pvcs": ([UNBOUND, UNBOUND2], [PV_NODE1A, PV_NODE1B], {"unbound-pvc": "pv-node1a", "unbound-pvc2": "pv-node1b"}, []),
    "two-unbound-pvcs,order-by-size": ([UNBOUND2, UNBOUND], [PV_NODE1A, PV_NODE1B], {"unbound-pvc": "pv-node1a", "unbound-pvc2": "pv-node1b"}, []),
    "two-unbound-pvcs,partial-match": ([UNBOUND, UNBOUND2], [PV_NODE1A], {"unbound-pvc": "pv-node1a"}, [ERR_VOLUME_BIND_CONFLICT]),
    "one-bound,one-unbound": ([UNBOUND, BOUND], [PV_BOUND, PV_NODE1A], {"unbound-pvc": "pv-node1a"}, []),
    "one-bound,one-unbound,no-match": ([UNBOUND, BOUND], [PV_BOUND, PV_NODE2], {}, [ERR_VOLUME_BIND_CONFLICT]),
    "immediate-bound-pvc": ([IMMEDIATE_BOUND], [PV_BOUND_IMMEDIATE], {}, []),
    "immediate-bound-pvc-wrong-node": ([IMMEDIATE_BOUND], [PV_BOUND_IMMEDIATE_NODE2], {}, [ERR_VOLUME_NODE_CONFLICT]),
    "unbound-pvc,pv-smallest-of-equal-fits": ([UNBOUND], [PV_NODE1C, PV_NODE1A], {"unbound-pvc": "pv-node1a"}, []),
}


@pytest.mark.parametrize("name", WITHOUT_PROVISIONING)
def test_find_pod_volumes_without_provisioning(name):
    claims, pvs, bindings, reasons = WITHOUT_PROVISIONING[name]
    # No provisioner for the unmatched claims of these rows: upstream's fixture class has none.
    claims = [{**c, "spec": {**c["spec"], "storageClassName": WAIT_NO_PROV if c["spec"]["storageClassName"] == WAIT else c["spec"]["storageClassName"]}} for c in claims]
    pvs = [{**p, "spec": {**p["spec"], "storageClassName": WAIT_NO_PROV if p["spec"]["storageClassName"] == WAIT else p["spec"]["storageClassName"]}} for p in pvs]
    got_bindings, provisions, got_reasons = find(claims, pvs)
    assert (got_bindings, provisions, got_reasons) == (bindings, [], reasons)


@pytest.mark.parametrize("claims,pvs,message", [
    ([PREBOUND], [PV_NODE1A_PREBOUND], "pod has unbound immediate PersistentVolumeClaims"),  # "prebound-pvc"
    ([UNBOUND, PREBOUND], [PV_NODE1A_PREBOUND, PV_NODE1B], "pod has unbound immediate PersistentVolumeClaims"),
    ([IMMEDIATE_UNBOUND], [PV_NODE1A], "pod has unbound immediate PersistentVolumeClaims"),
    ([IMMEDIATE_UNBOUND, BOUND], [PV_BOUND, PV_NODE1A], "pod has unbound immediate PersistentVolumeClaims"),
])
def test_find_pod_volumes_errors(claims, pvs, message):
    with pytest.raises(PredicateError, match=f"^{message}$"):
        find(claims, pvs)


def test_pvc_not_found_lost_and_deleting():
    """``podHasPVCs``' errors (volume_binding.go PreFilter)."""
    cluster = make_cluster(nodes=[NODE1], pvcs=[], storage_classes=CLASSES)
    binder = ClusterVolumeBinder(cluster, all_claims=True)
    with pytest.raises(PredicateError, match='^persistentvolumeclaim "unbound-pvc" not found$'):
        binder.pod_volume_claims(pod_with([UNBOUND]))
    lost = {**BOUND, "status": {"phase": "Lost"}}
    deleting = {**UNBOUND, "metadata": {**UNBOUND["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}
    cluster = make_cluster(nodes=[NODE1], pvcs=[lost, deleting], storage_classes=CLASSES)
    binder = ClusterVolumeBinder(cluster, all_claims=True)
    with pytest.raises(PredicateError, match='^persistentvolumeclaim "bound-pvc" bound to non-existent persistentvolume "pv-bound"$'):
        binder.pod_volume_claims(pod_with([lost]))
    with pytest.raises(PredicateError, match='^persistentvolumeclaim "unbound-pvc" is being deleted$'):
        binder.pod_volume_claims(pod_with([deleting]))


# TestFindPodVolumesWithProvisioning (1.26) ----------------------------------------------------------------
WITH_PROVISIONING = {
    "one-provisioned": ([PROVISIONED], [], NODE1, {}, ["provisioned-pvc"], []),
    "two-unbound-pvcs,one-matched,one-provisioned": ([UNBOUND, PROVISIONED], [PV_NODE1A], NODE1, {"unbound-pvc": "pv-node1a"}, ["provisioned-pvc"], []),
    "one-bound,one-provisioned": ([BOUND, PROVISIONED], [PV_BOUND], NODE1, {}, ["provisioned-pvc"], []),
    "one-binding,one-selected-node": ([PROVISIONED_SELECTED, UNBOUND], [PV_NODE1A], NODE1, {"unbound-pvc": "pv-node1a"}, ["provisioned-pvc"], []),
    "selected-node-is-another-node": ([PROVISIONED_SELECTED], [], NODE2, {}, [], [ERR_VOLUME_BIND_CONFLICT]),
    "one-immediate-bound,one-provisioned": ([IMMEDIATE_BOUND, PROVISIONED], [PV_BOUND_IMMEDIATE], NODE1, {}, ["provisioned-pvc"], []),
    "invalid-provisioner": ([NO_PROVISIONER], [], NODE1, {}, [], [ERR_VOLUME_BIND_CONFLICT]),
    "volume-topology-satisfied": ([TOPOLOGY], [], NODE1, {}, ["topology-pvc"], []),
    "volume-topology-unsatisfied": ([TOPOLOGY], [], NODE2, {}, [], [ERR_VOLUME_BIND_CONFLICT]),
    "bound-pv-affinity-and-provisioning-both-fail": ([BOUND, TOPOLOGY], [PV_BOUND], NODE2, {}, [], [ERR_VOLUME_NODE_CONFLICT, ERR_VOLUME_BIND_CONFLICT]),
}


@pytest.mark.parametrize("name", WITH_PROVISIONING)
def test_find_pod_volumes_with_provisioning(name):
    claims, pvs, node, bindings, provisions, reasons = WITH_PROVISIONING[name]
    assert find(claims, pvs, node) == (bindings, provisions, reasons)


def test_provisioning_without_a_class_or_with_a_missing_class():
    with pytest.raises(PredicateError, match='^failed to find storage class "gone"$'):
        cluster = make_cluster(nodes=[NODE1], pvcs=[pvc("p", "1G", class_name="gone")], storage_classes=CLASSES)
        # The class disappeared after the claim was classified late-bound: ask the filter directly.
        binder = ClusterVolumeBinder(cluster)
        from policy_scheduler.predicates.volume_binder import PodVolumeClaims

        claim = cluster.get_pvc(NS, "p")
        binder.find_pod_volumes(pod_with([]), PodVolumeClaims((), (claim,)), NODE1)
    cluster = make_cluster(nodes=[NODE1], pvcs=[NO_CLASS], storage_classes=CLASSES)
    binder = ClusterVolumeBinder(cluster)
    from policy_scheduler.predicates.volume_binder import PodVolumeClaims

    with pytest.raises(PredicateError, match=f'^no class for claim "{NS}/no-class-pvc"$'):
        binder.find_pod_volumes(pod_with([]), PodVolumeClaims((), (cluster.get_pvc(NS, "no-class-pvc"),)), NODE1)


def test_find_matching_volume_skips_unavailable_mismatched_mode_and_deleted_pvs():
    """``FindMatchingVolume``: phase Available only, same volumeMode, no deletionTimestamp, selector, access modes."""
    released = pv("pv-released", "node1", "5G", phase="Released")
    block = {**PV_NODE1B, "spec": {**PV_NODE1B["spec"], "volumeMode": "Block"}}
    deleted = {**PV_NODE1C, "metadata": {**PV_NODE1C["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}
    rwx = {**UNBOUND, "spec": {**UNBOUND["spec"], "accessModes": ["ReadWriteMany"], "storageClassName": WAIT_NO_PROV}}
    to_no_prov = [{**p, "spec": {**p["spec"], "storageClassName": WAIT_NO_PROV}} for p in (released, block, deleted)]
    assert find([rwx], to_no_prov)[2] == [ERR_VOLUME_BIND_CONFLICT]
    rwx_pv = {**PV_NODE1A, "spec": {**PV_NODE1A["spec"], "accessModes": ["ReadWriteMany"], "storageClassName": WAIT_NO_PROV}}
    assert find([rwx], [*to_no_prov, rwx_pv]) == ({"unbound-pvc": "pv-node1a"}, [], [])
    selecting = {**rwx, "spec": {**rwx["spec"], "selector": {"matchLabels": {"tier": "gold"}}}}
    assert find([selecting], [rwx_pv])[2] == [ERR_VOLUME_BIND_CONFLICT]
    labelled = {**rwx_pv, "metadata": {**rwx_pv["metadata"], "labels": {"tier": "gold"}}}
    assert find([selecting], [labelled])[0] == {"unbound-pvc": "pv-node1a"}


def test_pv_node_affinity_terms_are_ored_and_alpha_annotation_counts_too():
    two_terms = {**PV_BOUND, "spec": {**PV_BOUND["spec"], "nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "key1", "operator": "In", "values": ["nodeX"]}]},
        {"matchExpressions": [{"key": "key1", "operator": "In", "values": ["node2"]}]}]}}}}
    assert find([BOUND], [two_terms], NODE2)[2] == []
    assert find([BOUND], [two_terms], NODE1)[2] == [ERR_VOLUME_NODE_CONFLICT]
    alpha = {**PV_BOUND, "metadata": {**PV_BOUND["metadata"], "annotations": {
        "volume.alpha.kubernetes.io/node-affinity": '{"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": '
                                                    '[{"matchExpressions": [{"key": "key1", "operator": "In", "values": ["node2"]}]}]}}'}},
             "spec": {k: v for k, v in PV_BOUND["spec"].items() if k != "nodeAffinity"}}
    assert find([BOUND], [alpha], NODE1)[2] == [ERR_VOLUME_NODE_CONFLICT]
    # matchFields is evaluated as 1.26's CheckNodeAffinity does: against a node made of the labels alone,
    # which has no fields, so nodeSelectorTerm.match skips them (``len(nodeFields) > 0``): the term with
    # only matchFields admits every node, a term's matchExpressions still count.
    by_name = {**PV_BOUND, "spec": {**PV_BOUND["spec"], "nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}}}}
    assert find([BOUND], [by_name], NODE1)[2] == []
    assert find([BOUND], [by_name], NODE2)[2] == []
    both = {**PV_BOUND, "spec": {**PV_BOUND["spec"], "nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "key1", "operator": "In", "values": ["node2"]}],
         "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}}}}
    assert find([BOUND], [both], NODE2)[2] == []
    assert find([BOUND], [both], NODE1)[2] == [ERR_VOLUME_NODE_CONFLICT]


# The predicate: which pods it decides for -----------------------------------------------------------------
def test_predicate_decides_only_for_late_bound_claims_or_pvs_with_node_affinity_without_the_gate():
    cluster = make_cluster(nodes=[NODE1, NODE2], pvcs=[IMMEDIATE_UNBOUND, UNBOUND, BOUND],
                           pvs=[PV_NODE2, PV_BOUND], storage_classes=CLASSES)
    predicate = new_volume_binding_predicate(make_args(cluster))
    assert isinstance(predicate, ClusterVolumeBindingChecker)
    node2 = make_node_info(NODE2)
    # An unbound Immediate claim: 1.9's behaviour (nothing checks it), not upstream's PreFilter error.
    assert predicate(pod_with([IMMEDIATE_UNBOUND]), None, node2) == (True, [])
    assert predicate(pod_with([UNBOUND]), None, node2) == (True, [])  # pv-node2: 1G fits 1G
    assert predicate(pod_with([UNBOUND]), None, make_node_info(NODE1)) == (True, [])  # provisioning
    assert predicate(pod_with([BOUND]), None, node2) == (False, [ERR_VOLUME_NODE_CONFLICT])
    with pytest.raises(PredicateError, match="^pod has unbound immediate PersistentVolumeClaims$"):
        predicate(pod_with([UNBOUND, IMMEDIATE_UNBOUND]), None, node2)
    # With the gate, every pod with claims (the alpha gate's meaning, in its modern form).
    gated = new_volume_binding_predicate(make_args(cluster, VolumeScheduling=True))
    with pytest.raises(PredicateError, match="^pod has unbound immediate PersistentVolumeClaims$"):
        gated(pod_with([IMMEDIATE_UNBOUND]), None, node2)
    # Under 1.9's rules without the gate: a no-op, even for a late-bound claim.
    assert new_volume_binding_predicate(make_args(cluster, Rules.V1_9))(pod_with([BOUND]), None, node2) == (True, [])


def test_volume_zone_skips_late_bound_claims_under_the_cluster_rules():
    from policy_scheduler.predicates import new_volume_zone_predicate

    zoned = make_node("node1", {"failure-domain.beta.kubernetes.io/zone": "a"})
    cluster = make_cluster(nodes=[zoned], pvcs=[UNBOUND, IMMEDIATE_UNBOUND], storage_classes=CLASSES)
    assert new_volume_zone_predicate(make_args(cluster))(pod_with([UNBOUND]), None, make_node_info(zoned)) == (True, [])
    with pytest.raises(PredicateError, match='^PersistentVolumeClaim is not bound: "immediate-unbound-pvc"$'):
        new_volume_zone_predicate(make_args(cluster))(pod_with([IMMEDIATE_UNBOUND]), None, make_node_info(zoned))


# TestAssumePodVolumes / RevertAssumedPodVolumes ----------------------------------------------------------
def test_assume_prebinds_static_pvs_and_annotates_claims_then_reverts():
    cluster = make_cluster(nodes=[NODE1], pvcs=[UNBOUND, PROVISIONED], pvs=[PV_NODE1A], storage_classes=CLASSES)
    binder = ClusterVolumeBinder(cluster)
    pod = pod_with([UNBOUND, PROVISIONED])
    volumes = decide_pod_volumes(binder, pod, "node1")
    assert [str(a) for a in volumes.actions()] == [f"{NS}/provisioned-pvc -> provisioned on node1", f"{NS}/unbound-pvc -> PV pv-node1a"]
    assumed = assume_pod_volumes(cluster, volumes)
    new_pv = cluster.get_pv("pv-node1a")
    assert new_pv.spec["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": NS, "name": "unbound-pvc",
                                       "uid": "unbound-pvc-uid", "apiVersion": "v1", "resourceVersion": "1"}
    assert new_pv.raw["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert cluster.get_pvc(NS, "provisioned-pvc").selected_node == "node1"
    assert cluster.api_pv("pv-node1a").spec.get("claimRef") is None  # the API object is untouched
    # A second pod's claim cannot take the PV the first one was assumed to bind.
    other = pvc("other-pvc", "1G")
    cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(other))
    other_pod = pod_with([other])
    other_binder = ClusterVolumeBinder(cluster)
    _, reasons = other_binder.find_pod_volumes(other_pod, other_binder.pod_volume_claims(other_pod), NODE1)
    assert reasons == []  # provisioned instead
    assert decide_pod_volumes(binder, pod_with([other]), "node1").static_bindings == []
    revert_assumed_pod_volumes(cluster, assumed)
    assert cluster.get_pv("pv-node1a").spec.get("claimRef") is None
    assert cluster.get_pvc(NS, "provisioned-pvc").selected_node is None


def test_newer_api_object_replaces_an_assumption():
    cluster = make_cluster(nodes=[NODE1], pvcs=[UNBOUND], pvs=[PV_NODE1A], storage_classes=CLASSES)
    volumes = decide_pod_volumes(ClusterVolumeBinder(cluster), pod_with([UNBOUND]), "node1")
    assume_pod_volumes(cluster, volumes)
    assert cluster.get_pv("pv-node1a").spec.get("claimRef")
    cluster.add_persistent_volume(PersistentVolume.from_dict({**PV_NODE1A, "metadata": {**PV_NODE1A["metadata"], "resourceVersion": "1"}}))
    assert cluster.get_pv("pv-node1a").spec.get("claimRef")  # same version: still assumed
    cluster.add_persistent_volume(PersistentVolume.from_dict({**PV_NODE1A, "metadata": {**PV_NODE1A["metadata"], "resourceVersion": "7"}}))
    assert cluster.get_pv("pv-node1a").spec.get("claimRef") is None


# TestCheckBindings ---------------------------------------------------------------------------------------
def _written(cluster, claims, pvs):
    volumes = decide_pod_volumes(ClusterVolumeBinder(cluster), pod_with(claims), "node1")
    return assume_pod_volumes(cluster, volumes)


def test_check_bindings_static():
    cluster = make_cluster(nodes=[NODE1], pvcs=[UNBOUND], pvs=[PV_NODE1A], storage_classes=CLASSES)
    written = _written(cluster, [UNBOUND], [PV_NODE1A])
    # What the API server returned for the PUT: the pre-bound PV at resourceVersion 2.
    claim, prebound = written.static_bindings[0]
    written.static_bindings[0] = (claim, PersistentVolume.from_dict(
        {**prebound.raw, "metadata": {**prebound.raw["metadata"], "resourceVersion": "2"}}))
    assert check_bindings(cluster, "node1", written) is False  # the watch has not shown our write yet
    # The PV controller's work: the PV's claimRef (with uid) and the claim bound and completed.
    bound_pv = {**PV_NODE1A, "metadata": {**PV_NODE1A["metadata"], "resourceVersion": "2"},
                "spec": {**PV_NODE1A["spec"], "claimRef": {"name": "unbound-pvc", "namespace": NS, "uid": "unbound-pvc-uid"}}}
    cluster.add_persistent_volume(PersistentVolume.from_dict(bound_pv))
    assert check_bindings(cluster, "node1", written) is False  # claim not fully bound
    cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(pvc("unbound-pvc", "1G", "bound", "pv-node1a")))
    assert check_bindings(cluster, "node1", written) is True
    reset = {**bound_pv, "metadata": {**bound_pv["metadata"], "resourceVersion": "3"}, "spec": {**bound_pv["spec"], "claimRef": None}}
    cluster.add_persistent_volume(PersistentVolume.from_dict(reset))
    with pytest.raises(VolumeBindingError, match='^ClaimRef got reset for pv "pv-node1a"$'):
        check_bindings(cluster, "node1", written)


def test_check_bindings_provisioning():
    cluster = make_cluster(nodes=[NODE1], pvcs=[PROVISIONED], storage_classes=CLASSES)
    written = _written(cluster, [PROVISIONED], [])
    # What the API server returned for the PUT: the annotated claim at resourceVersion 2.
    written.dynamic_provisions[0] = PersistentVolumeClaim.from_dict(
        {**PROVISIONED_SELECTED, "metadata": {**PROVISIONED_SELECTED["metadata"], "resourceVersion": "2"}})
    assert check_bindings(cluster, "node1", written) is False  # the watch has not shown our write yet
    annotated = {**PROVISIONED_SELECTED, "metadata": {**PROVISIONED_SELECTED["metadata"], "resourceVersion": "2"}}
    cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(annotated))
    assert check_bindings(cluster, "node1", written) is False
    cluster.add_persistent_volume(PersistentVolume.from_dict(pv("pvc-new", "node1", "1G", PROVISIONED, phase="Bound")))
    done = pvc("provisioned-pvc", "1G", "bound", "pvc-new", selected_node="node1")
    done["metadata"]["resourceVersion"] = "3"
    cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(done))
    assert check_bindings(cluster, "node1", written) is True
    failed = pvc("provisioned-pvc", "1G")
    failed["metadata"]["resourceVersion"] = "4"
    cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(failed))
    with pytest.raises(VolumeBindingError, match='^provisioning failed for PVC "provisioned-pvc"$'):
        check_bindings(cluster, "node1", written)
    wrong = pvc("provisioned-pvc", "1G", "bound", "pvc-new", selected_node="node1")
    wrong["metadata"]["resourceVersion"] = "5"
    cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(wrong))
    cluster.add_persistent_volume(PersistentVolume.from_dict(pv("pvc-new", "node2", "1G", PROVISIONED, phase="Bound")))
    with pytest.raises(VolumeBindingError, match="node affinity doesn't match node \"node1\""):
        check_bindings(cluster, "node1", written)
