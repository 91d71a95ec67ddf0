"""``examples/deploy/rbac.yaml`` on a real 1.36 API server (the first line of the envtest assets that serves
``resource.k8s.io/v1``): the ServiceAccount's token may make every dynamic-resource-allocation request the daemon
makes (watch classes, slices and claims; read a claim back; add the finalizer; write the allocation and the pod's
reservation; Unreserve's patch) and nothing more on that group. Without the ``resourceclaims/binding`` rule a 1.36
server refuses the status write (DRAResourceClaimGranularStatusAuthorization), which is why the rule is there.

The rest of the manifests' RBAC (pods, bindings, events, the lock...) is held to its promises on 1.26 by
``tests/kube/test_deploy_manifests.py``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.daemon import SCHEDULER, DaemonProcess, node, pod, wait_until
from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.client.rest import MERGE_PATCH, STRATEGIC_MERGE_PATCH, ApiError, RestClient

from .test_deploy_manifests import (
    MANIFESTS,
    NS,
    _status,
    _watch,
    create,
    documents,
    one,
    service_account_kubeconfig,
)

RESOURCE = "/apis/resource.k8s.io/v1"
WORKLOAD_NS = "team-a"
DRIVER = "gpu.example.com"
FINALIZER = "resource.kubernetes.io/delete-protection"
NO_BINDING = "policy-scheduler-no-binding"


def claims_path(name: str = "") -> str:
    return f"{RESOURCE}/namespaces/{WORKLOAD_NS}/resourceclaims" + (f"/{name}" if name else "")


def _seed(admin: RestClient) -> None:
    admin.post("/api/v1/namespaces", {"metadata": {"name": WORKLOAD_NS}})
    admin.post(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "gpu"}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    admin.post(f"{RESOURCE}/resourceslices", {"metadata": {"name": "n1-gpu"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}]}})
    for name in ("c1", "c2"):
        admin.post(claims_path(), {"metadata": {"name": name}, "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}}})
    admin.post(f"{RESOURCE}/namespaces/{WORKLOAD_NS}/resourceclaimtemplates", {"metadata": {"name": "t"}, "spec": {
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}})


def _no_binding_role() -> list[dict[str, Any]]:
    """The manifests' ClusterRole without ``resourceclaims/binding``, bound to a ServiceAccount of its own."""
    role = copy.deepcopy(one("ClusterRole", "policy-scheduler"))
    role["metadata"]["name"] = NO_BINDING
    for rule in role["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != "resourceclaims/binding"]
    binding = copy.deepcopy(one("ClusterRoleBinding", "policy-scheduler"))
    binding["metadata"]["name"] = NO_BINDING
    binding["roleRef"]["name"] = NO_BINDING
    binding["subjects"][0]["name"] = NO_BINDING
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NO_BINDING, "namespace": NS}}
    return [account, role, binding]


@pytest.fixture(scope="module")
def clients(envtest_pool):
    """(admin, scheduler, scheduler without the binding rule) on a 1.36 server holding the manifests."""
    with envtest_pool.leased("1.36") as server:
        admin = server.rest()
        create(admin, [doc for name in MANIFESTS for doc in documents(name)] + _no_binding_role())
        _seed(admin)
        accounts = []
        for account in (one("ServiceAccount")["metadata"]["name"], NO_BINDING):
            path = service_account_kubeconfig(server, admin, account)
            accounts.append(RestClient(api_client(str(path)), qps=0, burst=1))
        sa = accounts[0]
        # RBAC reaches the authorizer through its informers: wait for the first rule to be in force.
        deadline = time.monotonic() + 15
        while _status(lambda: sa.get(f"{RESOURCE}/resourceclaims", {"limit": 1})) == 403:
            assert time.monotonic() < deadline, "the ClusterRole never took effect"
            time.sleep(0.2)
        yield admin, sa, accounts[1], server.dir


def _allocation() -> dict[str, Any]:
    return {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}


def _reserve(client: RestClient, admin: RestClient, name: str) -> Callable[[], Any]:
    """What PreBind writes: the finalizer (update), then allocation and reservation (status update)."""
    def write() -> Any:
        claim = admin.get(claims_path(name))
        claim["metadata"]["finalizers"] = [FINALIZER]
        claim = client.put(claims_path(name), claim)
        claim["status"] = {"allocation": _allocation(),
                           "reservedFor": [{"resource": "pods", "name": "p1", "uid": "0b9d5c4e-0000-4000-8000-000000000001"}]}
        return client.put(claims_path(name) + "/status", claim)
    return write


def test_the_scheduler_may_make_every_dra_request_the_daemon_makes(clients):
    admin, sa, _, _ = clients
    checks: list[tuple[str, Callable[[], Any]]] = []
    for plural in ("deviceclasses", "resourceslices", "resourceclaims"):
        path = f"{RESOURCE}/{plural}"
        checks += [(f"list {plural}", lambda p=path: sa.get(p, {"limit": 1})),
                   (f"watch {plural}", lambda p=path: _watch(sa, p))]
    unreserve = {"metadata": {"uid": admin.get(claims_path("c1"))["metadata"]["uid"]},
                 "status": {"reservedFor": [{"$patch": "delete", "uid": "0b9d5c4e-0000-4000-8000-000000000001"}]}}
    checks += [
        ("get a claim (after a conflict)", lambda: sa.get(claims_path("c1"))),
        ("add the finalizer, then write allocation and reservation", _reserve(sa, admin, "c1")),
        ("Unreserve's patch of the status",
         lambda: sa.patch(claims_path("c1") + "/status", unreserve, STRATEGIC_MERGE_PATCH)),
    ]
    results = [(what, _status(call)) for what, call in checks]
    assert all(status == 200 for _, status in results), results
    claim = admin.get(claims_path("c1"))
    assert claim["metadata"]["finalizers"] == [FINALIZER]
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert not claim["status"].get("reservedFor"), "Unreserve's patch did not remove the pod"


def test_the_scheduler_is_refused_everything_else_on_resource_k8s_io(clients):
    admin, sa, _, _ = clients
    claim = {"metadata": {"name": "new"}, "spec": {"devices": {"requests": []}}}
    checks = [
        ("create a claim", lambda: sa.post(claims_path(), claim)),
        ("delete a claim", lambda: sa.delete(claims_path("c2"))),
        ("patch a claim", lambda: sa.patch(claims_path("c2"), {"metadata": {"labels": {"a": "b"}}}, MERGE_PATCH)),
        ("list templates", lambda: sa.get(f"{RESOURCE}/resourceclaimtemplates")),
        ("get a template", lambda: sa.get(f"{RESOURCE}/namespaces/{WORKLOAD_NS}/resourceclaimtemplates/t")),
        ("get a class", lambda: sa.get(f"{RESOURCE}/deviceclasses/gpu")),
        ("update a class", lambda: sa.put(f"{RESOURCE}/deviceclasses/gpu", admin.get(f"{RESOURCE}/deviceclasses/gpu"))),
        ("create a class", lambda: sa.post(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "x"}, "spec": {}})),
        ("update a slice", lambda: sa.put(f"{RESOURCE}/resourceslices/n1-gpu",
                                          admin.get(f"{RESOURCE}/resourceslices/n1-gpu"))),
        ("delete a slice", lambda: sa.delete(f"{RESOURCE}/resourceslices/n1-gpu")),
        ("create a slice", lambda: sa.post(f"{RESOURCE}/resourceslices", {"metadata": {"name": "x"}})),
    ]
    allowed = [f"{what}: {status}" for what, status in ((w, _status(c)) for w, c in checks) if status != 403]
    assert not allowed, "not refused: " + "; ".join(allowed)


def test_without_the_binding_rule_a_1_36_server_refuses_the_allocation(clients):
    admin, _, no_binding, _ = clients
    with pytest.raises(ApiError) as refused:
        _reserve(no_binding, admin, "c2")()
    assert 'requires resource="resourceclaims/binding", verb="update" permission' in refused.value.message
    assert not admin.get(claims_path("c2")).get("status", {}).get("allocation")


def test_the_daemon_allocates_a_device_with_this_rbac(clients, tmp_path):
    """``policy-scheduler run`` with the ServiceAccount's token on 1.36: it watches classes, slices and claims,
    writes the claim and binds the pod, without one refused request."""
    admin, _, _, server_dir = clients
    admin.post("/api/v1/nodes", node("n2"))
    admin.post(f"{RESOURCE}/resourceslices", {"metadata": {"name": "n2-gpu"}, "spec": {
        "driver": DRIVER, "nodeName": "n2", "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}]}})
    admin.post(claims_path(), {"metadata": {"name": "c3"}, "spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}}})
    body = pod("p-dra", cpu="100m", scheduler=SCHEDULER, resourceClaims=[{"name": "gpu", "resourceClaimName": "c3"}])
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    admin.post(f"/api/v1/namespaces/{WORKLOAD_NS}/pods", body)
    kubeconfig = str(Path(server_dir) / f"{one('ServiceAccount')['metadata']['name']}.kubeconfig")
    daemon = DaemonProcess(kubeconfig, tmp_path).start()
    try:
        wait_until(lambda: admin.get(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p-dra")["spec"].get("nodeName"), 30,
                   what="p-dra bound")
    finally:
        code = daemon.stop()
    log = daemon.log()
    assert code == 0, log[-3000:]
    assert admin.get(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p-dra")["spec"]["nodeName"] == "n2"
    claim = admin.get(claims_path("c3"))
    assert claim["status"]["allocation"]["devices"]["results"][0]["pool"] == "n2"
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p-dra"]
    assert "Forbidden" not in log and "forbidden" not in log and 'HTTP/1.1" 403 ' not in log, log[-3000:]
