"""Where ``run`` takes its algorithm from: a policy ConfigMap (hot-reloaded, a broken one rejected),
a policy file, or a provider named by flag; a bad source stops the start with one line and exit 1."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.daemon import Cluster, DaemonProcess, node, pod, wait_until

PACK = {"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsResources"}],
        "priorities": [{"name": "MostRequestedPriority", "weight": 1}]}
SPREAD = {"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsResources"}],
          "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}


@pytest.fixture
def cluster(apiserver):
    c = Cluster(apiserver.rest())
    c.add_node(node("node-a", cpu="8"))
    c.add_node(node("node-b", cpu="8"))
    return c


def schedule(cluster: Cluster, *names: str) -> list[str]:
    """Create the pods one at a time, each bound before the next; their nodes."""
    hosts = []
    for name in names:
        cluster.add_pod(pod(name, cpu="1"))
        hosts.append(wait_until(lambda n=name: cluster.placements().get(n), 30, what=f"{name} bound"))
    return hosts


def test_policy_configmap_hot_reload(apiserver, cluster, tmp_path):
    cluster.put_configmap("kube-system", "scheduler-policy", {"policy.cfg": json.dumps(PACK)})
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, "--policy-configmap", "scheduler-policy").start()
    try:
        daemon.wait_healthy()
        first, second = schedule(cluster, "pack-1", "pack-2")
        assert first == second  # MostRequested packs

        cluster.put_configmap("kube-system", "scheduler-policy", {"policy.cfg": json.dumps(SPREAD)})
        wait_until(lambda: "policy reloaded from ConfigMap kube-system/scheduler-policy" in daemon.log(), 30,
                   what="the reload log line")
        other = "node-b" if first == "node-a" else "node-a"
        assert schedule(cluster, "spread-1", "spread-2") == [other, other]  # LeastRequested fills the empty node

        cluster.put_configmap("kube-system", "scheduler-policy", {"policy.cfg": '{"kind": "Policy", "predicates": 5}'})
        system = Cluster(cluster.rest, "kube-system")
        rejected = wait_until(lambda: system.events("PolicyRejected", kind="ConfigMap"), 30, what="a PolicyRejected event")
        assert rejected[0]["type"] == "Warning"
        assert rejected[0]["involvedObject"]["name"] == "scheduler-policy"
        assert "predicates" in rejected[0]["message"]
        assert "rejected the new policy in ConfigMap kube-system/scheduler-policy" in daemon.log()
        # The previous policy (spread) stays in force: 2 + 2 pods on the nodes, the next goes to either
        # node by LeastRequested's tie -> both equal; add one more to break the tie and check spreading.
        assert schedule(cluster, "after-1", "after-2") in ([first, other], [other, first])
        assert daemon.healthz()[0] == 200
        assert 'scheduler_policy_reloads_total{result="applied"} 1.0' in daemon.metrics()
        assert 'scheduler_policy_reloads_total{result="rejected"} 1.0' in daemon.metrics()
    finally:
        assert daemon.stop() == 0, daemon.log()


def test_policy_file_and_provider_flag(apiserver, cluster, tmp_path):
    policy = tmp_path / "pack.json"
    policy.write_text(json.dumps(PACK))
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, "--policy-config-file", str(policy), name="file").start()
    try:
        first, second = schedule(cluster, "file-1", "file-2")
        assert first == second
    finally:
        assert daemon.stop() == 0, daemon.log()

    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, "--algorithm-provider", "ClusterAutoscalerProvider",
                           name="provider").start()
    try:
        # ClusterAutoscalerProvider scores with MostRequestedPriority: its pods pack too.
        ca_1, ca_2 = schedule(cluster, "ca-1", "ca-2")
        assert ca_1 == ca_2
    finally:
        assert daemon.stop() == 0, daemon.log()


@pytest.mark.parametrize(("args", "message"), [
    (["--policy-config-file", "/nonexistent/policy.json"], "error: missing policy config file /nonexistent/policy.json: no such file"),
    (["--algorithm-provider", "NoSuchProvider"], "error: couldn't create scheduler using provider \"NoSuchProvider\""),
    (["--leader-elect-resource-lock", "sideways"], "error: couldn't create resource lock: Invalid lock-type sideways"),
])
def test_bad_algorithm_source_stops_the_start(apiserver, tmp_path, args, message):
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, *args).start()
    assert daemon.process.wait(30) == 1
    log = daemon.log().strip().splitlines()
    assert log[-1].startswith(message), log[-1]
    assert "Traceback" not in daemon.log()


def test_invalid_policy_configmap_stops_the_start(apiserver, tmp_path):
    Cluster(apiserver.rest()).put_configmap("kube-system", "broken", {"policy.cfg": "{not json"})
    daemon = DaemonProcess(apiserver.kubeconfig, tmp_path, "--policy-configmap", "broken").start()
    assert daemon.process.wait(30) == 1
    last = daemon.log().strip().splitlines()[-1]
    assert last.startswith("error: ConfigMap kube-system/broken"), last
