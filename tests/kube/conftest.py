from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.harness.envtest import POD_PRIORITY_ARGS, VERSIONS
from benchmarks.harness.faultproxy import FaultProxy
from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.client.rest import RestClient


@pytest.fixture(params=VERSIONS, ids=lambda v: f"k8s-{v}")
def apiserver(request, envtest_pool):
    """A real API server (etcd + kube-apiserver) holding only what a new one holds, on each shipped version:
    the process's shared server of that version, reset to its baseline (``envtest_pool.py``)."""
    with envtest_pool.leased(request.param) as server:
        yield server


@pytest.fixture(params=VERSIONS, ids=lambda v: f"k8s-{v}")
def priority_apiserver(request, envtest_pool):
    """A real API server that serves PriorityClasses and sets ``spec.priority`` from them (1.10 started
    with the alpha API, gate and admission plugin), on each shipped version, as ``apiserver``."""
    with envtest_pool.leased(request.param, *POD_PRIORITY_ARGS[request.param]) as server:
        yield server


@pytest.fixture
def proxy(apiserver) -> Iterator[FaultProxy]:
    """A fault proxy in front of ``apiserver``."""
    with FaultProxy(apiserver.kubeconfig) as p:
        yield p


@pytest.fixture
def rest(proxy: FaultProxy, tmp_path: Path) -> RestClient:
    """A client of the API server through ``proxy`` (no rate limit, 10 s timeout)."""
    return RestClient(api_client(proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig")), qps=0, timeout=10)
