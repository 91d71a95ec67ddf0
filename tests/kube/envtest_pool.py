"""Real API servers shared by the tests of one pytest process, each handed out exclusively and put back, before
every hand-out, to the cluster it was when it had just started.

Starting etcd and kube-apiserver costs 2 to 3.5 s of CPU (most of it the API server building its API) and
about 4 s of wall time; the suite's tests need about 150 of them, and on a 2-core machine those starts were
half the suite's CPU. A test that only needs *a fresh cluster* (no objects but what a new server has) gets one
here for the price of a few etcd requests:

- **Baseline.** Right after a server starts, every key under ``/registry/`` is read from etcd, with its value.
- **Reset** (before the next test gets the server): in one pass over etcd, every key the baseline lacks is
  deleted and every baseline key that changed or went missing is written back with its baseline value, in
  transactions through etcd's JSON gateway. Deleting in etcd bypasses finalizers and graceful deletion, so a
  Terminating namespace or pod is gone as on a new server. The API server's own identity Leases are left to it.
- **Caches.** The API server serves lists with ``resourceVersion=0`` (how informers start) from its watch cache,
  which follows etcd a little behind. After a reset, every object the reset touched is looked up in such a list
  of its resource (found through discovery) until the cache shows it deleted, or restored at the reset's
  revision, so that no later test can list the previous test's objects.
- **Exclusive.** A server is leased to one test (or one module's fixture) at a time; a second lease of the same
  kind while the first is out starts another server. At most ``keep`` idle servers stay running per process;
  the least recently used beyond that are stopped (an idle API server still costs 1 to 2 % of a core).

One thing a reset cannot undo: the API server keeps its Service cluster-IP and node-port allocators in memory
as well as in etcd, and refuses an address it remembers as taken (until its repair loop runs) even when etcd
says it is free; a test that asks for an explicit ``clusterIP`` or ``nodePort`` starts its own server.

A test that stops, restarts or compacts its server, or starts one with flags of its own, may still use the pool
(the server is checked alive before each lease and replaced when it is not); one that needs what a reset cannot
give (a never-written etcd, the first resourceVersions) starts its own with :func:`envtest.start_server`.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness.envtest import EnvtestServer, start_server
from policy_scheduler.kube.client.rest import ApiError

REGISTRY = b"/registry/"
#: Keys the API server itself keeps writing (its identity Lease is renewed every 10 s): never restored.
SERVER_OWNED = (b"/registry/leases/kube-system/kube-apiserver-", b"/registry/leases/kube-system/apiserver-")
#: etcd refuses a transaction of more than 128 operations by default.
TXN_OPS = 100
#: Where a resource's objects live in etcd when the directory is not the resource's name.
STORAGE_DIRS = {"nodes": "minions", "services": "services/specs", "endpoints": "services/endpoints",
                "replicationcontrollers": "controllers"}
CACHE_TIMEOUT = 10.0


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@dataclass(frozen=True)
class _Resource:
    list_path: str
    namespaced: bool


@dataclass
class _Touched:
    """One key the reset deleted (``revision`` None) or wrote back at ``revision``."""

    resource: _Resource
    namespace: str
    name: str
    revision: int | None


class Baseline:
    """The etcd keys of a just-started server, and how to go back to them."""

    def __init__(self, server: EnvtestServer) -> None:
        self.server = server
        self.values = {key: (revision, value) for key, revision, value in self._range(keys_only=False)}
        self._resources: dict[str, _Resource] | None = None

    def _range(self, keys_only: bool = True) -> list[tuple[bytes, int, str]]:
        reply = self.server.etcd_request("/kv/range", {"key": _b64(REGISTRY), "range_end": _b64(b"/registry0"),
                                                       "keys_only": keys_only})
        return [(base64.b64decode(kv["key"]), int(kv["mod_revision"]), kv.get("value", ""))
                for kv in reply.get("kvs", ())]

    def reset(self) -> int:
        """Back to the baseline; the number of keys deleted or written back."""
        current = {key: revision for key, revision, _ in self._range()}
        ops = [("delete", key) for key in current if key not in self.values]
        ops += [("put", key) for key, (revision, _) in self.values.items() if current.get(key) != revision]
        ops = [(op, key) for op, key in ops if not key.startswith(SERVER_OWNED)]
        touched: list[_Touched] = []
        for start in range(0, len(ops), TXN_OPS):
            chunk = ops[start:start + TXN_OPS]
            reply = self.server.etcd_request("/kv/txn", {"success": [
                {"request_delete_range": {"key": _b64(key)}} if op == "delete"
                else {"request_put": {"key": _b64(key), "value": self.values[key][1]}} for op, key in chunk]})
            revision = int(reply["header"]["revision"])
            touched.extend(t for op, key in chunk
                           if (t := self._touched(key, None if op == "delete" else revision)) is not None)
        self._wait_for_caches(touched)
        return len(ops)

    # -- the watch caches ------------------------------------------------------------------------------
    def _touched(self, key: bytes, revision: int | None) -> _Touched | None:
        """What API object ``key`` holds (by the longest storage directory that prefixes it), or None for
        keys of no listable resource (the service IP allocator, for one)."""
        path = key[len(REGISTRY):].decode(errors="replace")
        resources = self.resources()
        for directory in sorted((d for d in resources if path.startswith(d + "/")), key=len, reverse=True):
            resource = resources[directory]
            rest = path[len(directory) + 1:].split("/")
            if len(rest) == (2 if resource.namespaced else 1):
                return _Touched(resource, rest[0] if resource.namespaced else "", rest[-1], revision)
        return None

    def resources(self) -> dict[str, _Resource]:
        """Storage directory -> the resource's cluster-wide list path, from the server's discovery."""
        if self._resources is None:
            rest = self.server.rest()
            found: dict[str, _Resource] = {}
            versions = ["/api/v1"] + [f"/apis/{g['preferredVersion']['groupVersion']}"
                                      for g in rest.get("/apis")["groups"]]
            for version in versions:
                for r in rest.get(version)["resources"]:
                    if "/" in r["name"] or "list" not in r.get("verbs", ()):
                        continue
                    directory = STORAGE_DIRS.get(r["name"], r["name"])
                    found.setdefault(directory, _Resource(f"{version}/{r['name']}", r["namespaced"]))
            self._resources = found
        return self._resources

    def _wait_for_caches(self, touched: Iterable[_Touched]) -> None:
        by_list: dict[str, list[_Touched]] = {}
        for t in touched:
            by_list.setdefault(t.resource.list_path, []).append(t)
        rest = self.server.rest()
        deadline = time.monotonic() + CACHE_TIMEOUT
        for list_path, keys in by_list.items():
            while not self._cache_shows(rest.get(list_path, {"resourceVersion": "0"})["items"], keys):
                if time.monotonic() > deadline:
                    raise AssertionError(f"the API server's cache of {list_path} did not follow the reset "
                                         f"within {CACHE_TIMEOUT:.0f}s")
                time.sleep(0.02)

    @staticmethod
    def _cache_shows(items: list[dict[str, Any]], keys: list[_Touched]) -> bool:
        seen = {(i["metadata"].get("namespace", ""), i["metadata"]["name"]): i["metadata"].get("resourceVersion")
                for i in items}
        for t in keys:
            rv = seen.get((t.namespace, t.name))
            if (t.revision is None and rv is not None) or (t.revision is not None and rv != str(t.revision)):
                return False
        return True


@dataclass
class _Entry:
    key: tuple[str, tuple[str, ...]]
    server: EnvtestServer
    baseline: Baseline
    leased: bool = False
    last_used: float = field(default_factory=time.monotonic)


class EnvtestPool:
    """Servers by (version, extra launcher flags), each leased to one holder at a time."""

    def __init__(self, directory: Path, keep: int = 3) -> None:
        self.directory = directory
        self.keep = keep
        self._entries: list[_Entry] = []
        self._started = 0

    def lease(self, version: str, *extra: str) -> EnvtestServer:
        """A server of ``version`` started with ``extra``, holding only what a new server holds."""
        key = (version, tuple(extra))
        for entry in sorted(self._entries, key=lambda e: e.last_used, reverse=True):
            if entry.key != key or entry.leased:
                continue
            if entry.server.alive():
                try:
                    entry.baseline.reset()
                except (OSError, ApiError, AssertionError):
                    pass  # a server that cannot be reset is replaced, below
                else:
                    entry.leased = True
                    return entry.server
            self._discard(entry)
        self._started += 1
        server = start_server(version, self.directory / f"{version}-{self._started}", *extra)
        entry = _Entry(key, server, Baseline(server), leased=True)
        self._entries.append(entry)
        return server

    @contextmanager
    def leased(self, version: str, *extra: str) -> Iterator[EnvtestServer]:
        """:meth:`lease` for the length of a ``with`` block (a fixture's yield)."""
        server = self.lease(version, *extra)
        try:
            yield server
        finally:
            self.release(server)

    def release(self, server: EnvtestServer) -> None:
        """Back to the pool; the least recently used idle servers beyond ``keep`` are stopped."""
        for entry in self._entries:
            if entry.server is server:
                entry.leased, entry.last_used = False, time.monotonic()
        idle = sorted((e for e in self._entries if not e.leased), key=lambda e: e.last_used, reverse=True)
        for entry in idle[self.keep:]:
            self._discard(entry)

    def close(self) -> None:
        for entry in list(self._entries):
            self._discard(entry)

    def _discard(self, entry: _Entry) -> None:
        self._entries.remove(entry)
        try:
            entry.server.stop()
        except RuntimeError:
            pass  # already gone: nothing is left to stop
