"""The daemon's HTTP listener: ``/healthz``, ``/livez``, ``/readyz`` (:mod:`.healthz`), ``/metrics``, ``/configz``
and (opt-in) ``/debug/pprof/`` (:mod:`.pprof`).

One :class:`SchedulerServer` per listener. The daemon runs the secure one (HTTPS on ``--secure-port``, every
request authenticated and authorized first: a ``tls`` acceptor and a ``guard``, :mod:`.endpoints`) and, when asked
for, 1.9's plain-HTTP port (``paths`` limits it to the health endpoints, and ``/metrics`` on request). Binding
is retried until :meth:`SchedulerServer.stop`, as 1.9's ListenAndServe loop does.
"""

from __future__ import annotations

import json
import logging
import socket
import socketserver
import ssl
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ..metrics import SchedulerMetrics
from . import pprof
from .healthz import PING, TEXT, Check, aggregate, not_found, ping, single_check

if TYPE_CHECKING:
    from .guard import RequestGuard
    from .tlsaccept import TLSAcceptor

log = logging.getLogger(__name__)

RETRY_INTERVAL = 5.0  # seconds between bind attempts, as 1.9's ListenAndServe loop

_POLL_INTERVAL = 0.1  # serve_forever's shutdown latency
_REQUEST_TIMEOUT = 60.0  # a connection that sends nothing is dropped after this long
_STOP_GRACE = 2.0  # seconds stop() waits for in-flight requests before cutting their connections
_MAX_CONNECTIONS = 128  # open connections beyond this are closed at once (each holds a thread)


class SchedulerServer:
    """Serves the daemon's HTTP paths from a background thread; binding is retried until :meth:`stop`.

    ``checks`` are ``/healthz``'s; ``livez_checks`` (default none but ping) and ``readyz_checks`` (default
    ``checks``) the other two endpoints'. With ``tls``, connections are HTTPS; with ``guard``, every request is
    admitted (authenticated, authorized) before anything else; with ``paths``, only those paths (and the paths
    under them) are served, anything else is 404.
    """

    def __init__(
        self,
        address: str,
        port: int,
        *,
        metrics: SchedulerMetrics,
        configz: Callable[[], dict],
        checks: Mapping[str, Check] | None = None,
        livez_checks: Mapping[str, Check] | None = None,
        readyz_checks: Mapping[str, Check] | None = None,
        profiling: bool = False,
        retry_interval: float = RETRY_INTERVAL,
        tls: TLSAcceptor | None = None,
        guard: RequestGuard | None = None,
        paths: Collection[str] | None = None,
    ) -> None:
        healthz = dict(checks or {})
        self.endpoints: dict[str, dict[str, Check]] = {
            "healthz": healthz,
            "livez": dict(livez_checks or {}),
            "readyz": dict(healthz if readyz_checks is None else readyz_checks),
        }
        for endpoint in self.endpoints.values():
            for name in endpoint:
                if name == PING or not name or "/" in name:
                    raise ValueError(f"invalid healthz check name {name!r}")
        self.address = address
        self.port = port
        self.metrics = metrics
        self.configz = configz
        for name in self.endpoints:
            self.endpoints[name] = {PING: ping, **self.endpoints[name]}
        self.profiling = profiling
        self.retry_interval = retry_interval
        self.tls = tls
        self.guard = guard
        self.paths = tuple(paths) if paths is not None else None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.port != -1

    @property
    def bound_port(self) -> int | None:
        """The port actually listened on (useful with port 0); None until bound."""
        httpd = self._httpd
        return httpd.server_address[1] if httpd is not None else None

    def start(self) -> None:
        """Start serving in a background thread; returns at once (before the port is necessarily bound)."""
        if not self.enabled:
            log.info("healthz/metrics server disabled (port -1)")
            return
        if self._thread is not None:
            raise RuntimeError("SchedulerServer already started")
        self._thread = threading.Thread(target=self._run, name="healthz-server", daemon=True)
        self._thread.start()

    def wait_bound(self, timeout: float | None = None) -> int | None:
        """Block until the server listens (or ``timeout`` passes); returns :attr:`bound_port`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.bound_port is None and not self._stopping.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            self._stopping.wait(0.01)
        return self.bound_port

    def stop(self, grace: float = _STOP_GRACE) -> None:
        """Stop serving and join the server thread; in-flight requests get ``grace`` seconds."""
        with self._lock:
            self._stopping.set()
            httpd = self._httpd
        if httpd is not None:
            httpd.shutdown()
        if self._thread is not None:
            self._thread.join()
        if httpd is not None:
            httpd.server_close()
            httpd.join_requests(grace)
            self._httpd = None

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                httpd = _HTTPServer(self, (self.address, self.port))
            except OSError as e:
                log.error("failed to start healthz server: %s", e)
                self._stopping.wait(self.retry_interval)
                continue
            with self._lock:
                if self._stopping.is_set():
                    httpd.server_close()
                    return
                self._httpd = httpd
            host, port = httpd.server_address[:2]
            if self.tls is not None:
                log.info("Serving securely on %s:%s", host, port)
            else:
                served = ", ".join(self.paths) if self.paths is not None else "healthz, metrics and configz"
                log.info("serving %s on %s:%s (plain HTTP, no authentication)", served, host, port)
            try:
                httpd.serve_forever(poll_interval=_POLL_INTERVAL)
            except Exception as e:  # keep serving, as 1.9 retries ListenAndServe
                log.error("failed to start healthz server: %s", e)
            if self._stopping.is_set():
                return
            with self._lock:
                self._httpd = None
            httpd.server_close()
            self._stopping.wait(self.retry_interval)

    # -- request handling -------------------------------------------------------------------------

    def serves(self, path: str) -> bool:
        """Whether ``path`` is among :attr:`paths` (every path when they are not limited)."""
        return self.paths is None or any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.paths)

    def admit(self, method: str, path: str, authorization: str | None,
              peer_certificate: bytes | None) -> tuple[int, str, bytes] | None:
        """None when the request may be answered; else the answer to send instead (404 off :attr:`paths`, the
        guard's refusal)."""
        if not self.serves(path):
            return not_found()
        if self.guard is None:
            return None
        refusal = self.guard.admit(method, path, authorization, peer_certificate)
        return None if refusal is None else (refusal.status, refusal.content_type, refusal.body)

    def handle(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        """Answer one GET: (status, content type, body)."""
        for endpoint, checks in self.endpoints.items():
            if path == f"/{endpoint}":
                return aggregate(endpoint, checks, "verbose" in query)
            if path.startswith(f"/{endpoint}/"):
                return single_check(checks, path[len(endpoint) + 2 :])
        if path == "/metrics":
            body, content_type = self.metrics.exposition()
            return HTTPStatus.OK, content_type, body
        if path == "/configz":
            return HTTPStatus.OK, "application/json", json.dumps({"componentconfig": self.configz()}).encode()
        if self.profiling and path.startswith("/debug/pprof/"):
            answer = pprof.page(path[len("/debug/pprof/") :], query, self._stopping)
            if answer is not None:
                content_type, text = answer
                return HTTPStatus.OK, content_type, text.encode()
        return not_found()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: SchedulerServer, server_address: tuple[str, int]) -> None:
        self.owner = owner
        self.address_family = socket.AF_INET6 if ":" in server_address[0] else socket.AF_INET
        self._requests: dict[threading.Thread, socket.socket] = {}
        self._requests_lock = threading.Lock()
        super().__init__(server_address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves socket.getfqdn(host), a reverse DNS lookup we neither need
        # nor want to block on.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = port

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="healthz-request",
            daemon=True,
        )
        with self._requests_lock:
            if len(self._requests) >= _MAX_CONNECTIONS:
                log.warning("%d connections open: closing a new one from %s", len(self._requests), client_address[0])
                self.shutdown_request(request)
                return
            self._requests[thread] = request
        thread.start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """One connection: in TLS first on the secure port (the handshake in this thread, not the accepting one)."""
        try:
            if self.owner.tls is not None:
                wrapped = self.owner.tls.wrap(request)
                if wrapped is None:
                    return
                request = wrapped
                with self._requests_lock:
                    self._requests[threading.current_thread()] = request
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self._requests_lock:
                self._requests.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver prints a traceback to stderr; a client that goes away mid-request is no error of ours.
        error = sys.exc_info()[1]
        peer = client_address[0] if client_address else "?"
        if isinstance(error, OSError):  # reset, closed without TLS close_notify, timed out
            log.debug("connection from %s ended: %s", peer, error)
        else:
            log.debug("error serving a connection from %s", peer, exc_info=True)

    def join_requests(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for request threads, then cut the connections left and join."""
        deadline = time.monotonic() + grace
        with self._requests_lock:
            pending = dict(self._requests)
        for thread in pending:
            thread.join(max(0.0, deadline - time.monotonic()))
        for thread, request in pending.items():
            if thread.is_alive():
                try:
                    request.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                thread.join(1.0)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    timeout = _REQUEST_TIMEOUT
    protocol_version = "HTTP/1.1"  # keep-alive: a scraper reuses its connection (and its TLS session)
    # Headers and body are two writes: without TCP_NODELAY the body waits for the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        owner = self.server.owner
        try:
            answer = owner.admit("GET", url.path, self.headers.get("Authorization"), self._peer_certificate())
            if answer is None:
                answer = owner.handle(url.path, parse_qs(url.query, keep_blank_values=True))
        except Exception as e:  # a failing callback answers 500, the server carries on
            log.exception("error serving %s", url.path)
            answer = HTTPStatus.INTERNAL_SERVER_ERROR, TEXT, f"{e}\n".encode()
        status, content_type, body = answer
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if owner.guard is not None:
            self.send_header("Cache-Control", "no-cache, private")
        if content_type.startswith("text/plain"):
            self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _peer_certificate(self) -> bytes | None:
        """The client certificate (DER) the TLS handshake verified, if the client sent one."""
        if isinstance(self.connection, ssl.SSLSocket):
            return self.connection.getpeercert(binary_form=True)
        return None

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        code = getattr(code, "value", code)
        log.debug("%s %s from %s: %s", self.command, urlsplit(self.path).path, self.address_string(), code)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)
