"""The volume rules of a modern cluster, offline, on manifests as ``kubectl get -o yaml`` prints them:
ReadWriteOncePod (upstream's VolumeRestrictions), CSI attach limits (NodeVolumeLimits, with in-tree volumes
migrated to CSI), the GA zone labels (VolumeZone, SelectorSpread's zones), generic ephemeral volumes. Each
row under ``--rules cluster`` (upstream 1.26 / 1.32's decision) and ``--rules 1.9`` (1.9's).
``tests/kube/test_daemon_volume_rules.py`` holds the same rows against real API servers beside upstream's
kube-scheduler."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.cli import main
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.volumes import CSINode, PersistentVolume
from policy_scheduler.offline.simulate import explain_pod, simulate
from policy_scheduler.offline.snapshot import Snapshot, load_objects
from policy_scheduler.predicates.csi_limits import CSILimitsChecker, csi_attach_limit_key
from policy_scheduler.predicates.read_write_once_pod import ERR_READ_WRITE_ONCE_POD_CONFLICT

ZONE, ZONE_BETA = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"
DRIVER = "csi.example.com"


def node(name: str, zone: str | None = None, **allocatable: str) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels.update({ZONE: zone, ZONE_BETA: zone})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", **allocatable},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def csi_node(name: str, count: int | None = 1, driver: str = DRIVER) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": driver, "nodeID": name}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [entry]}}


def pod(name: str, claims: tuple[str, ...] = (), node_name: str = "", volumes: list | None = None,
        priority: int | None = None, uid: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
                            "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                        for i, c in enumerate(claims)] + (volumes or [])}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def claim(name: str, volume: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",), class_name: str = "",
          owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{owner}",
                                    "controller": True, "blockOwnerDeletion": True}]
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": "1Gi"}},
                            "storageClassName": class_name}
    status = {}
    if volume:
        spec["volumeName"] = volume
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        status = {"phase": "Bound"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec, "status": status}


def pv(name: str, source: dict[str, Any] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            **(source or {"csi": {"driver": DRIVER, "volumeHandle": f"handle-{name}"}})}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {"phase": "Bound"}}


def storage_class(name: str, provisioner: str = DRIVER, mode: str = "WaitForFirstConsumer") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode}


def bound(name: str, **kw: Any) -> list[dict[str, Any]]:
    """A claim ``name`` bound to a PV ``pv-<name>`` (CSI of ``DRIVER`` unless ``source`` is given)."""
    labels = kw.pop("labels", None)
    return [pv(f"pv-{name}", kw.pop("source", None), labels), claim(name, f"pv-{name}", **kw)]


def snapshot(objects: list[dict[str, Any]], rules: Rules) -> Snapshot:
    return load_objects(objects, "test").under(rules)


def build(rules: Rules, **gates: bool):
    return lambda cluster: from_provider("DefaultProvider").build(cluster, feature_gates=FeatureGates(gates, rules))


def outcomes(objects: list[dict[str, Any]], rules: Rules = Rules.CLUSTER, **gates: bool) -> dict[str, str]:
    """Each pending pod's node, or its error (the FitError message)."""
    result = simulate(snapshot(objects, rules), build(rules, **gates), pod_priority=gates.get("PodPriority", False))
    return {p.pod.name: p.node or f"error: {p.error}" for p in result.placements}


# -- ReadWriteOncePod -----------------------------------------------------------------------------------
RWOP = [node("a"), node("b"), *bound("data", modes=("ReadWriteOncePod",)), pod("holder", ("data",), node_name="a")]


def test_read_write_once_pod_claim_in_use_fits_no_node():
    got = outcomes([*RWOP, pod("second", ("data",))])
    assert got == {"second": f"error: 0/2 nodes are available: 2 {ERR_READ_WRITE_ONCE_POD_CONFLICT}."}


def test_read_write_once_pod_free_once_the_holder_is_gone_and_ignored_by_1_9():
    free = [o for o in RWOP if o["metadata"]["name"] != "holder"]
    assert outcomes([*free, pod("second", ("data",))])["second"] in ("a", "b")
    assert outcomes([*RWOP, pod("second", ("data",))], Rules.V1_9)["second"] in ("a", "b")


def test_read_write_once_pod_explain_and_a_read_write_once_claim_is_shared():
    snap = snapshot([*RWOP, pod("second", ("data",))], Rules.CLUSTER)
    explanation = explain_pod(snap, next(p for p in snap.pods if p.name == "second"), build(Rules.CLUSTER))
    verdict = explanation.nodes["b"].predicates["ReadWriteOncePod"]
    assert (verdict.fit, verdict.reasons) == (False, [ERR_READ_WRITE_ONCE_POD_CONFLICT])
    shared = [node("a"), *bound("data"), pod("holder", ("data",), node_name="a"), pod("second", ("data",))]
    assert outcomes(shared)["second"] in ("a", "b")


def test_read_write_once_pod_holder_preempted_on_its_node():
    """1.32: a higher-priority pod preempts the holder, on the holder's node only (RemovePod)."""
    objects = [node("a"), node("b"), *bound("data", modes=("ReadWriteOncePod",)),
               pod("holder", ("data",), node_name="a", priority=0), pod("urgent", ("data",), priority=1000)]
    result = simulate(snapshot(objects, Rules.CLUSTER), build(Rules.CLUSTER, PodPriority=True), pod_priority=True)
    (preemption,) = result.pod_priority.preemptions
    assert (preemption.node, [v.pod.name for v in preemption.victims]) == ("a", ["holder"])


# -- CSI attach limits ----------------------------------------------------------------------------------
def three_csi_pods() -> list[dict[str, Any]]:
    return [*bound("c0"), *bound("c1"), *bound("c2"), pod("p0", ("c0",)), pod("p1", ("c1",)), pod("p2", ("c2",))]


def test_csi_attach_limit_one_volume_per_node():
    got = outcomes([node("a"), node("b"), csi_node("a"), csi_node("b"), *three_csi_pods()])
    placed = [n for n in got.values() if not n.startswith("error")]
    assert sorted(placed) == ["a", "b"]
    assert [n for n in got.values() if n.startswith("error")] == ["error: 0/2 nodes are available: 2 MaxVolumeCount."]


def test_csi_attach_limit_needs_a_csinode_and_the_cluster_rules():
    assert set(outcomes([node("a"), *three_csi_pods()]).values()) == {"a"}  # no CSINode: no limit
    unlimited = [node("a"), csi_node("a", count=None), *three_csi_pods()]  # a driver without a count
    assert set(outcomes(unlimited).values()) == {"a"}
    assert set(outcomes([node("a"), csi_node("a"), *three_csi_pods()], Rules.V1_9).values()) == {"a"}


def test_csi_attach_limit_from_node_allocatable():
    limited = node("a", **{csi_attach_limit_key(DRIVER): "2"})
    got = outcomes([limited, csi_node("a", count=None), *three_csi_pods()])
    assert sorted(got.values()) == ["a", "a", "error: 0/1 nodes are available: 1 MaxVolumeCount."]


def test_a_volume_used_by_two_pods_of_a_node_counts_once():
    objects = [node("a"), csi_node("a"), *bound("c0"), pod("p0", ("c0",), node_name="a"), pod("p1", ("c0",))]
    assert outcomes(objects) == {"p1": "a"}


def test_migrated_ebs_counts_against_the_csi_driver_once():
    """In-tree EBS on a node with a CSINode: MaxEBSVolumeCount leaves it to NodeVolumeLimits, which counts it
    against ebs.csi.aws.com (the EBS volume and a CSI volume of that driver: 2 > 1)."""
    ebs = "ebs.csi.aws.com"
    objects = [node("a"), csi_node("a", driver=ebs),
               *bound("in-tree", source={"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-1"}}),
               *[o for o in bound("csi") if o["kind"] != "PersistentVolume"],
               pv("pv-csi", {"csi": {"driver": ebs, "volumeHandle": "vol-2"}}),
               pod("old", ("in-tree",), node_name="a"), pod("new", ("csi",))]
    assert outcomes(objects) == {"new": "error: 0/1 nodes are available: 1 MaxVolumeCount."}
    # The same disk, through the CSI PV and inline: one attachment (handle vol-1 both ways).
    same = [*objects[:-1], pod("inline", volumes=[{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}])]
    assert outcomes(same) == {"inline": "a"}
    # KUBE_MAX_PD_VOLS-style 1.9 limits still apply where the node has no CSINode.
    assert outcomes([o for o in objects if o["kind"] != "CSINode"]) == {"new": "a"}


def test_unbound_claim_counts_against_its_class_provisioner():
    objects = [node("a"), csi_node("a"), storage_class("wffc"), *bound("c0"), pod("p0", ("c0",), node_name="a"),
               claim("late", class_name="wffc"), pod("p1", ("late",))]
    assert outcomes(objects) == {"p1": "error: 0/1 nodes are available: 1 MaxVolumeCount."}


def test_inline_csi_volumes_are_not_counted():
    inline = [{"name": "i", "csi": {"driver": DRIVER}}]
    objects = [node("a"), csi_node("a"), *bound("c0"), pod("p0", ("c0",), node_name="a"), pod("p1", volumes=inline)]
    assert outcomes(objects) == {"p1": "a"}


# -- GA zone labels ---------------------------------------------------------------------------------------
def zoned(pv_labels: dict[str, str]) -> list[dict[str, Any]]:
    return [node("a", zone="zone-a"), node("b", zone="zone-b"), *bound("data", labels=pv_labels), pod("p", ("data",))]


def test_a_pv_labelled_only_with_the_ga_zone_follows_its_zone():
    assert outcomes(zoned({ZONE: "zone-b"})) == {"p": "b"}
    assert outcomes(zoned({ZONE_BETA: "zone-b"})) == {"p": "b"}


def test_beta_and_ga_labels_disagreeing_fit_no_node():
    got = outcomes(zoned({ZONE_BETA: "zone-a", ZONE: "zone-b"}))
    assert got == {"p": "error: 0/2 nodes are available: 2 NoVolumeZoneConflict."}


def test_1_9_reads_only_the_beta_labels():
    assert outcomes(zoned({ZONE: "zone-b"}), Rules.V1_9)["p"] in ("a", "b")  # the GA label is unknown to 1.9
    beta_on_pv_ga_on_node = [{**node("b"), "metadata": {"name": "b", "labels": {ZONE: "zone-b"}}},
                             *bound("data", labels={ZONE_BETA: "zone-b"}), pod("p", ("data",))]
    assert outcomes(beta_on_pv_ga_on_node) == {"p": "b"}  # the node's GA label answers the PV's beta one
    assert outcomes(beta_on_pv_ga_on_node, Rules.V1_9) == {"p": "b"}  # 1.9: the node has no zone: no constraint


# -- generic ephemeral volumes ------------------------------------------------------------------------------
EPHEMERAL = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
    "accessModes": ["ReadWriteOnce"], "storageClassName": "wffc", "resources": {"requests": {"storage": "1Gi"}}}}}}]


@pytest.mark.parametrize("claim_objects,expected", [
    ([], 'error: waiting for ephemeral volume controller to create the persistentvolumeclaim "web-scratch"'),
    ([claim("web-scratch", class_name="wffc", owner="someone-else")],
     "error: PVC default/web-scratch was not created for pod default/web (pod is not owner)"),
    ([claim("web-scratch", class_name="wffc", owner="web")], "a"),
], ids=["missing", "not-owned", "owned"])
def test_generic_ephemeral_volume_is_its_claim(claim_objects, expected):
    objects = [node("a"), storage_class("wffc"), *claim_objects, pod("web", volumes=EPHEMERAL)]
    assert outcomes(objects) == {"web": expected}


def test_generic_ephemeral_volume_late_bound_is_provisioned_on_the_node():
    objects = [node("a"), storage_class("wffc"), claim("web-scratch", class_name="wffc", owner="web"),
               pod("web", volumes=EPHEMERAL)]
    (placement,) = simulate(snapshot(objects, Rules.CLUSTER), build(Rules.CLUSTER)).placements
    assert [str(a) for a in placement.volumes] == ["default/web-scratch -> provisioned on a"]


def test_generic_ephemeral_volume_under_1_9_rules_is_ignored():
    assert outcomes([node("a"), pod("web", volumes=EPHEMERAL)], Rules.V1_9) == {"web": "a"}


# -- bad input --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("obj", "where", "message"), [
    (pod("web", volumes=[{"name": "scratch", "ephemeral": {}}]), "Pod default/web",
     "spec.volumes[0].ephemeral.volumeClaimTemplate: Required value"),
    (claim("data", modes=("ReadWriteOnceFoo",)), "PersistentVolumeClaim default/data",
     "spec.accessModes: Unsupported value: 'ReadWriteOnceFoo': supported values"
     ': "ReadOnlyMany", "ReadWriteMany", '
     '"ReadWriteOnce", "ReadWriteOncePod"'),
    (claim("data", modes=("ReadWriteOncePod", "ReadOnlyMany")), "PersistentVolumeClaim default/data",
     "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"),
    (claim("data", modes=()), "PersistentVolumeClaim default/data",
     "spec.accessModes: Required value: at least 1 access mode is required"),
], ids=["ephemeral-without-template", "unknown-access-mode", "read-write-once-pod-with-another", "no-access-mode"])
def test_malformed_volumes_get_the_api_servers_message(tmp_path, obj, where, message):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node("a"), obj]}))
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [f"error: {path}: document 0 item 1: {where}: {message}"]


def test_csi_limits_see_every_change_of_pods_volumes_and_csinodes():
    """The checker keeps each node's attached volumes between decisions: a pod added, a PV changed or a
    CSINode changed must each be seen at once."""
    objects = [node("a"), csi_node("a"), *bound("c0"), *bound("c1"), pod("p0", ("c0",), node_name="a")]
    cluster = snapshot(objects, Rules.CLUSTER).cluster_state()
    checker = CSILimitsChecker(cluster, "prefix")
    incoming = Pod(pod("p1", ("c1",)))
    info = cluster.node_infos["a"]
    assert checker(incoming, None, info) == (False, ["MaxVolumeCount"])
    cluster.put_csi_node(CSINode.from_dict(csi_node("a", count=2)))  # the limit raised
    assert checker(incoming, None, info) == (True, [])
    cluster.put_csi_node(CSINode.from_dict(csi_node("a", count=1)))
    other_driver = pv("pv-c0", {"csi": {"driver": "other.example.com", "volumeHandle": "h"}})
    cluster.add_persistent_volume(PersistentVolume.from_dict(other_driver))  # p0's volume: another driver
    assert checker(incoming, None, info) == (True, [])
    cluster.add_pod(Pod(pod("p2", ("c1",), node_name="a")))  # c1 attached already: the same volume
    assert checker(incoming, None, info) == (True, [])
    cluster.remove_pod(cluster.pods["uid-p2"])
    cluster.add_persistent_volume(PersistentVolume.from_dict(pv("pv-c0")))
    assert checker(incoming, None, cluster.node_infos["a"]) == (False, ["MaxVolumeCount"])
