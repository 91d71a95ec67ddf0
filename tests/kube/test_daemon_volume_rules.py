"""Four volume rules of a modern cluster, side by side with upstream's kube-scheduler of the same line, on
real 1.26 and 1.32 API servers: ReadWriteOncePod, CSI attach limits (``CSINode`` allocatable counts, in-tree
EBS volumes migrated to their CSI driver, no limit without a ``CSINode``), volume zones under the GA and the
beta zone labels, and generic ephemeral volumes (the claim ``<pod>-<volume>`` made by the ephemeral-volume
controller: upstream's own kube-controller-manager on 1.32, played by the test on 1.26).

Each scheduler gets a pool of its own on one server (``tests/kube/side_by_side.py``, as in
``tests/kube/test_daemon_modern_resources.py``): nodes labelled ``pool: <pool>``, pods selecting them and
naming the pool's scheduler, and every claim, volume and ``CSINode`` named after the pool, so that neither
scheduler's decisions depend on the other's pods (ReadWriteOncePod counts the users of a claim cluster-wide).
Both schedulers run at once; the assertions on upstream's come first, then ours must have done the same: bound
where upstream bound (not the tie-broken host where two nodes are equal), pending where upstream left the pod
pending, with upstream's reason (ours keeps 1.9's short reason names where 1.9 had the predicate:
``MaxVolumeCount``, ``NoVolumeZoneConflict``).

There is no PV controller, provisioner nor kubelet: the tests play them through the API
(``tests/kube/test_daemon_volumes.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.controllers import ControllerManager
from benchmarks.harness.daemon import LoggedProcess
from benchmarks.harness.envtest import EnvtestServer
from policy_scheduler.kube.client.rest import ApiError

from . import side_by_side
from .side_by_side import (  # noqa: F401 - the *_fixture names: for pytest to find
    LINES,
    Pool,
    cluster_fixture,
    expect,
    expect_bound,
    expect_pending,
    pools_fixture,
)
from .test_daemon_volumes import (
    SELECTED_NODE,
    claim,
    get_claim,
    provisioner_provisions,
    pv_controller_binds,
    storage_class,
)

#: ReadWriteOncePod is alpha in 1.26 (the API server drops the access mode without its gate), GA in 1.29.
APISERVER_ARGS: dict[str, tuple[str, ...]] = {
    "1.26": ("--apiserver-arg=--feature-gates=ReadWriteOncePod=true",),
    "1.32": (),
    "1.36": (),
}
REFERENCE_GATES = {"1.26": "ReadWriteOncePod=true", "1.32": "", "1.36": ""}

CSI_DRIVER = "csi.example.com"
EBS_DRIVER = "ebs.csi.aws.com"
EBS_PLUGIN = "kubernetes.io/aws-ebs"
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"

#: The reasons each scheduler gives: upstream's (``volumerestrictions``, ``nodevolumelimits``, ``volumezone``,
#: ``ephemeral.VolumeIsForPod``) and ours.
#: ``volumerestrictions.ErrReasonReadWriteOncePodConflict`` by line (reworded in 1.34); ours follows the server's line
#: (read from ``/version`` at start), so both schedulers give the same text.
RWOP_CONFLICT = {
    "1.26": "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode",
    "1.32": "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode",
    "1.36": "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by "
            "another pod",
}
MAX_VOLUME_COUNT = {"ref": "node(s) exceed max volume count", "ours": "MaxVolumeCount"}
VOLUME_ZONE = {"ref": "node(s) had no available volume zone", "ours": "NoVolumeZoneConflict"}

#: Upstream may have backed the pod off (1 s, doubling) before the event that frees it.
REQUEUE_TIMEOUT = 60.0


@pytest.fixture(params=LINES, ids=lambda v: f"k8s-{v}")
def server(request, envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased(request.param, *APISERVER_ARGS[request.param]) as s:
        yield s


class VolumePool(Pool):
    """A pool that also holds claims, volumes and ``CSINode`` objects, all named after it."""

    def add_csinode(self, node_name: str, driver: str, count: int, migrated: str | None = None) -> None:
        """What the kubelet registers for a CSI driver on the node (without the owner reference to the Node,
        which no scheduler reads)."""
        metadata: dict[str, Any] = {"name": node_name}
        if migrated:
            metadata["annotations"] = {MIGRATED_PLUGINS: migrated}
        self.cluster.rest.post("/apis/storage.k8s.io/v1/csinodes", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": metadata,
            "spec": {"drivers": [{"name": driver, "nodeID": node_name, "allocatable": {"count": count}}]}})

    def bound_claim(self, suffix: str, source: dict[str, Any], access_modes: tuple[str, ...] = ("ReadWriteOnce",),
                    pv_labels: dict[str, str] | None = None) -> str:
        """A claim ``<pool>-<suffix>`` bound to its own PV ``<pool>-<suffix>-pv`` of ``source`` (e.g. ``csi``):
        the PV made pre-bound to the claim (static provisioning), then the PV controller's binding."""
        claim_name, pv_name = self.n(suffix), self.n(f"{suffix}-pv")
        body = claim(claim_name, "")
        body["spec"]["accessModes"] = list(access_modes)
        created = self.cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", body)
        self.cluster.rest.post("/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "labels": pv_labels or {}},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": list(access_modes), "storageClassName": "",
                     "persistentVolumeReclaimPolicy": "Retain", **source,
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default",
                                  "name": claim_name, "uid": created["metadata"]["uid"]}}})
        pv_controller_binds(self.cluster, claim_name, pv_name)
        if list(access_modes) != ["ReadWriteOnce"]:
            # The PV controller copies the volume's access modes into the claim's status.
            pvc = get_claim(self.cluster, claim_name)
            pvc["status"]["accessModes"] = list(access_modes)
            self.cluster.rest.put(f"/api/v1/namespaces/default/persistentvolumeclaims/{claim_name}/status", pvc)
        return claim_name

    def add_volume_pod(self, suffix: str, claims: tuple[str, ...] = (), node_name: str | None = None,
                       volumes: list[dict[str, Any]] | None = None, cpu: str = "100m") -> dict[str, Any]:
        """A pod of the pool's scheduler using the claims ``claims`` (volumes ``v0``, ``v1``...) and ``volumes``:
        on the node ``node_name``, or confined to the pool's nodes."""
        vols = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
        where = {} if node_name is None else {"nodeName": node_name}
        return self.add_pod(suffix, cpu=cpu, volumes=vols + (volumes or []), **where)

    def selected_node(self, claim_suffix: str) -> str | None:
        """The node a scheduler selected for provisioning the claim ``<pool>-<claim_suffix>``."""
        annotations = get_claim(self.cluster, self.n(claim_suffix))["metadata"].get("annotations") or {}
        return annotations.get(SELECTED_NODE)


@pytest.fixture
def pool_class() -> type[VolumePool]:
    """The class of the ``pools`` fixture's pools here."""
    return VolumePool


def schedulers(server: EnvtestServer, tmp_path: Path,
               *others: LoggedProcess) -> AbstractContextManager[dict[str, LoggedProcess]]:
    """Our daemon and the reference scheduler (and ``others``) running, as ``side_by_side.schedulers`` runs
    them; upstream's with the feature gates of the server's line."""
    return side_by_side.schedulers(server, tmp_path, *others, feature_gates=REFERENCE_GATES[server.version])


def verdicts(pool: Pool, suffixes: tuple[str, ...]) -> dict[str, str] | None:
    """Each pod's node ("" when pending), once every pod is bound or has a FailedScheduling event."""
    placed = {s: pool.placement(s) for s in suffixes}
    return placed if all(placed[s] or pool.failures(s) for s in suffixes) else None


def csi(driver: str, handle: str) -> dict[str, Any]:
    return {"csi": {"driver": driver, "volumeHandle": handle}}


# -- ReadWriteOncePod -------------------------------------------------------------------------------------

def test_read_write_once_pod_claim_has_one_user_in_the_cluster(server, pools, tmp_path):
    """A ReadWriteOncePod claim used by a pod on node 1: a second pod using it fits no node (node 2 neither);
    once the holder is gone, it is bound."""
    for pool in pools.values():
        first = pool.add_node("node-1")
        pool.add_node("node-2")
        rwop = pool.bound_claim("rwop", csi(CSI_DRIVER, pool.n("vol")), access_modes=("ReadWriteOncePod",))
        pool.add_volume_pod("holder", (rwop,), node_name=first)
        pool.add_volume_pod("waiter", (rwop,))
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            expect_pending(pool, "waiter", procs[name], RWOP_CONFLICT[server.version])
        for pool in pools.values():
            pool.cluster.delete_pod(pool.n("holder"))
        for name, pool in pools.items():
            assert expect_bound(pool, "waiter", procs[name], timeout=REQUEUE_TIMEOUT) in pool.nodes


# -- CSI attach limits ------------------------------------------------------------------------------------

def test_csi_attach_limit_of_the_csinode(server, pools, tmp_path):
    """Two nodes whose CSINode allows 1 volume of the driver, 3 pods with a volume each: one pod per node, the
    third fits none."""
    for pool in pools.values():
        for i in (1, 2):
            pool.add_csinode(pool.add_node(f"node-{i}"), CSI_DRIVER, 1)
        for i in range(3):
            pool.add_volume_pod(f"p-{i}", (pool.bound_claim(f"data-{i}", csi(CSI_DRIVER, pool.n(f"vol-{i}"))),))
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            placed = expect(partial(verdicts, pool, ("p-0", "p-1", "p-2")), f"a verdict on each pod of pool {name}",
                            procs[name])
            bound = {s: n for s, n in placed.items() if n}
            assert len(bound) == 2 and len(set(bound.values())) == 2, placed
            (pending,) = set(placed) - set(bound)
            expect_pending(pool, pending, procs[name], MAX_VOLUME_COUNT[name])


def test_migrated_in_tree_ebs_volume_counts_against_its_csi_driver(server, pools, tmp_path):
    """One node whose CSINode allows 1 volume of ebs.csi.aws.com and says the in-tree aws-ebs plugin is
    migrated to it: a pod with an in-tree EBS volume and a pod with a CSI EBS volume, one fits."""
    for pool in pools.values():
        pool.add_csinode(pool.add_node("node"), EBS_DRIVER, 1, migrated=EBS_PLUGIN)
        pool.add_volume_pod("in-tree", (pool.bound_claim("ebs-1", {"awsElasticBlockStore": {"volumeID": pool.n("vol-1")}}),))
        pool.add_volume_pod("csi", (pool.bound_claim("ebs-2", csi(EBS_DRIVER, pool.n("vol-2"))),))
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            placed = expect(partial(verdicts, pool, ("in-tree", "csi")), f"a verdict on each pod of pool {name}",
                            procs[name])
            bound = [s for s, n in placed.items() if n]
            assert len(bound) == 1, placed
            (pending,) = {"in-tree", "csi"} - set(bound)
            expect_pending(pool, pending, procs[name], MAX_VOLUME_COUNT[name])


def test_same_ebs_volume_counts_once_on_a_node(server, pools, tmp_path):
    """On a node with room for 1 EBS volume: two pods sharing the in-tree EBS claim of vol-1, and a pod whose
    CSI PV names the same vol-1, all fit (one volume, attached once); a pod with another volume does not."""
    for pool in pools.values():
        pool.add_csinode(pool.add_node("node"), EBS_DRIVER, 1, migrated=EBS_PLUGIN)
        in_tree = pool.bound_claim("ebs-1", {"awsElasticBlockStore": {"volumeID": pool.n("vol-1")}})
        pool.add_volume_pod("in-tree", (in_tree,))
        pool.add_volume_pod("shared", (in_tree,))
        pool.add_volume_pod("csi-same", (pool.bound_claim("ebs-1-csi", csi(EBS_DRIVER, pool.n("vol-1"))),))
        pool.bound_claim("ebs-2", csi(EBS_DRIVER, pool.n("vol-2")))
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            for suffix in ("in-tree", "shared", "csi-same"):
                assert expect_bound(pool, suffix, procs[name]) == pool.n("node")
        for pool in pools.values():
            pool.add_volume_pod("csi-other", (pool.n("ebs-2"),))
        for name, pool in pools.items():
            expect_pending(pool, "csi-other", procs[name], MAX_VOLUME_COUNT[name])


def test_no_csinode_no_csi_limit(server, pools, tmp_path):
    """A node with no CSINode: the driver's volumes are not limited."""
    for pool in pools.values():
        pool.add_node("node")
        for i in range(3):
            pool.add_volume_pod(f"p-{i}", (pool.bound_claim(f"data-{i}", csi(CSI_DRIVER, pool.n(f"vol-{i}"))),))
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            for i in range(3):
                assert expect_bound(pool, f"p-{i}", procs[name]) == pool.n("node")


# -- volume zones -----------------------------------------------------------------------------------------

def zone_nodes(pool: Pool) -> None:
    """A node in zone-a and one in zone-b, with both zone labels, as kubelets label them."""
    for zone in ("zone-a", "zone-b"):
        pool.add_node(zone, labels={ZONE: zone, BETA_ZONE: zone})


def test_volume_zone_of_the_ga_label(server, pools, tmp_path):
    """A PV labelled with the GA zone label only: the pod goes to that zone, though the node there is the
    busier (3 of its 4 cpu taken), which every scorer would avoid."""
    for pool in pools.values():
        zone_nodes(pool)
        pool.add_volume_pod("filler", node_name=pool.n("zone-b"), cpu="3")
        pool.add_volume_pod("p", (pool.bound_claim("data", csi(CSI_DRIVER, pool.n("vol")), pv_labels={ZONE: "zone-b"}),))
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            assert expect_bound(pool, "p", procs[name]) == pool.n("zone-b")


def test_volume_zone_labels_that_disagree(server, pools, tmp_path):
    """A PV whose beta zone label says zone-a and GA label zone-b: each label must match the node's, so no
    node fits."""
    for pool in pools.values():
        zone_nodes(pool)
        pool.add_volume_pod("p", (pool.bound_claim("data", csi(CSI_DRIVER, pool.n("vol")),
                                            pv_labels={BETA_ZONE: "zone-a", ZONE: "zone-b"}),))
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            expect_pending(pool, "p", procs[name], VOLUME_ZONE[name])


# -- generic ephemeral volumes ----------------------------------------------------------------------------

WFFC = "wffc"
TEMPLATE_SPEC = {"accessModes": ["ReadWriteOnce"], "storageClassName": WFFC, "resources": {"requests": {"storage": "1Gi"}}}
EPHEMERAL_VOLUME = {"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": TEMPLATE_SPEC}}}


def ephemeral_claim(pool: Pool, owner: dict[str, Any] | None) -> dict[str, Any]:
    """The claim ``<pool>-eph-data``: as the ephemeral-volume controller makes it for its pod ``owner``, or
    (``owner`` None) one nobody made for the pod."""
    metadata: dict[str, Any] = {"name": pool.n("eph-data")}
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner["metadata"]["name"],
                                        "uid": owner["metadata"]["uid"], "controller": True,
                                        "blockOwnerDeletion": True}]
    return pool.cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims",
                                  {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata,
                                   "spec": TEMPLATE_SPEC})


def ephemeral_controllers(server: EnvtestServer, tmp_path) -> tuple[LoggedProcess, ...]:
    """Upstream's ephemeral-volume controller where this repository ships a kube-controller-manager (1.32)."""
    if server.version == "1.32":
        return (ControllerManager(server, tmp_path, ("ephemeral-volume-controller",)),)
    return ()


def claim_or_none(pool: Pool, name: str) -> dict[str, Any] | None:
    try:
        return get_claim(pool.cluster, name)
    except ApiError as e:
        if e.not_found:
            return None
        raise


def test_generic_ephemeral_volume_claim_provisioned_on_the_selected_node(server, pools, cluster, tmp_path):
    """A pod with a generic ephemeral volume of a WaitForFirstConsumer class waits for its claim; the claim
    made (owned by the pod), the scheduler selects a node for it, and binds the pod there once provisioned."""
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses", storage_class(WFFC, "WaitForFirstConsumer"))
    pods = {}
    for name, pool in pools.items():
        pool.add_node("node-1")
        pool.add_node("node-2")
        pods[name] = pool.add_volume_pod("eph", volumes=[EPHEMERAL_VOLUME])
    controllers = ephemeral_controllers(server, tmp_path)
    with schedulers(server, tmp_path, *controllers) as procs:
        if controllers:
            for name, pool in pools.items():
                made = expect(partial(claim_or_none, pool, pool.n("eph-data")), f"the controller's claim of {name}",
                              controllers[0])
                (owner,) = made["metadata"]["ownerReferences"]
                assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
                    "Pod", pool.n("eph"), pods[name]["metadata"]["uid"], True)
        else:
            # No controller: the pod is tried, and waits for its claim.
            for name, pool in pools.items():
                expect_pending(pool, "eph", procs[name], "waiting for ephemeral volume controller to create "
                               f'the persistentvolumeclaim "{pool.n("eph-data")}"')
            for name, pool in pools.items():
                ephemeral_claim(pool, pods[name])
        for name, pool in pools.items():
            selected = expect(partial(pool.selected_node, "eph-data"), f"{SELECTED_NODE} on {pool.n('eph-data')}",
                              procs[name])
            assert selected in pool.nodes
            assert pool.placement("eph") == ""  # not before the volume is provisioned
            assert provisioner_provisions(cluster, pool.n("eph-data"), WFFC) == selected
            assert expect_bound(pool, "eph", procs[name]) == selected


def test_generic_ephemeral_volume_claim_not_owned_by_the_pod(server, pools, cluster, tmp_path):
    """A claim with the ephemeral volume's name that the pod does not own: the pod is not scheduled."""
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses", storage_class(WFFC, "WaitForFirstConsumer"))
    for pool in pools.values():
        pool.add_node("node-1")
        pool.add_node("node-2")
        ephemeral_claim(pool, None)
        pool.add_volume_pod("eph", volumes=[EPHEMERAL_VOLUME])
    with schedulers(server, tmp_path, *ephemeral_controllers(server, tmp_path)) as procs:
        for name, pool in pools.items():
            reason = (f"PVC default/{pool.n('eph-data')} was not created for pod default/{pool.n('eph')} "
                      "(pod is not owner)")
            expect_pending(pool, "eph", procs[name], reason)
            assert pool.selected_node("eph-data") is None
