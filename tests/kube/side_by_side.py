"""Our daemon side by side with upstream's kube-scheduler of the same line, on one real API server: what
``tests/kube/test_daemon_volume_rules.py`` and ``tests/kube/test_daemon_only_scheduler.py`` (Part A) share.

Each scheduler gets a pool of its own (:class:`Pool`): nodes labelled ``pool: <pool>``, pods naming the pool's
scheduler, every object named ``<pool>-...``, so that neither scheduler's decisions depend on the other's pods.
:func:`schedulers` runs both at once; :func:`expect_bound` and :func:`expect_pending` wait for a scheduler's
verdict on a pod and show the end of its log when it does not come.

The ``cluster`` and ``pools`` fixtures (``cluster_fixture``, ``pools_fixture``) are imported by the test
modules, so that pytest finds them, with ``pool_class`` (``pool_class_fixture``: :class:`Pool`) or a
``pool_class`` fixture of the module's own (a subclass with more methods); each module has its own ``server``
fixture (its API server's flags).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.daemon import SCHEDULER, Cluster, DaemonProcess, LoggedProcess, node, pod, wait_until
from benchmarks.harness.envtest import EnvtestServer

from .reference import REFERENCE_SCHEDULER, ReferenceScheduler

LINES = ("1.26", "1.32", "1.36")
POOLS = {"ref": REFERENCE_SCHEDULER, "ours": SCHEDULER}

VERDICT_TIMEOUT = 30.0


# Named ``*_fixture`` so that the modules importing them may name their arguments after the fixtures.

@pytest.fixture(name="cluster")
def cluster_fixture(server) -> Cluster:
    return Cluster(server.rest())


@pytest.fixture(name="pool_class")
def pool_class_fixture() -> type[Pool]:
    """The class of the pools: a module that does not import this fixture defines its own ``pool_class``."""
    return Pool


@pytest.fixture(name="pools")
def pools_fixture(cluster, pool_class) -> dict[str, Pool]:
    """A pool of each scheduler, by name: ``ref`` (upstream's), ``ours``."""
    return {name: pool_class(cluster, name) for name in POOLS}


class Pool:
    """One scheduler's share of the server: its nodes (``pool: <name>``) and objects, all named ``<name>-...``;
    its pods in any namespace."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster, self.name, self.scheduler = cluster, name, POOLS[name]
        self.nodes: list[str] = []

    def n(self, suffix: str) -> str:
        return f"{self.name}-{suffix}"

    def add_node(self, suffix: str, *decorate: Callable[[dict[str, Any]], dict[str, Any]],
                 labels: dict[str, str] | None = None) -> str:
        """The node ``<pool>-<suffix>``, labelled ``pool: <pool>`` and ``labels``, as each of ``decorate`` in
        turn makes it."""
        obj = node(self.n(suffix), labels={"pool": self.name, **(labels or {})})
        for d in decorate:
            obj = d(obj)
        self.cluster.add_node(obj)
        self.nodes.append(obj["metadata"]["name"])
        return obj["metadata"]["name"]

    def add_pod(self, suffix: str, namespace: str = "default", labels: dict[str, str] | None = None,
                cpu: str = "100m", **spec: Any) -> dict[str, Any]:
        """A pod of the pool's scheduler; confined to the pool's nodes unless ``spec`` says where it goes."""
        if not {"nodeSelector", "nodeName", "affinity"} & set(spec):
            spec["nodeSelector"] = {"pool": self.name}
        return self.cluster.add_pod(pod(self.n(suffix), cpu=cpu, memory="10Mi", scheduler=self.scheduler,
                                        labels=labels, **spec), namespace)

    def get(self, suffix: str, namespace: str = "default") -> dict[str, Any] | None:
        return Cluster(self.cluster.rest, namespace).get_pod(self.n(suffix))

    def placement(self, suffix: str, namespace: str = "default") -> str:
        return ((self.get(suffix, namespace) or {}).get("spec") or {}).get("nodeName") or ""

    def failures(self, suffix: str, namespace: str = "default") -> list[str]:
        """The messages of the FailedScheduling events about the pod ``<pool>-<suffix>``."""
        name = self.n(suffix)
        return [e["message"] for e in Cluster(self.cluster.rest, namespace).events("FailedScheduling")
                if e["involvedObject"]["name"] == name]


@contextmanager
def running(*processes: LoggedProcess) -> Iterator[dict[str, int]]:
    """``processes`` started in order; all stopped (in reverse order) at the end, whatever happened. The dict
    yielded holds each one's exit code (by log name) once the block is left."""
    exit_codes: dict[str, int] = {}
    started: list[LoggedProcess] = []
    try:
        for p in processes:
            p.start()
            started.append(p)
        yield exit_codes
    finally:
        for p in reversed(started):
            try:
                exit_codes[p.log_path.name] = p.stop()
            except Exception:  # noqa: BLE001 - the others must be stopped all the same
                p.kill()


@contextmanager
def schedulers(server: EnvtestServer, tmp_path: Path, *others: LoggedProcess, feature_gates: str = "",
               reference_args: tuple[str, ...] = ()) -> Iterator[dict[str, LoggedProcess]]:
    """``others``, then upstream's kube-scheduler (pool ``ref``; with ``feature_gates``, and ``reference_args``
    as extra flags) and our daemon (pool ``ours``) on ``server``, running; all stopped at the end, whatever
    happened. Our daemon must have exited 0."""
    reference = ReferenceScheduler(server, tmp_path, feature_gates=feature_gates)
    reference.command.extend(reference_args)
    procs: dict[str, LoggedProcess] = {"ref": reference, "ours": DaemonProcess(server.kubeconfig, tmp_path)}
    with running(*others, *procs.values()) as exit_codes:
        yield procs
    assert exit_codes.get(procs["ours"].log_path.name) == 0, procs["ours"].log()[-4000:]


def expect(check: Callable[[], Any], what: str, process: LoggedProcess, timeout: float = VERDICT_TIMEOUT) -> Any:
    """``wait_until`` whose failure shows the end of the scheduler's log."""
    try:
        return wait_until(check, timeout, interval=0.2, what=what)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- {process.log_path.name} ---\n{process.log()[-4000:]}") from None


def expect_bound(pool: Pool, suffix: str, process: LoggedProcess, namespace: str = "default",
                 timeout: float = VERDICT_TIMEOUT) -> str:
    """The node the pod ``<pool>-<suffix>`` is bound to, once it is."""
    where = expect(partial(pool.placement, suffix, namespace), f"{namespace}/{pool.n(suffix)} bound", process,
                   timeout)
    print(f"[{pool.name}] {namespace}/{pool.n(suffix)} bound to {where}")
    return where


def expect_pending(pool: Pool, suffix: str, process: LoggedProcess, reason: str | None = None,
                   namespace: str = "default") -> list[str]:
    """The pod ``<pool>-<suffix>`` was tried and not bound (and every FailedScheduling message about it names
    ``reason``, when given): the messages of its FailedScheduling events."""
    messages = expect(partial(pool.failures, suffix, namespace),
                      f"a FailedScheduling event about {namespace}/{pool.n(suffix)}", process)
    where = pool.placement(suffix, namespace)
    assert where == "", f"{namespace}/{pool.n(suffix)} was bound to {where}: {messages}"
    if reason is not None:
        assert all(reason in m for m in messages), (reason, messages)
    print(f"[{pool.name}] {namespace}/{pool.n(suffix)} pending: {messages}")
    return messages
