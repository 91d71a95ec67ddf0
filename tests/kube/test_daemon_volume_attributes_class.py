"""VolumeAttributesClass (GA 1.34, locked on in 1.36) and late binding, on a real 1.36 API server beside
upstream's 1.36 kube-scheduler, with upstream's 1.36 PV binder (``kube-controller-manager``
``persistentvolume-binder``: it makes the PVs ``Available`` and completes the bindings the schedulers start).

A claim of a ``WaitForFirstConsumer`` class naming ``spec.volumeAttributesClassName: gold`` binds only a PV of
that class (``FindMatchingVolume`` with ``vacEnabled``), and a claim naming none only a PV with none. Each
scheduler has a pool (``tests/kube/side_by_side.py``): two nodes, ``node-gold`` busier (3 of its 4 cpu taken,
which every scorer avoids) with the gold PV, ``node-plain`` with the plain PV, both CSI volumes (the API server
requires ``spec.csi`` beside the class), each with node affinity to its node. The API server does not ask for a
``VolumeAttributesClass`` object named ``gold``: it validates the name only (``ValidateClassName``); the class
object is read by the CSI resizer when the volume is modified, never by the scheduler nor the PV binder.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from benchmarks.harness.controllers import ControllerManager
from benchmarks.harness.envtest import EnvtestServer

from .side_by_side import (  # noqa: F401 - the *_fixture names: for pytest to find
    Pool,
    cluster_fixture,
    expect,
    expect_bound,
    expect_pending,
    pool_class_fixture,
    pools_fixture,
    schedulers,
)
from .test_daemon_volumes import HOSTNAME, storage_class

LINE = "1.36"
CLASS = "vac-local"  # WaitForFirstConsumer, no provisioner: static PVs only
GOLD = "gold"
CSI_DRIVER = "csi.example.com"
#: upstream's reason (``volumebinding.ErrReasonBindConflict``) and ours (1.9's name).
BIND_CONFLICT = {"ref": "node(s) didn't find available persistent volumes to bind", "ours": "VolumeBindingNoMatch"}
#: The PV binder marks a new PV ``Available`` on its first sync; a scheduler waits for the binding it started.
PV_TIMEOUT = 60.0


@pytest.fixture
def server(envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased(LINE) as s:
        yield s


def csi_pv(pool: Pool, suffix: str, node_suffix: str, vac: str | None) -> str:
    """The PV ``<pool>-<suffix>``: a CSI volume of class ``CLASS`` on the pool's node ``<node_suffix>``."""
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": CLASS,
        "persistentVolumeReclaimPolicy": "Retain", "csi": {"driver": CSI_DRIVER, "volumeHandle": pool.n(suffix)},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [pool.n(node_suffix)]}]}]}}}
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    pool.cluster.rest.post("/api/v1/persistentvolumes", {"apiVersion": "v1", "kind": "PersistentVolume",
                                                          "metadata": {"name": pool.n(suffix)}, "spec": spec})
    return pool.n(suffix)


def vac_claim(pool: Pool, suffix: str, vac: str | None) -> str:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "storageClassName": CLASS,
                            "resources": {"requests": {"storage": "1Gi"}}}
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    created = pool.cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": pool.n(suffix)}, "spec": spec})
    assert created["spec"].get("volumeAttributesClassName") == vac  # kept by the 1.36 server
    return pool.n(suffix)


def gold_and_plain_nodes(pool: Pool, gold_pv: bool = True, plain_pv: bool = True) -> None:
    pool.add_node("node-gold")
    pool.add_node("node-plain")
    pool.add_pod("filler", cpu="3", nodeName=pool.n("node-gold"))
    if gold_pv:
        csi_pv(pool, "pv-gold", "node-gold", GOLD)
    if plain_pv:
        csi_pv(pool, "pv-plain", "node-plain", None)


def pv_phase(pool: Pool, pv: str) -> str:
    return (pool.cluster.rest.get(f"/api/v1/persistentvolumes/{pv}").get("status") or {}).get("phase") or ""


def available(pool: Pool, pvs: tuple[str, ...]) -> bool:
    return all(pv_phase(pool, pool.n(pv)) == "Available" for pv in pvs)


def claim_pod(pool: Pool, suffix: str, claim: str) -> dict[str, Any]:
    return pool.add_pod(suffix, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])


def claim_of(pool: Pool, claim: str) -> dict[str, Any]:
    return pool.cluster.rest.get(f"/api/v1/namespaces/default/persistentvolumeclaims/{claim}")


def claim_bound(pool: Pool, claim: str) -> bool:
    return (claim_of(pool, claim).get("status") or {}).get("phase") == "Bound"


def test_gold_claim_binds_the_gold_pv_on_the_busier_node(server, pools, cluster, tmp_path):
    """Both schedulers pick node-gold (the gold PV's) though node-plain is emptier; the PV binder then binds
    the claim to the gold PV."""
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses",
                      storage_class(CLASS, "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"))
    claims = {}
    for name, pool in pools.items():
        gold_and_plain_nodes(pool)
        claims[name] = vac_claim(pool, "data", GOLD)
    binder = ControllerManager(server, tmp_path, ("persistentvolume-binder",))
    with schedulers(server, tmp_path, binder) as procs:
        for name, pool in pools.items():
            expect(partial(available, pool, ("pv-gold", "pv-plain")), f"the PVs of {name} Available", binder,
                   timeout=PV_TIMEOUT)
            claim_pod(pool, "p", claims[name])
        for name, pool in pools.items():
            assert expect_bound(pool, "p", procs[name], timeout=PV_TIMEOUT) == pool.n("node-gold")
            expect(partial(claim_bound, pool, claims[name]), f"{claims[name]} Bound", binder)
            assert claim_of(pool, claims[name])["spec"]["volumeName"] == pool.n("pv-gold")
            assert pv_phase(pool, pool.n("pv-plain")) == "Available"


def test_claim_without_a_class_does_not_take_a_gold_pv(server, pools, cluster, tmp_path):
    """Only a gold PV (on node-gold): a claim naming no class matches no PV, so neither scheduler binds its
    pod (every node: no available persistent volume to bind); the gold PV stays Available."""
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses",
                      storage_class(CLASS, "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"))
    claims = {}
    for name, pool in pools.items():
        gold_and_plain_nodes(pool, plain_pv=False)
        claims[name] = vac_claim(pool, "data", None)
    binder = ControllerManager(server, tmp_path, ("persistentvolume-binder",))
    with schedulers(server, tmp_path, binder) as procs:
        for name, pool in pools.items():
            expect(partial(available, pool, ("pv-gold",)), f"the PV of {name} Available", binder, timeout=PV_TIMEOUT)
            claim_pod(pool, "p", claims[name])
        for name, pool in pools.items():
            expect_pending(pool, "p", procs[name], BIND_CONFLICT[name])
            assert pv_phase(pool, pool.n("pv-gold")) == "Available"
            assert not (claim_of(pool, claims[name])["spec"].get("volumeName"))
