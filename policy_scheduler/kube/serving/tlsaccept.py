"""The secure port's connections: each accepted socket is checked for plain HTTP (answered 400 with Go's message,
as kube-scheduler does) and then wrapped in TLS with the context in force at that moment, so a rotated serving
certificate or client CA is used from the next connection on.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable

from .certificates import ServingCertificate
from .tlsconfig import server_context

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0
TLS_HANDSHAKE_RECORD = 0x16
PLAIN_HTTP_ANSWER = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"

ClientCABundle = Callable[[], "tuple[bytes | None, int]"]


class TLSContexts:
    """The server context for the serving certificate and client CA in force, rebuilt when either changes."""

    def __init__(self, certificate: ServingCertificate, *, min_version: ssl.TLSVersion, ciphers: str | None,
                 client_ca: ClientCABundle | None) -> None:
        self.certificate = certificate
        self.min_version, self.ciphers = min_version, ciphers
        self.client_ca = client_ca
        self._lock = threading.Lock()
        self._key: tuple[int, int] | None = None
        self._context: ssl.SSLContext | None = None
        self.current()  # built now: a bad setting fails at start

    def current(self) -> ssl.SSLContext:
        pair, cert_version = self.certificate.current()
        ca_pem, ca_version = self.client_ca() if self.client_ca is not None else (None, 0)
        with self._lock:
            if self._context is None or self._key != (cert_version, ca_version):
                try:
                    self._context = server_context(pair.cert_pem, pair.key_pem, min_version=self.min_version,
                                                   ciphers=self.ciphers, client_ca_pem=ca_pem)
                except (ssl.SSLError, ValueError) as exc:
                    if self._context is None:
                        raise
                    log.warning("cannot serve the new certificate or client CA (the previous stay): %s", exc)
                self._key = (cert_version, ca_version)
            return self._context


class TLSAcceptor:
    def __init__(self, contexts: TLSContexts, handshake_timeout: float = HANDSHAKE_TIMEOUT) -> None:
        self.contexts = contexts
        self.handshake_timeout = handshake_timeout

    def wrap(self, sock: socket.socket) -> ssl.SSLSocket | None:
        """The connection in TLS, or None (after answering plain HTTP) when there is nothing to serve."""
        try:
            sock.settimeout(self.handshake_timeout)
            first = sock.recv(1, socket.MSG_PEEK)
            if not first:
                return None
            if first[0] != TLS_HANDSHAKE_RECORD:
                if first.isalpha():  # a request line: plain HTTP
                    sock.sendall(PLAIN_HTTP_ANSWER)
                return None
            return self.contexts.current().wrap_socket(sock, server_side=True)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            log.debug("TLS handshake failed: %s", exc)
            return None
