"""What the kubelet admits, against real API servers: ``spec.overhead`` and init containers count (for the
pod placed and for the pods already on a node) on 1.26, native sidecars on 1.32 (the first line that keeps
them), as upstream's modern kube-scheduler of the same line counts them; ``--rules 1.9`` restores 1.9's
arithmetic; ``simulate`` on a snapshot of the server predicts ``run``. Our daemon and the reference
scheduler each get a node pool of their own on one server."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, node, pod, wait_until
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.kube.client.snapshot import read_cluster_snapshot
from policy_scheduler.offline.simulate import simulate

from .reference import REFERENCE_SCHEDULER, ReferenceScheduler


@pytest.fixture
def server(request, envtest_pool):
    with envtest_pool.leased(ROWS[request.getfixturevalue("row")][0]) as s:
        yield s


def with_overhead(obj: dict[str, Any], cpu: str) -> dict[str, Any]:
    obj["spec"]["overhead"] = {"cpu": cpu}
    return obj


def with_init(obj: dict[str, Any], cpu: str, sidecar: bool = False) -> dict[str, Any]:
    init = {"name": "init", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": cpu}}}
    if sidecar:
        init["restartPolicy"] = "Always"
    obj["spec"]["initContainers"] = [init]
    return obj


def with_pod_resources(obj: dict[str, Any], cpu: str) -> dict[str, Any]:
    obj["spec"]["resources"] = {"requests": {"cpu": cpu}}
    return obj


# row -> (server line, node cpu, pods as (name, cpu, decorate), how many bind under the cluster's rules,
# under 1.9's)
ROWS = {
    # 3 pods of 1 cpu + 2 cpu overhead on a 3-cpu node: the kubelet admits one.
    "overhead": ("1.26", "3", [(f"o-{i}", "1", lambda p: with_overhead(p, "2")) for i in range(3)], 1, 3),
    # A pod of 100m whose init container needs 2 cpu, then a pod of 1 cpu, on a 2-cpu node: the first
    # keeps its effective request of 2 cpu on the node (1.9 counted its 100m only, and let the second in).
    "init-containers": ("1.26", "2", [("i-0", "100m", lambda p: with_init(p, "2")), ("i-1", "1", lambda p: p)], 1, 2),
    # 2 pods of 1 cpu with a 1-cpu native sidecar, on a 2-cpu node: each holds 2 cpu (1.9 would take the
    # sidecar for an init container and count 1).
    "native-sidecars": ("1.32", "2", [(f"s-{i}", "1", lambda p: with_init(p, "1", sidecar=True)) for i in range(2)], 1, 2),
    # The same on 1.36.
    "native-sidecars-1.36": ("1.36", "2", [(f"s-{i}", "1", lambda p: with_init(p, "1", sidecar=True)) for i in range(2)],
                             1, 2),
    # 2 pods whose containers ask 100m but whose pod-level requests say 1500m (kept by 1.36 without a gate), on a
    # 2-cpu node: each holds 1500m (1.9 counts the containers' 100m).
    "pod-level-resources": ("1.36", "2", [(f"p-{i}", "100m", lambda p: with_pod_resources(p, "1500m")) for i in range(2)],
                            1, 2),
}


def pool_pods(cluster: Cluster, pool: str, scheduler: str, specs: list) -> None:
    for name, cpu, decorate in specs:
        cluster.add_pod(decorate(pod(f"{pool}-{name}", cpu=cpu, memory="10Mi", scheduler=scheduler,
                                     nodeSelector={"pool": pool})))


def bound_in(cluster: Cluster, pool: str) -> dict[str, str]:
    return {k: v for k, v in cluster.bound().items() if k.startswith(f"{pool}-")}


def simulated(kubeconfig: str, rules: Rules) -> dict[str, str | None]:
    snapshot = read_cluster_snapshot(kubeconfig=kubeconfig).under(rules)
    gates = FeatureGates(rules=rules)
    result = simulate(snapshot, lambda c: from_provider("DefaultProvider").build(c, feature_gates=gates),
                      scheduler_name=SCHEDULER)
    return {p.pod.name: p.node for p in result.placements}


@pytest.mark.parametrize("row", ROWS, ids=ROWS)
def test_run_counts_what_the_kubelet_admits_like_the_modern_scheduler(server, tmp_path, row):
    _, node_cpu, specs, cluster_bound, _ = ROWS[row]
    cluster = Cluster(server.rest())
    for pool in ("ours", "ref"):
        cluster.add_node(node(f"{pool}-node", cpu=node_cpu, labels={"pool": pool}))
    pool_pods(cluster, "ours", SCHEDULER, specs)
    pool_pods(cluster, "ref", REFERENCE_SCHEDULER, specs)
    predicted = simulated(server.kubeconfig, Rules.CLUSTER)
    daemon = DaemonProcess(server.kubeconfig, tmp_path).start()
    reference = ReferenceScheduler(server, tmp_path).start()
    try:
        wait_until(lambda: len(bound_in(cluster, "ours")) >= cluster_bound and len(bound_in(cluster, "ref")) >= cluster_bound
                   and len(cluster.events("FailedScheduling")) >= 2 * (len(specs) - cluster_bound),
                   timeout=60, what="both schedulers to decide every pod")
        ours, ref = bound_in(cluster, "ours"), bound_in(cluster, "ref")
        assert len(ours) == len(ref) == cluster_bound, (ours, ref, daemon.log()[-3000:])
        assert ours == {name: n for name, n in predicted.items() if n}
        # Every pod left over fails for cpu, with both schedulers.
        failed = {e["involvedObject"]["name"]: e["message"] for e in cluster.events("FailedScheduling")}
        for name, *_ in specs:
            for pool in ("ours", "ref"):
                if f"{pool}-{name}" not in (ours if pool == "ours" else ref):
                    assert "Insufficient cpu" in failed[f"{pool}-{name}"], failed
    finally:
        reference.stop()
        assert daemon.stop() == 0, daemon.log()


@pytest.mark.parametrize("row", ROWS, ids=ROWS)
def test_rules_1_9_restores_1_9_arithmetic(server, tmp_path, row):
    _, node_cpu, specs, _, legacy_bound = ROWS[row]
    cluster = Cluster(server.rest())
    cluster.add_node(node("legacy-node", cpu=node_cpu, labels={"pool": "legacy"}))
    pool_pods(cluster, "legacy", SCHEDULER, specs)
    predicted = simulated(server.kubeconfig, Rules.V1_9)
    daemon = DaemonProcess(server.kubeconfig, tmp_path, "--rules", "1.9").start()
    try:
        wait_until(lambda: len(bound_in(cluster, "legacy")) == legacy_bound, timeout=60,
                   what="1.9's arithmetic to bind every pod")
        assert bound_in(cluster, "legacy") == {name: n for name, n in predicted.items() if n}
    finally:
        assert daemon.stop() == 0, daemon.log()
