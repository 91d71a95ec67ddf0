"""``run --scheduling-queue``: 1.9's priority queue against 1.20's three-queue form, on real API servers
(1.10 and 1.26).

A pod whose fix arrives through an event that moves nothing: under ``--rules 1.9`` a PersistentVolume's
update moves no pod (1.9 registers no PV handler that moves), so a pod that failed NoVolumeZoneConflict
waits in unschedulableQ after its PV is relabelled into the node's zone. 1.9's PriorityQueue (gate
``PodPriority``) retries it only when some other event moves it; the three-queue form's leftover flush
retries it once it has waited ``--pod-max-in-unschedulable-pods-duration``, at the next 30-s flush. No node
is updated while the two wait.
"""

from __future__ import annotations

import time
from typing import Any

from click.testing import CliRunner

from benchmarks.harness.daemon import Cluster, DaemonProcess, node, pod, wait_until
from policy_scheduler.cli import main

ZONE = "failure-domain.beta.kubernetes.io/zone"
GATES = ("--feature-gates", "PodPriority=true", "--rules", "1.9")


def zoned_claim(cluster: Cluster, name: str, zone: str) -> None:
    """PersistentVolume ``name`` labelled with ``zone``, and claim ``name`` bound to it."""
    cluster.rest.post("/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": {ZONE: zone}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": f"/tmp/{name}"},
                 "claimRef": {"namespace": "default", "name": name}}})
    cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "volumeName": name, "storageClassName": ""}})


def pod_with_claim(name: str, scheduler: str) -> dict[str, Any]:
    return pod(name, cpu="100m", scheduler=scheduler,
               volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": name}}])


def unschedulable_for_zone(cluster: Cluster, name: str) -> bool:
    condition = cluster.condition(name) or {}
    return condition.get("reason") == "Unschedulable" and "NoVolumeZoneConflict" in (condition.get("message") or "")


def test_only_the_three_queue_form_retries_a_pod_no_event_moves(apiserver, tmp_path):
    cluster = Cluster(apiserver.rest())
    cluster.add_node(node("n1", labels={ZONE: "zone-a"}))
    for name, scheduler in (("legacy", "legacy-scheduler"), ("three", "three-scheduler")):
        zoned_claim(cluster, name, "zone-b")
        cluster.add_pod(pod_with_claim(name, scheduler))
    legacy = DaemonProcess(apiserver.kubeconfig, tmp_path, *GATES, "--scheduler-name", "legacy-scheduler",
                           name="legacy").start()
    three = DaemonProcess(apiserver.kubeconfig, tmp_path, *GATES, "--scheduler-name", "three-scheduler",
                          "--scheduling-queue", "three-queue", "--pod-max-in-unschedulable-pods-duration", "2s",
                          name="three").start()
    try:
        for name in ("legacy", "three"):
            wait_until(lambda n=name: unschedulable_for_zone(cluster, n), 30, what=f"{name} unschedulable")
        for name in ("legacy", "three"):  # the fix: a PV update, which moves no pod
            cluster.rest.patch(f"/api/v1/persistentvolumes/{name}", {"metadata": {"labels": {ZONE: "zone-a"}}})
        relabelled = time.monotonic()
        wait_until(lambda: cluster.placements().get("three") == "n1", 60, what="three bound by a leftover flush")
        assert time.monotonic() - relabelled <= 35  # at most 2 s in unschedulableQ and one 30-s flush period
        assert cluster.placements()["legacy"] == ""
        assert legacy.log().count("Attempting to schedule pod: default/legacy") <= 2  # nothing retried it
        assert "scheduling queue: three-queue (ThreeQueuePriorityQueue)" in three.log()
        assert "scheduling queue: 1.9 (PriorityQueue)" in legacy.log()
        assert 'scheduler_pending_pods{queue="unschedulable"} 1.0' in legacy.metrics()

        # The legacy pod's fix was real: the next event that moves pods (a node added) schedules it.
        cluster.add_node(node("n2", labels={ZONE: "zone-c"}))
        wait_until(lambda: cluster.placements().get("legacy") == "n1", 30, what="legacy bound after a move")
    finally:
        codes = legacy.stop(), three.stop()
    assert codes == (0, 0), legacy.log() + three.log()


def test_bad_queue_flags_are_one_line_errors():
    runner = CliRunner()
    result = runner.invoke(main, ["run", "--pod-max-in-unschedulable-pods-duration", "soon", "--leader-elect=false"])
    assert result.exit_code == 1
    assert result.output.strip() == 'error: --pod-max-in-unschedulable-pods-duration: time: invalid duration "soon"'
    result = runner.invoke(main, ["run", "--scheduling-queue", "two-queue"])
    assert result.exit_code == 2 and "'two-queue' is not one of '1.9', 'three-queue'" in result.output
