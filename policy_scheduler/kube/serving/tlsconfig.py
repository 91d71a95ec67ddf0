"""The server's ``ssl.SSLContext``: a key pair, the minimum version and ciphers of ``--tls-min-version`` and
``--tls-cipher-suites`` (:mod:`policy_scheduler.kube.config.tlsnames`) and, when client certificates are accepted, the client CA.
"""

from __future__ import annotations

import os
import ssl
import tempfile

from ..client.memfiles import memory_file, write_all


def server_context(cert_pem: bytes, key_pem: bytes, *, min_version: ssl.TLSVersion, ciphers: str | None,
                   client_ca_pem: bytes | None) -> ssl.SSLContext:
    """A server context serving ``cert_pem`` (the chain, leaf first) with ``key_pem``. With ``client_ca_pem``,
    client certificates are asked for (not required) and verified against it in the handshake."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = min_version
    if ciphers:
        context.set_ciphers(ciphers)
    context.set_alpn_protocols(["http/1.1"])
    load_key_pair(context, cert_pem, key_pem)
    if client_ca_pem:
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(cadata=client_ca_pem.decode("ascii", errors="replace"))
    return context


def load_key_pair(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """``load_cert_chain`` from memory: the ``ssl`` module reads only files, so the key and chain go to an
    anonymous in-memory file (Linux ``memfd``), or elsewhere to a private temporary file removed at once."""
    data = key_pem.rstrip(b"\n") + b"\n" + cert_pem
    fd = memory_file("serving-key-pair", data)
    if fd is not None:
        try:
            context.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="policy-scheduler-tls-") as directory:  # pragma: no cover (non-Linux)
        path = os.path.join(directory, "pair.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        context.load_cert_chain(path)

