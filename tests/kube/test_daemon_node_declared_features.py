"""NodeDeclaredFeatures (1.36 beta, on by default), side by side with upstream's 1.36 kube-scheduler on a real
1.36 API server (``tests/kube/side_by_side.py``: a pool of nodes per scheduler, both running at once).

A node says what it supports in ``status.declaredFeatures``; a pod whose container has a restart rule with
action ``RestartAllContainers`` needs ``RestartAllContainersOnContainerExits``, one with ``hostNetwork`` and
``hostUsers: false`` needs ``UserNamespacesHostNetworkSupport`` (that pod is accepted only with the API
server's alpha gate of the same name, turned on here; the scheduler's inference reads no gate). Each
scheduler must leave the pod pending on a node that does not declare the feature, with upstream's reason
``node(s) didn't match Pod's required features``, then bind it to the node that does, once a node declaring
it is added or once its node's declared features are updated (our daemon must not take that update for a
kubelet heartbeat). ``--rules 1.9`` ignores the features, as 1.9 did. The API server refuses a malformed
list with the message a snapshot gets (``model/node_features.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.daemon import DaemonProcess, node
from benchmarks.harness.envtest import EnvtestServer
from policy_scheduler.errors import ObjectError
from policy_scheduler.kube.client.rest import ApiError
from policy_scheduler.model.node import Node
from policy_scheduler.model.node_features import RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK
from policy_scheduler.predicates.node_declared_features import ERR_REASON_UNSATISFIED_REQUIREMENTS

from .side_by_side import (  # noqa: F401 - the *_fixture names: for pytest to find
    Pool,
    cluster_fixture,
    expect_bound,
    expect_pending,
    pool_class_fixture,
    pools_fixture,
    running,
    schedulers,
)

#: The server keeps ``hostNetwork`` with ``hostUsers: false`` only with this alpha gate (1.35+).
APISERVER_ARGS = ("--apiserver-arg=--feature-gates=UserNamespacesHostNetworkSupport=true",)

#: Upstream may have backed the pod off (1 s, doubling) before the event that frees it.
REQUEUE_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def server(envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased("1.36", *APISERVER_ARGS) as s:
        yield s


def declaring(*features: str):
    """A ``Pool.add_node`` decoration: the node declares ``features`` (sorted, as the kubelet writes them)."""
    def decorate(obj: dict[str, Any]) -> dict[str, Any]:
        obj["status"]["declaredFeatures"] = sorted(features)
        return obj
    return decorate


def restart_all_containers() -> dict[str, Any]:
    """The spec of a pod whose container restarts them all on exit code 42."""
    return {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9", "restartPolicy": "Never",
                            "resources": {"requests": {"cpu": "100m", "memory": "10Mi"}},
                            "restartPolicyRules": [{"action": "RestartAllContainers",
                                                    "exitCodes": {"operator": "In", "values": [42]}}]}]}


def host_network_user_namespace() -> dict[str, Any]:
    return {"hostNetwork": True, "hostUsers": False}


#: kind -> (the feature the pod needs, its spec)
KINDS = {
    "restart-all-containers": (RESTART_ALL_CONTAINERS, restart_all_containers),
    "host-network-user-namespace": (USER_NAMESPACES_HOST_NETWORK, host_network_user_namespace),
}


def case(name: str) -> dict[str, str]:
    """The label that keeps one test's pods on that test's nodes (the server serves the whole module)."""
    return {"case": name}


def add_pod(pool: Pool, suffix: str, spec: dict[str, Any]) -> None:
    pool.add_pod(suffix, nodeSelector={"pool": pool.name, **case(suffix)}, **spec)


@pytest.mark.parametrize("kind", KINDS)
def test_pending_without_the_feature_then_bound_to_the_node_declaring_it(server, cluster, pools, tmp_path, kind):
    feature = KINDS[kind][0]
    for pool in pools.values():
        # "a-..." sorts first: with the features ignored it would win every tie.
        pool.add_node(f"{kind}-a-plain", declaring("ExtendWebSocketsToKubelet"), labels=case(kind))
        add_pod(pool, kind, KINDS[kind][1]())
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            expect_pending(pool, kind, procs[name], reason=ERR_REASON_UNSATISFIED_REQUIREMENTS)
        for pool in pools.values():
            pool.add_node(f"{kind}-b-declares", declaring(feature), labels=case(kind))
        for name, pool in pools.items():
            where = expect_bound(pool, kind, procs[name], timeout=REQUEUE_TIMEOUT)
            assert where == pool.n(f"{kind}-b-declares")


def test_an_update_of_the_declared_features_retries_the_waiting_pod(server, cluster, pools, tmp_path):
    """Upstream's ``UpdateNodeDeclaredFeature`` event requeues the pod; our daemon's node fingerprint keeps
    ``status.declaredFeatures``, so the update is no heartbeat."""
    for pool in pools.values():
        pool.add_node("update-a", labels=case("update"))
        add_pod(pool, "update", restart_all_containers())
    with schedulers(server, tmp_path) as procs:
        for name, pool in pools.items():
            expect_pending(pool, "update", procs[name], reason=ERR_REASON_UNSATISFIED_REQUIREMENTS)
        for pool in pools.values():
            path = f"/api/v1/nodes/{pool.n('update-a')}"
            obj = cluster.rest.get(path)
            obj["status"]["declaredFeatures"] = [RESTART_ALL_CONTAINERS]
            cluster.rest.put(f"{path}/status", obj)
        for name, pool in pools.items():
            assert expect_bound(pool, "update", procs[name], timeout=REQUEUE_TIMEOUT) == pool.n("update-a")


def test_rules_1_9_ignores_the_features(server, cluster, tmp_path: Path):
    pool = Pool(cluster, "ours")
    pool.add_node("legacy-a", labels=case("legacy"))
    add_pod(pool, "legacy", restart_all_containers())
    daemon = DaemonProcess(server.kubeconfig, tmp_path, "--rules", "1.9")
    with running(daemon) as exit_codes:
        assert expect_bound(pool, "legacy", daemon) == pool.n("legacy-a")
    assert exit_codes[daemon.log_path.name] == 0, daemon.log()[-4000:]


@pytest.mark.parametrize("declared", [
    ["MyFeature", "AnotherFeature"],
    ["MyFeature", "MyFeature"],
    ["myFeature"],
])
def test_the_api_server_refuses_what_a_snapshot_refuses(cluster, declared):
    obj = node(f"bad-{len(declared)}-{declared[-1].lower()}")
    obj["status"]["declaredFeatures"] = declared
    with pytest.raises(ObjectError) as ours:
        Node(obj)
    with pytest.raises(ApiError) as theirs:
        cluster.add_node(obj)
    assert theirs.value.status == 422
    assert f"{ours.value.field}: {ours.value.detail}" in theirs.value.message, (ours.value, theirs.value.message)
