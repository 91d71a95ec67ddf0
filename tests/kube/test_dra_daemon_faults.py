"""``policy-scheduler run`` allocating devices under faults, on a real 1.36 API server through the fault proxy.

Whatever the server does to a claim's writes or to the pod's Binding (a 500 not forwarded, a reply lost after the
write took effect, conflicts past upstream's retries, a Binding that fails after the claims were written), the
invariant is the one of ``tests/kube/test_daemon_faults.py`` extended to claims: the pod is bound exactly once,
its claim holds one allocation and the pod once in ``status.reservedFor``, and a claim written for a pod that
was not bound is taken back (Unreserve) before the pod is tried again.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchmarks.harness.daemon import Cluster, node, pod, wait_until
from benchmarks.harness.faultproxy import BINDING, FaultProxy

from .test_daemon import logged_binds
from .test_daemon_faults import spawn  # noqa: F401 - the fixture, for pytest to find

RESOURCE = "/apis/resource.k8s.io/v1"
NS = "default"
DRIVER = "gpu.example.com"
STATUS = r"/resourceclaims/[^/]+/status$"
CLAIM = r"/resourceclaims/[^/]+$"


@pytest.fixture
def apiserver(envtest_pool):
    """The 1.36 API server (this module's one line; conftest's ``proxy`` stands in front of it)."""
    with envtest_pool.leased("1.36") as s:
        yield s


@pytest.fixture
def cluster(apiserver) -> Cluster:
    """Two nodes; n1 publishes one device of class ``gpu``."""
    c = Cluster(apiserver.rest())
    for name in ("n0", "n1"):
        c.add_node(node(name))
    c.rest.post(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "gpu"}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    c.rest.post(f"{RESOURCE}/resourceslices", {"metadata": {"name": "n1-gpu"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}]}})
    return c


def claim_and_pod(cluster: Cluster, name: str = "p") -> None:
    cluster.rest.post(f"{RESOURCE}/namespaces/{NS}/resourceclaims", {"metadata": {"name": f"{name}-gpu"}, "spec": {
        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})
    body = pod(name, cpu="100m", resourceClaims=[{"name": "gpu", "resourceClaimName": f"{name}-gpu"}])
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    cluster.add_pod(body)


def claim_of(cluster: Cluster, name: str = "p") -> dict[str, Any]:
    return cluster.rest.get(f"{RESOURCE}/namespaces/{NS}/resourceclaims/{name}-gpu")


def assert_bound_once_with_its_device(proxy: FaultProxy, cluster: Cluster, name: str = "p") -> dict[str, Any]:
    wait_until(lambda: cluster.bound().get(name), 40, what=f"{name} bound")
    assert cluster.bound()[name] == "n1"
    assert logged_binds(proxy, [name])[name] == 1, "bound more than once"
    claim = claim_of(cluster, name)
    uid = cluster.get_pod(name)["metadata"]["uid"]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [uid]
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    return claim


def test_a_claim_write_answered_500_is_retried_and_written_once(proxy, cluster, spawn):  # noqa: F811
    daemon = spawn(proxy)
    proxy.fail("PUT", STATUS, 500)
    proxy.fail("PUT", CLAIM, 503)
    claim_and_pod(cluster)
    assert_bound_once_with_its_device(proxy, cluster)
    assert "Traceback" not in daemon.log()


def test_a_claim_write_whose_reply_is_lost_is_read_back_not_written_twice(proxy, cluster, spawn):  # noqa: F811
    spawn(proxy)
    proxy.drop_reply("PUT", STATUS)  # the server stores the allocation; the daemon never hears back
    claim_and_pod(cluster)
    assert_bound_once_with_its_device(proxy, cluster)
    assert [s for m, p, s in proxy.requests if m == "PUT" and p.endswith("/status")] == [200]


def test_conflicts_past_upstreams_retries_fail_prebind_then_the_pod_is_bound(proxy, cluster, spawn):  # noqa: F811
    daemon = spawn(proxy)
    proxy.fail("PUT", STATUS, 409, times=5)
    claim_and_pod(cluster)
    assert_bound_once_with_its_device(proxy, cluster)
    messages = [e["message"] for e in cluster.events("FailedScheduling")]
    assert any(m.startswith('running PreBind plugin "DynamicResources": add allocation and reservation to claim '
                            f"{NS}/p-gpu: ") for m in messages), messages
    assert daemon.metric('scheduler_binding_outcomes_total{outcome="claim_binding_failed"}') == 1


def test_a_failed_binding_unreserves_the_claim_and_the_retry_binds_once(proxy, cluster, spawn):  # noqa: F811
    daemon = spawn(proxy)
    proxy.fail("POST", BINDING, 403)  # refused after the claim was written
    claim_and_pod(cluster)
    claim = assert_bound_once_with_its_device(proxy, cluster)
    # Unreserve took the pod out (one patch); the allocation stayed, and the retry only added the pod back.
    assert proxy.count("PATCH", STATUS) == 1
    assert [s for m, p, s in proxy.requests if m == "PUT" and p.endswith("/status")] == [200, 200]
    assert claim["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert "unreserve resourceclaim=default/p-gpu" in daemon.log()


def test_a_binding_whose_reply_is_lost_keeps_the_claim(proxy, cluster, spawn):  # noqa: F811
    spawn(proxy)
    proxy.drop_reply("POST", BINDING)  # bound by the server; settled by reading the pod back
    claim_and_pod(cluster)
    assert_bound_once_with_its_device(proxy, cluster)
    assert proxy.count("PATCH", STATUS) == 0, "unreserved a claim of a pod that was bound"


def test_a_burst_with_cut_watches_never_gives_a_device_twice(proxy, cluster, spawn):  # noqa: F811
    """8 pods of one device each for 4 devices (n1's and n0's), the claim and slice watches cut mid-burst and one
    claim write answered 500: 4 pods bound, each device in exactly one claim's allocation, on the pod's node."""
    cluster.rest.post(f"{RESOURCE}/resourceslices", {"metadata": {"name": "n0-gpu"}, "spec": {
        "driver": DRIVER, "nodeName": "n0", "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}, {"name": "gpu-2"}]}})
    spawn(proxy)
    proxy.fail("PUT", STATUS, 500)
    names = [f"p{i}" for i in range(8)]
    for i, name in enumerate(names):
        claim_and_pod(cluster, name)
        if i in (2, 5):
            proxy.cut_watches(r"/resourceclaims")
            proxy.cut_watches(r"/resourceslices")
    wait_until(lambda: len(cluster.bound()) == 4, 40, what="4 pods bound")
    time.sleep(2)  # the others had their chance
    bound = cluster.bound()
    assert len(bound) == 4
    binds = logged_binds(proxy, list(bound))
    assert all(n == 1 for n in binds.values()), binds
    taken: dict[tuple[str, str], str] = {}
    for name in names:
        claim = claim_of(cluster, name)
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
        for result in results:  # bound or not: an allocation holds its device
            device = (result["pool"], result["device"])
            assert device not in taken, f"{device} given to {taken[device]} and {name}"
            taken[device] = name
        if name not in bound:
            assert not (claim.get("status") or {}).get("reservedFor"), (name, claim["status"])
            continue
        assert [r["pool"] for r in results] == [bound[name]]
    assert sorted(taken) == [("n0", "gpu-0"), ("n0", "gpu-1"), ("n0", "gpu-2"), ("n1", "gpu-0")]
