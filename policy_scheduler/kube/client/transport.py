"""HTTP/1.1 requests over one keep-alive connection per thread, for the daemon's request/reply calls.

Through the official client's REST layer (urllib3's pool manager) a request costs the daemon about 0.46 ms of
CPU here; a bind and a ``Scheduled`` event per pod made it the daemon's largest cost after the decisions. This
transport writes the request line and headers itself and reads the status line, the headers it needs
(``Content-Length``, ``Transfer-Encoding``, ``Connection``) and the body: 0.17 ms through the same
:class:`~.rest.RestClient` (``benchmarks/rest_transport.py``).
TLS, the server's CA, client certificates and SNI come from the ApiClient's configuration; a configuration
with a proxy keeps the official REST layer (:meth:`KeepAliveTransport.supports`). Watches stay on the
official layer too: they are long-lived streams, read once per event.

A connection is reused only while the server has not closed it: one found readable (the server's FIN) when
idle is replaced before the request is written. A request whose connection breaks before any reply arrived
is sent again on a fresh connection only when it is a GET (Go's transport does the same for requests that
are not replayable); any other method reports the break, and the caller settles the outcome.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_LINE = 65536
MAX_HEADERS = 200


class TransportError(Exception):
    """No complete reply: connection refused, reset, closed early, timed out, or a malformed reply."""


@dataclass
class Reply:
    status: int
    reason: str
    data: bytes


class _Connection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")
        self.used = False

    def stale(self) -> bool:
        """The server closed (or wrote on) the idle connection: it cannot carry another request."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        for closable in (self.reader, self.sock):
            try:
                closable.close()
            except OSError:
                pass


def ssl_context(configuration: Any) -> ssl.SSLContext:
    """The TLS settings urllib3 gets from the same configuration: the CA (file or data), client
    certificate, whether to verify, and whether to check the host name."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None,
                                         cadata=getattr(configuration, "ca_cert_data", None) or None)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        context.check_hostname = False
    return context


class KeepAliveTransport:
    """One keep-alive connection per calling thread to the configuration's server."""

    def __init__(self, configuration: Any) -> None:
        url = urlsplit(configuration.host)
        self.secure = url.scheme == "https"
        self.hostname = url.hostname or ""
        self.port = url.port or (443 if self.secure else 80)
        self.host_header = url.netloc
        self.base_path = url.path.rstrip("/")
        self.server_hostname = getattr(configuration, "tls_server_name", None) or self.hostname
        self.context = ssl_context(configuration) if self.secure else None
        self._local = threading.local()
        self._all: list[_Connection] = []
        self._lock = threading.Lock()

    @staticmethod
    def supports(configuration: Any) -> bool:
        """Whether requests may go this way: a plain http or https server, reached without a proxy."""
        return urlsplit(configuration.host).scheme in ("http", "https") and not configuration.proxy

    def request(self, method: str, target: str, headers: dict[str, str], body: bytes | None,
                timeout: tuple[float, float]) -> Reply:
        """``target`` is the path and query. Raises TransportError when no complete reply arrived."""
        head = [f"{method} {self.base_path}{target} HTTP/1.1", f"Host: {self.host_header}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body or b'')}")
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b"")
        connection = self._connection(timeout)
        while True:
            reused = connection.used
            try:
                connection.sock.settimeout(timeout[1])
                connection.sock.sendall(message)
                reply, keep = self._read_reply(connection, method)
            except (OSError, TransportError, ValueError) as e:
                self._drop(connection)
                if reused and method == "GET" and not isinstance(e, TimeoutError):
                    connection = self._connection(timeout)  # a keep-alive connection the server just closed
                    continue
                raise TransportError(f"{method} {target}: {e or type(e).__name__}") from None
            connection.used = True
            if not keep:
                self._drop(connection)
            return reply

    def close(self) -> None:
        with self._lock:
            connections, self._all = self._all, []
        for connection in connections:
            connection.close()

    def _connection(self, timeout: tuple[float, float]) -> _Connection:
        connection: _Connection | None = getattr(self._local, "connection", None)
        if connection is not None and connection.stale():
            self._drop(connection)
            connection = None
        if connection is None:
            connection = self._connect(timeout[0])
            self._local.connection = connection
            with self._lock:
                self._all.append(connection)
        return connection

    def _connect(self, connect_timeout: float) -> _Connection:
        try:
            sock = socket.create_connection((self.hostname, self.port), timeout=connect_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.context is not None:
                sock = self.context.wrap_socket(sock, server_hostname=self.server_hostname)
        except (OSError, ssl.SSLError) as e:
            raise TransportError(f"connecting to {self.host_header}: {e}") from None
        return _Connection(sock)

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        if getattr(self._local, "connection", None) is connection:
            self._local.connection = None
        with self._lock:
            if connection in self._all:
                self._all.remove(connection)

    @staticmethod
    def _read_reply(connection: _Connection, method: str) -> tuple[Reply, bool]:
        """The reply and whether the connection may carry another request."""
        reader = connection.reader
        while True:
            status_line = reader.readline(MAX_LINE)
            if not status_line:
                raise TransportError("the server closed the connection before replying")
            version, _, rest = status_line.decode("latin-1").rstrip("\r\n").partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/") or not code.isdigit():
                raise TransportError(f"malformed status line {status_line[:80]!r}")
            status = int(code)
            length: int | None = None
            chunked = False
            keep = version == "HTTP/1.1"
            for _ in range(MAX_HEADERS):
                line = reader.readline(MAX_LINE)
                if line in (b"\r\n", b"\n"):
                    break
                if not line:
                    raise TransportError("the server closed the connection in the reply's headers")
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value.strip())
                elif name == b"transfer-encoding":
                    chunked = b"chunked" in value.lower()
                elif name == b"connection":
                    token = value.strip().lower()
                    keep = keep and token != b"close" or token == b"keep-alive"
            else:
                raise TransportError("too many header lines in the reply")
            if 100 <= status < 200:
                continue  # an interim reply (100 Continue): the real one follows
            break
        if method == "HEAD" or status in (204, 304):
            data = b""
        elif chunked:
            data = _read_chunked(reader)
        elif length is not None:
            data = reader.read(length)
            if len(data) < length:
                raise TransportError("the server closed the connection in the reply's body")
        else:
            data, keep = reader.read(), False  # delimited by the connection's close
        return Reply(status, reason, data), keep


def _read_chunked(reader: Any) -> bytes:
    parts = []
    while True:
        size_line = reader.readline(MAX_LINE)
        if not size_line:
            raise TransportError("the server closed the connection in a chunked reply")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while reader.readline(MAX_LINE) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        chunk = reader.read(size + 2)
        if len(chunk) < size + 2:
            raise TransportError("the server closed the connection in a chunked reply")
        parts.append(chunk[:size])
