from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from policy_scheduler.kube.client import api_client
from policy_scheduler.kube.rest import RestClient

from .envtest import POD_PRIORITY_ARGS, VERSIONS, start_server
from .faultproxy import FaultProxy


@pytest.fixture(params=VERSIONS, ids=lambda v: f"k8s-{v}")
def apiserver(request, tmp_path_factory):
    """A fresh real API server (etcd + kube-apiserver) per test, on each shipped version."""
    server = start_server(request.param, tmp_path_factory.mktemp(f"envtest-{request.param}"))
    yield server
    server.stop()


@pytest.fixture(params=VERSIONS, ids=lambda v: f"k8s-{v}")
def priority_apiserver(request, tmp_path_factory):
    """A fresh real API server that serves PriorityClasses and sets ``spec.priority`` from them (1.10 started
    with the alpha API, gate and admission plugin), on each shipped version."""
    server = start_server(request.param, tmp_path_factory.mktemp(f"envtest-{request.param}"),
                          *POD_PRIORITY_ARGS[request.param])
    yield server
    server.stop()


@pytest.fixture
def proxy(apiserver) -> Iterator[FaultProxy]:
    """A fault proxy in front of ``apiserver``."""
    with FaultProxy(apiserver.kubeconfig) as p:
        yield p


@pytest.fixture
def rest(proxy: FaultProxy, tmp_path: Path) -> RestClient:
    """A client of the API server through ``proxy`` (no rate limit, 10 s timeout)."""
    return RestClient(api_client(proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig")), qps=0, timeout=10)
