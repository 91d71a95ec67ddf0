"""PodTopologySpread against a real 1.26 API server: ``policy-scheduler run`` (DefaultProvider, no Policy
mention) spreads 4 pods of one app with a zone DoNotSchedule constraint 2+2 although zone-a has room for
all of them (1.9 alone places 4+0), and upstream's 1.26 kube-scheduler given the same pods agrees: the
zone counts, and the unschedulable pods' FailedScheduling reasons."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, node, pod, wait_until

from .reference import ReferenceScheduler

ZONE = "topology.kubernetes.io/zone"
SPREAD = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "web"}}}
NODES = [("a-1", "zone-a", "16"), ("a-2", "zone-a", "16"), ("b-1", "zone-b", "8")]
SKEW_REASON = "2 node(s) didn't match pod topology spread constraints"
LABEL_REASON = "3 node(s) didn't match pod topology spread constraints (missing required label)"


def populate(cluster: Cluster) -> None:
    for name, zone, cpu in NODES:
        cluster.add_node(node(name, cpu=cpu, memory="64Gi", labels={ZONE: zone}))
    # zone-b's node is busy, so least-requested scoring alone prefers zone-a for every pod
    cluster.add_pod(pod("filler", cpu="5", node_name="b-1", labels={"app": "other"}))


def web(name: str, **spread_changes: Any) -> dict[str, Any]:
    return pod(name, labels={"app": "web"}, topologySpreadConstraints=[{**SPREAD, **spread_changes}])


def scenario(cluster: Cluster) -> tuple[dict[str, int], list[str]]:
    """The 4 web pods one at a time (each bound before the next), then two that cannot fit; the zone counts
    and the two FailedScheduling messages."""
    counts = place_web(cluster)
    return counts, unschedulable(cluster)


def place_web(cluster: Cluster) -> dict[str, int]:
    """The 4 web pods one at a time (each bound before the next); pods per zone."""
    for i in range(4):
        cluster.add_pod(web(f"web-{i}"))
        wait_until(lambda n=f"web-{i}": cluster.placements().get(n), 60, what=f"web-{i} bound")
    zone_of = {name: zone for name, zone, _ in NODES}
    counts: dict[str, int] = {}
    for name, host in cluster.bound().items():
        if name.startswith("web-"):
            counts[zone_of[host]] = counts.get(zone_of[host], 0) + 1
    return counts


def unschedulable(cluster: Cluster) -> list[str]:
    """After ``place_web``: two pods the constraints refuse; their FailedScheduling messages."""
    # zone-a 3, zone-b 2 (a matching pod bound by name), then a pod allowed only in zone-a: skew 3 + 1 - 2 > 1
    cluster.add_pod(pod("web-bound", labels={"app": "web"}, node_name="a-1"))
    # A scheduler that has bound a pod created after web-bound has web-bound in its cache (one watch, in order):
    # without this, a loaded machine let the scheduler place "pinned" before it saw web-bound (a flake).
    cluster.add_pod(pod("after-web-bound", cpu="100m", labels={"app": "other"}))
    wait_until(lambda: cluster.placements().get("after-web-bound"), 60, what="after-web-bound bound")
    pinned = web("pinned", nodeAffinityPolicy="Ignore")
    pinned["spec"]["nodeSelector"] = {ZONE: "zone-a"}
    cluster.add_pod(pinned)
    cluster.add_pod(web("no-rack", topologyKey="rack"))  # no node has the key
    messages = []
    for name in ("pinned", "no-rack"):
        events = wait_until(lambda n=name: [e for e in cluster.events("FailedScheduling")
                                            if e["involvedObject"]["name"] == n], 60, what=f"{name} FailedScheduling")
        messages.append(events[0]["message"])
    assert not {"pinned", "no-rack"} & set(cluster.bound())
    return messages


@pytest.fixture
def server(envtest_pool):
    with envtest_pool.leased("1.26") as s:
        yield s


def test_policy_scheduler_spreads_as_the_modern_scheduler(server, tmp_path):
    cluster = Cluster(server.rest())
    populate(cluster)
    daemon = DaemonProcess(server.kubeconfig, tmp_path).start()
    try:
        daemon.wait_healthy()
        counts, (pinned, no_rack) = scenario(cluster)
    finally:
        daemon.stop()
    assert counts == {"zone-a": 2, "zone-b": 2}
    assert SKEW_REASON in pinned, pinned
    assert LABEL_REASON in no_rack, no_rack


def test_rules_1_9_ignores_the_constraints(server, tmp_path):
    cluster = Cluster(server.rest())
    populate(cluster)
    daemon = DaemonProcess(server.kubeconfig, tmp_path, "--rules", "1.9").start()
    try:
        daemon.wait_healthy()
        counts = place_web(cluster)
    finally:
        daemon.stop()
    assert counts == {"zone-a": 4}


def test_the_reference_kube_scheduler_agrees(server, tmp_path):
    cluster = Cluster(server.rest())
    populate(cluster)
    reference = ReferenceScheduler(server, tmp_path, scheduler_name=SCHEDULER).start()
    try:
        counts, (pinned, no_rack) = scenario(cluster)
    finally:
        reference.stop()
    assert counts == {"zone-a": 2, "zone-b": 2}
    assert SKEW_REASON in pinned, pinned
    assert LABEL_REASON in no_rack, no_rack
