"""The API server's reachability against real API servers (1.10: ``/healthz``; 1.26: ``/readyz``) behind the
fault proxy: a failed request makes the prober look, an outage is found, the clock of assumed pods stands
still, and whoever waits (an informer in its back-off, the scheduling loop) is woken as soon as the server
is back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.harness.daemon import wait_until
from benchmarks.harness.faultproxy import FaultProxy
from policy_scheduler.kube.client.informer import Reflector
from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.client.reachability import Reachability
from policy_scheduler.kube.client.rest import ApiError, RestClient
from policy_scheduler.kube.metrics import SchedulerMetrics

NODES = "/api/v1/nodes"


@pytest.fixture
def reachability(rest: RestClient) -> Iterator[Reachability]:
    tracker = Reachability(rest, SchedulerMetrics(), probe_interval=0.1)
    rest.on_unavailable = tracker.suspect
    yield tracker
    tracker.stop()


def probes(proxy: FaultProxy) -> list[tuple[str, int]]:
    return [(path, status) for method, path, status in proxy.requests if path in ("/readyz", "/healthz")]


def test_an_outage_is_found_counted_and_ends_at_the_first_good_probe(apiserver, proxy, rest, reachability):
    metrics = reachability.metrics
    assert metrics is not None
    rest.get(NODES)
    assert reachability.reachable and probes(proxy) == []  # nothing failed: nobody probes

    proxy.refuse(True)  # every request (probes included) gets a quick 503
    with pytest.raises(ApiError):
        rest.get(NODES)
    wait_until(lambda: not reachability.reachable, 5, interval=0.01, what="the outage found")
    assert metrics.api_server_reachable._value.get() == 0 and metrics.api_server_outages._value.get() == 1
    frozen = reachability.clock()
    time.sleep(0.5)
    assert reachability.clock() - frozen < 0.05  # assumed pods do not age while the server is away

    woken: list[float] = []
    stop = threading.Event()
    waiter = threading.Thread(target=lambda: (reachability.wait_retry(60.0, stop), woken.append(time.monotonic())))
    waiter.start()
    time.sleep(0.3)
    assert not woken
    back = time.monotonic()
    proxy.refuse(False)
    waiter.join(10)
    assert woken, "a 60 s back-off was not cut short by the server's return"
    assert reachability.reachable and reachability.recoveries == 1
    assert metrics.api_server_reachable._value.get() == 1 and metrics.api_server_outages._value.get() == 1
    assert reachability.clock() - frozen < time.monotonic() - back + 0.3

    # The readiness endpoint each version has: 1.26 answers /readyz; 1.10 has none (404) and is asked /healthz.
    if apiserver.version == "1.10":
        assert probes(proxy)[-2:] == [("/readyz", 404), ("/healthz", 200)]
        assert {status for path, status in probes(proxy)[:-2]} == {503}
    else:
        assert probes(proxy)[-1] == ("/readyz", 200)
        assert {status for path, status in probes(proxy)[:-1]} == {503}


def test_an_informer_reconnects_when_the_server_returns_not_after_its_backoff(apiserver, proxy, rest, reachability):
    seen: list[str] = []

    class Handler:
        def on_add(self, obj: dict[str, Any]) -> None:
            seen.append(obj["metadata"]["name"])

        def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
            pass

        def on_delete(self, obj: dict[str, Any]) -> None:
            pass

    # A back-off of a minute: only the server's return can bring this informer back within the test.
    reflector = Reflector(rest, NODES, Handler(), name="nodes", backoff=(60.0, 60.0),
                          reachability=reachability).start()
    try:
        wait_until(lambda: reflector.synced.is_set() and proxy.open_watches == 1, 10, what="the informer watching")
        proxy.refuse(True)
        proxy.cut_watches()
        wait_until(lambda: not reachability.reachable, 5, interval=0.01, what="the outage found")
        admin = RestClient(api_client(apiserver.kubeconfig), qps=0)
        admin.post(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "while-away"}})
        time.sleep(1.0)
        proxy.refuse(False)
        wait_until(lambda: "while-away" in seen, 20, what="the node created during the outage")
        assert reachability.recoveries == 1
    finally:
        reflector.stop()
