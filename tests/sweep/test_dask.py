"""The sweep on a real Dask cluster: ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, started once
for this module (``benchmarks/dask_cluster.py``). The example gives the rows ``--executor local`` gives; a worker
killed mid-sweep loses no cell and hangs nothing; a scheduler that is not there is one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from benchmarks.dask_cluster import local_dask_cluster
from benchmarks.harness.ports import free_port
from benchmarks.sweep import write_snapshot
from policy_scheduler import __version__
from policy_scheduler.sweep.cells import plan, run_cell
from policy_scheduler.sweep.spec import load_spec

from .conftest import EXAMPLE, ROOT, sweep, without_time, write_spec


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    with local_dask_cluster(2, tmp_path_factory.mktemp("dask")) as cluster:
        yield cluster


def test_the_example_gives_the_local_rows(dask_cluster, example_local):
    result = sweep(str(EXAMPLE), "--executor", "dask", "--scheduler-address", dask_cluster.address, "-o", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0].endswith(f"18 to run on dask at {dask_cluster.address}, 2 workers")
    data = json.loads(result.stdout)
    assert (data["executor"], data["finished"], data["failed"]) == ("dask", 18, 0)
    assert without_time(data["rows"]) == without_time(example_local["rows"])


def test_cells_placed_by_snapshot_on_the_cluster_give_the_local_rows(dask_cluster, tmp_path):
    """Each snapshot's cells go to the Dask worker that parsed it (a lane per worker); the rows are the local
    ones, and a snapshot that cannot be parsed gives each of its cells the error a local worker gives it."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "nodes.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {unschedulable: maybe}\n")
    for seed in (1, 2, 3):
        write_snapshot(tmp_path / f"cluster-{seed}.yaml", 30, 20, seed, bound=3)
    spec = write_spec(tmp_path, {"snapshots": ["cluster-*.yaml", "broken"],
                                 "algorithms": [{"provider": "DefaultProvider"}, {"provider": "ClusterAutoscalerProvider"}],
                                 "scenarios": ["as-is", {"scale": {"factor": 2}}], "metrics": ["placed", "cpu"]})
    on_dask = sweep(str(spec), "--executor", "dask", "--scheduler-address", dask_cluster.address, "-o", "json")
    local = sweep(str(spec), "--workers", "1", "-o", "json")
    assert on_dask.exit_code == local.exit_code == 1
    rows = json.loads(on_dask.stdout)["rows"]
    assert without_time(rows) == without_time(json.loads(local.stdout)["rows"])
    assert [r["error"] is None for r in rows] == [True] * 12 + [False] * 4
    assert rows[-1]["error"] == f"{broken / 'nodes.yaml'}: document 0: Node n1: spec.unschedulable: expected a boolean, got \"maybe\""


def _busy_worker(address: str, timeout: float = 30.0) -> str | None:
    """The name of a worker running a cell, as soon as one is (None: none did within ``timeout``)."""
    from distributed import Client

    with Client(address, timeout=10, set_as_default=False) as client:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            names = {a: info["name"] for a, info in client.scheduler_info()["workers"].items()}
            busy = [names[a] for a, tasks in client.processing().items() if tasks and a in names]
            if busy:
                return busy[0]
            time.sleep(0.05)
    return None


def test_a_worker_killed_mid_sweep(tmp_path):
    """A cluster of its own (the module's keeps its two workers): the worker running a cell is killed."""
    for seed in (1, 2):
        write_snapshot(tmp_path / f"cluster-{seed}.json", 150, 400, seed)
    spec = write_spec(tmp_path, {"snapshots": ["cluster-*.json"], "algorithms": [{"provider": "DefaultProvider"}],
                                 "scenarios": ["as-is", {"scale": {"factor": 2}}, {"scale": {"factor": 3}}],
                                 "metrics": ["placed", "unschedulable", "cpu", "memory"]})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with local_dask_cluster(2, tmp_path / "dask") as cluster:
        process = subprocess.Popen([sys.executable, "-m", "policy_scheduler.cli", "sweep", str(spec), "--executor",
                                    "dask", "--scheduler-address", cluster.address, "-o", "json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                   start_new_session=True)
        try:
            busy = _busy_worker(cluster.address)
            assert busy is not None, "no worker ever ran a cell"
            cluster.kill(cluster.workers[int(busy.rsplit("-", 1)[1]) - 1])  # the worker-N names are in start order
            out, err = process.communicate(timeout=120)  # nothing hangs
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode in (0, 1), err
    rows = json.loads(out)["rows"]
    reference = without_time([run_cell(c) for c in plan(load_spec(spec))])
    assert len(rows) == 6
    for row, expected in zip(without_time(rows), reference):  # run again elsewhere, or reported: never lost
        assert row == expected or row["error"].startswith("worker lost: "), row
    assert sum(1 for r in rows if r["error"]) <= 1, err


def test_an_unreachable_scheduler_is_one_line_exit_2():
    port = free_port()  # a port nothing listens on
    address = f"tcp://127.0.0.1:{port}"
    result = sweep(str(EXAMPLE), "--executor", "dask", "--scheduler-address", address, "--connect-timeout", "1")
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"error: --scheduler-address {address}: cannot connect to a Dask scheduler: Timed out trying to connect to "
        f"{address} after 1 s"]


def test_dask_without_distributed_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    result = sweep(str(EXAMPLE), "--executor", "dask", "--scheduler-address", "tcp://127.0.0.1:8786")
    assert result.exit_code == 2
    assert result.output == ("error: --executor dask needs Dask's distributed package: "
                             "pip install 'policy-scheduler[dask]'\n")


def test_a_worker_with_another_policy_scheduler_is_refused(tmp_path):
    """Cells are the engine's Python objects: a worker must have the client's version, said before any cell runs."""
    other = tmp_path / "other" / "policy_scheduler" / "sweep"
    other.mkdir(parents=True)
    (other.parent / "__init__.py").write_text('__version__ = "0.0.1"\n')
    (other / "__init__.py").write_text("")
    (other / "cells.py").write_text("from policy_scheduler import __version__\n\n\ndef worker_version():\n"
                                    "    return __version__\n")
    with local_dask_cluster(0, tmp_path / "dask") as cluster:
        cluster.add_worker(env={"PYTHONPATH": str(tmp_path / "other")})
        result = sweep(str(EXAMPLE), "--executor", "dask", "--scheduler-address", cluster.address)
    assert result.exit_code == 2
    (line,) = result.output.splitlines()
    assert line.startswith(f"error: --scheduler-address {cluster.address}: the Dask workers must run policy-scheduler "
                           f"{__version__}, as this client does: tcp://127.0.0.1:")
    assert line.endswith(" has 0.0.1")
