"""``--from-cluster`` on a real 1.36 API server holding DRA objects: the snapshot has its DeviceClasses,
ResourceSlices, ResourceClaims and ResourceClaimTemplates, and ``simulate`` allocates from them as ``run`` does
(the device on the node whose slice holds it); a 1.32 server, which serves no ``resource.k8s.io/v1``, is read
without them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, node, pod, wait_until
from policy_scheduler.cli import main
from policy_scheduler.kube.client.snapshot import read_cluster_snapshot

RESOURCE = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def dra_objects(cluster: Cluster) -> None:
    for name in ("n1", "n2"):
        cluster.add_node(node(name))
    cluster.rest.post(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "gpu"}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    cluster.rest.post(f"{RESOURCE}/resourceslices", {"metadata": {"name": "n2-gpu"}, "spec": {
        "driver": DRIVER, "nodeName": "n2", "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}]}})
    requests = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
    cluster.rest.post(f"{RESOURCE}/namespaces/default/resourceclaims", {"metadata": {"name": "c"}, "spec": requests})
    cluster.rest.post(f"{RESOURCE}/namespaces/default/resourceclaimtemplates",
                      {"metadata": {"name": "t"}, "spec": {"spec": requests}})
    body = pod("p", cpu="100m", scheduler="default-scheduler", resourceClaims=[{"name": "gpu", "resourceClaimName": "c"}])
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    cluster.add_pod(body)


def test_the_snapshot_of_a_1_36_server_has_its_dra_objects_and_simulate_allocates(envtest_pool):
    with envtest_pool.leased("1.36") as server:
        dra_objects(Cluster(server.rest()))
        snapshot = read_cluster_snapshot(server.kubeconfig)
        live = CliRunner().invoke(main, ["simulate", "--from-cluster", "--kubeconfig", server.kubeconfig, "-o", "json"])
    assert [c.name for c in snapshot.device_classes] == ["gpu"]
    assert [s.name for s in snapshot.resource_slices] == ["n2-gpu"]
    assert [c.name for c in snapshot.resource_claims] == ["c"]
    assert [t.name for t in snapshot.resource_claim_templates] == ["t"]
    assert live.exit_code == 0, live.output
    (placement,) = json.loads(live.output)["placements"]
    assert placement["node"] == "n2", placement


def test_a_server_without_resource_k8s_io_v1_is_read_without_dra_objects(envtest_pool):
    with envtest_pool.leased("1.32") as server:
        Cluster(server.rest()).add_node(node("n1"))
        snapshot = read_cluster_snapshot(server.kubeconfig)
    assert snapshot.device_classes == [] and snapshot.resource_claims == [] and [n.name for n in snapshot.nodes] == ["n1"]


def test_simulate_from_cluster_predicts_run(envtest_pool, tmp_path):
    """Three pods with claims by name for three devices: ``simulate --from-cluster`` on the snapshot places them
    where ``run`` then binds them, and leaves pending the one ``run`` leaves pending."""
    with envtest_pool.leased("1.36") as server:
        cluster = Cluster(server.rest())
        for name in ("n1", "n2"):
            cluster.add_node(node(name))
        cluster.rest.post(f"{RESOURCE}/deviceclasses", {"metadata": {"name": "gpu"}, "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
        for name, models in (("n1", ("a", "a")), ("n2", ("b",))):
            cluster.rest.post(f"{RESOURCE}/resourceslices", {"metadata": {"name": f"{name}-gpu"}, "spec": {
                "driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}", "attributes": {f"{DRIVER}/model": {"string": m}}}
                            for i, m in enumerate(models)]}})
        wants = {"p1": (1, 'device.attributes["gpu.example.com"].model == "b"'), "p2": (2, "true"), "p3": (1, "true")}
        for name, (count, selector) in wants.items():
            cluster.rest.post(f"{RESOURCE}/namespaces/default/resourceclaims", {"metadata": {"name": f"{name}-gpu"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": "gpu", "count": count, "selectors": [{"cel": {"expression": selector}}]}}]}}})
            body = pod(name, cpu="100m", resourceClaims=[{"name": "gpu", "resourceClaimName": f"{name}-gpu"}])
            body["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
            cluster.add_pod(body)
        simulated = CliRunner().invoke(main, ["simulate", "--from-cluster", "--kubeconfig", server.kubeconfig,
                                              "--scheduler-name", SCHEDULER, "-o", "json"])
        assert simulated.exit_code == 0, simulated.output
        predicted = {p["pod"].split("/")[-1]: p["node"] for p in json.loads(simulated.output)["placements"]}
        daemon = DaemonProcess(server.kubeconfig, tmp_path).start()
        try:
            wait_until(lambda: len(cluster.bound()) == 2, 30, what="p1 and p2 bound")
            wait_until(lambda: cluster.events("FailedScheduling"), 30, what="p3 tried")
        finally:
            assert daemon.stop() == 0, daemon.log()[-3000:]
        placed = {name: cluster.placements()[name] or None for name in wants}
        devices = {name: [(r["pool"], r["device"]) for r in cluster.rest.get(
            f"{RESOURCE}/namespaces/default/resourceclaims/{name}-gpu").get("status", {}).get("allocation", {}).get(
            "devices", {}).get("results", [])] for name in wants}
    assert predicted == placed == {"p1": "n2", "p2": "n1", "p3": None}
    assert devices == {"p1": [("n2", "gpu-0")], "p2": [("n1", "gpu-0"), ("n1", "gpu-1")], "p3": []}
