"""The bundled modern-cluster example on a real 1.26 API server (scheduling gates and dynamic resource
allocation served): ``simulate`` on a snapshot read back from the server predicts what ``run`` then does,
for every row of the example's table at once — overhead and init containers on the nodes, topology
spread, a gated pod, a WaitForFirstConsumer claim (the test plays the provisioner) and a refused field (1.26's
classic form of ``resourceClaims``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from benchmarks.harness.daemon import Cluster, DaemonProcess, wait_until
from policy_scheduler.algorithm_source import from_provider
from policy_scheduler.kube.client.snapshot import read_cluster_snapshot
from policy_scheduler.offline.examples import modern_cluster_path
from policy_scheduler.offline.simulate import simulate

from .test_daemon_modern_pods import MODERN_ARGS
from .test_daemon_volumes import SELECTED_NODE, get_claim, provisioner_provisions

SCHEDULER_NAME = "default-scheduler"  # the example's pods name no scheduler


@pytest.fixture
def server(envtest_pool):
    with envtest_pool.leased("1.26", *MODERN_ARGS["1.26"]) as s:
        yield s


def example_objects() -> list[dict[str, Any]]:
    """The example's objects, in namespace ``default`` (the provisioner helpers' namespace), with 1.26's
    shape of ``resourceClaims``."""
    out = []
    for path in sorted(modern_cluster_path().glob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not obj:
                continue
            obj = copy.deepcopy(obj)
            if obj["metadata"].get("namespace"):
                obj["metadata"]["namespace"] = "default"
            for c in (obj.get("spec") or {}).get("resourceClaims") or ():
                c["source"] = {"resourceClaimName": c.pop("resourceClaimName")}
            out.append(obj)
    return out


PATHS = {"Node": "/api/v1/nodes", "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
         "PersistentVolumeClaim": "/api/v1/namespaces/default/persistentvolumeclaims",
         "Pod": "/api/v1/namespaces/default/pods"}


def test_run_does_what_simulate_predicts_for_the_modern_example(server, tmp_path):
    cluster = Cluster(server.rest())
    for obj in sorted(example_objects(), key=lambda o: list(PATHS).index(o["kind"])):
        cluster.rest.post(PATHS[obj["kind"]], obj)
    pending = {n for n, node_name in cluster.placements().items() if not node_name}
    assert pending == {"web-0", "web-1", "web-2", "web-3", "release-gate", "db-0", "gpu-inference"}

    result = simulate(read_cluster_snapshot(kubeconfig=server.kubeconfig),
                      lambda c: from_provider("DefaultProvider").build(c), scheduler_name=SCHEDULER_NAME)
    expected = {p.pod.name: p.node for p in result.placements}
    assert [p.name for p in result.gated] == ["release-gate"]
    assert expected["gpu-inference"] is None and expected["db-0"] == "b-2"

    daemon = DaemonProcess(server.kubeconfig, tmp_path, "--scheduler-name", SCHEDULER_NAME,
                           "--volume-bind-timeout=120").start()
    try:
        wait_until(lambda: (get_claim(cluster, "data-db-0")["metadata"].get("annotations") or {}).get(SELECTED_NODE),
                   60, what="the claim's selected node")
        assert provisioner_provisions(cluster, "data-db-0", "zonal-ssd") == "b-2"
        wait_until(lambda: all(cluster.placements().get(n) == node for n, node in expected.items() if node), 60,
                   what="every pod simulate placed, bound where it said")
        refused = wait_until(lambda: [e["message"] for e in cluster.events("FailedScheduling")
                                      if e["involvedObject"]["name"] == "gpu-inference"], 30, what="the refusal")
        assert refused[0].startswith("spec.resourceClaims[].source (classic dynamic resource allocation")
    finally:
        assert daemon.stop() == 0, daemon.log()
    placements = cluster.placements()
    assert {n: placements[n] for n in pending} == {n: expected.get(n) or "" for n in pending}
    condition = cluster.condition("release-gate")
    assert (condition["status"], condition["reason"]) == ("False", "SchedulingGated")
