"""A Policy extender becomes a v1 ``extenders[]`` entry, field by field (``migration.md`` §3)."""

from __future__ import annotations

import base64
from typing import Any

from ..api.types import ExtenderConfig, TLSConfig

#: Go's duration units, largest first, in nanoseconds.
_UNITS = (("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000),
          ("us", 1_000), ("ns", 1))
#: kube-scheduler's timeout for an extender call when the configuration sets none.
DEFAULT_TIMEOUT = "5s"


def go_duration(nanoseconds: int) -> str:
    """A ``metav1.Duration`` string for an integer number of nanoseconds, in the largest unit that is
    exact: 3000000000 -> ``3s``, 1500000000 -> ``1500ms``."""
    for unit, size in _UNITS:
        if nanoseconds % size == 0:
            return f"{nanoseconds // size}{unit}"
    raise AssertionError("unreachable: every integer is a whole number of nanoseconds")


def _tls(config: TLSConfig) -> dict[str, Any]:
    values = {
        "insecure": config.insecure, "serverName": config.server_name, "certFile": config.cert_file,
        "keyFile": config.key_file, "caFile": config.ca_file,
        "certData": base64.b64encode(config.cert_data).decode() if config.cert_data else "",
        "keyData": base64.b64encode(config.key_data).decode() if config.key_data else "",
        "caData": base64.b64encode(config.ca_data).decode() if config.ca_data else "",
    }
    return {key: value for key, value in values.items() if value}


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
        out["tlsConfig"] = _tls(config.tls_config)
    if config.http_timeout_ns:
        out["httpTimeout"] = go_duration(config.http_timeout_ns)
        notes.append(f"httpTimeout {config.http_timeout_ns} (nanoseconds) is the duration {out['httpTimeout']}")
    if config.node_cache_capable:
        out["nodeCacheCapable"] = True
    if config.managed_resources is not None:
        out["managedResources"] = [r.to_dict() for r in config.managed_resources]
    if config.ignorable:
        out["ignorable"] = True
    return out, notes
