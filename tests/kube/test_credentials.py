"""A kubeconfig's inline credentials in memory (``kube/client/credentials.py``): the client writes them to files,
the load moves them to in-memory files at once, and every later use of the configuration (a second load, the
client's token refresh, a new connection pool) names those, against a real API server."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from kubernetes import client

from policy_scheduler.kube.client import credentials
from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.client.rest import RestClient

from .test_daemon_shutdown import inline_credentials_kubeconfig, inline_data

pytestmark = pytest.mark.parametrize("apiserver", ["1.36"], indirect=True, ids=["k8s-1.36"])


def credential_files(configuration: client.Configuration) -> dict[str, str]:
    """The path each of the configuration's credential attributes names."""
    return {attribute: getattr(configuration, attribute) for attribute in credentials.FILE_ATTRIBUTES}


def test_loads_refreshes_and_new_clients_name_the_in_memory_files(apiserver, tmp_path, monkeypatch):
    kubeconfig = inline_credentials_kubeconfig(apiserver.kubeconfig, tmp_path / "inline.kubeconfig")
    expected = inline_data(kubeconfig)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    monkeypatch.setattr(credentials, "_directory", None)  # this process's directory, made afresh under tmpdir

    api = api_client(kubeconfig)
    named = credential_files(api.configuration)
    assert all(path.startswith("/proc/self/fd/") for path in named.values()), named
    assert {attribute: Path(path).read_text() for attribute, path in named.items()} == expected
    assert os.listdir(tmpdir) == []

    # The client's token refresh runs on every request and sets the loaded (deleted) files' names again.
    assert api.configuration.refresh_api_key_hook is not None
    assert api.configuration.auth_settings()["BearerToken"]["value"].startswith("Bearer ")
    assert credential_files(api.configuration) == named

    # A pool and a transport built after the refresh open the in-memory files: both paths reach the server.
    fresh = client.ApiClient(api.configuration)
    assert client.CoreV1Api(fresh).list_namespace().items
    assert credential_files(api.configuration) == named
    assert RestClient(fresh, qps=0).get("/api/v1/namespaces/default")["metadata"]["name"] == "default"

    # A second load of the same kubeconfig: the client writes the files again; the same in-memory files serve.
    again = api_client(kubeconfig)
    assert credential_files(again.configuration) == named
    assert os.listdir(tmpdir) == []
