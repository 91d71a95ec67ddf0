"""An example scheduler extender: ``filter``, ``prioritize`` and ``bind`` over HTTP(S), standard library only.

* **filter** rejects nodes whose label ``example.com/maintenance`` is ``"true"``, with the message
  ``node is under maintenance`` in ``failedNodes``;
* **prioritize** scores each node with its label ``example.com/score`` (an integer, clipped to 0..10;
  missing or invalid: 0);
* **bind** POSTs the ``Binding`` to the API server named by ``--kubeconfig`` (the only part that needs
  the ``kubernetes`` package) and answers ``{"Error": ""}``, or the API server's refusal as ``Error``.

It reads ``ExtenderArgs`` with full nodes (``nodes``) or names only (``nodenames``,
``nodeCacheCapable: true``) and answers in the same form. With names only it needs the nodes' labels:
from ``--nodes FILE`` (a manifest: a Node, a ``kind: List`` or several YAML documents) and/or, with
``--kubeconfig``, from the API server (listed at start and again when an unknown name arrives).

    python -m examples.extender --port 12346 [--nodes nodes.yaml] [--kubeconfig K] [--tls-cert C --tls-key K]

prints ``listening on http(s)://HOST:PORT/scheduler`` once it accepts requests.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

log = logging.getLogger("example-extender")

MAINTENANCE_LABEL = "example.com/maintenance"
SCORE_LABEL = "example.com/score"
MAINTENANCE_MESSAGE = "node is under maintenance"
PATH_PREFIX = "/scheduler"


def _get(obj: Mapping[str, Any], key: str) -> Any:
    """A key matched case-insensitively, as Go's decoder matches struct fields."""
    if key in obj:
        return obj[key]
    lowered = key.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == lowered:
            return v
    return None


def _labels(node: Mapping[str, Any]) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _name(node: Mapping[str, Any]) -> str:
    return (node.get("metadata") or {}).get("name") or ""


class NodeLabels:
    """Node name -> labels, for requests that carry names only."""

    def __init__(self, api: Any = None) -> None:
        self.api = api
        self._labels: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def add(self, node: Mapping[str, Any]) -> None:
        self._labels[_name(node)] = _labels(node)

    def load_file(self, path: str) -> None:
        text = Path(path).read_text(encoding="utf-8")
        try:
            docs = [json.loads(text)]
        except ValueError:
            import yaml  # only needed for YAML manifests

            docs = list(yaml.safe_load_all(text))
        for doc in docs:
            for obj in (doc.get("items") or []) if doc and doc.get("kind") == "List" else [doc]:
                if obj and obj.get("kind", "Node") == "Node":
                    self.add(obj)

    def refresh(self) -> None:
        """List the nodes from the API server (when one is configured)."""
        if self.api is None:
            return
        items = api_request(self.api, "GET", "/api/v1/nodes")["items"]
        with self._lock:
            self._labels = {_name(n): _labels(n) for n in items}

    def get(self, name: str) -> dict[str, str] | None:
        labels = self._labels.get(name)
        if labels is None and self.api is not None:
            self.refresh()
            labels = self._labels.get(name)
        return labels


class ExampleExtender:
    """The extender's decisions, apart from HTTP. ``faults`` (verb -> ``{"status": n}``, ``{"body": b"..."}``
    or ``{"sleep": seconds}``) lets tests make a verb misbehave; ``requests`` keeps the last ``keep_requests``
    requests (the command line keeps none: a thousand requests with full nodes are a lot of memory)."""

    def __init__(self, nodes: NodeLabels | None = None, api: Any = None, keep_requests: int = 1000) -> None:
        self.nodes = nodes or NodeLabels(api)
        self.api = api
        self.faults: dict[str, dict[str, Any]] = {}
        self.requests: collections.deque[tuple[str, dict[str, Any]]] = collections.deque(maxlen=keep_requests)
        self.bytes_received = 0

    VERBS = ("filter", "prioritize", "bind")

    def handle(self, verb: str, args: dict[str, Any]) -> Any:
        return getattr(self, verb)(args)

    def _candidates(self, args: Mapping[str, Any]) -> tuple[list[tuple[str, dict[str, str] | None]], bool]:
        """(name, labels) per candidate, and whether the request carried names only."""
        names = _get(args, "nodenames")
        if names is not None:
            return [(name, self.nodes.get(name)) for name in names], True
        items = (_get(args, "nodes") or {}).get("items") or []
        return [(_name(n), _labels(n)) for n in items], False

    def filter(self, args: Mapping[str, Any]) -> dict[str, Any]:
        candidates, by_name = self._candidates(args)
        failed: dict[str, str] = {}
        for name, labels in candidates:
            if labels is None:
                failed[name] = "node unknown to the example extender"
            elif labels.get(MAINTENANCE_LABEL) == "true":
                failed[name] = MAINTENANCE_MESSAGE
        if by_name:
            return {"nodenames": [name for name, _ in candidates if name not in failed], "failedNodes": failed}
        items = (_get(args, "nodes") or {}).get("items") or []
        return {"nodes": {"items": [n for n in items if _name(n) not in failed]}, "failedNodes": failed}

    def prioritize(self, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        candidates, _ = self._candidates(args)
        return [{"host": name, "score": score(labels or {})} for name, labels in candidates]

    def bind(self, args: Mapping[str, Any]) -> dict[str, str]:
        name, namespace = _get(args, "PodName"), _get(args, "PodNamespace")
        uid, node = _get(args, "PodUID"), _get(args, "Node")
        if self.api is None:
            return {"Error": "the example extender has no API server to bind with (start it with --kubeconfig)"}
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if uid:
            metadata["uid"] = uid
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": metadata,
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            api_request(self.api, "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", binding)
        except Exception as e:  # the API server's refusal goes back to the scheduler as the bind error
            return {"Error": f"binding {namespace}/{name} to {node}: {e}"}
        log.info("bound %s/%s to %s", namespace, name, node)
        return {"Error": ""}


def score(labels: Mapping[str, str]) -> int:
    """The node's ``example.com/score`` label as a score in 0..10 (0 when missing or invalid)."""
    try:
        return max(0, min(10, int(labels.get(SCORE_LABEL, "0"))))
    except ValueError:
        return 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the scheduler reuses its connection for every pod
    server: ExtenderServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle + delayed ACK add 40 ms per reply.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        extender = self.server.extender
        extender.bytes_received += len(raw)
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        fault = extender.faults.get(verb) or {}
        if fault.get("sleep"):
            time.sleep(fault["sleep"])
        if "status" in fault:
            return self._reply(fault["status"], b'{"error": "injected"}')
        if "body" in fault:
            return self._reply(200, fault["body"])
        if verb not in extender.VERBS:
            return self._reply(404, b"unknown verb\n")
        try:
            args = json.loads(raw)
        except ValueError as e:
            return self._reply(400, f"bad request: {e}\n".encode())
        extender.requests.append((verb, args))
        try:
            result = extender.handle(verb, args)
        except Exception as e:  # a bug or an unreachable API server: the scheduler sees a 500
            log.exception("%s failed", verb)
            return self._reply(500, json.dumps({"error": str(e)}).encode())
        self._reply(200, json.dumps(result, separators=(",", ":")).encode())

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        log.debug("%s %s", self.address_string(), format % args)


class ExtenderServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], extender: ExampleExtender,
                 tls: ssl.SSLContext | None = None) -> None:
        super().__init__(address, Handler)
        self.extender = extender
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
            log.debug("%s went away: %s", client_address, sys.exc_info()[1])  # e.g. the scheduler timed out
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"{self.scheme}://{host}:{port}{PATH_PREFIX}"

    def start(self) -> ExtenderServer:
        """Serve in a background thread (for tests and benchmarks)."""
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="example-extender", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def tls_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def api_request(api: Any, method: str, path: str, body: Any = None) -> dict[str, Any]:
    """One JSON request through a ``kubernetes.client.ApiClient``'s connection pool and credentials."""
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    token = api.configuration.auth_settings().get("BearerToken")
    if token and token.get("value"):
        headers[token["key"]] = token["value"]
    response = api.rest_client.request(method, api.configuration.host + path, headers=headers,
                                       body=body, _request_timeout=(5, 30))
    data = response.data
    if data is None:  # kubernetes >= 30: the body is read on demand
        data = response.read()
    if not 200 <= response.status < 300:
        raise RuntimeError(f"{response.status}: {data.decode(errors='replace').strip()}")
    return json.loads(data) if data else {}


def kube_api(kubeconfig: str) -> Any:
    from kubernetes import config  # only bind and the node listing need the kubernetes package

    return config.new_client_from_config(config_file=kubeconfig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.extender", description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=12346, help="0 picks a free port")
    parser.add_argument("--nodes", action="append", default=[], help="node manifests (for nodeCacheCapable)")
    parser.add_argument("--kubeconfig", help="API server for bind (and node labels)")
    parser.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", help="and this key (PEM)")
    parser.add_argument("--client-ca", help="require client certificates signed by this CA")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s] %(message)s")
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    api = kube_api(args.kubeconfig) if args.kubeconfig else None
    nodes = NodeLabels(api)
    for path in args.nodes:
        nodes.load_file(path)
    if api is not None:
        nodes.refresh()
    tls = tls_context(args.tls_cert, args.tls_key, args.client_ca) if args.tls_cert else None
    server = ExtenderServer((args.address, args.port), ExampleExtender(nodes, api, keep_requests=0), tls)
    print(f"listening on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
