"""The serving flags' values, checked: HTTPS (``--secure-port`` and its TLS), delegated authentication and
authorization (upstream's ``SecureServingOptions``, ``DelegatingAuthenticationOptions`` and
``DelegatingAuthorizationOptions`` with kube-scheduler's defaults), and the 1.9 insecure port's opt-in.

These are not part of the ``--config`` file (as upstream: they are flags only) and apply with or without it.
Every error is one line naming the flag.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import UserError
from .gosyntax import parse_go_bool, parse_go_duration

SECURE_PORT = 10259  # kube-scheduler's since 1.23
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
# In a review delegated to kube-apiserver system:masters may do anything (a hard-coded authorizer there), so
# upstream skips the review for it.
DEFAULT_ALWAYS_ALLOW_GROUPS = ("system:masters",)
DEFAULT_CACHE_TTL = 10.0  # seconds: token reviews, allowed and denied access reviews


@dataclass(frozen=True)
class SecureServingOptions:
    """``--secure-port`` (0: no HTTPS), ``--bind-address`` and the TLS settings. Without certificate files a
    self-signed certificate is made at start: in memory, or kept in ``cert_dir`` when it is set."""

    port: int = SECURE_PORT
    bind_address: str = "0.0.0.0"
    cert_file: str = ""
    key_file: str = ""
    cert_dir: str = ""
    min_tls_version: str = ""
    cipher_suites: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.port != 0


@dataclass(frozen=True)
class AuthenticationOptions:
    kubeconfig: str = ""
    skip_lookup: bool = False
    tolerate_lookup_failure: bool = True  # kube-scheduler's default (the library's is false)
    token_cache_ttl: float = DEFAULT_CACHE_TTL
    client_ca_file: str = ""


@dataclass(frozen=True)
class AuthorizationOptions:
    kubeconfig: str = ""
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS
    allowed_ttl: float = DEFAULT_CACHE_TTL
    denied_ttl: float = DEFAULT_CACHE_TTL


@dataclass(frozen=True)
class ServingOptions:
    secure: SecureServingOptions = field(default_factory=SecureServingOptions)
    authentication: AuthenticationOptions = field(default_factory=AuthenticationOptions)
    authorization: AuthorizationOptions = field(default_factory=AuthorizationOptions)
    #: Also serve /metrics on the 1.9 insecure port (plain HTTP, no authentication): the operator's explicit ask.
    insecure_metrics: bool = False


#: The ``run`` keyword arguments these options are read from (click's names for the flags).
SERVING_FLAG_NAMES = (
    "secure_port", "bind_address", "tls_cert_file", "tls_private_key_file", "cert_dir", "tls_min_version",
    "tls_cipher_suites", "authentication_kubeconfig", "authentication_skip_lookup",
    "authentication_tolerate_lookup_failure", "authentication_token_webhook_cache_ttl", "client_ca_file",
    "authorization_kubeconfig", "authorization_always_allow_paths", "authorization_webhook_cache_authorized_ttl",
    "authorization_webhook_cache_unauthorized_ttl", "insecure_metrics",
)


def serving_options_from_flags(flags: Mapping[str, Any]) -> ServingOptions:
    """The options ``run``'s keyword arguments give (absent or None: the default); one-line UserError otherwise."""
    given = {name: value for name, value in flags.items() if name in SERVING_FLAG_NAMES and value is not None}
    secure = SecureServingOptions(
        port=_port(given.get("secure_port", SECURE_PORT)),
        bind_address=_bind_address(given.get("bind_address", "0.0.0.0")),
        cert_file=given.get("tls_cert_file", ""),
        key_file=given.get("tls_private_key_file", ""),
        cert_dir=given.get("cert_dir", ""),
        min_tls_version=given.get("tls_min_version", ""),
        cipher_suites=_list(given.get("tls_cipher_suites", ())),
    )
    if bool(secure.cert_file) != bool(secure.key_file):
        raise UserError("--tls-cert-file and --tls-private-key-file must be given together")
    authentication = AuthenticationOptions(
        kubeconfig=given.get("authentication_kubeconfig", ""),
        skip_lookup=_bool(given.get("authentication_skip_lookup", False), "authentication-skip-lookup"),
        tolerate_lookup_failure=_bool(given.get("authentication_tolerate_lookup_failure", True),
                                      "authentication-tolerate-lookup-failure"),
        token_cache_ttl=_duration(given.get("authentication_token_webhook_cache_ttl", DEFAULT_CACHE_TTL),
                                  "authentication-token-webhook-cache-ttl"),
        client_ca_file=given.get("client_ca_file", ""),
    )
    authorization = AuthorizationOptions(
        kubeconfig=given.get("authorization_kubeconfig", ""),
        always_allow_paths=_paths(given.get("authorization_always_allow_paths", DEFAULT_ALWAYS_ALLOW_PATHS)),
        allowed_ttl=_duration(given.get("authorization_webhook_cache_authorized_ttl", DEFAULT_CACHE_TTL),
                              "authorization-webhook-cache-authorized-ttl"),
        denied_ttl=_duration(given.get("authorization_webhook_cache_unauthorized_ttl", DEFAULT_CACHE_TTL),
                             "authorization-webhook-cache-unauthorized-ttl"),
    )
    return ServingOptions(secure, authentication, authorization,
                          insecure_metrics=_bool(given.get("insecure_metrics", False), "insecure-metrics"))


def _port(value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise UserError(f'--secure-port: "{value}" is not a port number') from None
    if not 0 <= port <= 65535:
        raise UserError(f"--secure-port: {port} must be between 0 and 65535, inclusive; 0 turns HTTPS off")
    return port


def _bind_address(value: str) -> str:
    """An IP address; blank means every interface (0.0.0.0), as upstream."""
    if not value.strip():
        return "0.0.0.0"
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        raise UserError(f'--bind-address: "{value}" is not an IP address') from None


def _list(value: Any) -> tuple[str, ...]:
    """A pflag string slice: comma-separated (a tuple or list is taken as it is)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(item.strip() for item in items if item.strip())


def _paths(value: Any) -> tuple[str, ...]:
    paths = _list(value)
    for path in paths:
        if "*" in path[:-1]:
            raise UserError(f'--authorization-always-allow-paths: "{path}": only a trailing * is allowed')
    return paths


def _bool(value: Any, flag: str) -> bool:
    if isinstance(value, bool):
        return value
    try:
        return parse_go_bool(str(value))
    except UserError as exc:
        raise UserError(f"--{flag}: {exc}") from None


def _duration(value: Any, flag: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        try:
            seconds = parse_go_duration(str(value))
        except UserError as exc:
            raise UserError(f"--{flag}: {exc}") from None
    if seconds < 0:
        raise UserError(f"--{flag}: must not be negative")
    return seconds
