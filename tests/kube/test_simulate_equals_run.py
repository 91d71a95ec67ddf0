"""``simulate`` predicts ``run``: on one snapshot of a real API server (1.10 and 1.26), with the gate
``PodPriority`` and preemption happening, the placements ``simulate --from-cluster`` computes equal the ones
``run`` makes (read back from the server), and so do the victims, under each scheduling queue.

The snapshot: three 2-cpu nodes, each full with one low-priority pod (priorities 10, 20, 30, grace period 0
so that a deletion is immediate); pending, all before the daemon starts: two priority-1000 pods that must
preempt and may only run on n1 and n2 (the lowest victim first: n1, then n2), a priority-100 pod that can
only preempt the priority-30 pod on n3, and a priority-10 pod that fits nowhere and can preempt nothing. The
decisions do not depend on when the daemon sees the victims go (a node being emptied is held by its
nominated preemptor, and no preemptor can use another's node), which is what lets one simulation, where a
deletion is instantaneous, stand for the daemon's asynchronous ones. (Without the node selector, run may
bind the second priority-1000 pod to n3 if the priority-30 pod happens to go first, as 1.9 would: a
lower-priority nomination does not hold a node against it.)
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, node, pod, wait_until
from policy_scheduler.cli import main

from .test_daemon_preemption import GATE, priority_class

RUNNING = {"low-1": ("n1", "p10"), "low-2": ("n2", "p20"), "low-3": ("n3", "p30")}
PENDING = {  # name -> (cpu, priority class)
    "a-high-1": ("1500m", "p1000"), "a-high-2": ("1500m", "p1000"), "b-mid": ("600m", "p100"),
    "d-nowhere": ("1500m", "p10"),
}
EXPECTED = {"a-high-1": "n1", "a-high-2": "n2", "b-mid": "n3", "d-nowhere": None}


def _snapshot(cluster: Cluster, version: str) -> None:
    for name, value in (("p10", 10), ("p20", 20), ("p30", 30), ("p50", 50), ("p100", 100), ("p1000", 1000)):
        priority_class(cluster.rest, version, name, value)
    for name in ("n1", "n2", "n3"):
        cluster.add_node(node(name, cpu="2", labels={"tier": "high" if name != "n3" else "mid"}))
    for name, (node_name, cls) in RUNNING.items():
        cluster.add_pod(pod(name, cpu="1500m", node_name=node_name, priorityClassName=cls,
                            terminationGracePeriodSeconds=0))
    for name, (cpu, cls) in PENDING.items():  # created in name order: the queue order of both
        selector = {"nodeSelector": {"tier": "high"}} if cls == "p1000" else {}
        cluster.add_pod(pod(name, cpu=cpu, priorityClassName=cls, **selector))


@pytest.mark.parametrize("queue", ["1.9", "three-queue"])
def test_simulate_predicts_run_with_preemption(priority_apiserver, tmp_path, queue):
    cluster = Cluster(priority_apiserver.rest())
    _snapshot(cluster, priority_apiserver.version)
    simulated = CliRunner().invoke(main, [
        "simulate", "--from-cluster", "--kubeconfig", priority_apiserver.kubeconfig, "--scheduler-name", SCHEDULER,
        *GATE, "--scheduling-queue", queue, "-o", "json"])
    assert simulated.exit_code == 0, simulated.output
    data = json.loads(simulated.output)
    predicted = {p["pod"].split("/")[1]: p["node"] for p in data["placements"]}
    predicted_victims = sorted(v["pod"].split("/")[1] for p in data["preemptions"] for v in p["victims"])
    assert predicted == EXPECTED and predicted_victims == ["low-1", "low-2", "low-3"]

    daemon = DaemonProcess(priority_apiserver.kubeconfig, tmp_path, *GATE, "--scheduling-queue", queue).start()
    try:
        wait_until(lambda: {n: cluster.placements().get(n) for n in EXPECTED if EXPECTED[n]}
                   == {n: v for n, v in EXPECTED.items() if v}, 60, what="run's placements")
        placements = cluster.placements()
        ran = {n: placements.get(n) or None for n in PENDING}
        ran_victims = sorted(n for n in RUNNING if n not in placements)
        wait_until(lambda: "d-nowhere" in daemon.log(), 10, what="d-nowhere attempted")
    finally:
        assert daemon.stop() == 0, daemon.log()
    assert ran == predicted
    assert ran_victims == predicted_victims
