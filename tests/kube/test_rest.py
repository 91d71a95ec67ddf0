"""The client-side token bucket behind ``--kube-api-qps`` / ``--kube-api-burst``, status errors, and the URL
templates of the request metrics."""

from __future__ import annotations

import time

import pytest

from policy_scheduler.kube.client.rest import ApiError, TokenBucket, status_error, url_template


def test_burst_passes_at_once_then_qps_paces():
    bucket = TokenBucket(qps=20, burst=3)
    start = time.monotonic()
    for _ in range(3):
        bucket.take()
    assert time.monotonic() - start < 0.05  # the burst
    for _ in range(4):
        bucket.take()
    assert time.monotonic() - start >= 4 / 20 - 0.01  # then one token every 1/qps seconds


def test_non_positive_qps_does_not_limit():
    bucket = TokenBucket(qps=0, burst=1)
    start = time.monotonic()
    for _ in range(1000):
        bucket.take()
    assert time.monotonic() - start < 0.5


def test_status_errors_carry_the_servers_reason():
    body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pod p is already assigned","reason":"Conflict","code":409}'
    error = status_error(409, body)
    assert (error.status, error.reason, error.message, error.conflict) == (409, "Conflict", "pod p is already assigned", True)
    plain = status_error(404, b"404 page not found\n", "Not Found")
    assert isinstance(plain, ApiError) and plain.not_found and plain.message == "404 page not found"


@pytest.mark.parametrize(("path", "template"), [
    ("/api/v1/nodes", "/api/v1/nodes"),
    ("/api/v1/nodes/node-7", "/api/v1/nodes/{name}"),
    ("/api/v1/pods", "/api/v1/pods"),
    ("/api/v1/namespaces/default", "/api/v1/namespaces/{name}"),
    ("/api/v1/namespaces/default/pods", "/api/v1/namespaces/{namespace}/pods"),
    ("/api/v1/namespaces/default/pods/web-1/binding", "/api/v1/namespaces/{namespace}/pods/{name}/binding"),
    ("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
     "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"),
    ("/apis/storage.k8s.io/v1/storageclasses", "/apis/storage.k8s.io/v1/storageclasses"),
    ("/apis", "/apis"), ("/readyz", "/readyz"), ("/api/v1", "/api/v1"),
])
def test_url_template(path, template):
    assert url_template(path) == template
