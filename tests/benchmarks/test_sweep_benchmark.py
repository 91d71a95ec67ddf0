"""``benchmarks/sweep.py`` at a size CI affords: it runs its three ways (local 1 worker, local 2, Dask 2), they
give the same rows, and it prints every figure. No timing is asserted (the figures are for a quiet machine)."""

from __future__ import annotations

import json

import yaml

from benchmarks.generator import milli_cpu
from benchmarks.sweep import ALGORITHMS, SCENARIOS, main, write_snapshot
from policy_scheduler.model.quantity import parse_quantity

FIELDS = {"executor", "workers", "cells", "elapsed_s", "cell_s", "overhead_fraction", "same_rows", "speedup_vs_local_1",
          "worker_cpu_s", "cpu_speedup_vs_local_1"}


def test_the_sweep_benchmark_runs_and_prints_its_figures(capsys):
    assert main(["--nodes", "20", "--pods", "40", "--snapshots", "1", "--workers", "2"]) == 0
    out, err = capsys.readouterr()
    runs = [json.loads(line) for line in out.splitlines()]
    assert [(r["executor"], r["workers"]) for r in runs] == [("local", 1), ("local", 2), ("dask", 2)]
    cells = len(ALGORITHMS) * len(SCENARIOS)
    for r in runs:
        assert set(r) == FIELDS and r["cells"] == cells and r["same_rows"] is True
        assert r["elapsed_s"] > 0 and r["cell_s"] > 0 and isinstance(r["overhead_fraction"], float)
    assert runs[0]["speedup_vs_local_1"] == 1.0 and runs[0]["cpu_speedup_vs_local_1"] == 1.0
    assert [len(r["worker_cpu_s"]) for r in runs] == [1, 2, 2]  # every worker's CPU seconds, the busiest first
    assert all(r["worker_cpu_s"] == sorted(r["worker_cpu_s"], reverse=True) and r["worker_cpu_s"][0] > 0 for r in runs)
    summary = [line for line in err.splitlines() if line.startswith("# ")]
    assert summary[0] == f"# {cells} cells: 1 snapshots of 20 nodes and 40 pending pods (json) x 3 algorithms x 2 scenarios"
    assert [line.split()[1] for line in summary[1:]] == ["local", "local", "dask"]


def test_the_parse_heavy_case_at_a_small_size(capsys):
    """``--case parse-heavy``: YAML snapshots with pods already running; the options given override the case's."""
    assert main(["--case", "parse-heavy", "--nodes", "12", "--pods", "6", "--bound", "3", "--snapshots", "2",
                 "--no-dask"]) == 0
    out, err = capsys.readouterr()
    runs = [json.loads(line) for line in out.splitlines()]
    assert [(r["executor"], r["workers"], r["cells"], r["same_rows"]) for r in runs] == [
        ("local", 1, 12, True), ("local", 2, 12, True)]
    assert err.splitlines()[0] == ("# 12 cells: 2 snapshots of 12 nodes and 6 pending pods, 3 running pods per node "
                                   "(yaml) x 3 algorithms x 2 scenarios")


def test_running_pods_fit_their_nodes(tmp_path):
    items = yaml.safe_load(write_snapshot(tmp_path / "c.yaml", 10, 5, 1, bound=8).read_text())["items"]
    nodes = {n["metadata"]["name"]: n for n in items if n["kind"] == "Node"}
    pods = [p for p in items if p["kind"] == "Pod"]
    running = [p for p in pods if p["spec"].get("nodeName")]
    assert len(pods) - len(running) == 5 and 60 <= len(running) <= 80  # some of the 80 may not fit
    for name, node in nodes.items():
        mine = [p["spec"]["containers"][0]["resources"]["requests"] for p in running if p["spec"]["nodeName"] == name]
        assert sum(milli_cpu(r["cpu"]) for r in mine) <= milli_cpu(node["status"]["allocatable"]["cpu"])
        assert sum(parse_quantity(r["memory"]) for r in mine) <= parse_quantity(node["status"]["allocatable"]["memory"])
