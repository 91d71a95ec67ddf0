"""NoVolumeZoneConflict: upstream ``TestVolumeZonePredicate``, ``TestVolumeZonePredicateMultiZone`` and
``TestVolumeZonePredicateWithVolumeBinding``, every row, plus the error texts of predicates.md §9."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.features import Rules
from policy_scheduler.predicates import new_volume_zone_predicate
from policy_scheduler.predicates.volume_zone import label_zones_to_set

from .conftest import (
    make_args,
    make_cluster,
    make_node,
    make_node_info,
    make_pod,
    pod_with_volume,
    pv_dict,
    pvc_dict,
)

V1_9 = Rules.V1_9  # 1.9's predicates; the cluster's rules are tested in test_volume_binder.py

ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "failure-domain.beta.kubernetes.io/region"

PVCS = [
    pvc_dict("PVC_1", "default", "Vol_1"),
    pvc_dict("PVC_2", "default", "Vol_2"),
    pvc_dict("PVC_3", "default", "Vol_3"),
    pvc_dict("PVC_4", "default", "Vol_not_exist"),
]
SINGLE_ZONE_PVS = [
    pv_dict("Vol_1", {ZONE: "us-west1-a"}),
    pv_dict("Vol_2", {REGION: "us-west1-b", "uselessLabel": "none"}),
    pv_dict("Vol_3", {REGION: "us-west1-c"}),
]
MULTI_ZONE_PVS = [
    pv_dict("Vol_1", {ZONE: "us-west1-a"}),
    pv_dict("Vol_2", {ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv_dict("Vol_3", {ZONE: "us-west1-c__us-west1-a"}),
]

SINGLE_ZONE = [
    ("pod without volume", make_pod(name="pod_1", namespace="default"), {ZONE: "us-west1-a"}, True),
    ("node without labels", pod_with_volume("pod_1", "vol_1", "PVC_1"), None, True),
    ("label zone failure domain matched", pod_with_volume("pod_1", "vol_1", "PVC_1"), {ZONE: "us-west1-a", "uselessLabel": "none"}, True),
    ("label zone region matched", pod_with_volume("pod_1", "vol_1", "PVC_2"), {REGION: "us-west1-b", "uselessLabel": "none"}, True),
    ("label zone region failed match", pod_with_volume("pod_1", "vol_1", "PVC_2"), {REGION: "no_us-west1-b", "uselessLabel": "none"}, False),
    ("label zone failure domain failed match", pod_with_volume("pod_1", "vol_1", "PVC_1"), {ZONE: "no_us-west1-a", "uselessLabel": "none"}, False),
]

MULTI_ZONE = [
    ("node without labels", pod_with_volume("pod_1", "Vol_3", "PVC_3"), None, True),
    ("label zone failure domain matched", pod_with_volume("pod_1", "Vol_3", "PVC_3"), {ZONE: "us-west1-a", "uselessLabel": "none"}, True),
    ("label zone failure domain failed match", pod_with_volume("pod_1", "vol_1", "PVC_1"), {ZONE: "us-west1-b", "uselessLabel": "none"}, False),
]


def _run(pvs, pod, labels, **gates):
    predicate = new_volume_zone_predicate(make_args(make_cluster(pvs=pvs, pvcs=PVCS), V1_9, **gates))
    return predicate(pod, None, make_node_info(make_node("host1", labels)))


@pytest.mark.parametrize(("name", "pod", "labels", "fits"), SINGLE_ZONE, ids=[c[0] for c in SINGLE_ZONE])
def test_volume_zone_predicate(name, pod, labels, fits) -> None:
    """Upstream TestVolumeZonePredicate."""
    assert _run(SINGLE_ZONE_PVS, pod, labels) == (fits, [] if fits else ["NoVolumeZoneConflict"])


@pytest.mark.parametrize(("name", "pod", "labels", "fits"), MULTI_ZONE, ids=[c[0] for c in MULTI_ZONE])
def test_volume_zone_predicate_multi_zone(name, pod, labels, fits) -> None:
    """Upstream TestVolumeZonePredicateMultiZone."""
    assert _run(MULTI_ZONE_PVS, pod, labels) == (fits, [] if fits else ["NoVolumeZoneConflict"])


BINDING_PVCS = [
    pvc_dict("PVC_1", "default", "Vol_1"),
    pvc_dict("PVC_NoSC", "default", storage_class="Class_0"),
    pvc_dict("PVC_EmptySC", "default"),
    pvc_dict("PVC_WaitSC", "default", storage_class="Class_Wait"),
    pvc_dict("PVC_ImmediateSC", "default", storage_class="Class_Immediate"),
]
CLASSES = [
    {"metadata": {"name": "Class_Immediate"}},
    {"metadata": {"name": "Class_Wait"}, "volumeBindingMode": "WaitForFirstConsumer"},
]
BINDING = [
    ("label zone failure domain matched", "PVC_1", True, None),
    ("unbound volume empty storage class", "PVC_EmptySC", False, 'PersistentVolumeClaim is not bound: "PVC_EmptySC"'),
    ("unbound volume no storage class", "PVC_NoSC", False, 'PersistentVolumeClaim is not bound: "PVC_NoSC"'),
    ("unbound volume immediate binding mode", "PVC_ImmediateSC", False, 'VolumeBindingMode not set for StorageClass "Class_Immediate"'),
    ("unbound volume wait binding mode", "PVC_WaitSC", True, None),
]


@pytest.mark.parametrize(("name", "claim", "fits", "error"), BINDING, ids=[c[0] for c in BINDING])
def test_volume_zone_predicate_with_volume_binding(name, claim, fits, error) -> None:
    """Upstream TestVolumeZonePredicateWithVolumeBinding (gate VolumeScheduling on); an error means no fit."""
    cluster = make_cluster(pvs=[pv_dict("Vol_1", {ZONE: "us-west1-a"})], pvcs=BINDING_PVCS, storage_classes=CLASSES)
    predicate = new_volume_zone_predicate(make_args(cluster, V1_9, VolumeScheduling=True))
    node_info = make_node_info(make_node("host1", {ZONE: "us-west1-a", "uselessLabel": "none"}))
    pod = pod_with_volume("pod_1", "vol_1", claim)
    if error is None:
        assert predicate(pod, None, node_info) == (fits, [])
    else:
        with pytest.raises(PredicateError) as e:
            predicate(pod, None, node_info)
        assert str(e.value) == error


def test_unbound_claim_without_gate_is_an_error() -> None:
    cluster = make_cluster(pvcs=BINDING_PVCS, storage_classes=CLASSES)
    predicate = new_volume_zone_predicate(make_args(cluster, V1_9))
    node_info = make_node_info(make_node("host1", {ZONE: "us-west1-a"}))
    with pytest.raises(PredicateError, match='^PersistentVolumeClaim is not bound: "PVC_WaitSC"$'):
        predicate(pod_with_volume("p", "v", "PVC_WaitSC"), None, node_info)


@pytest.mark.parametrize(
    ("claim", "error"),
    [
        ("", "PersistentVolumeClaim had no name"),
        ("missing", 'persistentvolumeclaim "missing" not found'),
        ("PVC_4", 'persistentvolume "Vol_not_exist" not found'),
    ],
)
def test_lookup_errors(claim, error) -> None:
    with pytest.raises(PredicateError) as e:
        _run(SINGLE_ZONE_PVS, pod_with_volume("p", "v", claim), {ZONE: "us-west1-a"})
    assert str(e.value) == error


def test_inline_volumes_are_ignored() -> None:
    pod = make_pod(volumes=[{"gcePersistentDisk": {"pdName": "x"}}])
    assert _run(SINGLE_ZONE_PVS, pod, {ZONE: "us-west1-a"}) == (True, [])


def test_node_without_the_pv_label_does_not_match() -> None:
    assert _run(SINGLE_ZONE_PVS, pod_with_volume("p", "v", "PVC_1"), {REGION: "r"}) == (False, ["NoVolumeZoneConflict"])


def test_unparsable_pv_label_is_ignored(caplog) -> None:
    pvs = [pv_dict("Vol_1", {ZONE: "a____b"})]
    assert _run(pvs, pod_with_volume("p", "v", "PVC_1"), {ZONE: "elsewhere"}) == (True, [])
    assert "Ignoring the label" in caplog.text


def test_label_zones_to_set() -> None:
    assert label_zones_to_set("us-west1-c__us-west1-a") == {"us-west1-a", "us-west1-c"}
    assert label_zones_to_set(" a __ b ") == {"a", "b"}
    with pytest.raises(ValueError, match='"__" separated list \\("a____b"\\) must not contain an empty string'):
        label_zones_to_set("a____b")


def test_null_node_is_an_error() -> None:
    predicate = new_volume_zone_predicate(make_args(rules=V1_9))
    with pytest.raises(PredicateError, match="^node not found$"):
        predicate(pod_with_volume("p", "v", "PVC_1"), None, None)
    assert predicate(make_pod(), None, None) == (True, [])
