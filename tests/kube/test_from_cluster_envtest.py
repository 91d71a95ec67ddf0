"""``--from-cluster`` against the real API servers: the snapshot read through the official client is the
cluster the server holds, and the offline commands decide on it as on the same objects dumped to files."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main

from .daemon import Cluster, node, pod

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
    assert live_placements == json.loads(offline.output)["placements"]
    assert len(live_placements) == 8
    assert sum(1 for p in live_placements if p["node"]) == 8
