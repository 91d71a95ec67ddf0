"""CheckVolumeBinding and the 1.9 alpha volume binder: upstream ``TestFindPodVolumes``
(``pkg/controller/volume/persistentvolume/scheduler_binder_test.go``), every scenario, plus the predicate."""

from __future__ import annotations

import json

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.features import Rules
from policy_scheduler.model.volumes import PersistentVolume
from policy_scheduler.predicates import new_volume_binding_predicate
from policy_scheduler.predicates.volume_binding import VolumeBinder, check_node_affinity

from .conftest import make_args, make_cluster, make_node, make_node_info, make_pod

V1_9 = Rules.V1_9  # 1.9's predicates; the cluster's rules are tested in test_volume_binder.py

NS = "testns"
WAIT, IMMEDIATE = "waitClass", "immediateClass"
CLASSES = [
    {"metadata": {"name": WAIT}, "volumeBindingMode": "WaitForFirstConsumer"},
    {"metadata": {"name": IMMEDIATE}, "volumeBindingMode": "Immediate"},
]
NODE1 = make_node("node1", {"key1": "node1"})


def affinity_annotation(key: str, value: str) -> dict[str, str]:
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}}
    return {"volume.alpha.kubernetes.io/node-affinity": json.dumps(affinity)}


def make_test_pvc(name, size, state, pv_name="", class_name=WAIT):
    """``makeTestPVC``: state is "unbound", "prebound" or "bound"."""
    meta = {"name": name, "namespace": NS, "uid": "pvc-uid", "resourceVersion": "1"}
    if state == "bound":
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    spec = {"resources": {"requests": {"storage": size}}, "storageClassName": class_name}
    if state in ("bound", "prebound"):
        spec["volumeName"] = pv_name
    return {"metadata": meta, "spec": spec}


def make_test_pv(name, node, capacity, bound_to=None, class_name=WAIT):
    """``makeTestPV``."""
    meta = {"name": name, "resourceVersion": "1"}
    if node:
        meta["annotations"] = affinity_annotation("key1", node)
    spec = {"capacity": {"storage": capacity}, "storageClassName": class_name}
    if bound_to is not None:
        spec["claimRef"] = {"name": bound_to["metadata"]["name"], "namespace": NS, "uid": "pvc-uid"}
        meta.setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"
    return {"metadata": meta, "spec": spec}



UNBOUND = make_test_pvc("unbound-pvc", "1G", "unbound")
UNBOUND2 = make_test_pvc("unbound-pvc2", "5G", "unbound")
PREBOUND = make_test_pvc("prebound-pvc", "1G", "prebound", "pv-node1a")
BOUND = make_test_pvc("bound-pvc", "1G", "bound", "pv-bound")
IMMEDIATE_UNBOUND = make_test_pvc("immediate-unbound-pvc", "1G", "unbound", class_name=IMMEDIATE)
IMMEDIATE_BOUND = make_test_pvc("immediate-bound-pvc", "1G", "bound", "pv-bound-immediate", IMMEDIATE)

PV_NODE1A = make_test_pv("pv-node1a", "node1", "5G")
PV_NODE1B = make_test_pv("pv-node1b", "node1", "10G")
PV_NODE2 = make_test_pv("pv-node2", "node2", "1G")
PV_BOUND = make_test_pv("pv-bound", "node1", "1G", BOUND)
PV_NODE1A_BOUND = make_test_pv("pv-node1a", "node1", "1G", UNBOUND)
PV_BOUND_IMMEDIATE = make_test_pv("pv-bound-immediate", "node1", "1G", IMMEDIATE_BOUND, IMMEDIATE)
PV_BOUND_IMMEDIATE_NODE2 = make_test_pv("pv-bound-immediate", "node2", "1G", IMMEDIATE_BOUND, IMMEDIATE)


def claim_pod(pvcs):
    """``makePod``: one PVC volume per claim, bound to node1."""
    return make_pod(
        name="test-pod", namespace=NS, node_name="node1",
        volumes=[{"name": f"vol{i}", "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}} for i, c in enumerate(pvcs)],
    )


POD_WITHOUT_PVC = make_pod(name="test-pod", namespace=NS, volumes=[{"emptyDir": {}}])

# name: (pvs, pod PVCs, node, cached PVCs (None: the pod's), pod (None: claim_pod), expected bindings,
#        unbound satisfied, bound satisfied, error)
SCENARIOS = {
    "no-volumes": ([], [], "node1", None, claim_pod([]), [], True, True, None),
    "no-pvcs": ([], [], "node1", None, POD_WITHOUT_PVC, [], True, True, None),
    "pvc-not-found": ([], [BOUND], "node1", [], None, [], False, False,
                      'error getting PVC "bound-pvc": persistentvolumeclaim "bound-pvc" not found'),
    "bound-pvc": ([PV_BOUND], [BOUND], "node1", None, None, [], True, True, None),
    "bound-pvc,pv-not-exists": ([], [BOUND], "node1", None, None, [], False, False,
                                'could not find v1.PersistentVolume "pv-bound"'),
    "prebound-pvc": ([PV_NODE1A_BOUND], [PREBOUND], "node1", None, None, [], True, True, None),
    "unbound-pvc,node-not-exists": ([], [UNBOUND], "node12", None, None, [], False, False,
                                    'error getting node "node12": node "node12" not found'),
    "unbound-pvc,pv-same-node": ([PV_NODE2, PV_NODE1A, PV_NODE1B], [UNBOUND], "node1", None, None,
                                 [("unbound-pvc", "pv-node1a")], True, True, None),
    "unbound-pvc,pv-different-node": ([PV_NODE2], [UNBOUND], "node1", None, None, [], False, True, None),
    "two-unbound-pvcs": ([PV_NODE1A, PV_NODE1B], [UNBOUND, UNBOUND2], "node1", None, None,
                         [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], True, True, None),
    "two-unbound-pvcs,order-by-size": ([PV_NODE1A, PV_NODE1B], [UNBOUND2, UNBOUND], "node1", None, None,
                                       [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")], True, True, None),
    "two-unbound-pvcs,partial-match": ([PV_NODE1A], [UNBOUND, UNBOUND2], "node1", None, None, [], False, True, None),
    "one-bound,one-unbound": ([PV_BOUND, PV_NODE1A], [UNBOUND, BOUND], "node1", None, None,
                              [("unbound-pvc", "pv-node1a")], True, True, None),
    "one-bound,one-unbound,no-match": ([PV_BOUND, PV_NODE2], [UNBOUND, BOUND], "node1", None, None, [], False, True, None),
    "one-prebound,one-unbound": ([PV_NODE1A, PV_NODE1B], [UNBOUND, PREBOUND], "node1", None, None,
                                 [("unbound-pvc", "pv-node1a")], True, True, None),
    "immediate-bound-pvc": ([PV_BOUND_IMMEDIATE], [IMMEDIATE_BOUND], "node1", None, None, [], True, True, None),
    "immediate-bound-pvc-wrong-node": ([PV_BOUND_IMMEDIATE_NODE2], [IMMEDIATE_BOUND], "node1", None, None, [], True, False, None),
    "immediate-unbound-pvc": ([], [IMMEDIATE_UNBOUND], "node1", None, None, [], False, False,
                              "pod has unbound PersistentVolumeClaims"),
    "immediate-unbound-pvc,delayed-mode-bound": ([PV_BOUND], [IMMEDIATE_UNBOUND, BOUND], "node1", None, None, [], False, False,
                                                 "pod has unbound PersistentVolumeClaims"),
    "immediate-unbound-pvc,delayed-mode-unbound": ([], [IMMEDIATE_UNBOUND, UNBOUND], "node1", None, None, [], False, False,
                                                   "pod has unbound PersistentVolumeClaims"),
}


def binder_cluster(pvs, pvcs):
    return make_cluster([NODE1], pvs=pvs, pvcs=pvcs, storage_classes=CLASSES)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_find_pod_volumes(name) -> None:
    """Upstream TestFindPodVolumes (VolumeScheduling on), including the expected bindings."""
    pvs, pod_pvcs, node, cache_pvcs, pod, bindings, unbound_ok, bound_ok, error = SCENARIOS[name]
    binder = VolumeBinder(binder_cluster(pvs, pod_pvcs if cache_pvcs is None else cache_pvcs))
    pod = pod or claim_pod(pod_pvcs)
    if error is not None:
        with pytest.raises(PredicateError) as e:
            binder.find_pod_volumes(pod, node)
        assert str(e.value) == error
        return
    found = binder.find_pod_volumes(pod, node)
    assert (found.unbound_satisfied, found.bound_satisfied) == (unbound_ok, bound_ok)
    if unbound_ok:
        assert [(c.name, v.name) for c, v in found.bindings] == bindings


def run_predicate(pvs, pvcs, gate=True):
    predicate = new_volume_binding_predicate(make_args(binder_cluster(pvs, pvcs), V1_9, VolumeScheduling=gate))
    return predicate(claim_pod(pvcs), None, make_node_info(NODE1))


def test_predicate_reasons() -> None:
    assert run_predicate([PV_BOUND, PV_NODE1A], [UNBOUND, BOUND]) == (True, [])
    assert run_predicate([PV_BOUND_IMMEDIATE_NODE2], [IMMEDIATE_BOUND]) == (False, ["VolumeNodeAffinityConflict"])
    assert run_predicate([PV_NODE2], [UNBOUND]) == (False, ["VolumeBindingNoMatch"])
    pv_bound_node2 = make_test_pv("pv-bound", "node2", "1G", BOUND)
    assert run_predicate([pv_bound_node2, PV_NODE2], [UNBOUND, BOUND]) == (
        False, ["VolumeNodeAffinityConflict", "VolumeBindingNoMatch"])


def test_predicate_errors() -> None:
    with pytest.raises(PredicateError, match="^pod has unbound PersistentVolumeClaims$"):
        run_predicate([], [IMMEDIATE_UNBOUND])
    with pytest.raises(PredicateError, match="^node not found$"):
        new_volume_binding_predicate(make_args(rules=V1_9, VolumeScheduling=True))(make_pod(), None, None)


def test_gate_off_always_fits() -> None:
    assert run_predicate([], [IMMEDIATE_UNBOUND], gate=False) == (True, [])
    assert new_volume_binding_predicate(make_args(rules=V1_9))(make_pod(), None, None) == (True, [])


def test_unset_binding_mode_is_an_error() -> None:
    cluster = make_cluster([NODE1], pvcs=[make_test_pvc("c", "1G", "unbound", class_name="noMode")],
                           storage_classes=[{"metadata": {"name": "noMode"}}])
    with pytest.raises(PredicateError, match='^VolumeBindingMode not set for StorageClass "noMode"$'):
        VolumeBinder(cluster).find_pod_volumes(claim_pod([make_test_pvc("c", "1G", "unbound")]), "node1")


def test_matching_respects_selector_access_modes_and_claim_refs() -> None:
    claim = make_test_pvc("c", "1G", "unbound")
    claim["spec"]["accessModes"] = ["ReadWriteOnce"]
    claim["spec"]["selector"] = {"matchLabels": {"tier": "fast"}}
    good = make_test_pv("good", "node1", "2G")
    good["metadata"]["labels"] = {"tier": "fast"}
    good["spec"]["accessModes"] = ["ReadWriteOnce", "ReadOnlyMany"]
    wrong_label = dict(make_test_pv("wrong-label", "node1", "1G"), metadata={"name": "wrong-label", "labels": {"tier": "slow"}})
    wrong_mode = make_test_pv("wrong-mode", "node1", "1G")
    wrong_mode["metadata"]["labels"] = {"tier": "fast"}
    wrong_mode["spec"]["accessModes"] = ["ReadOnlyMany"]
    taken = make_test_pv("taken", "node1", "1G", BOUND)
    taken["metadata"]["labels"] = {"tier": "fast"}
    cluster = binder_cluster([wrong_label, wrong_mode, taken, good], [claim])
    found = VolumeBinder(cluster).find_pod_volumes(claim_pod([claim]), "node1")
    assert [(c.name, v.name) for c, v in found.bindings] == [("c", "good")]


def test_bad_claim_selector_is_an_error() -> None:
    claim = make_test_pvc("c", "1G", "unbound")
    claim["spec"]["selector"] = {"matchExpressions": [{"key": "k", "operator": "In"}]}
    cluster = binder_cluster([PV_NODE1A], [claim])
    with pytest.raises(PredicateError, match="^error creating internal label selector for claim: testns/c: "):
        VolumeBinder(cluster).find_pod_volumes(claim_pod([claim]), "node1")


def test_alpha_node_affinity_terms_are_anded() -> None:
    """1.9's CheckNodeAffinity requires every node selector term to match."""
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]},
        {"matchExpressions": [{"key": "b", "operator": "In", "values": ["2"]}]},
    ]}}
    pv = PersistentVolume.from_dict({"metadata": {"name": "pv", "annotations": {
        "volume.alpha.kubernetes.io/node-affinity": json.dumps(affinity)}}, "spec": {}})
    assert check_node_affinity(pv, {"a": "1", "b": "2"}) is True
    assert check_node_affinity(pv, {"a": "1"}) is False
    broken = PersistentVolume.from_dict({"metadata": {"name": "pv", "annotations": {
        "volume.alpha.kubernetes.io/node-affinity": "{not json"}}, "spec": {}})
    assert check_node_affinity(broken, {"a": "1"}) is False
    plain = PersistentVolume.from_dict({"metadata": {"name": "pv"}, "spec": {}})
    assert check_node_affinity(plain, {}) is True
