"""A pod whose late-bound claim waits for provisioning (``WaitForFirstConsumer``): from 1.35 the scheduler
nominates the pod to its node (``status.nominatedNodeName``) before its VolumeBinding PreBind waits for the
volume (gate NominatedNodeNameForExpectation, beta and on), and the API server clears the nomination when it
binds the pod (ClearingNominatedNodeNameAfterBinding). Side by side with upstream's kube-scheduler of the same
line (``tests/kube/side_by_side.py``): on 1.36 both nominate the node they selected, on 1.32 neither does; the
test plays the external provisioner and the PV controller (``provisioner_provisions``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.harness.envtest import EnvtestServer

from .side_by_side import (  # noqa: F401 - the *_fixture names: for pytest to find
    cluster_fixture,
    expect,
    expect_bound,
    pool_class_fixture,
    pools_fixture,
    schedulers,
)
from .test_daemon_volumes import SELECTED_NODE, claim, get_claim, provisioner_provisions, storage_class

#: Whether the line's scheduler nominates before the PreBind that waits.
NOMINATING_LINES = {"1.32": False, "1.36": True}
WFFC = "wffc"


@pytest.fixture(params=NOMINATING_LINES, ids=lambda v: f"k8s-{v}")
def server(request, envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased(request.param) as s:
        yield s


def test_the_pod_is_nominated_while_its_volume_is_provisioned(server, cluster, pools, tmp_path):
    nominates = NOMINATING_LINES[server.version]
    cluster.rest.post("/apis/storage.k8s.io/v1/storageclasses", storage_class(WFFC, "WaitForFirstConsumer"))
    for pool in pools.values():
        pool.add_node("a")
        cluster.rest.post("/api/v1/namespaces/default/persistentvolumeclaims", claim(pool.n("data"), WFFC))
        pool.add_pod("web", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": pool.n("data")}}])
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            selected = expect(lambda pool=pool: (get_claim(cluster, pool.n("data"))["metadata"].get("annotations") or {}).get(
                SELECTED_NODE), f"{pool.n('data')}'s selected node", procs[name])
            assert selected == pool.n("a")
            waiting = pool.get("web")
            assert not waiting["spec"].get("nodeName"), (name, "bound before its volume")
            assert (waiting.get("status") or {}).get("nominatedNodeName") == (selected if nominates else None), (
                name, waiting.get("status"))
            provisioner_provisions(cluster, pool.n("data"), WFFC)
            assert expect_bound(pool, "web", procs[name], timeout=60) == selected
            assert "nominatedNodeName" not in (pool.get("web").get("status") or {}), (name, "nomination not cleared")
