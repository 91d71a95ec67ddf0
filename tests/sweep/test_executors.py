"""The loop over an executor (:func:`run_cells`), with executors that run in this process: cells started largest
first, every row once, a lost worker's cell run once more and then reported, Ctrl-C stops the executor."""

from __future__ import annotations

from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool

import pytest

from policy_scheduler.sweep import executors
from policy_scheduler.sweep.cells import plan, run_cell, start_order
from policy_scheduler.sweep.executors import Backend, run_cells
from policy_scheduler.sweep.spec import load_spec

from .conftest import DEFAULT_CLUSTER, MODERN_CLUSTER, PRIORITY_CLUSTER, write_spec


class InProcess(Executor):
    """Runs each cell when it is submitted; ``lose``: cell (its description) -> times its worker is lost."""

    def __init__(self, log: list[str], lose: dict[str, int]) -> None:
        self.log, self.lose = log, lose

    def submit(self, fn, *args, **kwargs):
        cell = args[0]
        self.log.append(cell.describe())
        future: Future = Future()
        if self.lose.get(cell.describe(), 0) > 0:
            self.lose[cell.describe()] -= 1
            future.set_exception(BrokenProcessPool("A process in the process pool was terminated abruptly"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future


class Fake(Backend):
    name = "fake"

    def __init__(self, lose: dict[str, int] | None = None) -> None:
        self.log: list[str] = []
        self.lose = lose or {}
        self.executors = 0
        self.stopped: list[bool] = []

    def executor(self) -> Executor:
        self.executors += 1
        return InProcess(self.log, self.lose)

    def stop(self, executor: Executor, now: bool) -> None:
        self.stopped.append(now)


@pytest.fixture
def cells(tmp_path):
    spec = write_spec(tmp_path, {"snapshots": [MODERN_CLUSTER, DEFAULT_CLUSTER], "metrics": ["placed"],
                                 "algorithms": [{"provider": "DefaultProvider"}],
                                 "scenarios": ["as-is", {"scale": {"factor": 3}}, {"add-nodes": {"like": "a-1", "count": 1}}]})
    return plan(load_spec(spec))


def test_largest_snapshot_then_largest_cell_first(cells):
    # the default cluster (12 nodes, 32 pending) before the modern one (4 nodes); scale x3, add a node, as-is
    order = [c.describe().split(" · ", 1)[0] + " · " + c.scenario.name for c in start_order(cells)]
    assert order == [f"{DEFAULT_CLUSTER} · scale x3", f"{DEFAULT_CLUSTER} · add 1 x a-1", f"{DEFAULT_CLUSTER} · as-is",
                     f"{MODERN_CLUSTER} · scale x3", f"{MODERN_CLUSTER} · add 1 x a-1", f"{MODERN_CLUSTER} · as-is"]
    assert cells[0].snapshot.nodes == 4 and cells[0].snapshot.pending == 7 and cells[3].snapshot.nodes == 12


def test_every_row_once_in_the_specifications_order(cells):
    seen = []
    backend = Fake()
    rows = run_cells(cells, backend, lambda cell, row: seen.append((cell.position, row)))
    assert sorted(rows) == [c.position for c in cells] and len(seen) == len(cells)
    assert all(rows[p] is row for p, row in seen)
    assert rows[cells[0].position] == run_cell(cells[0])  # the same row wherever it runs
    assert rows[cells[5].position]["error"] == "scenario 'add 1 x a-1': add-nodes: no node a-1 in the snapshot"
    assert backend.executors == 1 and backend.stopped == [False]


def test_a_lost_cell_runs_once_more_then_is_reported(cells):
    seen = []
    lose = {c.describe(): 1 if c.scenario.name == "as-is" else 2 for c in cells if c.scenario.name != "add 1 x a-1"}
    backend = Fake(lose=lose)
    rows = run_cells(cells, backend, lambda cell, row: seen.append(cell.scenario.name))
    assert backend.executors == 2 and backend.stopped == [False, False]
    assert rows[cells[0].position]["error"] is None and rows[cells[3].position]["error"] is None  # as-is: lost once
    for cell in (cells[1], cells[4]):  # scale: lost twice
        assert rows[cell.position] == {"snapshot": cell.snapshot.name, "algorithm": "DefaultProvider",
                                       "scenario": "scale x3", "cell": cell.key,
                                       "error": "worker lost: BrokenProcessPool: A process in the process pool was "
                                                "terminated abruptly"}
    assert sorted(seen) == sorted(c.scenario.name for c in cells)  # each reported once, after its last try


def test_ctrl_c_stops_the_executor_at_once(cells, monkeypatch):
    backend = Fake()
    calls = []

    def interrupted(*args):
        calls.append(1)
        raise KeyboardInterrupt

    monkeypatch.setattr(executors, "_one_round", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_cells(cells, backend, lambda cell, row: None)
    assert calls == [1] and backend.stopped == [True]


# -- lanes: a snapshot's cells on the worker that parsed it ---------------------------------------------------------
class Lane(InProcess):
    """One worker of a :class:`Lanes` executor, in this process: logs (lane, cell) for every cell it is given. Once
    it lost a cell, it is broken, as a process pool whose process died is: every later submit raises."""

    def __init__(self, number: int, log: list[tuple[int, str]], lose: dict[str, int]) -> None:
        super().__init__([], lose)
        self.number, self.lanes_log, self.broken = number, log, False

    def submit(self, fn, *args, **kwargs):
        self.lanes_log.append((self.number, args[0].describe()))
        if self.broken:
            raise BrokenProcessPool("A child process terminated abruptly, the process pool is not usable anymore")
        future = super().submit(fn, *args, **kwargs)
        self.broken = isinstance(future.exception(), BrokenProcessPool)
        return future


class FakeLanes(Fake):
    def __init__(self, lanes: int, lose: dict[str, int] | None = None) -> None:
        super().__init__(lose)
        self.lanes = lanes
        self.rounds: list[list[tuple[int, str]]] = []

    def executor(self) -> Executor:
        self.executors += 1
        self.rounds.append([])
        return executors.Lanes([Lane(n, self.rounds[-1], self.lose) for n in range(self.lanes)])


@pytest.fixture
def three_snapshots(tmp_path):
    spec = write_spec(tmp_path, {"snapshots": [MODERN_CLUSTER, DEFAULT_CLUSTER, PRIORITY_CLUSTER], "metrics": ["placed"],
                                 "algorithms": [{"provider": "DefaultProvider"}, {"provider": "ClusterAutoscalerProvider"}],
                                 "scenarios": ["as-is", {"scale": {"factor": 2}}]})
    return plan(load_spec(spec))


def _snapshot_of(description: str) -> str:
    return description.split(" · ", 1)[0]


def test_each_snapshot_on_the_lane_that_took_it(three_snapshots):
    cells = [c for c in three_snapshots if c.snapshot.name != PRIORITY_CLUSTER]  # 2 snapshots x 4 cells, 2 lanes
    backend = FakeLanes(2)
    rows = run_cells(cells, backend, lambda cell, row: None)
    assert sorted(rows) == sorted(c.position for c in cells) and all(r["error"] is None for r in rows.values())
    assert [rows[c.position] for c in cells] == [run_cell(c) for c in cells]
    lanes_of = {}
    for lane, description in backend.rounds[0]:
        lanes_of.setdefault(_snapshot_of(description), set()).add(lane)
    assert lanes_of == {DEFAULT_CLUSTER: {0}, MODERN_CLUSTER: {1}}  # the largest first, on the first lane
    assert backend.executors == 1 and backend.stopped == [False]


def test_the_placer_shares_a_snapshot_only_when_it_pays(three_snapshots):
    from policy_scheduler.sweep.executors import DEPTH, _Placer

    assert DEPTH == 2
    ordered = start_order(three_snapshots)
    placer = _Placer(ordered, 2)
    a, b, c = (ordered[i].snapshot.digest for i in (0, 4, 8))
    assert len({a, b, c}) == 3
    taken = [placer.next(0), placer.next(1), placer.next(0), placer.next(1)]
    assert [t.snapshot.digest for t in taken] == [a, b, a, b]  # no lane starts a snapshot another one has
    assert [placer.next(0).snapshot.digest for _ in range(2)] == [a, a]
    assert placer.next(0).snapshot.digest == c  # its own done: an untouched snapshot
    # c has 3 cells left, held by lane 0; lane 1 has 2 of b left, then nothing of its own
    assert [placer.next(1).snapshot.digest for _ in range(2)] == [b, b]
    # nothing measured yet: sharing c (3 cells left, one holder) is taken to pay
    assert placer.next(1).snapshot.digest == c

    for parse, cell, shared in ((2.0, 0.1, False), (0.05, 1.0, True)):
        placer = _Placer(start_order([x for x in three_snapshots if x.snapshot.digest == a]), 2)
        first = placer.next(0)
        placer.measured(first, parse, parse + cell)  # 3 cells left, all lane 0's
        assert (placer.next(1) is not None) is shared
    placer = _Placer(start_order([x for x in three_snapshots if x.snapshot.digest == a]), 2)
    placer.measured(placer.next(0), 2.0, 2.1)
    assert placer.next(1) is None and placer.next(1, alone=True) is not None  # nothing else runs: it is taken


def test_a_lane_that_dies_gets_no_more_cells_and_its_cells_run_again(three_snapshots):
    first = start_order(three_snapshots)[0]
    backend = FakeLanes(2, lose={first.describe(): 1})
    rows = run_cells(three_snapshots, backend, lambda cell, row: None)
    assert all(rows[c.position]["error"] is None for c in three_snapshots)
    assert [rows[c.position] for c in three_snapshots] == [run_cell(c) for c in three_snapshots]
    one, two = backend.rounds
    assert one[0] == (0, first.describe())
    # lane 0's process died with that cell; the cell queued behind it is lost too; the rest ran on lane 1
    assert {lane for lane, _ in one[2:]} == {1} and len(one) == len(three_snapshots)
    assert sorted(d for _, d in two) == sorted(d for lane, d in one[:2] if lane == 0)
    assert backend.executors == 2


def test_a_local_pool_gives_the_rows_of_one_worker(three_snapshots):
    reference = run_cells(three_snapshots, executors.LocalBackend(1), lambda cell, row: None)
    for workers in (2, 3):
        rows = run_cells(three_snapshots, executors.LocalBackend(workers), lambda cell, row: None)
        assert list(map(strip, (rows[p] for p in sorted(rows)))) == list(map(strip, (reference[p] for p in sorted(reference))))


def test_a_killed_local_worker_loses_no_cell(three_snapshots):
    """Its lane's cells run again; the other worker goes on."""
    import os
    import signal

    class Recording(executors.LocalBackend):
        def executor(self) -> Executor:
            self.last = super().executor()
            return self.last

    backend = Recording(2)
    killed = []

    def on_row(cell, row):
        if not killed:
            pool = backend.last.lanes[0]
            pids = list(pool._processes)
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

    rows = run_cells(three_snapshots, backend, on_row)
    assert killed
    assert [strip(rows[c.position]) for c in three_snapshots] == [strip(run_cell(c)) for c in three_snapshots]


def strip(row):
    return {k: v for k, v in row.items() if k != "wallSeconds"}
