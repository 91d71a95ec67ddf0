"""VolumeAttributesClass (1.29 alpha, GA 1.34, locked on in 1.36) in CheckVolumeBinding under the cluster's
rules: a claim binds only a PV of its own ``spec.volumeAttributesClassName``, and a claim without one only a PV
without one. Upstream 1.36 ``component-helpers/storage/volume/pv_helpers_test.go`` ``TestFindMatchVolumeWithNode``
(the ``VolumeAttributesClass: true`` runs), ``pkg/controller/volume/persistentvolume/index_test.go``'s
``successful-match-with-empty-vac`` row, a ``FindPodVolumes`` row in the style of ``binder_test.go``, the
offline ``simulate`` of the scene ``tests/kube/test_daemon_volume_attributes_class.py`` runs on a real 1.36
server, and the API server's checks of the field. ``--rules 1.9`` (1.9's alpha binder with the
``VolumeScheduling`` gate) never reads the field."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.errors import ObjectError
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.validation import check_persistent_volume, check_persistent_volume_claim
from policy_scheduler.model.volumes import PersistentVolume, PersistentVolumeClaim
from policy_scheduler.offline.simulate import simulate
from policy_scheduler.offline.snapshot import load_objects
from policy_scheduler.predicates import new_volume_binding_predicate
from policy_scheduler.predicates.reasons import ERR_VOLUME_BIND_CONFLICT
from policy_scheduler.predicates.volume_binder import ClusterVolumeBinder, find_matching_volume

from .conftest import make_args, make_cluster, make_node, make_node_info, make_pod

GOLD, SILVER = "gold", "silver"
NS = "myns"


# -- TestFindMatchVolumeWithNode (1.36) ---------------------------------------------------------------------

def volume(name: str, capacity: str, available: bool = True, class_name: str = "", affinity: str | None = None,
           claim_ref: str | None = None, vac: str | None = None) -> PersistentVolume:
    """``makeTestVolume``: a local volume, ReadWriteOnce and ReadOnlyMany, Filesystem (named here by upstream's
    UID, which its rows expect, since two of its volumes share a name)."""
    spec: dict[str, Any] = {"capacity": {"storage": capacity}, "local": {"path": "/"},
                            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "volumeMode": "Filesystem",
                            "storageClassName": class_name}
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "key1", "operator": "In", "values": [affinity]}]}]}}
    if claim_ref:
        spec["claimRef"] = {"name": claim_ref, "namespace": NS}
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    status = {"phase": "Available"} if available else {}
    return PersistentVolume.from_dict({"metadata": {"name": name}, "spec": spec, "status": status})


def with_vac(name: str, volumes: list[PersistentVolume]) -> list[PersistentVolume]:
    """``volumesWithVAC``."""
    return [PersistentVolume.from_dict({**pv.raw, "spec": {**pv.spec, "volumeAttributesClassName": name}})
            for pv in volumes]


def test_claim(name: str, size: str = "100G", modes: tuple[str, ...] = ("ReadWriteOnce",),
               vac: str | None = None) -> PersistentVolumeClaim:
    """``makeTestPersistentVolumeClaim``: class ``wait``, Filesystem."""
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}},
                            "storageClassName": "wait", "volumeMode": "Filesystem"}
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    return PersistentVolumeClaim.from_dict({"metadata": {"name": name, "namespace": NS}, "spec": spec})


test_claim.__test__ = False  # type: ignore[attr-defined] # a helper, not a test

VOLUMES = [
    volume("local-small", "5G"),
    volume("local-pd-very-large", "200E", class_name="large"),
    volume("affinity-pv", "100G", class_name="wait", affinity="value1"),
    volume("affinity-pv2", "150G", class_name="wait", affinity="value1"),
    volume("affinity-prebound", "100G", class_name="wait", affinity="value1", claim_ref="claim02"),
    volume("affinity-pv3", "200G", class_name="wait", affinity="value3"),
    volume("affinity-pv4", "200G", available=False, class_name="wait", affinity="value4"),
]
NODES = {i: make_node(f"node{i}", {"key1": f"value{i}"}) for i in (1, 2, 3, 4)}

# name -> (claim, node, volumes, excluded, expected match)
FIND_MATCH_VOLUME_WITH_NODE = {
    "success-match": (test_claim("claim01"), 1, VOLUMES, set(), "affinity-pv"),
    "success-prebound": (test_claim("claim02"), 1, VOLUMES, set(), "affinity-prebound"),
    "success-exclusion": (test_claim("claim01"), 1, VOLUMES, {"affinity-pv"}, "affinity-pv2"),
    "fail-exclusion": (test_claim("claim01"), 1, VOLUMES, {"affinity-pv", "affinity-pv2"}, None),
    "fail-accessmode": (test_claim("claim01", modes=("ReadWriteMany",)), 1, VOLUMES, set(), None),
    "fail-nodeaffinity": (test_claim("claim01"), 2, VOLUMES, set(), None),
    "fail-prebound-node-affinity": (test_claim("claim02"), 3, VOLUMES, set(), None),
    "fail-nonavaliable": (test_claim("claim04"), 4, VOLUMES, set(), None),
    "success-bad-and-good-node-affinity": (test_claim("claim03"), 3, VOLUMES, set(), "affinity-pv3"),
    "success-match-with-vac": (test_claim("claim01", vac=GOLD), 1, with_vac(GOLD, VOLUMES), set(), "affinity-pv"),
    # claim has a given vac and volumes don't have the same vac.
    "fail-vac": (test_claim("claim01", vac=SILVER), 1, VOLUMES, set(), None),
    # claim has a given vac and volume name but the given volume has a different vac.
    "fail-prebound-vac": (test_claim("claim02", vac=SILVER), 1, with_vac(GOLD, VOLUMES), set(), None),
    # Not upstream rows, what its comparison means with the gate on: a claim without a class matches no volume
    # with one (the pre-bound one neither), and one with a class no volume of another.
    "no-vac-claim-and-vac-volumes": (test_claim("claim01"), 1, with_vac(GOLD, VOLUMES), set(), None),
    "no-vac-prebound-claim-and-vac-volumes": (test_claim("claim02"), 1, with_vac(GOLD, VOLUMES), set(), None),
    "gold-claim-silver-volumes": (test_claim("claim01", vac=GOLD), 1, with_vac(SILVER, VOLUMES), set(), None),
    # index_test.go "successful-match-with-empty-vac": an empty class on the claim is no class.
    "success-match-with-empty-vac": (test_claim("claim01", vac=""), 1, VOLUMES, set(), "affinity-pv"),
}


@pytest.mark.parametrize("name", FIND_MATCH_VOLUME_WITH_NODE)
def test_find_match_volume_with_node(name):
    claim, node, volumes, excluded, expected = FIND_MATCH_VOLUME_WITH_NODE[name]
    got = find_matching_volume(claim, volumes, NODES[node], excluded)
    assert (got.name if got else None) == expected


# -- FindPodVolumes: one gold PV, one plain PV, on two nodes -------------------------------------------------
WAIT_CLASS = {"metadata": {"name": "wait"}, "volumeBindingMode": "WaitForFirstConsumer",
              "provisioner": "kubernetes.io/no-provisioner"}


def pv_dict(name: str, node: str, vac: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "wait",
                            "csi": {"driver": "csi.example.com", "volumeHandle": name},
                            "nodeAffinity": {"required": {"nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "key1", "operator": "In", "values": [node]}]}]}}}
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": "Available"}}


def claim_dict(vac: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                            "storageClassName": "wait"}
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    return {"metadata": {"name": "data", "namespace": NS, "uid": "data-uid"}, "spec": spec}


GOLD_AND_PLAIN = [pv_dict("pv-gold", "value1", GOLD), pv_dict("pv-plain", "value2", None)]
POD = make_pod(name="p", namespace=NS, volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}])


@pytest.mark.parametrize("vac, fits", [(GOLD, {1: "pv-gold"}), (None, {2: "pv-plain"}), ("", {2: "pv-plain"}),
                                       (SILVER, {})])
def test_find_pod_volumes_takes_the_pv_of_the_claims_class(vac, fits):
    cluster = make_cluster(nodes=[NODES[1], NODES[2]], pvs=GOLD_AND_PLAIN, pvcs=[claim_dict(vac)],
                           storage_classes=[WAIT_CLASS])
    binder = ClusterVolumeBinder(cluster)
    for i in (1, 2):
        volumes, reasons = binder.find_pod_volumes(POD, binder.pod_volume_claims(POD), NODES[i])
        if i in fits:
            assert ([pv.name for _, pv in volumes.static_bindings], reasons) == ([fits[i]], [])
        else:
            assert (volumes.static_bindings, reasons) == ([], [ERR_VOLUME_BIND_CONFLICT])


def test_the_1_9_alpha_binder_never_reads_the_class():
    """``--rules 1.9 --feature-gates VolumeScheduling=true``: 1.9's binder matches the plain PV for the gold claim."""
    cluster = make_cluster(nodes=[NODES[1], NODES[2]], pvs=GOLD_AND_PLAIN, pvcs=[claim_dict(GOLD)],
                           storage_classes=[WAIT_CLASS])
    alpha = new_volume_binding_predicate(make_args(cluster, Rules.V1_9, VolumeScheduling=True))
    modern = new_volume_binding_predicate(make_args(cluster, Rules.CLUSTER))
    assert alpha(POD, None, make_node_info(NODES[2])) == (True, [])
    assert modern(POD, None, make_node_info(NODES[2])) == (False, [ERR_VOLUME_BIND_CONFLICT])
    assert modern(POD, None, make_node_info(NODES[1])) == (True, [])


# -- offline: the scene of the 1.36 test -------------------------------------------------------------------

def scene(vac: str | None) -> list[dict[str, Any]]:
    """Two nodes, the gold one busier (a 3-cpu pod of its 4), a gold PV there and a plain PV on the other, a
    claim of class ``wait`` (WaitForFirstConsumer, no provisioner) and a pod using it."""
    objects: list[dict[str, Any]] = []
    for name in ("node-gold", "node-plain"):
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"key1": name}},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}})
    objects.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", **WAIT_CLASS})
    for pv, node in (("pv-gold", "node-gold"), ("pv-plain", "node-plain")):
        objects.append({"apiVersion": "v1", "kind": "PersistentVolume",
                        **pv_dict(pv, node, GOLD if pv == "pv-gold" else None)})
    objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim_dict(vac)})
    container = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "3"}}}
    objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "filler", "namespace": NS},
                    "spec": {"nodeName": "node-gold", "containers": [container]}, "status": {"phase": "Running"}})
    objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS, "uid": "p-uid"},
                    "spec": {"containers": [{**container, "resources": {"requests": {"cpu": "100m"}}}],
                             "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]},
                    "status": {"phase": "Pending"}})
    return objects


def placed(objects: list[dict[str, Any]], rules: Rules) -> tuple[str, list[str]]:
    snap = load_objects(objects, "test").under(rules)
    result = simulate(snap, lambda c: from_provider("DefaultProvider").build(c, feature_gates=FeatureGates({}, rules)))
    (placement,) = result.placements
    return placement.node or "", [str(a) for a in placement.volumes or ()]


def test_simulate_binds_the_gold_claim_on_the_gold_pvs_node_though_it_is_busier():
    assert placed(scene(GOLD), Rules.CLUSTER) == ("node-gold", [f"{NS}/data -> PV pv-gold"])
    assert placed(scene(None), Rules.CLUSTER) == ("node-plain", [f"{NS}/data -> PV pv-plain"])
    # 1.9 ignores late-bound claims (the gate is off): the emptier node.
    assert placed(scene(GOLD), Rules.V1_9) == ("node-plain", [])


# -- bad input, as the 1.36 API server refuses it ------------------------------------------------------------

def test_the_field_must_be_a_string():
    with pytest.raises(ObjectError, match=r"PersistentVolume pv-gold.*spec.volumeAttributesClassName.*expected a string"):
        PersistentVolume.from_dict(pv_dict("pv-gold", "value1", 1))  # type: ignore[arg-type]
    with pytest.raises(ObjectError, match=r"PersistentVolumeClaim myns/data.*spec.volumeAttributesClassName.*expected a string"):
        PersistentVolumeClaim.from_dict(claim_dict(["gold"]))  # type: ignore[arg-type]


@pytest.mark.parametrize("change, field, message", [
    ({"volumeAttributesClassName": ""}, "spec.volumeAttributesClassName", "Required value: an empty string is disallowed"),
    ({"volumeAttributesClassName": "Gold"}, "spec.volumeAttributesClassName",
     "Invalid value: 'Gold': a lowercase RFC 1123 subdomain"),
    ({"csi": None}, "spec.csi", "Required value: has to be specified when using volumeAttributesClassName"),
])
def test_a_pvs_class_is_checked_as_the_api_server_checks_it(change, field, message):
    raw = pv_dict("pv-gold", "value1", GOLD)
    raw["spec"] = {k: v for k, v in {**raw["spec"], **change}.items() if v is not None}
    with pytest.raises(ObjectError) as e:
        check_persistent_volume(PersistentVolume.from_dict(raw))
    assert (e.value.field, e.value.detail.startswith(message)) == (field, True), str(e.value)


def test_a_claims_class_may_be_empty_not_invalid():
    check_persistent_volume_claim(PersistentVolumeClaim.from_dict(claim_dict("")))
    check_persistent_volume_claim(PersistentVolumeClaim.from_dict(claim_dict(GOLD)))
    with pytest.raises(ObjectError, match=r"spec.volumeAttributesClassName: Invalid value: 'gold_1'"):
        check_persistent_volume_claim(PersistentVolumeClaim.from_dict(claim_dict("gold_1")))
