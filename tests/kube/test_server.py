"""The daemon's HTTP endpoint and metrics, exercised over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from policy_scheduler.kube.metrics import SCHEDULER_BUCKETS, SchedulerMetrics, microseconds
from policy_scheduler.kube.serving.server import SchedulerServer

BUCKET_LABELS = [
    "1000.0", "2000.0", "4000.0", "8000.0", "16000.0", "32000.0", "64000.0", "128000.0", "256000.0",
    "512000.0", "1.024e+06", "2.048e+06", "4.096e+06", "8.192e+06", "1.6384e+07", "+Inf",
]  # fmt: skip
HISTOGRAMS = {
    "scheduler_e2e_scheduling_latency_microseconds": "E2e scheduling latency (scheduling algorithm + binding)",
    "scheduler_scheduling_algorithm_latency_microseconds": "Scheduling algorithm latency",
    "scheduler_binding_latency_microseconds": "Binding latency",
}


def get(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def fetch(port: int, path: str) -> tuple[int, str]:
    status, _, body = get(port, path)
    return status, body


def server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("healthz-")]


@pytest.fixture
def serve():
    """Start a server on a free port; returns (server, port). Every server is stopped afterwards."""
    started: list[SchedulerServer] = []

    def start(**kwargs) -> tuple[SchedulerServer, int]:
        kwargs.setdefault("metrics", SchedulerMetrics())
        kwargs.setdefault("configz", lambda: {"schedulerName": "default-scheduler"})
        server = SchedulerServer("127.0.0.1", 0, **kwargs)
        started.append(server)
        server.start()
        port = server.wait_bound(5)
        assert port
        return server, port

    yield start
    for server in started:
        server.stop()


def test_healthz_ok(serve):
    _, port = serve()
    status, headers, body = get(port, "/healthz")
    assert (status, body) == (200, "ok")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert fetch(port, "/healthz?verbose") == (200, "[+]ping ok\nhealthz check passed\n")
    assert fetch(port, "/healthz/ping") == (200, "ok")
    assert get(port, "/healthz/")[0] == 404
    assert get(port, "/healthz/nope")[0] == 404


def test_healthz_failing_check(serve):
    reasons: dict[str, str | None] = {"leader": "lease lost"}

    def boom() -> str | None:
        raise RuntimeError("cache broken")

    _, port = serve(checks={"informers": lambda: None, "leader": lambda: reasons["leader"], "cache": boom})
    status, _, body = get(port, "/healthz")
    assert status == 500
    assert body == (
        "[+]ping ok\n[+]informers ok\n[-]leader failed: reason withheld\n[-]cache failed: reason withheld\n"
        "healthz check failed\n"
    )
    status, _, body = get(port, "/healthz?verbose")
    assert status == 500
    assert body == (
        "[+]ping ok\n[+]informers ok\n[-]leader failed: lease lost\n"
        "[-]cache failed: RuntimeError: cache broken\nhealthz check failed\n"
    )
    assert fetch(port, "/healthz/leader") == (500, "internal server error: lease lost\n")
    assert fetch(port, "/healthz/informers") == (200, "ok")
    assert fetch(port, "/healthz/ping") == (200, "ok")
    # checks are evaluated per request
    reasons["leader"] = None
    assert fetch(port, "/healthz/leader") == (200, "ok")


def test_livez_and_readyz_have_their_own_checks(serve):
    synced = {"ok": False}
    _, port = serve(checks={"informer-sync": lambda: None if synced["ok"] else "not synced"},
                    livez_checks={"leader-election": lambda: None},
                    readyz_checks={"informer-sync": lambda: None if synced["ok"] else "not synced",
                                   "shutdown": lambda: None})
    assert fetch(port, "/livez?verbose") == (200, "[+]ping ok\n[+]leader-election ok\nlivez check passed\n")
    assert fetch(port, "/readyz") == (500, "[+]ping ok\n[-]informer-sync failed: reason withheld\n[+]shutdown ok\n"
                                           "readyz check failed\n")
    assert fetch(port, "/readyz/informer-sync") == (500, "internal server error: not synced\n")
    assert fetch(port, "/livez/informer-sync")[0] == 404  # not a liveness check
    synced["ok"] = True
    assert fetch(port, "/readyz") == (200, "ok") and fetch(port, "/healthz") == (200, "ok")


def test_paths_limit_what_is_served(serve):
    _, port = serve(paths=("/healthz", "/livez", "/readyz"), profiling=True)
    assert [get(port, p)[0] for p in ("/healthz", "/healthz/ping", "/livez", "/readyz", "/metrics", "/configz",
                                      "/debug/pprof/", "/healthzx")] == [200, 200, 200, 200, 404, 404, 404, 404]


def test_invalid_check_names_rejected():
    for name in ("ping", "", "a/b"):
        with pytest.raises(ValueError):
            SchedulerServer(
                "127.0.0.1", 0, metrics=SchedulerMetrics(), configz=dict, checks={name: lambda: None}
            )


def test_metrics_exposition(serve):
    metrics = SchedulerMetrics()
    metrics.e2e_scheduling_latency.observe(microseconds(0, 1_500_999))  # 1500 us
    metrics.scheduling_algorithm_latency.observe(microseconds(10, 20_000_000))
    metrics.binding_latency.observe(20_000_000.0)  # beyond the last bucket
    metrics.pending_pods.labels(queue="active").set(3)
    metrics.schedule_attempts.labels(result="scheduled").inc()
    metrics.bind_outcomes.labels(outcome="conflict").inc(2)
    metrics.policy_reloads.labels(result="rejected").inc()
    metrics.leader.set(1)
    metrics.observe_request("get", "/api/v1/nodes", "10.0.0.1:6443", 200, 0.003)
    metrics.observe_request(
        "POST", "/api/v1/namespaces/{namespace}/pods/{name}/binding", "10.0.0.1:6443", 0, 1.0
    )
    _, port = serve(metrics=metrics)
    status, headers, body = get(port, "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    lines = body.splitlines()
    for name, help_text in HISTOGRAMS.items():
        assert f"# HELP {name} {help_text}" in lines
        assert f"# TYPE {name} histogram" in lines
        buckets = [re.fullmatch(rf'{name}_bucket\{{le="([^"]+)"\}} \S+', line) for line in lines]
        assert [m.group(1) for m in buckets if m] == BUCKET_LABELS
    assert [float(b) for b in BUCKET_LABELS[:-1]] == list(SCHEDULER_BUCKETS)
    assert 'scheduler_e2e_scheduling_latency_microseconds_bucket{le="1000.0"} 0.0' in lines
    assert 'scheduler_e2e_scheduling_latency_microseconds_bucket{le="2000.0"} 1.0' in lines
    assert "scheduler_e2e_scheduling_latency_microseconds_sum 1500.0" in lines
    assert "scheduler_scheduling_algorithm_latency_microseconds_sum 19999.0" in lines
    assert 'scheduler_binding_latency_microseconds_bucket{le="1.6384e+07"} 0.0' in lines
    assert 'scheduler_binding_latency_microseconds_bucket{le="+Inf"} 1.0' in lines
    assert 'scheduler_pending_pods{queue="active"} 3.0' in lines
    assert 'scheduler_pending_pods{queue="unschedulable"} 0.0' in lines
    assert 'scheduler_schedule_attempts_total{result="scheduled"} 1.0' in lines
    assert 'scheduler_schedule_attempts_total{result="error"} 0.0' in lines
    assert 'scheduler_binding_outcomes_total{outcome="conflict"} 2.0' in lines
    assert 'scheduler_binding_outcomes_total{outcome="unbound"} 0.0' in lines
    assert "scheduler_binding_unknown_outcomes_total 0.0" in lines
    assert "scheduler_api_server_reachable 1.0" in lines
    assert 'scheduler_binding_outcomes_total{outcome="volume_binding_failed"} 0.0' in lines
    assert 'scheduler_policy_reloads_total{result="rejected"} 1.0' in lines
    assert "scheduler_leader_is_leader 1.0" in lines
    assert 'rest_client_requests_total{code="200",host="10.0.0.1:6443",method="GET"} 1.0' in lines
    assert 'rest_client_requests_total{code="<error>",host="10.0.0.1:6443",method="POST"} 1.0' in lines
    assert (
        'rest_client_request_latency_seconds_bucket{le="0.004",url="/api/v1/nodes",verb="GET"} 1.0' in lines
    )
    assert any(line.startswith("process_cpu_seconds_total ") for line in lines)
    assert any(line.startswith("python_info{") for line in lines)
    assert not any("_created" in line for line in lines)


def test_metrics_instances_are_independent():
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.leader.set(1)
    assert b"scheduler_leader_is_leader 0.0" in b.exposition()[0]
    assert b"scheduler_leader_is_leader 1.0" in a.exposition()[0]


def test_microseconds_truncates_like_go():
    assert microseconds(0, 1999) == 1.0
    assert microseconds(5, 5) == 0.0
    assert isinstance(microseconds(0, 10_000), float)


def test_configz(serve):
    _, port = serve(configz=lambda: {"schedulerName": "my-scheduler", "healthzBindAddress": "0.0.0.0:10251"})
    status, headers, body = get(port, "/configz")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {
        "componentconfig": {"schedulerName": "my-scheduler", "healthzBindAddress": "0.0.0.0:10251"}
    }


def test_failing_configz_answers_500(serve):
    def broken() -> dict:
        raise RuntimeError("no config yet")

    _, port = serve(configz=broken)
    assert get(port, "/configz")[0] == 500
    assert get(port, "/healthz")[0] == 200  # the server carries on


def test_unknown_paths_and_methods(serve):
    _, port = serve()
    assert fetch(port, "/") == (404, "404 page not found\n")
    assert get(port, "/metricsx")[0] == 404
    assert get(port, "/healthz", method="POST")[0] == 501


def test_pprof_disabled_by_default(serve):
    _, port = serve()
    for path in (
        "/debug/pprof/",
        "/debug/pprof/goroutine",
        "/debug/pprof/profile?seconds=1",
        "/debug/pprof/heap",
    ):
        assert get(port, path)[0] == 404, path


def _spin_for_profile(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(1000))


def test_pprof_enabled(serve):
    _, port = serve(profiling=True)
    status, headers, body = get(port, "/debug/pprof/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    for page in ("goroutine", "heap", "profile"):
        assert f'href="{page}"' in body

    status, _, body = get(port, "/debug/pprof/goroutine")
    assert status == 200
    assert '"healthz-server" daemon:' in body and "serve_forever" in body
    assert '"MainThread"' in body

    status, _, body = get(port, "/debug/pprof/heap")
    assert status == 200
    assert "PYTHONTRACEMALLOC=1" in body or "tracemalloc:" in body

    stop = threading.Event()
    busy = threading.Thread(target=_spin_for_profile, args=(stop,), name="busy")
    busy.start()
    try:
        started = time.monotonic()
        status, _, body = get(port, "/debug/pprof/profile?seconds=1")
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        busy.join()
    assert status == 200
    assert 0.9 <= elapsed < 5
    lines = body.splitlines()
    assert lines and all(re.fullmatch(r"\S[^ ]*(;[^ ;]+)* \d+", line) for line in lines), lines[:5]
    busy_lines = [line for line in lines if "tests.kube.test_server._spin_for_profile" in line]
    assert busy_lines
    assert busy_lines[0].startswith("threading.Thread._bootstrap;")
    assert sum(int(line.rsplit(" ", 1)[1]) for line in busy_lines) >= 20  # ~100 samples at 10 ms


def test_port_minus_one_disables(caplog):
    caplog.set_level(logging.INFO, logger="policy_scheduler.kube.serving.server")
    server = SchedulerServer("127.0.0.1", -1, metrics=SchedulerMetrics(), configz=dict)
    server.start()
    assert not server.enabled
    assert server.bound_port is None
    assert server_threads() == []
    assert "disabled" in caplog.text
    server.stop()


def test_port_taken_is_retried_until_free(caplog):
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    server = SchedulerServer("127.0.0.1", port, metrics=SchedulerMetrics(), configz=dict, retry_interval=0.05)
    try:
        server.start()
        deadline = time.monotonic() + 5
        while caplog.text.count("failed to start healthz server:") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert caplog.text.count("failed to start healthz server:") >= 2
        assert "Address already in use" in caplog.text
        assert server.bound_port is None
        blocker.close()
        assert server.wait_bound(5) == port
        assert fetch(port, "/healthz") == (200, "ok")
    finally:
        blocker.close()
        server.stop()
    assert server_threads() == []


def test_stop_while_retrying():
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    try:
        server = SchedulerServer(
            "127.0.0.1", blocker.getsockname()[1], metrics=SchedulerMetrics(), configz=dict, retry_interval=60
        )
        server.start()
        time.sleep(0.1)
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 2
    finally:
        blocker.close()
    assert server_threads() == []


def test_stop_leaves_no_thread(serve):
    server, port = serve(profiling=True)
    assert len(server_threads()) == 1
    assert get(port, "/healthz")[0] == 200
    deadline = time.monotonic() + 5  # that request's thread ends just after its reply was read
    while len(server_threads()) > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server_threads()) == 1
    # an in-flight 30 s profile does not hold stop() up
    result: list[object] = []

    def long_profile() -> None:
        try:
            result.append(get(port, "/debug/pprof/profile")[0])
        except OSError as e:
            result.append(e)

    client = threading.Thread(target=long_profile)
    client.start()
    deadline = time.monotonic() + 5
    while len(server_threads()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [t.name for t in server_threads()] == ["healthz-server", "healthz-request"] or len(
        server_threads()
    ) == 2
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 3
    client.join(5)
    assert not client.is_alive() and result
    assert server_threads() == []
    assert server.bound_port is None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
