from __future__ import annotations

import pytest

from .envtest import POD_PRIORITY_ARGS, VERSIONS, start_server


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
