"""The keep-alive transport against a real socket server whose replies each test scripts: framing (length,
chunked, close-delimited), reuse, a connection the server closed while idle, and what is never resent."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from policy_scheduler.kube.client.transport import KeepAliveTransport, TransportError

TIMEOUT = (2.0, 2.0)
Handler = Callable[[socket.socket, bytes], bool]  # (connection, request head+body) -> keep the connection open


class ScriptedServer:
    """Accepts connections; each request read is answered by the next handler in ``script``."""

    def __init__(self, script: list[Handler]) -> None:
        self.script = list(script)
        self.requests: list[bytes] = []
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with conn:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n")
                               if h.lower().startswith(b"content-length:")), 0)
                request = head + reader.read(length)
                self.requests.append(request)
                handler = self.script.pop(0) if len(self.script) > 1 else self.script[0]
                if not handler(conn, request):
                    return

    def close(self) -> None:
        self.sock.close()


def reply(body: bytes, status: str = "200 OK", extra: bytes = b"") -> Handler:
    def handle(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 " + status.encode() + b"\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n" + extra + b"\r\n" + body)
        return b"Connection: close" not in extra
    return handle


def chunked(parts: list[bytes]) -> Handler:
    def handle(conn: socket.socket, request: bytes) -> bool:
        out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        out += b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        conn.sendall(out)
        return True
    return handle


def until_close(body: bytes) -> Handler:
    def handle(conn: socket.socket, request: bytes) -> bool:
        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n" + body)
        return False
    return handle


def hang_up(conn: socket.socket, request: bytes) -> bool:
    return False


def silent(conn: socket.socket, request: bytes) -> bool:
    time.sleep(TIMEOUT[1] + 1)
    return False


@pytest.fixture
def serve():
    servers: list[ScriptedServer] = []

    def start(*script: Handler) -> tuple[ScriptedServer, KeepAliveTransport]:
        server = ScriptedServer(list(script))
        servers.append(server)
        configuration = SimpleNamespace(host=f"http://127.0.0.1:{server.port}", proxy=None)
        return server, KeepAliveTransport(configuration)

    yield start
    for server in servers:
        server.close()


def test_length_chunked_and_close_delimited_replies_are_read_whole(serve):
    server, transport = serve(reply(b'{"a":1}', "201 Created"), chunked([b'{"items":', b"[1,2]", b"}"]),
                              until_close(b"last"))
    first = transport.request("POST", "/api/v1/x", {"Content-Type": "application/json"}, b'{"k":"v"}', TIMEOUT)
    assert (first.status, first.reason, first.data) == (201, "Created", b'{"a":1}')
    assert transport.request("GET", "/api/v1/x?limit=5", {}, None, TIMEOUT).data == b'{"items":[1,2]}'
    assert transport.request("GET", "/y", {}, None, TIMEOUT).data == b"last"
    assert server.requests[0].startswith(b"POST /api/v1/x HTTP/1.1\r\n")
    assert b"Content-Length: 9\r\n" in server.requests[0] and server.requests[0].endswith(b'{"k":"v"}')
    assert server.requests[1].startswith(b"GET /api/v1/x?limit=5 HTTP/1.1\r\n")
    assert server.connections == 1  # the first two on one kept-alive connection


def test_a_connection_the_server_closed_while_idle_is_replaced_before_the_request(serve):
    server, transport = serve(reply(b"1", extra=b"Connection: close\r\n"), reply(b"2"))
    assert transport.request("POST", "/a", {}, b"{}", TIMEOUT).data == b"1"
    time.sleep(0.1)  # the server's FIN has arrived
    assert transport.request("POST", "/a", {}, b"{}", TIMEOUT).data == b"2"
    assert server.connections == 2 and len(server.requests) == 2


def test_a_get_whose_reused_connection_breaks_is_sent_again_but_a_post_is_not(serve):
    server, transport = serve(reply(b"1"), hang_up, reply(b"3"), hang_up)
    assert transport.request("GET", "/a", {}, None, TIMEOUT).data == b"1"
    assert transport.request("GET", "/a", {}, None, TIMEOUT).data == b"3"  # hung up, then resent once
    assert len(server.requests) == 3
    with pytest.raises(TransportError, match="closed the connection before replying"):
        transport.request("POST", "/binding", {}, b"{}", TIMEOUT)
    assert len(server.requests) == 4  # the POST went out once: whether it took effect is for the caller


def test_a_silent_server_times_out_and_the_request_is_not_resent(serve):
    server, transport = serve(reply(b"1"), silent)
    assert transport.request("GET", "/a", {}, None, TIMEOUT).data == b"1"
    with pytest.raises(TransportError):
        transport.request("GET", "/a", {}, None, TIMEOUT)
    assert len(server.requests) == 2


def test_nothing_listening_is_a_transport_error():
    port = socket.create_server(("127.0.0.1", 0))
    address = port.getsockname()[1]
    port.close()
    transport = KeepAliveTransport(SimpleNamespace(host=f"http://127.0.0.1:{address}", proxy=None))
    with pytest.raises(TransportError, match="connecting to 127.0.0.1"):
        transport.request("GET", "/a", {}, None, TIMEOUT)


def test_a_proxied_configuration_keeps_the_official_layer():
    assert not KeepAliveTransport.supports(SimpleNamespace(host="https://10.0.0.1:6443", proxy="http://proxy:3128"))
    assert KeepAliveTransport.supports(SimpleNamespace(host="https://10.0.0.1:6443", proxy=None))
