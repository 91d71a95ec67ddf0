"""The shared API servers (``envtest_pool.py``): a server handed out again holds exactly what a new one holds,
through the API and through the watch cache informers list from, whatever the previous holder left behind."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.harness.daemon import Cluster, node, pod
from benchmarks.harness.envtest import VERSIONS, EnvtestServer

from .envtest_pool import EnvtestPool


def contents(server: EnvtestServer, cached: bool) -> dict[str, Any]:
    """Names (and the default namespace's labels) of what a test could see, from etcd or from the cache."""
    rest = server.rest()
    query = {"resourceVersion": "0"} if cached else None

    def names(path: str) -> list[str]:
        return sorted(f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}"
                      for i in rest.get(path, query)["items"])

    return {
        "nodes": names("/api/v1/nodes"), "pods": names("/api/v1/pods"), "namespaces": names("/api/v1/namespaces"),
        "configmaps": names("/api/v1/configmaps"), "services": names("/api/v1/services"),
        "events": names("/api/v1/events"),
        "default labels": rest.get("/api/v1/namespaces/default")["metadata"].get("labels"),
    }


def leave_a_mess(server: EnvtestServer) -> None:
    """What tests leave: nodes, a bound pod deleted gracefully (Terminating for ever without a kubelet), a pod
    with a finalizer, a namespace being deleted, objects in kube-system, a relabelled default namespace and a
    Service (with an allocated cluster IP)."""
    cluster = Cluster(server.rest())
    for i in range(3):
        cluster.add_node(node(f"n{i}"))
    cluster.add_pod(pod("bound", node_name="n0"))
    cluster.rest.delete("/api/v1/namespaces/default/pods/bound")
    stuck = pod("stuck")
    stuck["metadata"]["finalizers"] = ["example.com/never"]
    cluster.add_pod(stuck)
    cluster.create_namespace("team-b")
    cluster.add_pod(pod("other"), namespace="team-b")
    cluster.rest.delete("/api/v1/namespaces/team-b")
    cluster.put_configmap("kube-system", "left-behind", {"k": "v"})
    cluster.rest.patch("/api/v1/namespaces/default", {"metadata": {"labels": {"team": "b"}}},
                       content_type="application/merge-patch+json")
    cluster.rest.post("/api/v1/namespaces/default/services", {
        "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    assert cluster.get_pod("bound")["metadata"].get("deletionTimestamp")
    assert cluster.rest.get("/api/v1/namespaces/team-b")["status"]["phase"] == "Terminating"


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"k8s-{v}")
def test_a_server_handed_out_again_holds_what_a_new_one_holds(version, tmp_path):
    pool = EnvtestPool(tmp_path)
    try:
        first = pool.lease(version)
        new = contents(first, cached=False)
        assert new["nodes"] == new["pods"] == []
        leave_a_mess(first)
        assert contents(first, cached=False) != new
        pool.release(first)

        again = pool.lease(version)
        assert again is first  # the same processes, no second start
        assert contents(again, cached=False) == new
        assert contents(again, cached=True) == new  # what an informer's first list sees
        leave_a_mess(again)  # the same names can be created again: nothing of the first mess is left
        pool.release(again)
    finally:
        pool.close()


def test_a_leased_server_is_never_shared_and_a_dead_one_is_replaced(tmp_path):
    pool = EnvtestPool(tmp_path, keep=1)
    try:
        first = pool.lease("1.26")
        second = pool.lease("1.26")
        assert second is not first and second.server != first.server
        pool.release(first)
        pool.release(second)  # keep=1: the least recently used idle one is stopped
        assert not first.alive() and second.alive()

        second.stop()
        third = pool.lease("1.26")
        assert third is not second and third.alive()
        assert Cluster(third.rest()).pods() == {}
        pool.release(third)
    finally:
        pool.close()
