"""The README's workstation ``run`` example, as written, against a real API server: the daemon started with
exactly its flags (the kubeconfig is the test server's, the port a free one) serves ``/metrics`` to a caller
holding the README's token (a ServiceAccount bound to ``get`` on the non-resource URL ``/metrics``) and refuses
it (403) to a token without that right and to an anonymous caller.

The README's ``kubectl`` lines are carried out through the API (what ``kubectl create`` posts), and its ``curl``
as an HTTPS request that does not verify the self-signed certificate (``-k``); a README line this test does not
know fails it, so the README cannot drift from what the test runs."""

from __future__ import annotations

import http.client
import re
import shlex
import ssl
from pathlib import Path

import pytest

from benchmarks.harness.daemon import LoggedProcess, _command, wait_until
from benchmarks.harness.ports import free_port
from policy_scheduler.kube.client.rest import RestClient

ROOT = Path(__file__).resolve().parents[2]
README_PORT = "10259"
NS = "default"


def readme_example() -> tuple[list[str], list[str]]:
    """The README's workstation example: the ``run`` command's words, and the lines that read ``/metrics``."""
    text = (ROOT / "README.md").read_text()
    block = text.split("# a second scheduler, from a workstation", 1)[1].split("```", 1)[0]
    run_part, metrics_part = block.split("\n\n", 2)[:2]
    command = " ".join(line.rstrip("\\").strip() for line in run_part.splitlines()[1:])
    return shlex.split(command), [line for line in metrics_part.splitlines()[1:] if line.strip()]


def carry_out(lines: list[str], admin: RestClient, port: int) -> tuple[str, str]:
    """The README's kubectl lines through the API; its curl line's token and URL (the port made ours)."""
    url = token = ""
    for line in lines:
        words = shlex.split(line.replace("$(", "").replace(")", ""))
        options = dict(w[2:].split("=", 1) for w in words if w.startswith("--") and "=" in w)
        match words[:3]:
            case ["kubectl", "create", "serviceaccount"]:
                admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": words[3]}})
            case ["kubectl", "create", "clusterrole"]:
                admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
                    "metadata": {"name": words[3]},
                    "rules": [{"nonResourceURLs": [options["non-resource-url"]], "verbs": [options["verb"]]}]})
            case ["kubectl", "create", "clusterrolebinding"]:
                namespace, account = options["serviceaccount"].split(":")
                admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                    "metadata": {"name": words[3]},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": options["clusterrole"]},
                    "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]})
            case ["curl", "-k", "-H"]:
                header, url = words[3], words[4]
                (account,) = re.fullmatch(r"Authorization: Bearer kubectl create token (\S+)", header).groups()
                token = token_of(admin, account)
                url = url.replace(f":{README_PORT}/", f":{port}/")
            case _:
                raise AssertionError(f"README line this test does not know: {line}")
    assert token and url, "the README's example reads no /metrics"
    return token, url


def token_of(admin: RestClient, account: str) -> str:
    """``kubectl create token ACCOUNT``: a TokenRequest."""
    return admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts/{account}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600},
    })["status"]["token"]


def get(url: str, token: str | None) -> int:
    """``curl -k [-H 'Authorization: Bearer TOKEN'] URL``: the status code."""
    match = re.fullmatch(r"https://([^:/]+):(\d+)(/.*)", url)
    assert match, url
    host, port, path = match.groups()
    connection = http.client.HTTPSConnection(host, int(port), context=ssl._create_unverified_context(), timeout=30)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = connection.getresponse()
        response.read()
        return response.status
    except (OSError, ssl.SSLError):
        return 0
    finally:
        connection.close()


@pytest.fixture
def server(envtest_pool):
    """A 1.26 API server: it issues ServiceAccount tokens (TokenRequest) and reviews them."""
    with envtest_pool.leased("1.26") as s:
        yield s


def test_the_readmes_workstation_run_serves_metrics_to_an_authorized_caller(server, tmp_path, monkeypatch):
    words, metrics_lines = readme_example()
    assert words[:2] == ["policy-scheduler", "run"]
    port = free_port()
    args = [server.kubeconfig if w == "~/.kube/config" else str(port) if w == README_PORT else w for w in words[1:]]
    assert str(port) in args, "the README's example names its --secure-port"
    admin = server.rest()
    token, url = carry_out(metrics_lines, admin, port)
    admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": "not-a-metrics-reader"}})
    rightless = token_of(admin, "not-a-metrics-reader")

    monkeypatch.chdir(ROOT)  # the README's policy file is a relative path, as run from a checkout
    daemon = LoggedProcess(tmp_path / "daemon.log", _command() + args).start()
    try:
        wait_until(lambda: daemon.exited() or get(url.replace("/metrics", "/healthz"), None) == 200, 60,
                   what="the README's daemon healthy")
        assert not daemon.exited(), daemon.log()[-3000:]
        assert get(url, token) == 200
        assert get(url, rightless) == 403
        assert get(url, None) == 403
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    log = daemon.log()
    for refusal in ("Traceback", "No authentication-kubeconfig provided", "No authorization-kubeconfig provided",
                    "bearer tokens are not reviewed"):
        assert refusal not in log, log[-3000:]
