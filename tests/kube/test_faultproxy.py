"""The fault proxy against real API servers: plain forwarding, live watches, and each injected fault."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.faultproxy import FaultProxy
from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.client.rest import ApiError, RestClient, WatchStream

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def consume(stream: WatchStream) -> queue.Queue:
    """Iterate ``stream`` on a thread; events, then ("end", None) or ("error", ApiError), land in the queue."""
    out: queue.Queue = queue.Queue()

    def run() -> None:
        try:
            for event in stream:
                out.put(("event", event))
            out.put(("end", None))
        except ApiError as e:
            out.put(("error", e))

    threading.Thread(target=run, daemon=True).start()
    return out


def test_forwarding_and_live_watch(apiserver, proxy: FaultProxy, rest: RestClient) -> None:
    assert proxy.url.startswith("http://127.0.0.1:")
    created = rest.post(PODS, pod("a"))
    assert created["metadata"]["name"] == "a"
    assert rest.get(f"{PODS}/a")["metadata"]["uid"] == created["metadata"]["uid"]
    listed = rest.get(PODS)
    assert [p["metadata"]["name"] for p in listed["items"]] == ["a"]
    with pytest.raises(ApiError) as missing:
        rest.get(f"{PODS}/nope")
    assert missing.value.not_found

    # A watch is relayed live: an event for a pod created after the watch opened arrives.
    stream = rest.watch(PODS, {"resourceVersion": listed["metadata"]["resourceVersion"]}, read_timeout=30)
    events = consume(stream)
    rest.post(PODS, pod("b"))
    kind, event = events.get(timeout=10)
    assert kind == "event" and event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "b"

    # Cutting the open watch breaks the client's iteration (chunked stream without its terminator).
    deadline = time.monotonic() + 5
    while proxy.open_watches == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proxy.cut_watches(r"/pods$") == 1
    kind, error = events.get(timeout=10)
    assert kind == "error" and error.status == 0 and "broken" in error.message
    assert proxy.cut_watches() == 0

    # An armed cut: the next watch is cut after relaying its first event.
    proxy.cut_watches(r"/pods", after_events=1)
    events = consume(rest.watch(PODS, {"resourceVersion": listed["metadata"]["resourceVersion"]}, read_timeout=30))
    assert events.get(timeout=10)[1]["object"]["metadata"]["name"] == "b"
    assert events.get(timeout=10)[0] == "error"

    # The log: method, path with query, status returned.
    log = proxy.requests
    assert ("POST", PODS, 201) in log and ("GET", f"{PODS}/nope", 404) in log
    assert any(m == "GET" and "watch=true" in p and s == 200 for m, p, s in log)
    assert proxy.count("POST", r"/pods$") == 2
    assert proxy.count("GET", r"watch=true") == 2
    assert proxy.count("*", ".*") == len(log)


def test_injected_failures(apiserver, proxy: FaultProxy, rest: RestClient) -> None:
    rest.post(PODS, pod("p"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}

    # fail: answered by the proxy with a Status, not forwarded; the next request goes through.
    rule = proxy.fail("POST", r"/pods/p/binding$", 500)
    with pytest.raises(ApiError) as failed:
        rest.post(f"{PODS}/p/binding", binding)
    assert (failed.value.status, failed.value.reason) == (500, "InternalError")
    assert rule.hits == 1
    assert rest.get(f"{PODS}/p")["spec"].get("nodeName") is None
    rest.post(f"{PODS}/p/binding", binding)
    assert rest.get(f"{PODS}/p")["spec"]["nodeName"] == "n1"
    assert rule.hits == 1
    assert [s for m, p, s in proxy.requests if p.endswith("/binding")] == [500, 201]

    forever = proxy.fail("PUT", r"/pods/", 409, times=-1, body={"kind": "Status", "message": "custom", "code": 409})
    for _ in range(2):
        with pytest.raises(ApiError) as conflict:
            rest.put(f"{PODS}/p", {})
        assert conflict.value.conflict and conflict.value.message == "custom"
    assert forever.hits == 2

    # gone_on_list / gone_on_watch: what a real server says about a compacted resourceVersion.
    proxy.gone_on_list(r"/pods$")
    with pytest.raises(ApiError) as gone:
        rest.get(PODS)
    assert gone.value.gone and gone.value.reason == "Expired"
    assert rest.get(PODS)["items"]

    proxy.gone_on_watch(r"/pods$")
    events = list(rest.watch(PODS, {"resourceVersion": "1"}, read_timeout=10))
    assert events == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "too old resource version: 1 (2)", "reason": "Expired", "code": 410}}]

    # delay: forwarded after the pause.
    slow = proxy.delay("GET", r"/pods/p$", 0.5)
    started = time.monotonic()
    assert rest.get(f"{PODS}/p")["metadata"]["name"] == "p"
    assert time.monotonic() - started >= 0.5 and slow.hits == 1

    # refuse: a quick 503 for everything until turned off.
    proxy.refuse(True)
    with pytest.raises(ApiError) as refused:
        rest.get(PODS)
    assert refused.value.status == 503 and refused.value.reason == "ServiceUnavailable"
    proxy.refuse(False)
    assert rest.get(PODS)["items"]


def test_dropped_replies(apiserver, proxy: FaultProxy, rest: RestClient) -> None:
    """drop_reply: the client sees its connection reset (status 0, no reply) whether or not the request took
    effect; the log tells which."""
    rest.post(PODS, pod("d"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "d"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    proxy.drop_reply("POST", r"/pods/d/binding$", forward=False)
    with pytest.raises(ApiError) as lost:
        rest.post(f"{PODS}/d/binding", binding)
    assert lost.value.status == 0 and lost.value.unavailable
    assert rest.get(f"{PODS}/d")["spec"].get("nodeName") is None  # not forwarded: nothing happened

    rule = proxy.drop_reply("POST", r"/pods/d/binding$")
    with pytest.raises(ApiError) as lost:
        rest.post(f"{PODS}/d/binding", binding)
    assert lost.value.status == 0
    assert rest.get(f"{PODS}/d")["spec"]["nodeName"] == "n1"  # forwarded: the server bound it
    assert rule.hits == 1
    assert [s for m, p, s in proxy.requests if p.endswith("/binding")] == [0, 201]
    with pytest.raises(ApiError) as conflict:  # the connection pool recovers; the binding stays
        rest.post(f"{PODS}/d/binding", binding)
    assert conflict.value.conflict


def test_blackhole_and_stop(apiserver, proxy: FaultProxy, rest: RestClient, tmp_path: Path) -> None:
    quick = RestClient(api_client(proxy.write_kubeconfig(tmp_path / "quick.kubeconfig")), qps=0, timeout=0.3)
    proxy.blackhole(True)
    started = time.monotonic()
    with pytest.raises(ApiError) as hung:
        quick.get(PODS)
    assert hung.value.status == 0 and "timed out" in hung.value.message.lower()
    assert time.monotonic() - started < 5
    proxy.blackhole(False)
    assert quick.get(PODS)["items"] == []
    assert any(s == 0 for _, _, s in proxy.requests)

    # stop cuts open streams too.
    events = consume(rest.watch(PODS, {}, read_timeout=30))
    deadline = time.monotonic() + 5
    while proxy.open_watches == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    proxy.stop()
    assert events.get(timeout=10)[0] == "error"
