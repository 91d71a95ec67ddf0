"""1.36's Binding copies the node's ``topology.kubernetes.io/zone`` and ``/region`` labels onto the pod (admission
plugin PodTopologyLabels, gate PodTopologyLabelsAdmission, beta and on since 1.35): the pod a scheduler assumed
is not the pod the API server bound. The daemon's cache takes a bound pod's labels from the API server's object
(the watch's confirmation), so that a pod whose affinity selects on those labels finds it. Side by side with
upstream's 1.36 kube-scheduler (``tests/kube/side_by_side.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.harness.envtest import EnvtestServer

from .side_by_side import (  # noqa: F401 - the *_fixture names: for pytest to find
    cluster_fixture,
    expect_bound,
    pool_class_fixture,
    pools_fixture,
    schedulers,
)

ZONE, REGION, HOSTNAME = "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "kubernetes.io/hostname"


@pytest.fixture
def server(envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased("1.36") as s:
        yield s


def test_a_bound_pod_carries_its_nodes_zone_and_the_cache_knows_it(server, pools, tmp_path):
    for pool in pools.values():
        pool.add_node("a", labels={ZONE: "z1", REGION: "r1"})
        pool.add_node("b", labels={ZONE: "z2", REGION: "r1"})
        pool.add_pod("first", labels={"app": pool.n("first")}, nodeSelector={HOSTNAME: pool.n("a")})
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            assert expect_bound(pool, "first", procs[name]) == pool.n("a")
            labels = pool.get("first")["metadata"]["labels"]
            assert (labels.get(ZONE), labels.get(REGION)) == ("z1", "r1"), (name, labels)
            # Only a pod that knows the admission's labels matches this term: the scheduler's assumed copy lacks them.
            term = {"labelSelector": {"matchLabels": {"app": pool.n("first"), ZONE: "z1"}}, "topologyKey": HOSTNAME}
            pool.add_pod("second", labels={"app": pool.n("second")}, nodeSelector={"pool": pool.name},
                         affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
            assert expect_bound(pool, "second", procs[name]) == pool.n("a")
