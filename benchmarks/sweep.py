"""``policy-scheduler sweep`` at scale: 24 cells (4 snapshots of the synthetic benchmark cluster x 3 algorithms
x 2 scenarios) run three ways, each timed from the first submission to the last row:

* ``--executor local`` with 1 worker process, then with ``--workers`` (default 2) processes;
* ``--executor dask`` on a Dask cluster of ``--workers`` worker processes started here (``dask scheduler`` and
  ``dask worker`` on 127.0.0.1, one thread each), unless ``--no-dask``.

Printed: one JSON line per run (elapsed seconds, the cells' own seconds as their rows report them, the
overhead fraction, the speed-up over local with 1 worker), then a summary. Each local run starts its own pool
(the fork server the pools start their processes from is started once, before the timed runs); the Dask
workers are up before their run. Every run must give the same rows
(wall times aside): the script fails otherwise.

The overhead fraction is ``(workers x elapsed - cell seconds) / cell seconds``: the time a worker was not
running a cell (starting, scheduling, shipping, collecting, and idling at the end while another worker
finishes) over the cells' own time. With 1 worker no worker idles: it is the per-cell overhead alone.

    python benchmarks/sweep.py                            # 1,000-node snapshots, 2,000 pending pods each
    python benchmarks/sweep.py --nodes 50 --pods 100      # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.dask_cluster import local_dask_cluster  # noqa: E402
from benchmarks.generator import generate, to_objects  # noqa: E402
from policy_scheduler.sweep.cells import plan  # noqa: E402
from policy_scheduler.sweep.executors import Backend, DaskBackend, LocalBackend, run_cells  # noqa: E402
from policy_scheduler.sweep.spec import load_spec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ALGORITHMS = [
    {"label": "default", "provider": "DefaultProvider"},
    {"label": "autoscaler", "provider": "ClusterAutoscalerProvider"},
    {"label": "default-policy", "policy": str(ROOT / "policies" / "default-provider.json")},
]
SCENARIOS = ["as-is", {"scale": {"factor": 1.2}}]


def write_snapshot(path: Path, nodes: int, pods: int, seed: int) -> Path:
    """The synthetic benchmark cluster (``generator.generate``) as one manifest file, a ``kind: List``."""
    items = to_objects(generate(nodes, pods, seed))
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": items}, separators=(",", ":")))
    return path


def write_spec(directory: Path, nodes: int, pods: int, snapshots: int) -> Path:
    """``snapshots`` snapshots (seeds 1, 2, ...) x the three algorithms x the two scenarios."""
    for seed in range(1, snapshots + 1):
        write_snapshot(directory / f"cluster-{seed}.json", nodes, pods, seed)
    spec = {"snapshots": [f"cluster-{seed}.json" for seed in range(1, snapshots + 1)],
            "algorithms": ALGORITHMS, "scenarios": SCENARIOS, "metrics": ["placed", "cpu", "memory", "wallTime"]}
    path = directory / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def warm_up() -> None:
    """Start the local pools' fork server (once per process: it imports the engine) before any timed run, so that
    the first run does not pay for what the next ones get for free."""
    backend = LocalBackend(1)
    executor = backend.executor()
    executor.submit(os.getpid).result()
    backend.stop(executor, now=False)


def timed(cells: list, backend: Backend, workers: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run every cell on ``backend``; the run's figures and its rows (in the specification's order)."""
    rows: dict[Any, dict[str, Any]] = {}
    start = time.perf_counter()
    run_cells(cells, backend, lambda cell, row: rows.__setitem__(cell.position, row))
    elapsed = time.perf_counter() - start
    ordered = [rows[p] for p in sorted(rows)]
    failed = [r for r in ordered if r.get("error")]
    if failed:
        raise SystemExit(f"{len(failed)} cells failed under {backend.name}: {failed[0]['error']}")
    cell_seconds = sum(r["wallSeconds"] for r in ordered)
    figures = {"executor": backend.name, "workers": workers, "cells": len(ordered), "elapsed_s": round(elapsed, 3),
               "cell_s": round(cell_seconds, 3),
               "overhead_fraction": round((workers * elapsed - cell_seconds) / cell_seconds, 4) if cell_seconds else None}
    return figures, ordered


def without_time(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "wallSeconds"} for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000, help="nodes per snapshot")
    parser.add_argument("--pods", type=int, default=2000, help="pending pods per snapshot")
    parser.add_argument("--snapshots", type=int, default=4, help="snapshots (x 3 algorithms x 2 scenarios = cells)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the parallel runs")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask run")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sweep-benchmark-") as tmp:
        directory = Path(tmp)
        cells = plan(load_spec(write_spec(directory, args.nodes, args.pods, args.snapshots)))
        print(f"# {len(cells)} cells: {args.snapshots} snapshots of {args.nodes} nodes and {args.pods} pending pods "
              f"x {len(ALGORITHMS)} algorithms x {len(SCENARIOS)} scenarios", file=sys.stderr)
        warm_up()
        runs = [timed(cells, LocalBackend(1), 1), timed(cells, LocalBackend(args.workers), args.workers)]
        if not args.no_dask:
            with local_dask_cluster(args.workers, directory / "dask") as cluster:
                backend = DaskBackend(cluster.address)
                try:
                    runs.append(timed(cells, backend, args.workers))
                finally:
                    backend.close()
    reference = without_time(runs[0][1])
    base = runs[0][0]["elapsed_s"]
    for figures, rows in runs:
        figures["same_rows"] = without_time(rows) == reference
        figures["speedup_vs_local_1"] = round(base / figures["elapsed_s"], 3) if figures["elapsed_s"] else None
        print(json.dumps(figures))
    for figures, _ in runs:
        print(f"# {figures['executor']:5} {figures['workers']} worker(s): {figures['elapsed_s']:8.2f} s elapsed, "
              f"{figures['cell_s']:8.2f} s in cells, speed-up {figures['speedup_vs_local_1']:.2f}x, "
              f"overhead {100 * figures['overhead_fraction']:.1f} %", file=sys.stderr)
    return 0 if all(f["same_rows"] for f, _ in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
