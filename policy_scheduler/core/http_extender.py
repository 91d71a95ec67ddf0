"""The HTTP scheduler extender client (upstream ``core/extender.go`` ``HTTPExtender``).

This module does network I/O. The engine never imports it: the generic scheduler calls extenders only
through the :class:`~policy_scheduler.core.extender.SchedulerExtender` protocol, and the factory builds
them with :class:`HTTPExtenderFactory` for the commands that may call out (``simulate``, ``explain``,
``capacity``, ``compare``, ``run``; ``policy validate`` never does).

Behaviour is 1.9's (``extender.md``): every call is a JSON ``POST`` to ``<urlPrefix without trailing
/>/<verb>``; a status other than 200 is ``Failed <verb> with extender at URL <urlPrefix>, code <n>``; a
200 body is decoded as Go decodes it (:mod:`policy_scheduler.api.extender`); ``httpTimeout`` (ns, 0 →
5 s) bounds each whole call; ``enableHttps`` without a CA means the server certificate is not verified;
``nodeCacheCapable`` sends and reads node names only. One connection pool per extender, kept alive and
reused across pods and schedulers. Two later opt-ins: ``managedResources`` (:meth:`HTTPExtender.is_interested`)
and ``ignorable`` (:meth:`HTTPExtender.is_ignorable`; the generic scheduler skips a failing filter).

Every failed call is counted in :attr:`HTTPExtender.stats` and reported to the factory's ``observer``
(the daemon exports it as ``scheduler_extender_errors_total{extender,verb,ignored}``).
"""

from __future__ import annotations

import datetime
import errno
import json
import logging
import os
import ssl
import tempfile
import threading
import urllib.request
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import HTTPError, InsecureRequestWarning, NameResolutionError, NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from ..algorithm import HostPriority
from ..api.extender import (
    WireError,
    binding_args,
    decode_binding_result,
    decode_filter_result,
    decode_host_priority_list,
)
from ..api.types import ExtenderConfig, TLSConfig
from ..cache.node_info import NodeInfo
from ..errors import PolicyError, UserError
from ..model.node import Node
from ..model.pod import Pod
from .extender import ExtenderError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
POOL_SIZE = 32
GO_TIMEOUT = "net/http: request canceled (Client.Timeout exceeded while awaiting headers)"

#: ``observer(extender, verb, ignored)`` is told of every failed call.
ErrorObserver = Callable[[str, str, bool], None]


class ExtenderConfigError(PolicyError):
    """An extender's TLS settings cannot be used (upstream: ``CreateFromConfig`` fails)."""


@dataclass
class ExtenderStats:
    """Calls, request/response body bytes and failures (``(verb, ignored)`` → count) of one extender."""

    calls: Counter[str] = field(default_factory=Counter)
    bytes_sent: int = 0
    bytes_received: int = 0
    errors: Counter[tuple[str, bool]] = field(default_factory=Counter)


def _json_default(value: Any) -> Any:
    """YAML manifests hold timestamps as datetimes; the API server writes RFC 3339."""
    if isinstance(value, datetime.datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), default=_json_default).encode()


class HTTPExtender:
    """One extender of the Policy: ``filter``, ``prioritize`` and ``bind`` over HTTP(S)."""

    def __init__(self, config: ExtenderConfig, observer: ErrorObserver | None = None) -> None:
        self.config = config
        self.name = config.url_prefix
        self.url_prefix = config.url_prefix
        self.filter_verb = config.filter_verb
        self.prioritize_verb = config.prioritize_verb
        self.bind_verb = config.bind_verb
        self.weight = config.weight
        self.node_cache_capable = config.node_cache_capable
        self.managed_resources = frozenset(r.name for r in config.managed_resources or ())
        self.timeout = config.http_timeout_ns / 1e9 if config.http_timeout_ns > 0 else DEFAULT_TIMEOUT
        self.observer = observer
        self.stats = ExtenderStats()
        self._stats_lock = threading.Lock()
        self._node_json: dict[str, tuple[Node, bytes]] = {}
        self._http = _pool_manager(config)
        self._timeout = urllib3.Timeout(total=self.timeout)

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix!r})"

    # -- the protocol ------------------------------------------------------------------------------
    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def is_interested(self, pod: Pod) -> bool:
        """1.10's ``IsInterested``: no managed resources, or the pod requests or limits one of them."""
        if not self.managed_resources:
            return True
        for container in (*pod.containers, *pod.init_containers):
            if not self.managed_resources.isdisjoint(container.requests) or \
                    not self.managed_resources.isdisjoint(container.limits):
                return True
        return False

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def filter(self, pod: Pod, nodes: list[Node], node_infos: Mapping[str, NodeInfo]) -> tuple[list[Node], dict[str, str]]:
        if not self.filter_verb:
            return nodes, {}
        try:
            body = self._send(self.filter_verb, self._args(pod, nodes))
            try:
                result = decode_filter_result(body)
            except WireError as e:
                raise ExtenderError(str(e)) from None
            if result.error:
                raise ExtenderError(result.error)
            if self.node_cache_capable and result.node_names is not None:
                kept = [self._cached_node(name, node_infos) for name in result.node_names]
            elif result.nodes is not None:
                kept = [self._returned_node(item, node_infos) for item in result.nodes]
            else:
                kept = []
        except ExtenderError:
            self._failed(self.filter_verb, self.config.ignorable)
            raise
        return kept, result.failed_nodes

    def prioritize(self, pod: Pod, nodes: list[Node]) -> tuple[list[HostPriority], int]:
        if not self.prioritize_verb:
            return [HostPriority(n.name, 0) for n in nodes], 0
        try:
            body = self._send(self.prioritize_verb, self._args(pod, nodes))
            try:
                scores = decode_host_priority_list(body)
            except WireError as e:
                raise ExtenderError(str(e)) from None
        except ExtenderError:
            self._failed(self.prioritize_verb, True)  # upstream ignores every prioritize error
            raise
        return [HostPriority(host, score) for host, score in scores], self.weight

    def bind(self, pod: Pod, node_name: str) -> None:
        if not self.bind_verb:
            raise ExtenderError("Unexpected empty bindVerb in extender")
        try:
            body = self._send(self.bind_verb, dumps(binding_args(pod.name, pod.namespace, pod.uid, node_name)))
            try:
                message = decode_binding_result(body)
            except WireError as e:
                raise ExtenderError(str(e)) from None
            if message:
                raise ExtenderError(message)
        except ExtenderError:
            self._failed(self.bind_verb, False)
            raise

    def close(self) -> None:
        self._http.clear()

    # -- the wire ----------------------------------------------------------------------------------
    def _args(self, pod: Pod, nodes: list[Node]) -> bytes:
        """``ExtenderArgs``; each node's JSON is encoded once and reused while the node is unchanged."""
        head = b'{"pod":' + dumps(pod.raw)
        if self.node_cache_capable:
            return head + b',"nodenames":' + dumps([n.name for n in nodes]) + b"}"
        return head + b',"nodes":{"metadata":{},"items":[' + b",".join(self._node_bytes(n) for n in nodes) + b"]}}"

    def _node_bytes(self, node: Node) -> bytes:
        cached = self._node_json.get(node.name)
        if cached is not None and cached[0] is node:
            return cached[1]
        data = dumps(node.raw)
        self._node_json[node.name] = (node, data)
        return data

    def _cached_node(self, name: str, node_infos: Mapping[str, NodeInfo]) -> Node:
        info = node_infos.get(name)
        if info is None or info.node is None:
            # Upstream dereferences nil here and crashes (extender.md §3, recommendation: an error).
            raise ExtenderError(f"extender {self.url_prefix} returned unknown node {name!r}")
        return info.node

    def _returned_node(self, item: dict[str, Any], node_infos: Mapping[str, NodeInfo]) -> Node:
        """The Node as the extender returned it (the cached object when unchanged)."""
        name = ((item.get("metadata") or {}) if isinstance(item.get("metadata"), dict) else {}).get("name")
        cached = self._cached_node(name if isinstance(name, str) else "", node_infos)
        if cached.raw == item:
            return cached
        try:
            return Node(item)
        except UserError as e:
            raise ExtenderError(f"extender {self.url_prefix} returned an invalid node {name!r}: {e}") from None

    def _send(self, verb: str, body: bytes) -> bytes:
        """``HTTPExtender.send``: POST, a 200 status, the body; ExtenderError with upstream's texts."""
        url = self.url_prefix.rstrip("/") + "/" + verb
        try:
            response = self._http.request(
                "POST", url, body=body, headers={"Content-Type": "application/json"},
                timeout=self._timeout, retries=False, redirect=False,
            )
        except NewConnectionError as e:  # before the timeouts: urllib3 2 makes it a ConnectTimeoutError
            raise ExtenderError(f"Post {url}: {_transport_reason(e, url)}") from None
        except Urllib3Timeout:
            raise ExtenderError(f"Post {url}: {GO_TIMEOUT}") from None
        except (HTTPError, OSError) as e:
            raise ExtenderError(f"Post {url}: {_transport_reason(e, url)}") from None
        with self._stats_lock:
            self.stats.calls[verb] += 1
            self.stats.bytes_sent += len(body)
            self.stats.bytes_received += len(response.data)
        if response.status != 200:
            raise ExtenderError(f"Failed {verb} with extender at URL {self.url_prefix}, code {response.status}")
        return response.data

    def _failed(self, verb: str, ignored: bool) -> None:
        with self._stats_lock:
            self.stats.errors[(verb, ignored)] += 1
        if self.observer is not None:
            self.observer(self.name, verb, ignored)


def _transport_reason(error: BaseException, url: str) -> str:
    """Go's wording for the usual transport failures; the library's text otherwise."""
    parts = urlsplit(url)
    if isinstance(error, NameResolutionError):
        return f"dial tcp: lookup {parts.hostname}: no such host"
    cause: BaseException | None = error.__cause__ or error.__context__
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__cause__ or cause.__context__
    if isinstance(error, NewConnectionError) or isinstance(cause, ConnectionRefusedError):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        code = getattr(cause, "errno", None)
        what = "getsockopt: connection refused" if code == errno.ECONNREFUSED else (
            os.strerror(code).lower() if isinstance(code, int) else str(error))
        return f"dial tcp {parts.hostname}:{port}: {what}"
    return str(error)


# -- transport -----------------------------------------------------------------------------------------
def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ExtenderConfigError(f"open {path}: {(e.strerror or str(e)).lower()}") from None


def ssl_context(config: ExtenderConfig) -> ssl.SSLContext | None:
    """``makeTransport`` + client-go's ``TLSConfigFor``; None when no TLS option results (plain transport,
    the system's roots for an ``https://`` prefix)."""
    tls = config.tls_config or TLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    has_cert = bool(tls.cert_file or tls.cert_data)
    insecure = tls.insecure or (config.enable_https and not has_ca)
    if not (has_ca or has_cert or insecure or tls.server_name):
        return None
    if has_ca and insecure:
        raise ExtenderConfigError("specifying a root certificates file with the insecure flag is not allowed")
    ca = tls.ca_data or (_read(tls.ca_file) if tls.ca_file else b"")
    context = ssl.create_default_context()
    if ca:
        try:
            context.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
        except (ssl.SSLError, ValueError) as e:
            raise ExtenderConfigError(f"extender {config.url_prefix}: tlsConfig CA: no certificate found ({e})") from None
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if has_cert:
        cert = tls.cert_data or _read(tls.cert_file)
        key = tls.key_data or (_read(tls.key_file) if tls.key_file else b"")
        _load_key_pair(context, cert, key)
    return context


def _load_key_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``tls.X509KeyPair`` (through files: the ssl module reads certificates only from files)."""
    if b"-----BEGIN" not in cert:
        raise ExtenderConfigError("tls: failed to find any PEM data in certificate input")
    if b"-----BEGIN" not in key:
        raise ExtenderConfigError("tls: failed to find any PEM data in key input")
    with tempfile.TemporaryDirectory(prefix="extender-tls-") as directory:
        cert_path, key_path = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        for path, data in ((cert_path, cert), (key_path, key)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
        try:
            context.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as e:
            raise ExtenderConfigError(f"tls: private key does not match public key or is invalid ({e})") from None


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (Go's ``ProxyFromEnvironment``: never for loopback)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host in ("localhost", "::1") or host.startswith("127."):
        return None
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy


def _pool_manager(config: ExtenderConfig) -> urllib3.PoolManager:
    context = ssl_context(config)
    kw: dict[str, Any] = {"maxsize": POOL_SIZE, "retries": False}
    if context is not None:
        kw["ssl_context"] = context
        if context.verify_mode == ssl.CERT_NONE:
            log.warning("extender %s: the server certificate is not verified (enableHttps without a CA, "
                        "or tlsConfig.Insecure)", config.url_prefix)
            warnings.filterwarnings("ignore", category=InsecureRequestWarning, module="urllib3.connectionpool")
    tls = config.tls_config
    if tls is not None and tls.server_name:
        kw["server_hostname"] = tls.server_name
    proxy = _proxy_for(config.url_prefix)
    if proxy is not None:
        return urllib3.ProxyManager(proxy, **kw)
    return urllib3.PoolManager(**kw)


class HTTPExtenderFactory:
    """The ``ExtenderFactory`` of the commands that call extenders.

    One :class:`HTTPExtender` (one connection pool) per distinct configuration, shared by every scheduler
    this factory builds (a reloaded policy naming the same extender keeps its connections).
    """

    def __init__(self, observer: ErrorObserver | None = None) -> None:
        self.observer = observer
        self._built: dict[ExtenderConfig, HTTPExtender] = {}
        self._lock = threading.Lock()

    def __call__(self, config: ExtenderConfig) -> HTTPExtender:
        with self._lock:
            extender = self._built.get(config)
            if extender is None:
                extender = self._built[config] = HTTPExtender(config, self.observer)
            return extender

    @property
    def extenders(self) -> list[HTTPExtender]:
        return list(self._built.values())
