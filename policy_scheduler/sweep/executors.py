"""Where cells run: any :class:`concurrent.futures.Executor`. ``local`` is a process pool on this machine;
``dask`` is an existing Dask cluster through ``distributed.Client.get_executor()``. One loop,
:func:`run_cells`, drives both.

* Cells are started largest first (:func:`.cells.start_order`).
* A cell that fails on bad input comes back as a row with its error. A cell whose worker is lost (a local
  worker killed, a Dask task given up after its workers died) is run once more, on a new executor; lost
  again, its row says so. The sweep goes on either way.
* A snapshot is shipped once: local workers read its path; a Dask cluster gets its bytes once per round
  (``Client.scatter``), and each worker parses it once (:func:`.cells.cached_snapshot`).
* Ctrl-C stops the executor at once (pending cells cancelled, local workers stopped) and
  :class:`KeyboardInterrupt` reaches the caller, which has every row that finished.
"""

from __future__ import annotations

import multiprocessing
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError, Executor, Future, ProcessPoolExecutor, as_completed
from typing import Any

from ..errors import UserError
from .cells import (
    Cell,
    SnapshotRef,
    error_row,
    read_manifests,
    run_cell,
    start_order,
    worker_init,
    worker_version,
)

#: How often a cell whose worker was lost is run again before its row says so.
RETRIES = 1

RowCallback = Callable[[Cell, dict[str, Any]], None]


def default_workers() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Backend(ABC):
    """Makes executors, ships snapshots to them, stops them."""

    name = "backend"

    @abstractmethod
    def executor(self) -> Executor:
        """A new executor whose workers run :func:`.cells.run_cell`."""

    def ship(self, ref: SnapshotRef) -> Any:
        """What :func:`.cells.run_cell` receives besides the cell for this snapshot (None: the worker reads
        its path)."""
        return None

    def stop(self, executor: Executor, now: bool) -> None:
        executor.shutdown(wait=not now, cancel_futures=True)

    def close(self) -> None:  # noqa: B027 (optional: only a backend holding a connection overrides it)
        """Release what the backend holds (a client connection); a local pool holds nothing between runs."""

    def describe(self) -> str:
        return self.name


class LocalBackend(Backend):
    """A process pool of ``workers`` processes on this machine."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()

    def executor(self) -> Executor:
        methods = multiprocessing.get_all_start_methods()
        # Not fork: the parent may hold threads (a Dask client, a browser driver) a forked child would inherit
        # half-locked. A fork server with the engine imported starts each worker as fast as a fork would.
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if context.get_start_method() == "forkserver":
            context.set_forkserver_preload(["policy_scheduler.sweep.cells"])
        return ProcessPoolExecutor(self.workers, mp_context=context, initializer=worker_init)

    def stop(self, executor: Executor, now: bool) -> None:
        if now and isinstance(executor, ProcessPoolExecutor):
            processes = list((getattr(executor, "_processes", None) or {}).values())
            for process in processes:
                process.terminate()
            for process in processes:
                process.join(10)
        executor.shutdown(wait=True, cancel_futures=True)

    def describe(self) -> str:
        return f"local, {self.workers} worker process{'es' if self.workers != 1 else ''}"


class DaskBackend(Backend):
    """An existing Dask cluster: its scheduler at ``address``."""

    name = "dask"

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        try:
            import distributed
        except ImportError:
            raise UserError("--executor dask needs Dask's distributed package: "
                            "pip install 'policy-scheduler[dask]'") from None
        self.address = address
        try:
            distributed.comm.get_address_host_port(address)  # a malformed address: say so before any connection
        except ValueError as e:
            raise UserError(f"--scheduler-address {address}: not a Dask scheduler address (tcp://HOST:PORT): {e}") from None
        try:
            self.client = distributed.Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as e:
            reason = " ".join(str(e).split()) or type(e).__name__
            raise UserError(f"--scheduler-address {address}: cannot connect to a Dask scheduler: {reason}") from None
        self._check_workers()

    def _check_workers(self) -> None:
        """Every worker imports the engine now (not in the first cell it runs) and has the client's version of
        policy-scheduler: the cells are its Python objects. A worker that joins later is not checked."""
        from .. import __version__

        try:
            versions = self.client.run(worker_version)
        except Exception as e:  # ModuleNotFoundError there, re-raised here
            self.client.close()
            raise UserError(f"--scheduler-address {self.address}: a Dask worker cannot import policy-scheduler's "
                            f"sweep ({' '.join(str(e).split())}); install policy-scheduler {__version__} on every "
                            "worker") from None
        wrong = {w: v for w, v in sorted(versions.items()) if v != __version__}
        if wrong:
            self.client.close()
            listed = ", ".join(f"{w} has {v}" for w, v in wrong.items())
            raise UserError(f"--scheduler-address {self.address}: the Dask workers must run policy-scheduler "
                            f"{__version__}, as this client does: {listed}")

    def executor(self) -> Executor:
        # pure=False: a cell run again (its worker lost) is a new task, not the lost one's result.
        return self.client.get_executor(pure=False)

    def ship(self, ref: SnapshotRef) -> Any:
        return self.client.scatter(read_manifests(ref), hash=False)

    def stop(self, executor: Executor, now: bool) -> None:
        executor.shutdown(wait=not now)

    def close(self) -> None:
        self.client.close()

    def workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    def describe(self) -> str:
        return f"dask at {self.address}, {self.workers()} workers"


def run_cells(cells: Iterable[Cell], backend: Backend, on_row: RowCallback,
              retries: int = RETRIES) -> dict[tuple[int, int, int], dict[str, Any]]:
    """Run ``cells`` on ``backend``; every row by its cell's position, each also given to ``on_row`` as it
    arrives. Ctrl-C stops the executor and raises :class:`KeyboardInterrupt` (``on_row`` has had the rows)."""
    rows: dict[tuple[int, int, int], dict[str, Any]] = {}
    todo = start_order(list(cells))
    lost: dict[tuple[int, int, int], str] = {}
    for _ in range(retries + 1):
        if not todo:
            break
        executor = backend.executor()
        try:
            lost = _one_round(todo, backend, executor, rows, on_row)
        except KeyboardInterrupt:
            backend.stop(executor, now=True)
            raise
        backend.stop(executor, now=False)
        todo = start_order([c for c in todo if c.position in lost])
    for cell in todo:
        rows[cell.position] = row = error_row(cell, f"worker lost: {lost[cell.position]}")
        on_row(cell, row)
    return rows


def _one_round(todo: list[Cell], backend: Backend, executor: Executor,
               rows: dict[tuple[int, int, int], dict[str, Any]], on_row: RowCallback) -> dict[tuple[int, int, int], str]:
    """Submit every cell of ``todo``, collect the rows; the cells that did not come back, and why."""
    futures: dict[Future, Cell] = {}
    shipped: dict[str, Any] = {}
    lost: dict[tuple[int, int, int], str] = {}
    for cell in todo:
        try:
            if cell.snapshot.digest not in shipped:
                shipped[cell.snapshot.digest] = backend.ship(cell.snapshot)
            futures[executor.submit(run_cell, cell, shipped[cell.snapshot.digest])] = cell
        except (OSError, RuntimeError, UserError) as e:  # the executor is gone (a broken pool, a closed client)
            lost[cell.position] = _why(e)
    for future in as_completed(futures):
        cell = futures[future]
        try:
            row = future.result()
        except (Exception, CancelledError) as e:
            lost[cell.position] = _why(e)
            continue
        rows[cell.position] = row
        on_row(cell, row)
    return lost


def _why(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
