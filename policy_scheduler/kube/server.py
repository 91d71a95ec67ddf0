"""The daemon's HTTP endpoints: ``/healthz``, ``/livez``, ``/readyz``, ``/metrics``, ``/configz`` and (opt-in)
``/debug/pprof/``.

One :class:`SchedulerServer` per listener. The daemon runs the secure one (HTTPS on ``--secure-port``, every
request authenticated and authorized first: a ``tls`` acceptor and a ``guard``, :mod:`.serving`) and, when asked
for, 1.9's plain-HTTP port (``paths`` limits it to the health endpoints, and ``/metrics`` on request). Binding
is retried until :meth:`SchedulerServer.stop`, as 1.9's ListenAndServe loop does.

The health bodies follow the apiserver's healthz package (``/healthz``, ``/livez``, ``/readyz``, each with
``?verbose`` and ``/<endpoint>/<check>``). The pprof pages are the Python
counterparts of Go's: ``goroutine`` dumps every thread's stack, ``profile`` is a wall-clock sampling
profiler over all threads answering folded stacks (for ``flamegraph.pl`` or speedscope), ``heap``
reports tracemalloc's top allocation sites (or, without tracing, live object counts by type).
"""

from __future__ import annotations

import gc
import html
import json
import logging
import socket
import socketserver
import ssl
import sys
import threading
import time
import traceback
import tracemalloc
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from .metrics import SchedulerMetrics

if TYPE_CHECKING:
    from .serving.guard import RequestGuard
    from .serving.tlsaccept import TLSAcceptor

log = logging.getLogger(__name__)

RETRY_INTERVAL = 5.0  # seconds between bind attempts, as 1.9's ListenAndServe loop
PROFILE_SECONDS = 30  # Go's default for /debug/pprof/profile
PROFILE_INTERVAL = 0.01  # seconds between stack samples
PING = "ping"

Check = Callable[[], str | None]

_TEXT = "text/plain; charset=utf-8"
_POLL_INTERVAL = 0.1  # serve_forever's shutdown latency
_REQUEST_TIMEOUT = 60.0  # a connection that sends nothing is dropped after this long
_STOP_GRACE = 2.0  # seconds stop() waits for in-flight requests before cutting their connections
_MAX_CONNECTIONS = 128  # open connections beyond this are closed at once (each holds a thread)
HEALTH_ENDPOINTS = ("healthz", "livez", "readyz")
_HEAP_TOP = 50
_PPROF_PAGES = {
    "goroutine": "stack traces of all current threads",
    "heap": "tracemalloc's top allocation sites (start with PYTHONTRACEMALLOC=1), else object counts by type",
    "profile": "wall-clock sampling profile of all threads as folded stacks; ?seconds=N (default 30)",
}


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
            self.endpoints[name] = {PING: _ping, **self.endpoints[name]}
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

    def stop(self) -> None:
        """Stop serving and join the server thread; in-flight requests get a short grace period."""
        with self._lock:
            self._stopping.set()
            httpd = self._httpd
        if httpd is not None:
            httpd.shutdown()
        if self._thread is not None:
            self._thread.join()
        if httpd is not None:
            httpd.server_close()
            httpd.join_requests(_STOP_GRACE)
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
            return _not_found()
        if self.guard is None:
            return None
        refusal = self.guard.admit(method, path, authorization, peer_certificate)
        return None if refusal is None else (refusal.status, refusal.content_type, refusal.body)

    def handle(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        """Answer one GET: (status, content type, body)."""
        for endpoint, checks in self.endpoints.items():
            if path == f"/{endpoint}":
                return self._aggregate(endpoint, checks, "verbose" in query)
            if path.startswith(f"/{endpoint}/"):
                return self._single_check(checks, path[len(endpoint) + 2 :])
        if path == "/metrics":
            body, content_type = self.metrics.exposition()
            return HTTPStatus.OK, content_type, body
        if path == "/configz":
            return HTTPStatus.OK, "application/json", json.dumps({"componentconfig": self.configz()}).encode()
        if self.profiling and path.startswith("/debug/pprof/"):
            page = path[len("/debug/pprof/") :]
            if page == "":
                return HTTPStatus.OK, "text/html; charset=utf-8", _pprof_index().encode()
            if page == "goroutine":
                return HTTPStatus.OK, _TEXT, thread_stacks().encode()
            if page == "profile":
                return HTTPStatus.OK, _TEXT, self._profile(query).encode()
            if page == "heap":
                return HTTPStatus.OK, _TEXT, heap_report().encode()
        return _not_found()

    def _aggregate(self, endpoint: str, checks: Mapping[str, Check], verbose: bool) -> tuple[int, str, bytes]:
        # healthz.go handleRootHealthz: any failure -> 500 listing every check with the reason withheld
        # (the endpoint is public); ?verbose shows the reasons (1.9 withholds them there too).
        lines: list[str] = []
        failed = False
        for name, check in checks.items():
            reason = _run_check(name, check)
            if reason is None:
                lines.append(f"[+]{name} ok\n")
            else:
                failed = True
                lines.append(f"[-]{name} failed: {reason if verbose else 'reason withheld'}\n")
        if failed:
            return (
                HTTPStatus.INTERNAL_SERVER_ERROR,
                _TEXT,
                ("".join(lines) + f"{endpoint} check failed\n").encode(),
            )
        if not verbose:
            return HTTPStatus.OK, _TEXT, b"ok"
        return HTTPStatus.OK, _TEXT, ("".join(lines) + f"{endpoint} check passed\n").encode()

    def _single_check(self, checks: Mapping[str, Check], name: str) -> tuple[int, str, bytes]:
        check = checks.get(name)
        if check is None:
            return _not_found()
        reason = _run_check(name, check)
        if reason is None:
            return HTTPStatus.OK, _TEXT, b"ok"
        return HTTPStatus.INTERNAL_SERVER_ERROR, _TEXT, f"internal server error: {reason}\n".encode()

    def _profile(self, query: dict[str, list[str]]) -> str:
        try:
            seconds = float(query.get("seconds", [""])[0])
        except ValueError:
            seconds = 0.0
        if not seconds > 0:  # as Go: missing, unparsable or non-positive -> the default
            seconds = PROFILE_SECONDS
        return sample_profile(seconds, stop=self._stopping)


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
            answer = HTTPStatus.INTERNAL_SERVER_ERROR, _TEXT, f"{e}\n".encode()
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


def _ping() -> str | None:
    return None


def _run_check(name: str, check: Check) -> str | None:
    try:
        return check()
    except Exception as e:  # a raising check is a failing check
        log.debug("healthz check %s raised", name, exc_info=True)
        return f"{type(e).__name__}: {e}"


def _not_found() -> tuple[int, str, bytes]:
    return HTTPStatus.NOT_FOUND, _TEXT, b"404 page not found\n"


def _pprof_index() -> str:
    rows = "\n".join(
        f'<tr><td><a href="{name}">{name}</a></td><td>{html.escape(text)}</td></tr>'
        for name, text in _PPROF_PAGES.items()
    )
    return (
        "<html><head><title>/debug/pprof/</title></head><body>\n"
        "<h1>/debug/pprof/</h1>\n<table>\n" + rows + "\n</table>\n</body></html>\n"
    )


# -- profiling -------------------------------------------------------------------------------------


def thread_stacks() -> str:
    """Every Python thread's current stack (the ``goroutine?debug=2`` counterpart)."""
    threads = {t.ident: t for t in threading.enumerate()}
    out: list[str] = []
    for ident, frame in sys._current_frames().items():
        thread = threads.get(ident)
        name = thread.name if thread is not None else "<unknown>"
        daemon = " daemon" if thread is not None and thread.daemon else ""
        out.append(f'Thread {ident} "{name}"{daemon}:\n')
        out.extend(traceback.format_stack(frame))
        out.append("\n")
    return "".join(out)


def sample_profile(
    seconds: float, *, interval: float = PROFILE_INTERVAL, stop: threading.Event | None = None
) -> str:
    """Sample all threads' stacks every ``interval`` for ``seconds``; answer folded stacks.

    One line per distinct stack, ``root;...;leaf count``, most frequent first; frames are
    ``module.qualname``. Wall-clock: blocked threads are sampled too. The sampling thread itself is
    left out. ``stop`` ends sampling early (the partial profile is returned).
    """
    me = threading.get_ident()
    labels: dict[CodeType, str] = {}
    counts: Counter[tuple[str, ...]] = Counter()
    deadline = time.monotonic() + seconds
    stop = stop or threading.Event()
    while True:
        for ident, frame in sys._current_frames().items():
            if ident != me:
                counts[_folded(frame, labels)] += 1
        remaining = deadline - time.monotonic()
        if remaining <= 0 or stop.wait(min(interval, remaining)):
            break
    return "".join(f"{';'.join(stack)} {n}\n" for stack, n in counts.most_common())


def _folded(frame: FrameType | None, labels: dict[CodeType, str]) -> tuple[str, ...]:
    stack: list[str] = []
    while frame is not None:
        code = frame.f_code
        label = labels.get(code)
        if label is None:
            module = frame.f_globals.get("__name__", "?")
            name = getattr(code, "co_qualname", code.co_name)
            label = labels[code] = f"{module}.{name}".replace(";", ":").replace(" ", "_")
        stack.append(label)
        frame = frame.f_back
    stack.reverse()
    return tuple(stack)


def heap_report() -> str:
    """tracemalloc's top allocation sites when tracing, else how to enable it plus gc object counts."""
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
            )
        )
        stats = snapshot.statistics("lineno")
        current, peak = tracemalloc.get_traced_memory()
        out = [f"tracemalloc: {current} bytes traced now, peak {peak}; top {_HEAP_TOP} allocation sites:\n"]
        out.extend(f"{stat}\n" for stat in stats[:_HEAP_TOP])
        return "".join(out)
    counts = Counter(type(o).__qualname__ for o in gc.get_objects())
    out = [
        "tracemalloc is not tracing: start the process with PYTHONTRACEMALLOC=1 (or -X tracemalloc) for "
        "allocation sites.\n",
        f"gc-tracked objects by type (top {_HEAP_TOP} of {len(counts)} types, {sum(counts.values())} objects):\n",
    ]
    out.extend(f"{n:>10} {name}\n" for name, n in counts.most_common(_HEAP_TOP))
    return "".join(out)
