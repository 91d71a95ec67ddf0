"""A fault-injecting HTTP proxy between a client under test and a real kube-apiserver.

The proxy listens on plain ``http://127.0.0.1:<port>`` and forwards every request to the upstream
server named in a kubeconfig (TLS verified against the kubeconfig's CA, the bearer token added when the
client sent none). Responses are relayed as they arrive, so watches stay live. Faults the real server
will not make on demand are injected by rules::

    proxy = FaultProxy(apiserver.kubeconfig).start()
    rest = RestClient(api_client(proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig")))
    proxy.fail("POST", r"/binding$", 500)          # the next bind gets a 500 Status, not forwarded
    proxy.cut_watches(r"/pods")                    # break every open pod watch mid-stream
    proxy.drop_reply("POST", r"/binding$")         # the server binds; the client never hears back
    proxy.stop()

Rules are matched (``re.search``) against the request path and against ``path?query``, so ``r"/pods$"``
and ``r"watch=true"`` both work. ``method`` is compared case-insensitively; ``"*"`` matches any method.
``times=-1`` keeps a rule forever. Every rule returns a :class:`Rule` whose ``hits`` counts the requests
it affected. Responses to the client are framed with ``Content-Length`` when the upstream sent one and
with chunked transfer encoding otherwise, so a cut stream (closed without the terminating chunk) is an
error for the client, never a clean end.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

# metav1.StatusReason for the codes a test is likely to inject.
REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Gone", 413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}
HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
    "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding",
}
EXPIRED_MESSAGE = "too old resource version: 1 (2)"
BINDING = r"/pods/[^/]+/binding$"  # a pod's binding subresource, for rules and counts


def status_body(code: int, message: str = "", reason: str | None = None) -> dict[str, Any]:
    """A ``metav1.Status`` failure as the apiserver writes it."""
    reason = REASONS.get(code, "") if reason is None else reason
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message or f"fault injected by the test proxy: {code} {reason}".rstrip(),
        "reason": reason, "code": code,
    }


def expired_event() -> dict[str, Any]:
    """The ERROR event a real apiserver sends on a watch from a compacted resourceVersion."""
    return {"type": "ERROR", "object": status_body(410, EXPIRED_MESSAGE, "Expired")}


@dataclass
class Rule:
    """One fault rule; ``hits`` counts the requests it affected, ``remaining`` is -1 for forever."""

    kind: str
    method: str
    pattern: re.Pattern[str]
    remaining: int
    status: int = 0
    body: dict[str, Any] | None = None
    seconds: float = 0.0
    events: int = 0
    forward: bool = True
    hits: int = 0

    def matches(self, method: str, path: str, full: str) -> bool:
        return (self.method in ("*", method)) and bool(self.pattern.search(path) or self.pattern.search(full))

    @property
    def active(self) -> bool:
        return self.remaining != 0


@dataclass
class _Stream:
    """An open relayed response (watch or other streamed body) that ``cut_watches`` can break."""

    path: str
    full: str
    watch: bool
    client: socket.socket
    upstream: http.client.HTTPConnection | None = None
    cut_rule: Rule | None = None
    events: int = 0
    cut: bool = False


@dataclass
class _Upstream:
    scheme: str
    host: str
    port: int
    token: str
    context: ssl.SSLContext | None = field(default=None, repr=False)


def _load_kubeconfig(path: str) -> _Upstream:
    text = Path(path).read_text()
    try:
        config = json.loads(text)
    except ValueError:
        import yaml  # the kubernetes client depends on PyYAML; envtest writes JSON anyway

        config = yaml.safe_load(text)

    def named(section: str, name: str) -> dict[str, Any]:
        for item in config.get(section) or []:
            if item.get("name") == name:
                return item.get(section[:-1]) or {}
        raise ValueError(f"{path}: no {section[:-1]} named {name!r}")

    contexts = config.get("contexts") or []
    current = config.get("current-context") or (contexts[0]["name"] if contexts else "")
    context = named("contexts", current)
    cluster = named("clusters", context.get("cluster", ""))
    user = named("users", context.get("user", "")) if context.get("user") else {}
    base = os.path.dirname(os.path.abspath(path))

    token = user.get("token") or ""
    if not token and user.get("tokenFile"):
        token = Path(base, user["tokenFile"]).read_text().strip()
    url = urlsplit(cluster["server"])
    https = url.scheme == "https"
    ssl_context = None
    if https:
        if cluster.get("insecure-skip-tls-verify"):
            ssl_context = ssl._create_unverified_context()
        elif cluster.get("certificate-authority-data"):
            ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
            ssl_context = ssl.create_default_context(cadata=ca)
        elif cluster.get("certificate-authority"):
            ssl_context = ssl.create_default_context(cafile=os.path.join(base, cluster["certificate-authority"]))
        else:
            ssl_context = ssl.create_default_context()
    return _Upstream(url.scheme, url.hostname or "127.0.0.1", url.port or (443 if https else 80), token, ssl_context)


def _is_watch(path: str, query: str) -> bool:
    values = parse_qs(query).get("watch", [])
    return any(v.lower() in ("true", "1") for v in values) or "/watch/" in path


def _hard_close(sock: socket.socket | None) -> None:
    """Shut a socket down so a thread blocked on it wakes up (works for SSL sockets too)."""
    if sock is None:
        return
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class FaultProxy:
    """A real HTTP server on 127.0.0.1 that forwards to the kubeconfig's apiserver and injects faults."""

    def __init__(self, upstream_kubeconfig: str) -> None:
        self.upstream = _load_kubeconfig(str(upstream_kubeconfig))
        self.url = ""
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._log: list[tuple[str, str, int]] = []
        self._streams: list[_Stream] = []
        self._clients: set[socket.socket] = set()
        self._blackhole = False
        self._refuse = False
        self._stopped = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(_Handler):
            pass

        Handler.proxy = proxy
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="faultproxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening, cut every open stream and drop every client connection (hung ones too)."""
        self._stopped.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            streams, clients = list(self._streams), list(self._clients)
        for stream in streams:
            self._cut(stream)
        for sock in clients:
            _hard_close(sock)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(self, path: str | os.PathLike[str]) -> str:
        """A kubeconfig pointing at the proxy (plain http, the upstream's token); returns its path."""
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "faultproxy", "cluster": {"server": self.url}}],
            "users": [{"name": "faultproxy-user", "user": {"token": self.upstream.token}}],
            "contexts": [{"name": "faultproxy", "context": {"cluster": "faultproxy", "user": "faultproxy-user",
                                                             "namespace": "default"}}],
            "current-context": "faultproxy",
        }
        Path(path).write_text(json.dumps(config, indent=2))
        return str(path)

    # ------------------------------------------------------------------ rules

    def _add(self, kind: str, method: str, path_regex: str, times: int, **kw: Any) -> Rule:
        rule = Rule(kind, method.upper(), re.compile(path_regex), times, **kw)
        with self._lock:
            self._rules.append(rule)
        return rule

    def fail(self, method: str, path_regex: str, status: int, times: int = 1,
             body: dict[str, Any] | None = None) -> Rule:
        """Answer matching requests with ``status`` and a Status body (or ``body``), without forwarding."""
        return self._add("fail", method, path_regex, times, status=status, body=body)

    def drop_reply(self, method: str, path_regex: str, times: int = 1, forward: bool = True) -> Rule:
        """Reset the client's connection instead of answering matching requests: after forwarding them and
        reading the server's whole reply (the request took effect; the log records the server's status), or,
        with ``forward=False``, without forwarding (nothing happened; the log records 0)."""
        return self._add("drop", method, path_regex, times, forward=forward)

    def delay(self, method: str, path_regex: str, seconds: float, times: int = 1) -> Rule:
        """Sleep ``seconds`` before handling matching requests (then forward, or apply another rule)."""
        return self._add("delay", method, path_regex, times, seconds=seconds)

    def gone_on_watch(self, path_regex: str, times: int = 1) -> Rule:
        """The next matching watch gets 200 and one ERROR 410 Expired event, then the stream ends."""
        return self._add("gone_watch", "GET", path_regex, times)

    def gone_on_list(self, path_regex: str, times: int = 1) -> Rule:
        """The next matching list (GET, not a watch) gets a 410 Expired Status."""
        return self._add("gone_list", "GET", path_regex, times)

    def cut_after(self, path_regex: str, events: int, times: int = 1) -> Rule:
        """Cut the next matching watch stream once it has relayed ``events`` events."""
        return self._add("cut", "GET", path_regex, times, events=max(1, events))

    def cut_watches(self, path_regex: str = ".*", after_events: int = 0) -> int:
        """Cut every open watch stream matching now; returns how many were cut.

        With ``after_events > 0`` nothing is cut now: a one-shot rule is armed that cuts the next matching
        watch after it has relayed that many events (see :meth:`cut_after`), and 0 is returned.
        """
        if after_events > 0:
            self.cut_after(path_regex, after_events)
            return 0
        pattern = re.compile(path_regex)
        with self._lock:
            streams = [s for s in self._streams
                       if s.watch and not s.cut and (pattern.search(s.path) or pattern.search(s.full))]
        for stream in streams:
            self._cut(stream)
        return len(streams)

    def blackhole(self, on: bool) -> None:
        """While on, requests are accepted and never answered (until the client gives up or ``stop``)."""
        self._blackhole = on

    def refuse(self, on: bool) -> None:
        """While on, every request gets a quick 503 ServiceUnavailable."""
        self._refuse = on

    def clear(self) -> None:
        """Drop every rule (open streams and the request log are kept)."""
        with self._lock:
            self._rules.clear()

    # ------------------------------------------------------------------ log

    @property
    def requests(self) -> list[tuple[str, str, int]]:
        """(method, path with query, status returned) for every request, oldest first (a copy).

        Blackholed requests are logged with status 0.
        """
        with self._lock:
            return list(self._log)

    def count(self, method: str, path_regex: str) -> int:
        pattern, method = re.compile(path_regex), method.upper()
        return sum(1 for m, full, _ in self.requests
                   if method in ("*", m) and (pattern.search(urlsplit(full).path) or pattern.search(full)))

    @property
    def open_watches(self) -> int:
        with self._lock:
            return sum(1 for s in self._streams if s.watch and not s.cut)

    def informers_watching(self) -> bool:
        """Whether every collection listed with ``resourceVersion=0`` (how an informer starts) has an open watch
        stream now. An informer starts its watch after its list, so a client whose informers have synced may not
        be watching yet: a fault aimed at its watches must wait for this."""
        with self._lock:
            listed = {split.path for method, full, status in self._log
                      if method == "GET" and status == 200 and (split := urlsplit(full))
                      and not _is_watch(split.path, split.query) and parse_qs(split.query).get("resourceVersion") == ["0"]}
            watched = {s.path for s in self._streams if s.watch and not s.cut}
        return listed <= watched

    # ------------------------------------------------------------------ internals

    def _record(self, method: str, full: str, status: int) -> None:
        with self._lock:
            self._log.append((method, full, status))

    def _claim(self, method: str, path: str, full: str, watch: bool) -> tuple[list[Rule], Rule | None, Rule | None]:
        """Consume the rules that apply: the delays, the first answering rule, and a watch cut rule."""
        delays: list[Rule] = []
        answer: Rule | None = None
        cut: Rule | None = None
        with self._lock:
            for rule in self._rules:
                if not rule.active or not rule.matches(method, path, full):
                    continue
                if rule.kind == "delay":
                    delays.append(rule)
                elif rule.kind == "cut":
                    if watch and cut is None:
                        cut = rule
                elif answer is None and (
                    rule.kind in ("fail", "drop")
                    or (rule.kind == "gone_watch" and watch)
                    or (rule.kind == "gone_list" and not watch)
                ):
                    answer = rule
            for rule in [*delays, *(r for r in (answer, cut) if r is not None)]:
                if rule.remaining > 0:
                    rule.remaining -= 1
                if rule.kind != "cut":
                    rule.hits += 1
            self._rules = [r for r in self._rules if r.active]
        return delays, answer, cut

    def _cut(self, stream: _Stream) -> None:
        stream.cut = True
        _hard_close(stream.client)
        if stream.upstream is not None:
            _hard_close(stream.upstream.sock)

    def _connect(self) -> http.client.HTTPConnection:
        up = self.upstream
        if up.scheme == "https":
            return http.client.HTTPSConnection(up.host, up.port, context=up.context, timeout=30)
        return http.client.HTTPConnection(up.host, up.port, timeout=30)


class _Handler(BaseHTTPRequestHandler):
    proxy: FaultProxy
    protocol_version = "HTTP/1.1"
    server_version = "faultproxy"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.proxy._lock:
            self.proxy._clients.add(self.connection)

    def finish(self) -> None:
        with self.proxy._lock:
            self.proxy._clients.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def do_GET(self) -> None:
        self._handle()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    # ------------------------------------------------------------------ request handling

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        proxy = self.proxy
        method, full = self.command, self.path
        url = urlsplit(full)
        watch = _is_watch(url.path, url.query)
        try:
            body = self._read_body()
            if proxy._blackhole:
                proxy._record(method, full, 0)
                proxy._stopped.wait()
                self.close_connection = True
                return
            if proxy._refuse:
                proxy._record(method, full, 503)
                self._send_json(503, status_body(503, "the server is currently unable to handle the request"))
                return
            delays, answer, cut = proxy._claim(method, url.path, full, watch)
            for rule in delays:
                time.sleep(rule.seconds)
            if answer is not None and answer.kind == "drop":
                self._drop(answer, method, full, body)
                return
            if answer is not None:
                self._answer(answer, method, full)
                return
            self._forward(method, full, url.path, body, watch, cut)
        except OSError:
            self.close_connection = True

    def _drop(self, rule: Rule, method: str, full: str, body: bytes) -> None:
        status = 0
        if rule.forward:
            upstream = self.proxy._connect()
            try:
                upstream.request(method, full, body=body or None, headers=self._upstream_headers())
                response = upstream.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status = 502
            finally:
                upstream.close()
        self.proxy._record(method, full, status)
        self.close_connection = True
        _hard_close(self.connection)

    def _upstream_headers(self) -> dict[str, str]:
        """The client's end-to-end headers, plus the upstream's token when the client sent none."""
        proxy = self.proxy
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if proxy.upstream.token and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = f"Bearer {proxy.upstream.token}"
        headers["Accept-Encoding"] = "identity"
        return headers

    def _answer(self, rule: Rule, method: str, full: str) -> None:
        if rule.kind == "gone_watch":
            self.proxy._record(method, full, 200)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._chunk(json.dumps(expired_event()).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        if rule.kind == "gone_list":
            status, body = 410, status_body(410, EXPIRED_MESSAGE, "Expired")
        else:
            status, body = rule.status, rule.body if rule.body is not None else status_body(rule.status)
        self.proxy._record(method, full, status)
        self._send_json(status, body)

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _forward(self, method: str, full: str, path: str, body: bytes, watch: bool, cut: Rule | None) -> None:
        proxy = self.proxy
        headers = self._upstream_headers()
        upstream = proxy._connect()
        stream = _Stream(path, full, watch, self.connection, upstream, cut)
        try:
            try:
                upstream.request(method, full, body=body if body or method in ("POST", "PUT", "PATCH") else None,
                                 headers=headers)
                if watch and upstream.sock is not None:
                    upstream.sock.settimeout(None)  # a watch may sit idle for minutes
                response = upstream.getresponse()
            except (OSError, http.client.HTTPException) as e:
                proxy._record(method, full, 502)
                self._send_json(502, status_body(502, f"fault proxy: upstream unreachable: {e}", "InternalError"))
                return
            proxy._record(method, full, response.status)
            self.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            length = response.getheader("Content-Length")
            if method == "HEAD" or response.status in (204, 304) or (length is not None and not watch):
                if length is not None:
                    self.send_header("Content-Length", length)
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(response.read())
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with proxy._lock:
                proxy._streams.append(stream)
            try:
                self._relay(response, stream)
            finally:
                with proxy._lock:
                    proxy._streams.remove(stream)
        finally:
            upstream.close()

    def _relay(self, response: http.client.HTTPResponse, stream: _Stream) -> None:
        """Copy a streamed body as chunks; watch bodies line by line so events can be counted and cut."""
        lines = self._lines(response) if stream.watch else self._pieces(response)
        try:
            for data in lines:
                if stream.cut:
                    break
                self._chunk(data)
                if stream.watch:
                    stream.events += 1
                    rule = stream.cut_rule
                    if rule is not None and stream.events >= rule.events:
                        with self.proxy._lock:
                            rule.hits += 1
                        self.proxy._cut(stream)
                        break
        except (OSError, http.client.HTTPException, ValueError):
            stream.cut = True
        if stream.cut:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")

    @staticmethod
    def _pieces(response: http.client.HTTPResponse) -> Iterator[bytes]:
        while data := response.read1(65536):
            yield data

    @staticmethod
    def _lines(response: http.client.HTTPResponse) -> Iterator[bytes]:
        buffer = b""
        while data := response.read1(65536):
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    yield line + b"\n"
        if buffer.strip():
            yield buffer
