"""``policy-scheduler run`` with a binding HTTP extender, against real API servers (1.10 and 1.26).

The example extender (``examples/extender``) runs on 127.0.0.1 with its own client of the API server: it
filters, prioritizes and binds. The daemon talks to the API server through a :class:`FaultProxy`, so the
test can check that the daemon made no ``pods/binding`` call of its own: the extender bound every pod.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.harness.daemon import Cluster, DaemonProcess, node, pod, wait_until
from benchmarks.harness.faultproxy import FaultProxy
from examples.extender.server import ExampleExtender, ExtenderServer, NodeLabels, kube_api

BINDING = r"/binding$"


@pytest.fixture
def proxy(apiserver) -> Iterator[FaultProxy]:
    p = FaultProxy(apiserver.kubeconfig).start()
    yield p
    p.stop()


@pytest.fixture
def cluster(apiserver) -> Cluster:
    return Cluster(apiserver.rest())


@pytest.fixture
def extender(apiserver) -> Iterator[ExtenderServer]:
    """The example extender, binding through the API server directly (not through the proxy)."""
    api = kube_api(apiserver.kubeconfig)
    server = ExtenderServer(("127.0.0.1", 0), ExampleExtender(NodeLabels(api), api)).start()
    yield server
    server.stop()


def _policy(tmp_path: Path, url: str) -> str:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({
        "kind": "Policy", "apiVersion": "v1",
        "predicates": [{"name": "PodFitsResources"}, {"name": "PodToleratesNodeTaints"}],
        "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
        "extenders": [{"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 5,
                       "bindVerb": "bind", "nodeCacheCapable": True, "httpTimeout": 5_000_000_000}],
    }))
    return str(path)


def _nodes(cluster: Cluster) -> None:
    cluster.add_node(node("node-0", labels={"example.com/maintenance": "true", "example.com/score": "10"}))
    cluster.add_node(node("node-1", labels={"example.com/score": "3"}))
    cluster.add_node(node("node-2", labels={"example.com/score": "8"}))


def _wait(daemon: DaemonProcess, check, timeout: float, what: str):
    """``wait_until``, with the end of the daemon's log in the failure message."""
    try:
        return wait_until(check, timeout=timeout, what=what)
    except AssertionError as e:
        raise AssertionError(f"{e}; the daemon's log ends:\n{daemon.log()[-6000:]}") from None


def _events(cluster: Cluster, reason: str, name: str) -> list[str]:
    return [e["message"] for e in cluster.events(reason) if e["involvedObject"]["name"] == name]


def test_the_binding_extender_binds_instead_of_the_api_server(proxy, cluster, extender, tmp_path):
    _nodes(cluster)
    daemon = DaemonProcess(proxy.write_kubeconfig(tmp_path / "daemon.kubeconfig"), tmp_path,
                           "--policy-config-file", _policy(tmp_path, extender.url)).start()
    try:
        daemon.wait_healthy()
        names = [f"web-{i}" for i in range(4)]
        for name in names:
            cluster.add_pod(pod(name, cpu="200m"))
        bound = _wait(daemon, lambda: (b := cluster.bound()) and len(b) == len(names) and b, 60, "every pod bound")
        # node-0 is in maintenance; node-2's score 8 x weight 5 wins over LeastRequested's spread.
        assert bound == {name: "node-2" for name in names}
        assert proxy.count("POST", BINDING) == 0, "the daemon bound a pod itself"
        binds = [args for verb, args in extender.extender.requests if verb == "bind"]
        assert sorted(args["PodName"] for args in binds) == names
        assert all(args["Node"] == "node-2" and args["PodNamespace"] == "default" and args["PodUID"] for args in binds)
        filters = [args for verb, args in extender.extender.requests if verb == "filter"]
        assert all(set(args) == {"pod", "nodenames"} for args in filters)
        wait_until(lambda: all(_events(cluster, "Scheduled", name) for name in names), what="Scheduled events")
        assert _events(cluster, "Scheduled", "web-0") == ["Successfully assigned web-0 to node-2"]
        assert 'scheduler_binding_outcomes_total{outcome="success"} 4.0' in daemon.metrics()
        assert daemon.stop() == 0, daemon.log()
        assert "Traceback" not in daemon.log()
    finally:
        daemon.kill()


def test_a_bind_error_forgets_and_requeues_the_pod(proxy, cluster, extender, tmp_path):
    _nodes(cluster)
    extender.extender.faults["bind"] = {"body": b'{"Error": "rack power budget exceeded"}'}
    daemon = DaemonProcess(proxy.write_kubeconfig(tmp_path / "daemon.kubeconfig"), tmp_path,
                           "--policy-config-file", _policy(tmp_path, extender.url)).start()
    try:
        daemon.wait_healthy()
        cluster.add_pod(pod("db", cpu="200m"))
        messages = _wait(daemon, lambda: _events(cluster, "FailedScheduling", "db"), 30, "FailedScheduling event")
        assert "Binding rejected: rack power budget exceeded" in messages
        metrics = daemon.metrics()
        assert re.search(r'scheduler_extender_errors_total\{extender="[^"]+",ignored="false",verb="bind"\} [1-9]',
                         metrics), metrics
        del extender.extender.faults["bind"]
        _wait(daemon, lambda: cluster.bound().get("db") == "node-2", 60, "db bound after the back-off")
        assert proxy.count("POST", BINDING) == 0
        assert daemon.stop() == 0, daemon.log()
    finally:
        daemon.kill()
