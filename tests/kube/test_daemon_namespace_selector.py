"""``run`` watches Namespace objects: a pod whose required pod affinity selects namespaces by label waits until a
namespace is labelled so, and is then bound without another event (1.9's PriorityQueue keeps an unschedulable
pod until a cluster event moves it: here the namespace's update)."""

from __future__ import annotations

from benchmarks.harness.daemon import Cluster, DaemonProcess, node, pod, wait_until
from policy_scheduler.kube.client.rest import MERGE_PATCH

ZONE = "topology.kubernetes.io/zone"
PRIORITY = ("--feature-gates", "PodPriority=true")


def test_a_namespace_labelled_while_a_pod_waits_moves_it(envtest_pool, tmp_path):
    with envtest_pool.leased("1.26") as server:
        admin = Cluster(server.rest())
        for name, zone in (("a1", "a"), ("b1", "b")):
            admin.add_node(node(name, labels={ZONE: zone}))
        admin.create_namespace("db")
        admin.create_namespace("web")
        db = Cluster(server.rest(), "db")
        db.add_pod(pod("db-0", labels={"app": "db"}, scheduler="someone-else", node_name="a1"))
        web = Cluster(server.rest(), "web")
        affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"team": "b"}},
            "topologyKey": ZONE}]}}
        daemon = DaemonProcess(server.kubeconfig, tmp_path, *PRIORITY).start()
        try:
            daemon.wait_healthy()
            web.add_pod(pod("web-0", labels={"app": "web"}, affinity=affinity))
            messages = wait_until(lambda: [e["message"] for e in web.events("FailedScheduling")], 30,
                                  what="web-0 unschedulable: no namespace is labelled team=b")
            assert messages[0].startswith("0/2 nodes are available:"), messages
            assert web.placements()["web-0"] == ""
            server.rest().patch("/api/v1/namespaces/db", {"metadata": {"labels": {"team": "b"}}},
                                content_type=MERGE_PATCH)
            wait_until(lambda: web.placements().get("web-0") == "a1", 30, what="web-0 bound next to team b's db")
        finally:
            assert daemon.stop() == 0, daemon.log()
        assert "Traceback" not in daemon.log()
