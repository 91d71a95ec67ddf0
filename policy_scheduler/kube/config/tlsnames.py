"""``--tls-min-version`` and ``--tls-cipher-suites``: Go's names, as upstream's flags take them, and their values
as ``ssl`` and OpenSSL name them.

Go's TLS 1.3 suites are accepted and, as in Go, not configurable (OpenSSL keeps its TLS 1.3 defaults); the
others map to their OpenSSL names. A name OpenSSL does not offer (RC4 in OpenSSL 3, for one) is an error.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable

from ...errors import UserError

TLS_VERSIONS: dict[str, ssl.TLSVersion] = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
DEFAULT_MIN_VERSION = "VersionTLS12"  # Go's server default since 1.22 (upstream 1.32 is built with 1.23)

#: Go's cipher suite names (``tls.CipherSuites()`` and ``tls.InsecureCipherSuites()``) -> OpenSSL's; None for
#: the TLS 1.3 suites, which neither Go nor Python lets a server configure.
CIPHER_SUITES: dict[str, str | None] = {
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",  # Go's older names
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    # Go's insecure ones
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}


def tls_version(name: str) -> ssl.TLSVersion:
    """``--tls-min-version``'s value ("" is the default, TLS 1.2)."""
    version = TLS_VERSIONS.get(name or DEFAULT_MIN_VERSION)
    if version is None:
        raise UserError(f'--tls-min-version: unknown TLS version "{name}" (one of {", ".join(TLS_VERSIONS)})')
    return version


def openssl_ciphers(names: Iterable[str]) -> str | None:
    """``--tls-cipher-suites`` as an OpenSSL cipher list for TLS 1.2 and below; None when only TLS 1.3 suites
    (or none) are named, leaving OpenSSL's defaults."""
    chosen: list[str] = []
    for name in names:
        if name not in CIPHER_SUITES:
            raise UserError(f"--tls-cipher-suites: unknown cipher suite {name}")
        openssl_name = CIPHER_SUITES[name]
        if openssl_name is None:
            continue
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            probe.set_ciphers(openssl_name)
        except ssl.SSLError:
            raise UserError(f"--tls-cipher-suites: {name} is not available in {ssl.OPENSSL_VERSION}") from None
        chosen.append(openssl_name)
    return ":".join(chosen) or None
