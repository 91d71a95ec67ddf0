"""The serving flags on ``run``: upstream kube-scheduler's secure serving, authentication and authorization flags
(names, defaults and help as upstream's), and ``--insecure-metrics``. Values arrive as strings or None ("not
given"); :func:`.serving_options.serving_options_from_flags` checks them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .serving_options import DEFAULT_ALWAYS_ALLOW_PATHS, SECURE_PORT
from .tlsnames import CIPHER_SUITES, TLS_VERSIONS


def _option(name: str, default: str, help: str, metavar: str = "string") -> Callable[[Any], Any]:
    return click.option(name, default=None, metavar=metavar, show_default=default or False, help=help)


def _bool(name: str, default: bool, help: str) -> Callable[[Any], Any]:
    return click.option(name, is_flag=False, flag_value="true", default=None, metavar="true|false",
                        show_default=str(default).lower(), help=help)


_SERVING_OPTIONS = [
    _option("--secure-port", str(SECURE_PORT), "The port on which to serve HTTPS with authentication and "
            "authorization. If 0, don't serve HTTPS at all.", "int"),
    _option("--bind-address", "0.0.0.0", "The IP address on which to listen for the --secure-port port. If blank "
            "or an unspecified address (0.0.0.0 or ::), all interfaces will be used.", "ip"),
    _option("--cert-dir", "", "The directory where the TLS certs are located. If --tls-cert-file and "
            "--tls-private-key-file are provided, this flag will be ignored."),
    _option("--tls-cert-file", "", "File containing the default x509 Certificate for HTTPS. (CA cert, if any, "
            "concatenated after server cert). If HTTPS serving is enabled, and --tls-cert-file and "
            "--tls-private-key-file are not provided, a self-signed certificate and key are generated for the "
            "public address and saved to the directory specified by --cert-dir (in memory without it). Read again "
            "when the file changes."),
    _option("--tls-private-key-file", "", "File containing the default x509 private key matching --tls-cert-file."),
    _option("--tls-min-version", "", "Minimum TLS version supported (default VersionTLS12). Possible values: "
            + ", ".join(TLS_VERSIONS)),
    _option("--tls-cipher-suites", "", "Comma-separated list of cipher suites for the server (TLS 1.2 and "
            "below; TLS 1.3's are not configurable). If omitted, OpenSSL's defaults are used. Possible values: "
            + ", ".join(CIPHER_SUITES), "strings"),
    _option("--authentication-kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server with "
            "enough rights to create tokenreviews.authentication.k8s.io. This is optional. If empty, all token "
            "requests are considered to be anonymous and no client CA is looked up in the cluster (in a pod: the "
            "in-cluster ServiceAccount)."),
    _option("--authentication-token-webhook-cache-ttl", "10s",
            "The duration to cache responses from the webhook token authenticator.", "duration"),
    _option("--client-ca-file", "", "If set, any request presenting a client certificate signed by one of the "
            "authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName "
            "of the client certificate."),
    _bool("--authentication-skip-lookup", False, "If false, the authentication-kubeconfig will be used to lookup "
          "missing authentication configuration from the cluster."),
    _bool("--authentication-tolerate-lookup-failure", True, "If true, failures to look up missing authentication "
          "configuration from the cluster are not considered fatal. Note that this can result in authentication "
          "that treats all requests as anonymous."),
    _option("--authorization-kubeconfig", "", "kubeconfig file pointing at the 'core' kubernetes server with enough "
            "rights to create subjectaccessreviews.authorization.k8s.io. This is optional. If empty, all requests "
            "not skipped by authorization are forbidden (in a pod: the in-cluster ServiceAccount)."),
    _option("--authorization-always-allow-paths", ",".join(DEFAULT_ALWAYS_ALLOW_PATHS), "A list of HTTP paths to "
            "skip during authorization, i.e. these are authorized without contacting the 'core' kubernetes "
            "server.", "strings"),
    _option("--authorization-webhook-cache-authorized-ttl", "10s",
            "The duration to cache 'authorized' responses from the webhook authorizer.", "duration"),
    _option("--authorization-webhook-cache-unauthorized-ttl", "10s",
            "The duration to cache 'unauthorized' responses from the webhook authorizer.", "duration"),
    _bool("--insecure-metrics", False, "Also serve /metrics on the insecure port (--port), in plain HTTP and "
          "without authentication. Without it the insecure port serves only /healthz, /livez and /readyz."),
]


def serving_flags(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare the serving flags on a click command (after 1.9's flags)."""
    for option in reversed(_SERVING_OPTIONS):
        fn = option(fn)
    return fn
