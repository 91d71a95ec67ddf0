"""``policy-scheduler run`` and late-bound volumes (``WaitForFirstConsumer``) against a real 1.26 API server.

There is no PV controller nor provisioner in envtest: the tests play them through the API as they do in a
cluster (an external CSI provisioner watches claims for ``volume.kubernetes.io/selected-node`` and creates a
PV with node affinity for that node; the PV controller binds claim and PV: ``claimRef`` / ``volumeName``,
``pv.kubernetes.io/bind-completed``, phases ``Bound``)."""

from __future__ import annotations

import pytest

from benchmarks.harness.daemon import Cluster, DaemonProcess, node, pod, wait_until

SELECTED_NODE = "volume.kubernetes.io/selected-node"
HOSTNAME = "kubernetes.io/hostname"


@pytest.fixture
def apiserver_126(envtest_pool):
    with envtest_pool.leased("1.26") as server:
        yield server


@pytest.fixture
def cluster(apiserver_126):
    return Cluster(apiserver_126.rest())


def storage_class(name: str, mode: str, provisioner: str = "example.com/csi", **extra) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode, **extra}


def claim(name: str, class_name: str, size: str = "1Gi") -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
                     "resources": {"requests": {"storage": size}}}}


def claim_pod(name: str, claim_name: str, cpu: str = "1") -> dict:
    return pod(name, cpu=cpu, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}])


def local_pv(name: str, class_name: str, node_name: str, size: str = "1Gi", claim_ref: dict | None = None) -> dict:
    spec = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
            "persistentVolumeReclaimPolicy": "Delete", "local": {"path": "/mnt/disks/vol1"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node_name]}]}]}}}
    if claim_ref:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def get_claim(cluster: Cluster, name: str) -> dict:
    return cluster.rest.get(f"/api/v1/namespaces/default/persistentvolumeclaims/{name}")


def set_pv_phase(cluster: Cluster, name: str, phase: str) -> None:
    pv = cluster.rest.get(f"/api/v1/persistentvolumes/{name}")
    pv["status"] = {"phase": phase}
    cluster.rest.put(f"/api/v1/persistentvolumes/{name}/status", pv)


def pv_controller_binds(cluster: Cluster, claim_name: str, pv_name: str) -> None:
    """The PV controller's ``bindClaimToVolume`` + status updates (the PV already points at the claim)."""
    pvc = get_claim(cluster, claim_name)
    pvc["spec"]["volumeName"] = pv_name
    pvc["metadata"].setdefault("annotations", {}).update(
        {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"})
    pvc = cluster.rest.put(f"/api/v1/namespaces/default/persistentvolumeclaims/{claim_name}", pvc)
    pvc["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    cluster.rest.put(f"/api/v1/namespaces/default/persistentvolumeclaims/{claim_name}/status", pvc)
    set_pv_phase(cluster, pv_name, "Bound")


def provisioner_provisions(cluster: Cluster, claim_name: str, class_name: str) -> str:
    """An external provisioner: a PV for the selected node, pre-bound to the claim; then the PV controller."""
    pvc = get_claim(cluster, claim_name)
    node_name = pvc["metadata"]["annotations"][SELECTED_NODE]
    pv_name = f"pvc-{pvc['metadata']['uid']}"
    ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default", "name": claim_name,
           "uid": pvc["metadata"]["uid"], "resourceVersion": pvc["metadata"]["resourceVersion"]}
    cluster.rest.post("/api/v1/persistentvolumes", local_pv(pv_name, class_name, node_name, claim_ref=ref))
    pv_controller_binds(cluster, claim_name, pv_name)
    return node_name


def test_dynamic_provisioning_selected_node_then_pod_bound_there(apiserver_126, cluster, tmp_path):
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses", storage_class("wffc", "WaitForFirstConsumer"))
    for name in ("node-a", "node-b"):
        cluster.add_node(node(name, cpu="2"))
    cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", claim("data-web-0", "wffc"))
    cluster.add_pod(claim_pod("web-0", "data-web-0"))
    daemon = DaemonProcess(apiserver_126.kubeconfig, tmp_path, "--volume-bind-timeout=120").start()
    try:
        annotated = wait_until(lambda: (get_claim(cluster, "data-web-0")["metadata"].get("annotations") or {}).get(SELECTED_NODE),
                               60, what="the selected-node annotation")
        assert annotated in ("node-a", "node-b")
        # The pod waits for its volume; other pods are bound meanwhile.
        cluster.add_pod(pod("other", cpu="1"))
        wait_until(lambda: cluster.placements().get("other"), 30, what="the other pod bound")
        assert cluster.placements()["web-0"] == ""
        assert provisioner_provisions(cluster, "data-web-0", "wffc") == annotated
        wait_until(lambda: cluster.placements().get("web-0"), 30, what="web-0 bound")
        assert cluster.placements()["web-0"] == annotated
        scheduled = wait_until(lambda: [e["message"] for e in cluster.events("Scheduled")
                                         if e["involvedObject"]["name"] == "web-0"], 20, what="web-0's Scheduled event")
        assert scheduled == [f"Successfully assigned web-0 to {annotated}"]  # events are written after the bind
    finally:
        daemon.stop()
    assert "Claim default/data-web-0 to be provisioned on node" in daemon.log()


def test_static_local_pv_pod_lands_on_its_node_and_pv_is_prebound(apiserver_126, cluster, tmp_path):
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses",
                      storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"))
    for name in ("node-a", "node-b"):
        cluster.add_node(node(name, cpu="4"))
    cluster.rest.post("/api/v1/persistentvolumes", local_pv("local-b", "local", "node-b"))
    set_pv_phase(cluster, "local-b", "Available")  # the PV controller's first sync
    cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", claim("data-db-0", "local"))
    pvc_uid = get_claim(cluster, "data-db-0")["metadata"]["uid"]
    cluster.add_pod(claim_pod("db-0", "data-db-0"))
    daemon = DaemonProcess(apiserver_126.kubeconfig, tmp_path, "--volume-bind-timeout=120").start()
    try:
        def prebound():
            ref = cluster.rest.get("/api/v1/persistentvolumes/local-b")["spec"].get("claimRef") or {}
            return ref if ref.get("name") == "data-db-0" else None
        ref = wait_until(prebound, 60, what="local-b pre-bound")
        assert (ref["namespace"], ref["uid"]) == ("default", pvc_uid)
        pv = cluster.rest.get("/api/v1/persistentvolumes/local-b")
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert SELECTED_NODE not in (get_claim(cluster, "data-db-0")["metadata"].get("annotations") or {})
        assert cluster.placements()["db-0"] == ""  # not before the claim is bound
        pv_controller_binds(cluster, "data-db-0", "local-b")
        wait_until(lambda: cluster.placements().get("db-0"), 30, what="db-0 bound")
        assert cluster.placements()["db-0"] == "node-b"
    finally:
        daemon.stop()


def test_nobody_provisions_timeout_requeues_and_frees_the_node(apiserver_126, cluster, tmp_path):
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses", storage_class("wffc", "WaitForFirstConsumer"))
    cluster.add_node(node("node-a", cpu="2"))
    cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", claim("data-a", "wffc"))
    cluster.add_pod(claim_pod("a", "data-a", cpu="2"))
    daemon = DaemonProcess(apiserver_126.kubeconfig, tmp_path, "--volume-bind-timeout=3").start()
    message = 'running PreBind plugin "VolumeBinding": binding volumes: timed out waiting for the condition'
    try:
        wait_until(lambda: [e for e in cluster.events("FailedScheduling") if e["message"] == message], 60,
                   what="the timeout's FailedScheduling event")
        assert cluster.placements()["a"] == ""
        assert cluster.wait_condition("a", "SchedulerError")["status"] == "False"
        # Re-queued: the pod is tried again (the annotation stays, as upstream leaves it, so on the same node).
        wait_until(lambda: daemon.log().count("Failed to bind volumes pod=default/a") >= 2, 60, what="a retried")
        assert (get_claim(cluster, "data-a")["metadata"]["annotations"] or {})[SELECTED_NODE] == "node-a"
        # The assumption is undone when the pod goes: its 2 cpu are free for the next pod.
        cluster.delete_pod("a")
        cluster.add_pod(pod("b", cpu="2"))
        wait_until(lambda: cluster.placements().get("b"), 30, what="b bound on the freed node")
        assert cluster.placements()["b"] == "node-a"
    finally:
        daemon.stop()


@pytest.mark.parametrize("rules,class_mode", [("cluster", "Immediate"), ("1.9", "WaitForFirstConsumer")])
def test_immediate_claims_and_1_9_rules_keep_1_9_behaviour(apiserver_126, cluster, tmp_path, rules, class_mode):
    """An unbound Immediate claim (or any claim under --rules 1.9): nothing checks it, nothing is written."""
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses", storage_class("sc", class_mode))
    cluster.add_node(node("node-a", cpu="2"))
    cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", claim("data", "sc"))
    cluster.add_pod(claim_pod("p", "data"))
    daemon = DaemonProcess(apiserver_126.kubeconfig, tmp_path, f"--rules={rules}").start()
    try:
        wait_until(lambda: cluster.placements().get("p"), 60, what="p bound")
        assert SELECTED_NODE not in (get_claim(cluster, "data")["metadata"].get("annotations") or {})
    finally:
        daemon.stop()


def test_run_still_refuses_the_alpha_gate_under_1_9_rules(apiserver_126, tmp_path):
    daemon = DaemonProcess(apiserver_126.kubeconfig, tmp_path, "--rules=1.9", "--feature-gates=VolumeScheduling=true").start()
    assert daemon.process.wait(60) == 1
    assert "run does not implement 1.9's alpha volume binder" in daemon.log()
