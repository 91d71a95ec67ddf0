"""The daemon's listeners, built from the configuration and the serving flags:

- **HTTPS** on ``--bind-address:--secure-port`` (default ``0.0.0.0:10259``; ``--secure-port=0`` turns it off):
  every path, every request authenticated and authorized through the API server first (:mod:`.guard`);
- **1.9's plain-HTTP port**, only when asked for (``--port N``, or ``healthzBindAddress`` in the ``--config``
  file): the health endpoints only (``/healthz``, ``/livez``, ``/readyz``), with one warning at start, and
  ``/metrics`` too with ``--insecure-metrics``. ``/configz`` and ``/debug/pprof/`` are never served there.

:meth:`Endpoints.prepare` does everything that can fail on the operator's input (certificate files, TLS
settings, kubeconfigs, the client CA look-up when it must succeed) and raises one-line UserErrors; the daemon
calls it before it starts anything.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kubernetes import client

from ...errors import UserError
from ..config.gosyntax import split_host_port
from ..config.options import SchedulerConfiguration
from ..config.serving_options import ServingOptions
from ..config.tlsnames import openssl_ciphers, tls_version
from ..metrics import SchedulerMetrics
from .authn import DelegatingAuthenticator, TokenReviewer, brief_error
from .authz import DelegatingAuthorizer
from .certificates import ServingCertificate
from .clientca import ConfigMapClientCA, FileClientCA
from .guard import RequestGuard
from .kubeclient import delegated_client
from .selfsigned import default_serving_certificate
from .server import SchedulerServer
from .tlsaccept import TLSAcceptor, TLSContexts

log = logging.getLogger(__name__)

Check = Callable[[], "str | None"]
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")


@dataclass
class HealthChecks:
    healthz: Mapping[str, Check] = field(default_factory=dict)
    livez: Mapping[str, Check] = field(default_factory=dict)
    readyz: Mapping[str, Check] = field(default_factory=dict)


class Endpoints:
    def __init__(self, config: SchedulerConfiguration, options: ServingOptions | None, *,
                 metrics: SchedulerMetrics, checks: HealthChecks) -> None:
        self.config = config
        self.options = options
        self.metrics = metrics
        self.checks = checks
        self.servers: list[SchedulerServer] = []
        self.client_ca: FileClientCA | ConfigMapClientCA | None = None
        self.secure: SchedulerServer | None = None
        self.insecure: SchedulerServer | None = None

    # -- start-up -------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Build the listeners (nothing is bound yet); UserError on bad input."""
        self.insecure = self._insecure()
        if self.options is not None and self.options.secure.enabled:
            self.secure = self._secure(self.options)
        elif self.options is not None:
            log.warning("--secure-port=0: HTTPS is off; /metrics, /configz and /debug/pprof/ are not served")
        self.servers = [s for s in (self.secure, self.insecure) if s is not None]

    def _server(self, host: str, port: int, *, paths: tuple[str, ...] | None = None, profiling: bool = False,
                tls: TLSAcceptor | None = None, guard: RequestGuard | None = None) -> SchedulerServer:
        return SchedulerServer(host, port, metrics=self.metrics, configz=self.config.to_configz,
                               checks=self.checks.healthz, livez_checks=self.checks.livez,
                               readyz_checks=self.checks.readyz, profiling=profiling, tls=tls, guard=guard,
                               paths=paths)

    def _insecure(self) -> SchedulerServer | None:
        address = self.config.healthz_bind_address
        metrics = self.options is not None and self.options.insecure_metrics
        if not address:
            if metrics:
                raise UserError("--insecure-metrics: there is no insecure port to serve /metrics on (give --port)")
            return None
        host, port = split_host_port(address)
        if metrics:
            log.info("the insecure port %s serves /metrics without authentication (--insecure-metrics)", address)
            return self._server(host, port, paths=(*HEALTH_PATHS, "/metrics"))
        secure = self.options.secure if self.options is not None else None
        where = f"the secure port {secure.port}" if secure is not None and secure.enabled else "no port (HTTPS is off)"
        log.warning("the insecure port %s (plain HTTP, no authentication) serves only /healthz, /livez and /readyz; "
                    "/metrics, /configz and /debug/pprof/ are served on %s (add --insecure-metrics to serve "
                    "/metrics on the insecure port too)", address, where)
        return self._server(host, port, paths=HEALTH_PATHS)

    def _secure(self, options: ServingOptions) -> SchedulerServer:
        secure, authn, authz = options.secure, options.authentication, options.authorization
        min_version = tls_version(secure.min_tls_version)
        ciphers = openssl_ciphers(secure.cipher_suites)
        if secure.cert_file:
            certificate = ServingCertificate.from_files(secure.cert_file, secure.key_file)
        else:
            certificate = default_serving_certificate(secure.bind_address, secure.cert_dir)

        authn_client = delegated_client(authn.kubeconfig, "authentication-kubeconfig", "authentication")
        if authn_client is None:
            log.warning("no --authentication-kubeconfig and not in a cluster: bearer tokens are not reviewed "
                        "(a request with one is anonymous)")
        self.client_ca = self._client_ca(options, authn_client)
        authz_client = delegated_client(authz.kubeconfig, "authorization-kubeconfig", "authorization")
        if authz_client is None:
            log.warning("No authorization-kubeconfig provided, so SubjectAccessReview of authorization tokens won't "
                        "work: only %s and the groups %s are allowed", ", ".join(authz.always_allow_paths),
                        ", ".join(authz.always_allow_groups))

        try:
            contexts = TLSContexts(certificate, min_version=min_version, ciphers=ciphers,
                                   client_ca=self.client_ca.bundle if self.client_ca is not None else None)
        except (ssl.SSLError, ValueError) as exc:
            raise UserError(f"cannot serve TLS with the certificate and settings given: {exc}") from None
        guard = RequestGuard(
            DelegatingAuthenticator(TokenReviewer(authn_client, authn.token_cache_ttl) if authn_client else None),
            DelegatingAuthorizer(authz_client, always_allow_paths=authz.always_allow_paths,
                                 always_allow_groups=authz.always_allow_groups, allowed_ttl=authz.allowed_ttl,
                                 denied_ttl=authz.denied_ttl),
        )
        return self._server(secure.bind_address, secure.port, profiling=self.config.enable_profiling,
                            tls=TLSAcceptor(contexts), guard=guard)

    def _client_ca(self, options: ServingOptions,
                   api: client.ApiClient | None) -> FileClientCA | ConfigMapClientCA | None:
        authn = options.authentication
        if authn.client_ca_file:
            return FileClientCA(authn.client_ca_file)
        if authn.skip_lookup:
            return None
        if api is None:
            log.warning("No authentication-kubeconfig provided in order to lookup client-ca-file in "
                        "configmap/extension-apiserver-authentication in kube-system, so client certificate "
                        "authentication won't work.")
            return None
        provider = ConfigMapClientCA(api)
        try:
            provider.lookup()
        except Exception as exc:  # the API server away, or no right to read the ConfigMap
            if not authn.tolerate_lookup_failure:
                raise UserError(f"looking up the client CA in {provider.source}: {brief_error(exc)} "
                                "(--authentication-tolerate-lookup-failure=false)") from None
            log.warning("Error looking up in-cluster authentication configuration: %s", brief_error(exc))
            log.warning("Continuing without authentication configuration. This may treat all requests as anonymous.")
            log.warning("To require authentication configuration lookup to succeed, set "
                        "--authentication-tolerate-lookup-failure=false")
        return provider

    # -- running --------------------------------------------------------------------------------
    def start(self) -> None:
        if self.client_ca is not None:
            self.client_ca.start()
        for server in self.servers:
            server.start()

    def stop(self, grace: float | None = None) -> None:
        """Stop the listeners; requests in flight get ``grace`` seconds (the server's default when None)."""
        for server in self.servers:
            if grace is None:
                server.stop()
            else:
                server.stop(grace)
        if self.client_ca is not None:
            self.client_ca.stop()
