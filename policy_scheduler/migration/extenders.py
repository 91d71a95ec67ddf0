"""A Policy extender becomes a v1 ``extenders[]`` entry, field by field (``migration.md`` §3)."""

from __future__ import annotations

from typing import Any

from ..api.types import ExtenderConfig
from ..kube.config.gosyntax import format_go_duration

#: A Policy's ``tlsConfig`` keys (restclient's Go field names) and v1's.
V1_TLS_KEYS = {"Insecure": "insecure", "ServerName": "serverName", "CertFile": "certFile", "KeyFile": "keyFile",
               "CAFile": "caFile", "CertData": "certData", "KeyData": "keyData", "CAData": "caData"}
NANOSECONDS = 10**9


def v1_extender(config: ExtenderConfig) -> tuple[dict[str, Any], list[str]]:
    """The v1 entry, and what a user should know about the conversion (empty when it is one to one)."""
    out: dict[str, Any] = {"urlPrefix": config.url_prefix}
    notes: list[str] = []
    for key, value in (("filterVerb", config.filter_verb), ("prioritizeVerb", config.prioritize_verb),
                       ("bindVerb", config.bind_verb)):
        if value:
            out[key] = value
    if config.prioritize_verb or config.weight:
        out["weight"] = config.weight
    if config.enable_https:
        out["enableHTTPS"] = True
        notes.append("enableHttps is spelled enableHTTPS in v1 (the configuration is decoded strictly)")
    if config.tls_config is not None:
        out["tlsConfig"] = {V1_TLS_KEYS[key]: value for key, value in config.tls_config.to_dict().items()}
    if config.http_timeout_ns:
        out["httpTimeout"] = format_go_duration(config.http_timeout_ns / NANOSECONDS)
        notes.append(f"httpTimeout {config.http_timeout_ns} (nanoseconds) is the duration {out['httpTimeout']}")
    if config.node_cache_capable:
        out["nodeCacheCapable"] = True
    if config.managed_resources is not None:
        out["managedResources"] = [r.to_dict() for r in config.managed_resources]
    if config.ignorable:
        out["ignorable"] = True
    return out, notes
