"""``benchmarks/sweep.py`` at a size CI affords: it runs its three ways (local 1 worker, local 2, Dask 2), they
give the same rows, and it prints every figure. No timing is asserted (the figures are for a quiet machine)."""

from __future__ import annotations

import json

from benchmarks.sweep import ALGORITHMS, SCENARIOS, main

FIELDS = {"executor", "workers", "cells", "elapsed_s", "cell_s", "overhead_fraction", "same_rows", "speedup_vs_local_1"}


def test_the_sweep_benchmark_runs_and_prints_its_figures(capsys):
    assert main(["--nodes", "20", "--pods", "40", "--snapshots", "1", "--workers", "2"]) == 0
    out, err = capsys.readouterr()
    runs = [json.loads(line) for line in out.splitlines()]
    assert [(r["executor"], r["workers"]) for r in runs] == [("local", 1), ("local", 2), ("dask", 2)]
    cells = len(ALGORITHMS) * len(SCENARIOS)
    for r in runs:
        assert set(r) == FIELDS and r["cells"] == cells and r["same_rows"] is True
        assert r["elapsed_s"] > 0 and r["cell_s"] > 0 and isinstance(r["overhead_fraction"], float)
    assert runs[0]["speedup_vs_local_1"] == 1.0
    summary = [line for line in err.splitlines() if line.startswith("# ")]
    assert summary[0] == f"# {cells} cells: 1 snapshots of 20 nodes and 40 pending pods x 3 algorithms x 2 scenarios"
    assert [line.split()[1] for line in summary[1:]] == ["local", "local", "dask"]
