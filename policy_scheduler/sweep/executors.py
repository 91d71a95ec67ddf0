"""Where cells run: any :class:`concurrent.futures.Executor`. ``local`` is a process pool on this machine;
``dask`` is an existing Dask cluster through ``distributed.Client.get_executor()``. One loop,
:func:`run_cells`, drives both.

* Cells are started largest first (:func:`.cells.start_order`).
* The workers are told apart (:class:`Lanes`: a local process pool of its own per worker, a Dask executor whose
  tasks go to one worker): each snapshot's cells go to the worker that parsed it, the snapshots are shared out
  among the workers, and a second worker takes cells of a snapshot another one holds only when that pays for
  parsing it again (:class:`_Placer`). A Dask cluster with no worker yet gets every cell at once, in that order
  (its scheduler runs them when workers join).
* A cell that fails on bad input comes back as a row with its error. A cell whose worker is lost (a local
  worker killed, a Dask task given up after its workers died) is run once more, on a new executor; lost
  again, its row says so. The sweep goes on either way.
* A snapshot is shipped once: local workers read its path; a Dask cluster gets its bytes once per round
  (``Client.scatter``); each worker that runs one of its cells parses it once (:func:`.cells.cached_snapshot`).
* Ctrl-C stops the executor at once (pending cells cancelled, local workers stopped) and
  :class:`KeyboardInterrupt` reaches the caller, which has every row that finished.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import (
    FIRST_COMPLETED,
    BrokenExecutor,
    CancelledError,
    Executor,
    Future,
    ProcessPoolExecutor,
    wait,
)
from typing import Any

from ..errors import UserError
from .cells import (
    CACHE_SIZE,
    Cell,
    SnapshotRef,
    error_row,
    read_manifests,
    run_cell_measured,
    start_order,
    worker_init,
    worker_version,
)

#: How often a cell whose worker was lost is run again before its row says so.
RETRIES = 1
#: Cells queued on one lane (:class:`Lanes`) at a time: one running and one waiting, so that a worker does not wait
#: for this process to choose its next cell.
DEPTH = 2

RowCallback = Callable[[Cell, dict[str, Any]], None]


def default_workers() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Lanes(Executor):
    """Executors that each run what they are given on one worker of their own (a lane): :func:`run_cells` chooses
    the worker of every cell. ``submit`` takes the lanes in turn (for a caller that does not choose)."""

    def __init__(self, lanes: list[Executor]) -> None:
        self.lanes = lanes
        self._turn = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        lane = self.lanes[self._turn % len(self.lanes)]
        self._turn += 1
        return lane.submit(fn, *args, **kwargs)

    def update(self) -> list[int]:
        """Lanes whose worker left (their cells in flight still end); lanes may also be added, at the end."""
        return []

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for lane in self.lanes:
            if cancel_futures:
                lane.shutdown(wait=wait, cancel_futures=True)
            else:  # a Dask ClientExecutor has no cancel_futures (it cancels when not waiting)
                lane.shutdown(wait=wait)


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
        # A pool of one process per worker: the loop sends each cell to the worker that has its snapshot parsed
        # (one shared pool would hand the first cells of a snapshot to every worker, each parsing it).
        return Lanes([ProcessPoolExecutor(1, mp_context=context, initializer=worker_init)
                      for _ in range(self.workers)])

    def stop(self, executor: Executor, now: bool) -> None:
        pools = executor.lanes if isinstance(executor, Lanes) else [executor]
        if now:
            processes = [p for pool in pools for p in (getattr(pool, "_processes", None) or {}).values()]
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
        if not self.client.scheduler_info().get("workers"):
            return self.client.get_executor(pure=False)
        return DaskLanes(self.client)

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


class DaskLanes(Lanes):
    """A lane per worker of a Dask cluster: its tasks are meant for that worker (``workers=[address]``) but may
    run on another (``allow_other_workers``: when that worker dies, or Dask's work stealing gives a queued one to
    an idle worker). Workers that join get lanes; lanes of workers that left get no more cells (at most every
    :data:`REFRESH` seconds, from the scheduler)."""

    REFRESH = 2.0

    def __init__(self, client: Any) -> None:
        super().__init__([])
        self.client = client
        self.addresses: list[str] = []
        self.checked = float("-inf")
        self.update()

    def update(self) -> list[int]:
        if time.monotonic() - self.checked < self.REFRESH:
            return []
        self.checked = time.monotonic()
        workers = set(self.client.scheduler_info().get("workers", {}))
        for address in sorted(workers - set(self.addresses)):
            self.addresses.append(address)
            self.lanes.append(self.client.get_executor(pure=False, workers=[address], allow_other_workers=True))
        return [lane for lane, address in enumerate(self.addresses) if address not in workers]


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
    """Run every cell of ``todo`` (in start order), collect the rows; the cells that did not come back, and why.
    On :class:`Lanes`, each lane has at most :data:`DEPTH` cells at a time, chosen by a :class:`_Placer`; any
    other executor is one lane given every cell at once."""
    pinned = isinstance(executor, Lanes)
    lanes = executor.lanes if pinned else [executor]
    depth = DEPTH if pinned else max(1, len(todo))
    placer = _Placer(todo, len(lanes))
    running: dict[Future, tuple[int, Cell]] = {}
    queued = [0] * len(lanes)
    dead: dict[int, str] = {}  # lane -> why it takes no more cells
    shipped: dict[str, Any] = {}
    lost: dict[tuple[int, int, int], str] = {}

    def fill() -> None:
        if pinned:  # workers that joined, workers that left (a Dask cluster's)
            for lane in executor.update():
                if lane not in dead:
                    dead[lane] = "its worker left"
                    placer.drop(lane)
            while len(queued) < len(lanes):
                queued.append(0)
                placer.add_lane()
        for lane in range(len(lanes)):
            while lane not in dead and queued[lane] < depth:
                cell = placer.next(lane, alone=not running)
                if cell is None:
                    break
                try:
                    if cell.snapshot.digest not in shipped:
                        shipped[cell.snapshot.digest] = backend.ship(cell.snapshot)
                except (OSError, RuntimeError, UserError) as e:  # its files gone, a closed client: this cell only
                    lost[cell.position] = _why(e)
                    continue
                try:
                    future = lanes[lane].submit(run_cell_measured, cell, shipped[cell.snapshot.digest])
                except (OSError, RuntimeError, UserError) as e:  # the lane is gone (a broken pool, a closed client)
                    lost[cell.position] = dead[lane] = _why(e)
                    placer.drop(lane)
                    break
                running[future] = (lane, cell)
                queued[lane] += 1
        if len(dead) == len(lanes):  # no worker left: what was not started is lost with them
            for cell in placer.rest():
                lost[cell.position] = next(reversed(dead.values()))

    fill()
    while running:
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=lambda f: running[f][1].position):
            lane, cell = running.pop(future)
            queued[lane] -= 1
            try:
                row, parse_seconds, seconds = future.result()
            except (Exception, CancelledError) as e:
                lost[cell.position] = _why(e)
                if pinned and isinstance(e, BrokenExecutor) and lane not in dead:  # its process died: the lane is gone
                    dead[lane] = lost[cell.position]
                    placer.drop(lane)
                continue
            placer.measured(cell, parse_seconds, seconds)
            rows[cell.position] = row
            on_row(cell, row)
        fill()
    return lost


class _Placer:
    """Which cell a lane runs next. A lane keeps to the snapshots it parsed (the last :data:`.cells.CACHE_SIZE`,
    as its worker's cache keeps them); when they have no cell left, it takes a snapshot no lane has started
    (largest first); when none is left, it shares the snapshot with the most work left, if that pays: parsing it
    plus one cell is shorter than the holders' share of what is left (parse and cell seconds as measured so far;
    before any measure, when 2 cells or more are left)."""

    def __init__(self, cells: list[Cell], lanes: int) -> None:
        self.waiting: dict[str, deque[Cell]] = {}  # by snapshot, in start order
        for cell in cells:
            self.waiting.setdefault(cell.snapshot.digest, deque()).append(cell)
        self.held: list[list[str]] = [[] for _ in range(lanes)]  # each lane's snapshots, the last one taken last
        self.parse: dict[str, float] = {}  # snapshot -> seconds its parse took
        self.cells: dict[str, tuple[float, int]] = {}  # snapshot -> cell seconds (parse aside) and cells measured

    def next(self, lane: int, alone: bool = False) -> Cell | None:
        """The lane's next cell, or None (it waits); ``alone``: nothing else runs, so a cell left is taken."""
        for snapshot in reversed(self.held[lane]):
            if self.waiting.get(snapshot):
                return self._take(lane, snapshot)
        holders: dict[str, int] = {}
        for held in self.held:
            for snapshot in held:
                holders[snapshot] = holders.get(snapshot, 0) + 1
        left = [s for s, queue in self.waiting.items() if queue]
        for snapshot in left:
            if snapshot not in holders:
                return self._take(lane, snapshot)
        if not left:
            return None
        snapshot = max(left, key=lambda s: len(self.waiting[s]) / holders[s])
        return self._take(lane, snapshot) if alone or self._pays(snapshot, holders[snapshot]) else None

    def _pays(self, snapshot: str, holders: int) -> bool:
        parse = self.parse.get(snapshot, _mean(list(self.parse.values())))
        total, count = self.cells.get(snapshot, (0.0, 0))
        cell = total / count if count else _mean([t / n for t, n in self.cells.values()])
        left = len(self.waiting[snapshot])
        if parse is None or cell is None:
            return left >= 2
        return parse + cell < left * cell / holders

    def _take(self, lane: int, snapshot: str) -> Cell:
        held = self.held[lane]
        if snapshot in held:
            held.remove(snapshot)
        held.append(snapshot)
        del held[:-CACHE_SIZE]
        return self.waiting[snapshot].popleft()

    def measured(self, cell: Cell, parse_seconds: float, seconds: float) -> None:
        snapshot = cell.snapshot.digest
        if parse_seconds > 0:
            self.parse[snapshot] = max(parse_seconds, self.parse.get(snapshot, 0.0))
        total, count = self.cells.get(snapshot, (0.0, 0))
        self.cells[snapshot] = (total + max(0.0, seconds - parse_seconds), count + 1)

    def add_lane(self) -> None:
        self.held.append([])

    def drop(self, lane: int) -> None:
        """A lane that takes no more cells: what it held is no longer held."""
        self.held[lane] = []

    def rest(self) -> list[Cell]:
        """Every cell not yet taken (and none is left after)."""
        cells = [cell for queue in self.waiting.values() for cell in queue]
        self.waiting.clear()
        return cells


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _why(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
