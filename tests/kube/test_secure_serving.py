"""The daemon's secure port beside upstream's kube-scheduler of the same line, against real 1.26 and 1.32 API
servers: the same requests to both, the same status codes.

The API server is started with the test PKI's CA as its ``--client-ca-file``, so the cluster's client CA (which
both schedulers look up in ``kube-system/extension-apiserver-authentication``) is one the test can sign client
certificates with. Callers: anonymous; a ServiceAccount token with no rights (TokenRequest); a token granted
``get`` on ``/metrics`` only; the admin token (``system:masters``); client certificates signed by the cluster's
client CA (a user with no rights, and one in ``system:masters``); a forged token; an expired token (signed with
the cluster's ServiceAccount key, expired an hour ago). Then plain HTTP to the secure port, and the API server
stopped: reviews cannot be made, so whatever needs one is refused, while ``/healthz`` still answers. (Both
schedulers cache review answers for 1 s here, ``--authentication-token-webhook-cache-ttl`` and
``--authorization-webhook-cache-*-ttl``, not the default 10 s, so the outage is seen after a second's wait.)
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import secrets
import signal
import ssl
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from benchmarks.harness.daemon import DaemonProcess, free_port, wait_until
from benchmarks.harness.envtest import EnvtestServer
from benchmarks.harness.pki import client_context, shared_pki
from policy_scheduler.kube.client.rest import RestClient

from .reference import ReferenceScheduler

LINES = ("1.26", "1.32", "1.36")
PATHS = ("/healthz", "/readyz", "/metrics", "/configz", "/debug/pprof/")
NS = "default"
ISSUER = "https://kubernetes.default.svc.cluster.local"  # the envtest API servers' --service-account-issuer
METRICS_READER = {"metadata": {"name": "test-metrics-reader"},
                  "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}

#: What upstream answers (and so must we), per caller and path: with the API server up, and stopped (tokens
#: cannot be reviewed: 401; access cannot be reviewed: 500, upstream's InternalError; system:masters needs no
#: review).
ANSWERS = {
    "anonymous": ((200, 200, 403, 403, 403), (200, 200, 500, 500, 500)),
    "rightless token": ((200, 200, 403, 403, 403), (401,) * 5),
    "metrics-only token": ((200, 200, 200, 403, 403), (401,) * 5),
    "admin token": ((200,) * 5, (401,) * 5),
    "client certificate": ((200, 200, 403, 403, 403), (200, 200, 500, 500, 500)),
    "client certificate, system:masters": ((200,) * 5, (200,) * 5),
    "forged token": ((401,) * 5, (401,) * 5),
    "expired token": ((401,) * 5, (401,) * 5),
}
EXPECTED = {caller: up for caller, (up, _) in ANSWERS.items()}
EXPECTED_DOWN = {caller: down for caller, (_, down) in ANSWERS.items()}
#: kube-scheduler 1.26 has no /readyz (1.27 added it): its answer after authentication and authorization is 404.
#: Ours serves /readyz on every line.
UPSTREAM_WITHOUT_READYZ = ("1.26",)
CACHE_TTL = ("--authentication-token-webhook-cache-ttl=1s", "--authorization-webhook-cache-authorized-ttl=1s",
             "--authorization-webhook-cache-unauthorized-ttl=1s")


@pytest.fixture(params=LINES, ids=lambda v: f"k8s-{v}")
def server(request, envtest_pool):
    """A server whose client CA is the test PKI's (its own lease kind: the flag is part of the pool's key)."""
    with envtest_pool.leased(request.param, f"--apiserver-arg=--client-ca-file={shared_pki().ca_path}") as s:
        yield s


class Caller:
    """One identity's requests over HTTPS: a bearer token and/or a client certificate."""

    def __init__(self, token: str | None = None, certificate: Path | None = None) -> None:
        self.token = token
        self.context = client_context(certificate)

    def get(self, port: int, path: str) -> int:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=self.context, timeout=30)
        try:
            connection.request("GET", path, headers={"Authorization": f"Bearer {self.token}"} if self.token else {})
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()


def token_of(admin: RestClient, account: str) -> str:
    return admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts/{account}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600},
    })["status"]["token"]


def expired_token(server: EnvtestServer, admin: RestClient, account: str) -> str:
    """A ServiceAccount token as the API server issues them, signed with its key, that expired an hour ago."""
    key = serialization.load_pem_private_key((server.dir / "certs" / "sa.key").read_bytes(), None)
    uid = admin.get(f"/api/v1/namespaces/{NS}/serviceaccounts/{account}")["metadata"]["uid"]
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": [ISSUER], "sub": f"system:serviceaccount:{NS}:{account}",
              "iat": now - 7200, "nbf": now - 7200, "exp": now - 3600,
              "kubernetes.io": {"namespace": NS, "serviceaccount": {"name": account, "uid": uid}}}

    def encode(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signed = f"{encode(json.dumps({'alg': 'RS256', 'typ': 'JWT'}).encode())}.{encode(json.dumps(claims).encode())}"
    return f"{signed}.{encode(key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256()))}"


def table(ours: dict[str, tuple[int, ...]], upstream: dict[str, tuple[int, ...]], paths: tuple[str, ...]) -> str:
    rows = [f"{'caller':36} " + " ".join(f"{p:>22}" for p in paths)]
    for who in ours:
        rows.append(f"{who:36} " + " ".join(f"{f'{o} / {u}':>22}" for o, u in zip(ours[who], upstream[who])))
    return "\n".join(rows)


def test_the_secure_port_answers_as_upstreams_kube_scheduler(server, tmp_path):
    admin = server.rest()
    for account in ("rightless", "scraper"):
        admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": account}})
    admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", METRICS_READER)
    admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": "test-metrics-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "test-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": NS}]})
    pki = shared_pki()
    admin_token = json.loads(Path(server.kubeconfig).read_text())["users"][0]["user"]["token"]
    callers = {
        "anonymous": Caller(),
        "rightless token": Caller(token_of(admin, "rightless")),
        "metrics-only token": Caller(token_of(admin, "scraper")),
        "admin token": Caller(admin_token),
        "client certificate": Caller(certificate=pki.client_certificate("cert-user")),
        "client certificate, system:masters": Caller(certificate=pki.client_certificate("cert-admin", ("system:masters",))),
        "forged token": Caller(f"forged-{secrets.token_hex(16)}"),
        "expired token": Caller(expired_token(server, admin, "rightless")),
    }

    ours = DaemonProcess(server.kubeconfig, tmp_path, "--profiling", *CACHE_TTL, client_ca_file=False)
    upstream = ReferenceScheduler(server, tmp_path, secure_port=free_port(), extra_args=CACHE_TTL)
    schedulers = {"ours": (ours, ours.port), "upstream": (upstream, upstream.secure_port)}
    try:
        for process, _ in schedulers.values():
            process.start()
        masters = callers["client certificate, system:masters"]
        for name, (process, port) in schedulers.items():
            # Up and healthy (ours: its informers synced), with the cluster's client CA loaded (upstream follows
            # the ConfigMap in the background).
            wait_until(lambda p=process, n=port: _up(p, n, masters), 60, what=f"{name}'s secure port")

        answers = {name: {who: tuple(caller.get(port, path) for path in PATHS) for who, caller in callers.items()}
                   for name, (_, port) in schedulers.items()}
        print(f"\n{server.version}, API server up (ours / upstream):\n{table(answers['ours'], answers['upstream'], PATHS)}")
        assert answers["ours"] == EXPECTED
        assert answers["upstream"] == (_without_readyz(EXPECTED, PATHS) if server.version in UPSTREAM_WITHOUT_READYZ
                                       else EXPECTED)

        for name, (_, port) in schedulers.items():  # plain HTTP to the secure port
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", "/healthz")
            reply = connection.getresponse()
            assert (reply.status, reply.read()) == (400, b"Client sent an HTTP request to an HTTPS server.\n"), name
            connection.close()

        kill_apiserver(server)  # reviews can no longer be made
        time.sleep(1.5)  # the cached answers expire
        down = {name: {who: tuple(caller.get(port, path) for path in PATHS) for who, caller in callers.items()}
                for name, (_, port) in schedulers.items()}
        print(f"{server.version}, API server stopped (ours / upstream):\n{table(down['ours'], down['upstream'], PATHS)}")
        assert down["ours"] == EXPECTED_DOWN
        assert down["upstream"] == (_without_readyz(EXPECTED_DOWN, PATHS)
                                    if server.version in UPSTREAM_WITHOUT_READYZ else EXPECTED_DOWN)
        assert not ours.exited(), ours.log()[-3000:]
    finally:
        for process, _ in schedulers.values():
            process.kill()
    log = ours.log()
    assert "Traceback" not in log, log[-3000:]
    assert admin_token not in log and callers["metrics-only token"].token not in log  # no secret in the log


def kill_apiserver(server: EnvtestServer) -> None:
    """SIGKILL the server's kube-apiserver, by the pid its launcher recorded (checked against /proc: the same
    process), and wait until it is gone. (A SIGTERM'd 1.32 server drains the schedulers' watches for 10 s.) The
    pool replaces the server at its next lease; etcd stops with it."""
    state = json.loads((server.dir / "envtest.json").read_text())
    (entry,) = [e for e in state["processes"] if e["name"] == "kube-apiserver"]
    if _start_time(entry["pid"]) != entry["starttime"]:
        return
    os.kill(entry["pid"], signal.SIGKILL)
    wait_until(lambda: _start_time(entry["pid"]) != entry["starttime"], 10, what="the API server gone")


def _start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _without_readyz(expected: dict[str, tuple[int, ...]], paths: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """``expected`` with 404 for /readyz wherever the request gets that far (authenticated and allowed)."""
    column = paths.index("/readyz")
    return {who: tuple(404 if i == column and code == 200 else code for i, code in enumerate(codes))
            for who, codes in expected.items()}


def _up(process, port: int, masters: Caller) -> bool:
    assert not process.exited(), process.log()[-3000:]
    try:
        return masters.get(port, "/metrics") == 200 and Caller().get(port, "/healthz") == 200
    except (OSError, ssl.SSLError):
        return False
