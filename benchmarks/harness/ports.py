"""Loopback ports for the servers that tests and benchmarks start themselves.

A port taken from the kernel (bind to port 0, close, hand the number to a server) can be handed out again
before that server binds it: any other process's bind to port 0 may take it in between (the envtest API
servers' etcd does, for one). A daemon told to serve there then keeps retrying its bind while the test
talks to etcd's plain HTTP (``SSL: WRONG_VERSION_NUMBER``). :func:`free_port` hands out ports from below the
kernel's ephemeral range, where neither a bind to port 0 nor an outgoing connection ever lands, each
pytest-xdist worker (or each process outside xdist) from a block of its own, so no other process of the
suite hands out the same number.
"""

from __future__ import annotations

import itertools
import os
import socket
from pathlib import Path

FIRST_PORT = 15000  # above the usual fixed service ports
BLOCK = 500  # ports per worker: a worker cycles through its block


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _block_index() -> int:
    blocks = max(1, (_ephemeral_low() - FIRST_PORT) // BLOCK)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        return int(worker[2:]) % blocks
    return os.getpid() % blocks


_BLOCK_START = FIRST_PORT + _block_index() * BLOCK
_next = itertools.cycle(range(os.getpid() % BLOCK, os.getpid() % BLOCK + BLOCK))


def free_port() -> int:
    """A loopback port nothing listens on, that no other worker of the suite hands out."""
    for _ in range(BLOCK):
        port = _BLOCK_START + next(_next) % BLOCK
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # in use (a server of this worker, or a connection in TIME_WAIT)
                continue
        return port
    raise RuntimeError(f"no free loopback port in {_BLOCK_START}-{_BLOCK_START + BLOCK - 1}")
