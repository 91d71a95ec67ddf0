"""Raw JSON requests to the API server, behind a client-side token bucket.

Every request the daemon makes goes through :class:`RestClient`: the ApiClient's configuration gives
the server, TLS and credentials. Request/reply calls go over :mod:`.transport`'s keep-alive connections (a
third of the CPU of the official REST layer per request); watches, probes and configurations with a proxy
use the official client's REST layer and its connection pool. We read and write plain JSON (the engine
parses dicts itself; the generated models are the slow part at scale, and the 37.x client fails to
deserialise a Binding's ``Status`` reply even when the bind succeeded). Outcomes are judged by HTTP status
alone.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from kubernetes import client
from urllib3 import Timeout
from urllib3.exceptions import HTTPError

from .transport import KeepAliveTransport, TransportError

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
AUTH_REFRESH = 60.0
#: Statuses that say the server (or a proxy in front of it) could not handle the request at all.
UNAVAILABLE_STATUSES = frozenset({502, 503, 504})


class ApiError(Exception):
    """A request failed: ``status`` is the HTTP status (0 when no response arrived, e.g. a timeout)."""

    def __init__(self, status: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.details = dict(details or {})
        super().__init__(f"{status} {reason}: {message}" if status else message)

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def unavailable(self) -> bool:
        """The server may be gone: no reply (connection refused, reset, aborted, timed out), or a gateway's
        or a stopping server's 502/503/504."""
        return self.status == 0 or self.status in UNAVAILABLE_STATUSES

    @property
    def indefinite(self) -> bool:
        """Whether a write took effect is unknown: no reply, or any 5xx (a server may fail after storing,
        e.g. an etcd request timeout)."""
        return self.status == 0 or self.status >= 500


def status_error(status: int, body: bytes | str | None, fallback_reason: str = "") -> ApiError:
    """An ApiError from a ``metav1.Status`` body (or whatever text the server sent)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body or ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("kind") == "Status":
        return ApiError(status, data.get("reason") or fallback_reason, data.get("message") or text, data.get("details"))
    return ApiError(status, fallback_reason, text.strip() or fallback_reason)


def url_template(path: str) -> str:
    """client-go's ``finalURLTemplate``: the path with the namespace and the object name replaced
    (``/api/v1/namespaces/{namespace}/pods/{name}/binding``), so metric labels stay few."""
    parts = path.split("/")
    if len(parts) < 4 or parts[1] not in ("api", "apis"):
        return path  # /readyz, /version, discovery
    start = 3 if parts[1] == "api" else 4  # after /api/v1 or /apis/<group>/<version>
    out, rest = parts[:start], parts[start:]
    if len(rest) > 2 and rest[0] == "namespaces":
        out += ["namespaces", "{namespace}"]
        rest = rest[2:]
    if rest:
        out.append(rest[0])
        if len(rest) > 1:
            out += ["{name}", *rest[2:]]
    return "/".join(out)


class TokenBucket:
    """client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``: ``take`` blocks for a token.

    ``qps <= 0`` disables limiting (as a negative ``--kube-api-qps`` does upstream).
    """

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._tokens = float(self.burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> None:
        if self.qps <= 0:
            return
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            time.sleep(wait)


class RestClient:
    """JSON over the ApiClient's connection pool; ``timeout`` is the client-side read timeout in seconds."""

    def __init__(self, api: client.ApiClient, *, qps: float = 50, burst: int = 100, timeout: float = 30.0,
                 user_agent: str = "policy-scheduler") -> None:
        self.api = api
        self.limiter = TokenBucket(qps, burst)
        self.timeout = timeout
        self.user_agent = user_agent
        self._auth: dict[str, str] = {}
        self._auth_at = -AUTH_REFRESH
        configuration = api.configuration
        self._netloc = urlsplit(configuration.host).netloc
        self.transport = KeepAliveTransport(configuration) if KeepAliveTransport.supports(configuration) else None
        #: Told of every failure that may mean the server is gone (:mod:`.reachability` listens).
        self.on_unavailable: Callable[[ApiError], None] | None = None
        #: Told of every request: (method, url template, host, status or 0, seconds); the daemon's metrics.
        self.observer: Callable[[str, str, str, int, float], None] | None = None

    @property
    def host(self) -> str:
        return self.api.configuration.host

    def _authorization(self) -> dict[str, str]:
        """The credentials header, recomputed once a minute (a rotated token file is picked up)
        instead of on every request as the generated client does."""
        now = time.monotonic()
        if now - self._auth_at > AUTH_REFRESH:
            settings = self.api.configuration.auth_settings().get("BearerToken")
            self._auth = {settings["key"]: settings["value"]} if settings and settings.get("value") else {}
            self._auth_at = now
        return self._auth

    def _unavailable(self, error: ApiError) -> ApiError:
        if error.unavailable and self.on_unavailable is not None:
            self.on_unavailable(error)
        return error

    def _headers(self, accept: str, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": self.user_agent, **self._authorization()}
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers

    def _observe(self, method: str, path: str, status: int, started: float) -> None:
        if self.observer is not None:
            self.observer(method, url_template(path), self._netloc, status, time.monotonic() - started)

    def _exchange(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
                  content_type: str | None, timeout: float | tuple[float, float] | None) -> tuple[int, str, bytes]:
        """One request and its whole reply: (status, reason, body)."""
        self.limiter.take()
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body, separators=(",", ":"))
        if isinstance(body, str):
            body = body.encode("utf-8")
        headers = self._headers(JSON, (content_type or JSON) if body is not None else None)
        target = path + _query_string(query)
        read = timeout or self.timeout
        timeouts = timeout if isinstance(timeout, tuple) else (min(10.0, read), read)
        started = time.monotonic()
        status = 0
        try:
            if self.transport is not None:
                try:
                    reply = self.transport.request(method, target, headers, body, timeouts)
                except TransportError as e:
                    raise self._unavailable(ApiError(0, "", str(e))) from None
                status = reply.status
                return reply.status, reply.reason, reply.data
            response = self._open(method, target, headers, body, timeouts)
            status = response.status
            try:
                return response.status, response.reason or "", response.data
            except (HTTPError, OSError) as e:
                raise self._unavailable(ApiError(0, "", f"{method} {path}: {e}")) from None
            finally:
                response.release_conn()
        finally:
            self._observe(method, path, status, started)

    def _open(self, method: str, target: str, headers: dict[str, str], body: bytes | None,
              timeout: tuple[float, float]) -> Any:
        """The official REST layer's response (its pool manager), the body not yet read."""
        try:
            return self.api.rest_client.pool_manager.request(
                method, self.host + target, body=body, headers=headers, preload_content=False,
                timeout=Timeout(connect=timeout[0], read=timeout[1]))
        except (HTTPError, OSError) as e:
            raise self._unavailable(ApiError(0, "", f"{method} {target.split('?')[0]}: {e}")) from None

    def probe(self, path: str, timeout: float) -> int:
        """The HTTP status of one GET of ``path`` (``/readyz``): outside the rate limiter and without the
        REST layer's retries (a probe is repeated anyway); raises ApiError when no reply arrives."""
        headers = self._headers("text/plain", None)
        try:
            response = self.api.rest_client.pool_manager.request(
                "GET", self.host + path, headers=headers, timeout=Timeout(connect=timeout, read=timeout),
                retries=False)
        except (HTTPError, OSError) as e:
            raise ApiError(0, "", f"GET {path}: {e}") from None
        return response.status

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                content_type: str | None = None, timeout: float | tuple[float, float] | None = None) -> dict[str, Any]:
        """The decoded JSON reply; raises ApiError on any non-2xx status or transport failure."""
        status, reason, data = self._exchange(method, path, query, body, content_type, timeout)
        if not 200 <= status <= 299:
            raise self._unavailable(status_error(status, data, reason))
        try:
            return json.loads(data) if data else {}
        except ValueError:
            raise ApiError(status, "", f"{method} {path}: reply is not JSON") from None

    def get(self, path: str, query: Mapping[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self.request("GET", path, query=query, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> dict[str, Any]:
        return self.request("POST", path, body=body, **kw)

    def put(self, path: str, body: Any, **kw: Any) -> dict[str, Any]:
        return self.request("PUT", path, body=body, **kw)

    def patch(self, path: str, body: Any, content_type: str = STRATEGIC_MERGE_PATCH, **kw: Any) -> dict[str, Any]:
        return self.request("PATCH", path, body=body, content_type=content_type, **kw)

    def delete(self, path: str, query: Mapping[str, Any] | None = None, body: Any = None, **kw: Any) -> dict[str, Any]:
        return self.request("DELETE", path, query=query, body=body, **kw)

    def watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> WatchStream:
        """Open a watch (``watch=true``); the stream yields one decoded event dict per line."""
        self.limiter.take()
        started = time.monotonic()
        status = 0
        try:
            response = self._open("GET", path + _query_string({**query, "watch": "true"}), self._headers(JSON, None),
                                  None, (10.0, read_timeout))
            status = response.status
        finally:
            self._observe("GET", path, status, started)
        if not 200 <= response.status <= 299:
            try:
                data = response.data
            finally:
                response.release_conn()
            raise self._unavailable(status_error(response.status, data, response.reason or ""))
        return WatchStream(response, self._unavailable)

    def close(self) -> None:
        """Close the keep-alive connections (the official layer's pool closes with its ApiClient)."""
        if self.transport is not None:
            self.transport.close()


def _query_string(query: Mapping[str, Any] | None) -> str:
    params = {k: v for k, v in (query or {}).items() if v is not None}
    return "?" + urlencode(params) if params else ""


class WatchStream:
    """The lines of a watch response, decoded; ``close`` (from any thread) ends the iteration."""

    def __init__(self, response: Any, on_broken: Callable[[ApiError], ApiError] | None = None) -> None:
        self.response = response
        self.on_broken = on_broken
        self.closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        try:
            for chunk in self.response.stream(amt=None, decode_content=True):
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        break
                    line, buffer = buffer[:newline], buffer[newline + 1:]
                    if line.strip():
                        yield json.loads(line)
        except (HTTPError, OSError, ValueError) as e:
            if not self.closed:
                error = ApiError(0, "", f"watch stream broken: {e}")
                raise (self.on_broken(error) if self.on_broken is not None else error) from None

    def close(self) -> None:
        self.closed = True
        try:
            self.response.shutdown()
        except (AttributeError, OSError, ValueError, RuntimeError):
            # AttributeError: an older urllib3; RuntimeError (urllib3 2.x): the stream was read to its end
            # (the server ended the watch: its timeout, or an ERROR event such as 410) and the connection
            # already went back to the pool; nothing left to shut down.
            pass
        self.response.release_conn()
