"""The serving layer on its own, over real sockets and real TLS on 127.0.0.1 (no API server unless said):
certificate and client CA rotation, TLS settings, the insecure port's paths, the flags' checks, and ``run``'s
one-line errors on bad input. The status codes beside upstream's kube-scheduler: ``test_secure_serving.py``."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import logging
import os
import ssl
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509

from benchmarks.harness.daemon import free_port, wait_until
from benchmarks.harness.pki import TestPKI, client_context
from policy_scheduler.errors import UserError
from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.config.options import SchedulerConfiguration, configuration_from_flags
from policy_scheduler.kube.config.serving_options import serving_options_from_flags
from policy_scheduler.kube.metrics import SchedulerMetrics
from policy_scheduler.kube.serving import Endpoints, HealthChecks
from policy_scheduler.kube.serving.authz import PathMatcher
from policy_scheduler.kube.serving.clientca import ConfigMapClientCA
from policy_scheduler.kube.serving.selfsigned import self_signed
from policy_scheduler.kube.serving.ttlcache import TTLCache

LOCALHOST = [ipaddress.ip_address("127.0.0.1")]


@pytest.fixture(autouse=True)
def _not_in_a_cluster(monkeypatch):
    """Out of a cluster whatever runs the suite: no in-cluster ServiceAccount for delegated reviews."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


@pytest.fixture
def serve():
    """Start Endpoints for the given flags (and configuration); returns them; every one is stopped afterwards."""
    started: list[Endpoints] = []

    def start(flags: dict, config: SchedulerConfiguration | None = None) -> Endpoints:
        endpoints = Endpoints(config or SchedulerConfiguration(), serving_options_from_flags(flags),
                              metrics=SchedulerMetrics(), checks=HealthChecks())
        endpoints.prepare()
        endpoints.start()
        started.append(endpoints)
        for server in endpoints.servers:
            assert server.wait_bound(5)
        return endpoints

    yield start
    for endpoints in started:
        endpoints.stop()


def secure_flags(**extra) -> dict:
    return {"secure_port": str(free_port()), "bind_address": "127.0.0.1", **extra}


def get(port: int, path: str, context: ssl.SSLContext | None = None, token: str | None = None) -> int:
    """A GET's status over HTTPS (``context``) or plain HTTP (None)."""
    connection = (http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10) if context
                  else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def served_certificate(port: int) -> x509.Certificate:
    with ssl.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with client_context().wrap_socket(sock) as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))


def write_pair(directory: Path, name: str, host: str) -> tuple[Path, Path, x509.Certificate]:
    pair = self_signed(host, LOCALHOST)
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    return cert, key, x509.load_pem_x509_certificates(pair.cert_pem)[0]


def replace(target: Path, source: Path) -> None:
    """As a Secret volume updates: a new file renamed into place."""
    partial = target.with_suffix(".new")
    partial.write_bytes(source.read_bytes())
    os.replace(partial, target)


# -- certificates ----------------------------------------------------------------------------------
def test_rotated_certificate_files_are_served_from_the_next_connection(serve, tmp_path, caplog):
    cert, key, first = write_pair(tmp_path, "serving", "first.example")
    new_cert, new_key, second = write_pair(tmp_path, "next", "second.example")
    port = serve(secure_flags(tls_cert_file=str(cert), tls_private_key_file=str(key))).secure.port
    assert served_certificate(port) == first
    assert get(port, "/healthz", client_context()) == 200

    replace(cert, new_cert)  # half done: the new certificate with the old key is no pair
    caplog.set_level(logging.WARNING)
    assert served_certificate(port) == first
    assert "cannot be used" in caplog.text and "does not match" in caplog.text
    replace(key, new_key)
    assert served_certificate(port) == second
    assert get(port, "/healthz", client_context()) == 200


def test_the_self_signed_certificate_is_for_localhost_and_kept_in_cert_dir(serve, tmp_path):
    port = serve(secure_flags()).secure.port
    leaf = served_certificate(port)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc > datetime.timedelta(days=364)

    cert_dir = tmp_path / "certs"
    first = served_certificate(serve(secure_flags(cert_dir=str(cert_dir))).secure.port)
    assert oct((cert_dir / "policy-scheduler.key").stat().st_mode & 0o777) == "0o600"
    again = served_certificate(serve(secure_flags(cert_dir=str(cert_dir))).secure.port)
    assert again == first  # made once, then reused
    (cert_dir / "policy-scheduler.key").write_bytes(self_signed("other", LOCALHOST).key_pem)
    with pytest.raises(UserError, match=r"^--cert-dir: .*policy-scheduler.crt, .*: the private key does not match"):
        serve(secure_flags(cert_dir=str(cert_dir)))


# -- client certificates and the client CA ---------------------------------------------------------
def test_client_certificates_against_a_rotated_client_ca_file(serve, tmp_path):
    old, new = TestPKI(tmp_path / "old", "old CA"), TestPKI(tmp_path / "new", "new CA")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(old.ca_path.read_bytes())
    port = serve(secure_flags(client_ca_file=str(ca_file))).secure.port
    old_admin = client_context(old.client_certificate("admin", ("system:masters",)))
    new_admin = client_context(new.client_certificate("admin", ("system:masters",)))
    nobody = client_context(old.client_certificate("nobody"))
    # No authorization kubeconfig: only the always-allowed paths and system:masters pass.
    assert [get(port, "/metrics", old_admin), get(port, "/metrics", nobody), get(port, "/metrics", client_context()),
            get(port, "/healthz", nobody)] == [200, 403, 403, 200]
    with pytest.raises(ssl.SSLError):  # signed by a CA the server does not trust: refused in the handshake
        get(port, "/metrics", new_admin)

    replace(ca_file, new.ca_path)
    assert get(port, "/metrics", new_admin) == 200
    with pytest.raises(ssl.SSLError):
        get(port, "/metrics", old_admin)


def test_the_client_ca_configmap_is_followed(envtest_pool, tmp_path):
    """Against a real API server: the ConfigMap's key is read at once, then its changes and its deletion."""
    first, second = TestPKI(tmp_path / "a"), TestPKI(tmp_path / "b")
    with envtest_pool.leased("1.26") as server:
        rest = server.rest()
        path = "/api/v1/namespaces/default/configmaps"
        rest.post(path, {"metadata": {"name": "test-client-ca"}, "data": {"client-ca-file": first.ca_path.read_text()}})
        provider = ConfigMapClientCA(api_client(server.kubeconfig), namespace="default", name="test-client-ca")
        provider.lookup()
        assert provider.bundle() == (first.ca_path.read_bytes(), 1)
        provider.start()
        try:
            rest.put(f"{path}/test-client-ca", {**rest.get(f"{path}/test-client-ca"),
                                                "data": {"client-ca-file": second.ca_path.read_text()}})
            wait_until(lambda: provider.bundle() == (second.ca_path.read_bytes(), 2), 10, what="the new client CA")
            rest.put(f"{path}/test-client-ca", {**rest.get(f"{path}/test-client-ca"),
                                                "data": {"client-ca-file": "not a certificate"}})
            time.sleep(0.5)
            assert provider.bundle()[1] == 2  # unusable: the previous one stays
            rest.delete(f"{path}/test-client-ca")
            wait_until(lambda: provider.bundle() == (None, 3), 10, what="the client CA removed")
        finally:
            provider.stop()


def test_a_failed_client_ca_lookup_is_tolerated_unless_told_otherwise(serve, tmp_path, caplog):
    """The API server cannot be reached at start: by default a warning (no client certificates until the
    ConfigMap can be read); with --authentication-tolerate-lookup-failure=false, one line and no start."""
    kubeconfig = tmp_path / "nowhere.kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}"}}],
        "users": [{"name": "u", "user": {"token": "unused"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    flags = secure_flags(authentication_kubeconfig=str(kubeconfig))
    caplog.set_level(logging.WARNING)
    endpoints = serve(flags)
    assert "Error looking up in-cluster authentication configuration" in caplog.text
    assert endpoints.client_ca is not None and endpoints.client_ca.bundle() == (None, 0)
    assert get(endpoints.secure.port, "/healthz", client_context()) == 200
    with pytest.raises(UserError, match=r"^looking up the client CA in configmap/extension-apiserver-authentication in "
                                        r"kube-system \(client-ca-file\): .*Connection refused "
                                        r"\(--authentication-tolerate-lookup-failure=false\)$"):
        serve({**secure_flags(authentication_kubeconfig=str(kubeconfig)),
               "authentication_tolerate_lookup_failure": "false"})


# -- TLS settings and plain HTTP ------------------------------------------------------------------
def test_tls_min_version_and_cipher_suites(serve):
    port = serve(secure_flags(tls_min_version="VersionTLS13")).secure.port
    tls12 = client_context()
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError):
        get(port, "/healthz", tls12)
    assert get(port, "/healthz", client_context()) == 200

    port = serve(secure_flags(tls_min_version="VersionTLS12", tls_cipher_suites="TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")).secure.port
    other = client_context()
    other.maximum_version = ssl.TLSVersion.TLSv1_2
    other.set_ciphers("ECDHE-RSA-AES128-GCM-SHA256")
    with pytest.raises(ssl.SSLError):
        get(port, "/healthz", other)
    chosen = client_context()
    chosen.maximum_version = ssl.TLSVersion.TLSv1_2
    with ssl.create_connection(("127.0.0.1", port), timeout=10) as sock, chosen.wrap_socket(sock) as tls:
        assert tls.cipher()[0] == "ECDHE-RSA-AES256-GCM-SHA384"


def test_plain_http_to_the_secure_port_gets_400(serve):
    port = serve(secure_flags()).secure.port
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/metrics")
    reply = connection.getresponse()
    assert (reply.status, reply.read()) == (400, b"Client sent an HTTP request to an HTTPS server.\n")


def test_without_delegation_tokens_are_anonymous_and_only_health_is_served(serve, caplog):
    caplog.set_level(logging.WARNING)
    port = serve(secure_flags()).secure.port
    assert "bearer tokens are not reviewed" in caplog.text
    assert "SubjectAccessReview of authorization tokens won't work" in caplog.text
    context = client_context()
    assert [get(port, p, context) for p in ("/healthz", "/livez", "/readyz", "/metrics", "/configz")] == [
        200, 200, 200, 403, 403]
    assert get(port, "/metrics", context, token="anything") == 403  # not reviewed: anonymous, not 401


# -- the insecure port ----------------------------------------------------------------------------
def insecure_config(port: int) -> SchedulerConfiguration:
    return configuration_from_flags(port=port, address="127.0.0.1")


def test_the_insecure_port_serves_health_only_and_warns_once(serve, caplog):
    caplog.set_level(logging.WARNING)
    port = free_port()
    endpoints = serve({"secure_port": "0"}, insecure_config(port))
    assert endpoints.secure is None
    assert [get(port, p) for p in ("/healthz", "/healthz/ping", "/livez", "/readyz", "/metrics", "/configz",
                                   "/debug/pprof/")] == [200, 200, 200, 200, 404, 404, 404]
    warnings = [r.getMessage() for r in caplog.records if "serves only /healthz, /livez and /readyz" in r.getMessage()]
    assert len(warnings) == 1 and "--insecure-metrics" in warnings[0]


def test_the_insecure_port_serves_metrics_when_asked_and_nothing_else(serve, caplog):
    caplog.set_level(logging.WARNING)
    port = free_port()
    serve({"secure_port": "0", "insecure_metrics": "true"}, insecure_config(port))
    assert [get(port, p) for p in ("/healthz", "/metrics", "/configz", "/debug/pprof/")] == [200, 200, 404, 404]
    assert "serves only" not in caplog.text


def test_the_insecure_port_is_off_unless_asked_for():
    assert configuration_from_flags().healthz_bind_address == ""
    assert configuration_from_flags(port=10251).healthz_bind_address == "0.0.0.0:10251"
    assert configuration_from_flags(port=-1).healthz_bind_address == ""
    with pytest.raises(UserError, match="--insecure-metrics: there is no insecure port"):
        Endpoints(SchedulerConfiguration(), serving_options_from_flags({"secure_port": "0", "insecure_metrics": True}),
                  metrics=SchedulerMetrics(), checks=HealthChecks()).prepare()


# -- flags -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("flags", "message"), [
    ({"secure_port": "70000"}, "--secure-port: 70000 must be between 0 and 65535"),
    ({"secure_port": "x"}, '--secure-port: "x" is not a port number'),
    ({"bind_address": "localhost"}, '--bind-address: "localhost" is not an IP address'),
    ({"tls_cert_file": "c.crt"}, "--tls-cert-file and --tls-private-key-file must be given together"),
    ({"authentication_token_webhook_cache_ttl": "10"}, '--authentication-token-webhook-cache-ttl: time: missing unit'),
    ({"authorization_always_allow_paths": "/a*b"}, 'only a trailing * is allowed'),
    ({"authentication_skip_lookup": "maybe"}, "--authentication-skip-lookup: strconv.ParseBool"),
])
def test_bad_serving_flags(flags, message):
    with pytest.raises(UserError, match=message.replace("*", r"\*")):
        serving_options_from_flags(flags)


def test_serving_flag_defaults_are_kube_schedulers():
    options = serving_options_from_flags({})
    assert (options.secure.port, options.secure.bind_address) == (10259, "0.0.0.0")
    assert options.authentication.token_cache_ttl == 10 and options.authentication.tolerate_lookup_failure
    assert options.authorization.always_allow_paths == ("/healthz", "/readyz", "/livez")
    assert options.authorization.always_allow_groups == ("system:masters",)
    assert (options.authorization.allowed_ttl, options.authorization.denied_ttl) == (10, 10)
    assert serving_options_from_flags({"bind_address": ""}).secure.bind_address == "0.0.0.0"


def test_always_allowed_paths_match_as_upstream():
    matcher = PathMatcher(["/healthz", "livez", "/debug/*"])
    assert [matcher.matches(p) for p in ("/healthz", "healthz", "/livez", "/healthz/ping", "/debug/pprof/",
                                         "/debugx", "/metrics")] == [True, True, True, False, True, False, False]


def test_review_answers_expire():
    now = [0.0]
    cache: TTLCache[str] = TTLCache(clock=lambda: now[0], max_entries=2)
    cache.put("a", "yes", 10)
    cache.put("b", "no", 1)
    now[0] = 5
    assert (cache.get("a"), cache.get("b")) == ("yes", None)
    cache.put("c", "x", 10)
    cache.put("d", "y", 10)  # beyond max_entries: the oldest goes
    assert cache.get("a") is None and cache.get("d") == "y"


# -- bad input to run: one line, exit 1, at start -----------------------------------------------------
def run_fails(*args: str) -> str:
    from policy_scheduler.cli import main

    result = CliRunner().invoke(main, ["run", "--leader-elect=false", *args])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def test_bad_tls_input_is_one_line_and_exit_1(tmp_path):
    cert, key, _ = write_pair(tmp_path, "a", "a.example")
    other_cert, other_key, _ = write_pair(tmp_path, "b", "b.example")
    missing = tmp_path / "missing.crt"
    assert run_fails("--tls-cert-file", str(missing), "--tls-private-key-file", str(key)) == (
        f"error: --tls-cert-file {missing}: no such file or directory")
    assert run_fails("--tls-cert-file", str(cert), "--tls-private-key-file", str(other_key)) == (
        f"error: --tls-cert-file {cert}, --tls-private-key-file {other_key}: the private key does not match the "
        "certificate's public key")
    assert run_fails("--tls-cert-file", str(key), "--tls-private-key-file", str(key)).endswith(
        "no PEM certificate could be read")
    unreadable = tmp_path / "unreadable.key"
    unreadable.write_bytes(key.read_bytes())
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):  # (root reads anything)
        assert run_fails("--tls-cert-file", str(cert), "--tls-private-key-file", str(unreadable)) == (
            f"error: --tls-private-key-file {unreadable}: permission denied")
    assert run_fails("--tls-min-version", "VersionTLS99") == (
        'error: --tls-min-version: unknown TLS version "VersionTLS99" (one of VersionTLS10, VersionTLS11, '
        'VersionTLS12, VersionTLS13)')
    assert run_fails("--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,FOO") == (
        "error: --tls-cipher-suites: unknown cipher suite FOO")
    assert run_fails("--client-ca-file", str(missing)) == f"error: --client-ca-file {missing}: no such file or directory"
    assert run_fails("--authentication-kubeconfig", str(missing)) == (
        f"error: --authentication-kubeconfig {missing}: no such file")
    assert run_fails("--insecure-metrics") == (
        "error: --insecure-metrics: there is no insecure port to serve /metrics on (give --port)")
