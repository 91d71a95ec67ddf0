"""``--from-cluster`` against the real API servers: the snapshot read through the official client is the
cluster the server holds, and the offline commands decide on it as on the same objects dumped to files."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from benchmarks.harness.daemon import Cluster, node, pod
from policy_scheduler.cli import main
from policy_scheduler.kube.client.informer import served_resources
from policy_scheduler.kube.client.snapshot import read_cluster_snapshot
from policy_scheduler.kube.daemon.lifecycle import RESOURCES
from policy_scheduler.model.volumes import ANN_MIGRATED_PLUGINS

KINDS = (("nodes", "/api/v1/nodes"), ("pods", "/api/v1/pods"), ("services", "/api/v1/services"),
         ("replicasets", "/apis/apps/v1/replicasets"))


def test_simulate_from_cluster_equals_simulate_on_its_dump(apiserver, tmp_path):
    cluster = Cluster(apiserver.rest())
    for i in range(4):
        cluster.add_node(node(f"node-{i}", cpu=str(2 + i), labels={"failure-domain.beta.kubernetes.io/zone": f"z{i % 2}"}))
    cluster.add_pod(pod("running", cpu="2", scheduler="default-scheduler", node_name="node-3"))
    for i in range(8):
        cluster.add_pod(pod(f"pending-{i}", cpu="1", scheduler="default-scheduler", labels={"app": "web"}))
    cluster.rest.post("/api/v1/namespaces/default/services",
                      {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    cluster.rest.post("/apis/apps/v1/namespaces/default/replicasets", {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}}})

    dump = tmp_path / "dump"
    dump.mkdir()
    for kind, path in KINDS:
        items = cluster.rest.get(path)["items"]
        singular = {"nodes": "Node", "pods": "Pod", "services": "Service", "replicasets": "ReplicaSet"}[kind]
        version = "apps/v1" if kind == "replicasets" else "v1"
        (dump / f"{kind}.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "v1", "kind": "List", "items": [{**o, "kind": singular, "apiVersion": version} for o in items]}))

    runner = CliRunner()
    live = runner.invoke(main, ["simulate", "--from-cluster", "--kubeconfig", apiserver.kubeconfig, "-o", "json"])
    offline = runner.invoke(main, ["simulate", "--cluster", str(dump), "-o", "json"])
    assert live.exit_code == 0, live.output
    assert offline.exit_code == 0, offline.output
    live_placements = json.loads(live.output)["placements"]
    assert live_placements == json.loads(offline.stdout)["placements"]
    assert len(live_placements) == 8
    assert sum(1 for p in live_placements if p["node"]) == 8


CSI_NODE = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {
    "name": "node-0", "annotations": {ANN_MIGRATED_PLUGINS: "kubernetes.io/aws-ebs"}},
    "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-0a1b", "allocatable": {"count": 25},
                          "topologyKeys": ["topology.ebs.csi.aws.com/zone"]}]}}


def test_read_cluster_snapshot_returns_the_servers_csinodes(envtest_pool):
    with envtest_pool.leased("1.26") as server:
        cluster = Cluster(server.rest())
        cluster.add_node(node("node-0"))
        cluster.add_node(node("node-1"))
        cluster.rest.post("/apis/storage.k8s.io/v1/csinodes", CSI_NODE)
        snapshot = read_cluster_snapshot(server.kubeconfig)
    (csi,) = snapshot.csi_nodes
    assert csi.raw["apiVersion"] == "storage.k8s.io/v1" and csi.raw["metadata"]["resourceVersion"]
    assert [(d.name, d.node_id, d.allocatable_count) for d in csi.drivers] == [("ebs.csi.aws.com", "i-0a1b", 25)]
    assert csi.migrated_plugins == {"kubernetes.io/aws-ebs"}
    state = snapshot.cluster_state()
    assert state.get_csi_node("node-0") is csi and state.get_csi_node("node-1") is None


def test_a_server_without_csinodes_is_read_without_them(envtest_pool):
    """1.10 serves storage.k8s.io/v1 (StorageClasses) but no CSINode in any version: the daemon does not
    watch them (discovery by resource, not by group version) and the snapshot leaves them out."""
    with envtest_pool.leased("1.10") as server:
        Cluster(server.rest()).add_node(node("node-0"))
        served = served_resources(server.rest(), ["storage.k8s.io/v1", "storage.k8s.io/v1beta1"])
        snapshot = read_cluster_snapshot(server.kubeconfig)
    assert ("storage.k8s.io/v1", "storageclasses") in served
    kinds = {r.kind: r for r in RESOURCES}
    assert kinds["CSINode"].served_version(served) is None
    assert kinds["StorageClass"].served_version(served) == "storage.k8s.io/v1"
    assert snapshot.csi_nodes == [] and [n.name for n in snapshot.nodes] == ["node-0"]


def test_discovery_finds_csinodes_where_they_are_served(envtest_pool):
    with envtest_pool.leased("1.26") as server:
        served = served_resources(server.rest(), [gv for r in RESOURCES for gv in r.group_versions])
    assert {r.kind: r.served_version(served) for r in RESOURCES} == {
        "Node": "v1", "Pod": "v1", "Service": "v1", "ReplicationController": "v1", "ReplicaSet": "apps/v1",
        "StatefulSet": "apps/v1", "PersistentVolume": "v1", "PersistentVolumeClaim": "v1",
        "StorageClass": "storage.k8s.io/v1", "CSINode": "storage.k8s.io/v1", "Namespace": "v1"}


def test_read_cluster_snapshot_returns_the_servers_namespaces_and_their_labels(envtest_pool):
    """What pod affinity namespaceSelectors select: the Namespace objects, with the label the server gives every
    namespace since 1.21 (``kubernetes.io/metadata.name``)."""
    with envtest_pool.leased("1.26") as server:
        cluster = Cluster(server.rest())
        cluster.add_node(node("node-0"))
        cluster.rest.post("/api/v1/namespaces", {"metadata": {"name": "team-b", "labels": {"team": "b"}}})
        snapshot = read_cluster_snapshot(server.kubeconfig)
    names = {n.name for n in snapshot.namespaces}
    assert {"default", "kube-system", "team-b"} <= names
    state = snapshot.cluster_state()
    assert state.namespace_labels("team-b") == {"team": "b", "kubernetes.io/metadata.name": "team-b"}
    assert state.namespace_labels("default") == {"kubernetes.io/metadata.name": "default"}
