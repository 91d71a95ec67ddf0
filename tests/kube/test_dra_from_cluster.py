"""``--from-cluster`` on a real 1.36 API server holding DRA objects: the snapshot has its DeviceClasses,
ResourceSlices, ResourceClaims and ResourceClaimTemplates, and ``simulate`` allocates from them as ``run`` does
(the device on the node whose slice holds it); a 1.32 server, which serves no ``resource.k8s.io/v1``, is read
without them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from benchmarks.harness.daemon import Cluster, node, pod
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
