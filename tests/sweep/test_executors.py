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

from .conftest import DEFAULT_CLUSTER, MODERN_CLUSTER, write_spec


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
