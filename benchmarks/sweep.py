"""``policy-scheduler sweep`` at scale: 24 cells (4 snapshots of the synthetic benchmark cluster x 3 algorithms
x 2 scenarios) run three ways, each timed from the first submission to the last row:

* ``--executor local`` with 1 worker process, then with ``--workers`` (default 2) processes;
* ``--executor dask`` on a Dask cluster of ``--workers`` worker processes started here (``dask scheduler`` and
  ``dask worker`` on 127.0.0.1, one thread each), unless ``--no-dask``.

Printed: one JSON line per run (elapsed seconds, the cells' own seconds as their rows report them, the
overhead fraction, the speed-up over local with 1 worker, each worker process's CPU seconds and the CPU speed-up:
local-with-1-worker's CPU seconds over this run's busiest worker's, the speed-up on cores nobody else uses, which a
shared machine's wall times do not show), then a summary. Each local run starts its own pool
(the fork server the pools start their processes from is started once, before the timed runs); the Dask
workers are up before their run. Every run must give the same rows
(wall times aside): the script fails otherwise.

The overhead fraction is ``(workers x elapsed - cell seconds) / cell seconds``: the time a worker was not
running a cell (starting, scheduling, shipping, collecting, and idling at the end while another worker
finishes) over the cells' own time. With 1 worker no worker idles: it is the per-cell overhead alone.

    python benchmarks/sweep.py                            # 1,000-node snapshots, 2,000 pending pods each
    python benchmarks/sweep.py --case parse-heavy         # 500-node YAML snapshots, 5,000 running pods, 50 pending
    python benchmarks/sweep.py --nodes 50 --pods 100      # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import yaml

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.dask_cluster import local_dask_cluster  # noqa: E402
from benchmarks.generator import generate, milli_cpu, to_objects  # noqa: E402
from benchmarks.harness.proc import cpu_seconds  # noqa: E402
from policy_scheduler.model.quantity import parse_quantity  # noqa: E402
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
DEFAULTS = {"nodes": 1000, "pods": 2000, "bound": 0, "format": "json", "snapshots": 4}
#: ``--case``: cell-heavy is the default (the cells' scheduling is the work); parse-heavy is 4 YAML snapshots
#: of 500 nodes running 10 pods each, and 50 pending pods: parsing a snapshot takes longer than its 6 cells.
CASES = {"cell-heavy": {}, "parse-heavy": {"nodes": 500, "pods": 50, "bound": 10, "format": "yaml", "snapshots": 4}}


def write_snapshot(path: Path, nodes: int, pods: int, seed: int, bound: int = 0) -> Path:
    """The synthetic benchmark cluster (``generator.generate``) as one manifest file, a ``kind: List``: JSON, or
    YAML when ``path`` ends in ``.yaml``. ``bound``: that many more pods per node already running (:func:`bind`)."""
    data = generate(nodes, pods + bound * nodes, seed)
    if bound:
        pending = data["pending"]
        data["pending"], data["pods"] = pending[:pods], bind(pending[pods:], data["nodes"])
    document = {"kind": "List", "apiVersion": "v1", "items": to_objects(data)}
    if path.suffix == ".yaml":
        path.write_text(yaml.dump(document, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False))
    else:
        path.write_text(json.dumps(document, separators=(",", ":")))
    return path


def bind(pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods that fit, each given a ``nodeName``: pod i on the first node from node i on (round the ring) with
    its cpu, memory and pod count still free; a pod no node has room for is left out."""
    free = [[milli_cpu(n["status"]["allocatable"]["cpu"]), int(parse_quantity(n["status"]["allocatable"]["memory"])),
             int(n["status"]["allocatable"]["pods"])] for n in nodes]
    placed = []
    for i, pod in enumerate(pods):
        requests = pod["spec"]["containers"][0]["resources"]["requests"]
        cpu, memory = milli_cpu(requests["cpu"]), int(parse_quantity(requests["memory"]))
        for j in (k % len(nodes) for k in range(i, i + len(nodes))):
            if free[j][0] >= cpu and free[j][1] >= memory and free[j][2] > 0:
                free[j][0] -= cpu
                free[j][1] -= memory
                free[j][2] -= 1
                pod["spec"]["nodeName"] = nodes[j]["metadata"]["name"]
                placed.append(pod)
                break
    return placed


def write_spec(directory: Path, nodes: int, pods: int, snapshots: int, bound: int = 0, form: str = "json") -> Path:
    """``snapshots`` snapshots (seeds 1, 2, ...) x the three algorithms x the two scenarios."""
    names = [f"cluster-{seed}.{form}" for seed in range(1, snapshots + 1)]
    for seed, name in enumerate(names, 1):
        write_snapshot(directory / name, nodes, pods, seed, bound)
    spec = {"snapshots": names,
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


class MeasuredLocal(LocalBackend):
    """``--executor local`` that reads the CPU seconds of each worker process (``/proc``) before it stops it."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.cpu: list[float] = []

    def stop(self, executor: Executor, now: bool) -> None:
        for pool in getattr(executor, "lanes", [executor]):
            self.cpu.extend(cpu_seconds(pid) or 0.0 for pid in list(getattr(pool, "_processes", None) or {}))
        super().stop(executor, now)


def timed(cells: list, backend: Backend, workers: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run every cell on ``backend``; the run's figures and its rows (in the specification's order)."""
    rows: dict[Any, dict[str, Any]] = {}
    dask_cpu = backend.client.run(time.process_time) if isinstance(backend, DaskBackend) else {}
    start = time.perf_counter()
    run_cells(cells, backend, lambda cell, row: rows.__setitem__(cell.position, row))
    elapsed = time.perf_counter() - start
    if isinstance(backend, DaskBackend):
        cpu = [t - dask_cpu.get(w, 0.0) for w, t in backend.client.run(time.process_time).items()]
    else:
        cpu = getattr(backend, "cpu", [])
    ordered = [rows[p] for p in sorted(rows)]
    failed = [r for r in ordered if r.get("error")]
    if failed:
        raise SystemExit(f"{len(failed)} cells failed under {backend.name}: {failed[0]['error']}")
    cell_seconds = sum(r["wallSeconds"] for r in ordered)
    figures = {"executor": backend.name, "workers": workers, "cells": len(ordered), "elapsed_s": round(elapsed, 3),
               "cell_s": round(cell_seconds, 3),
               "overhead_fraction": round((workers * elapsed - cell_seconds) / cell_seconds, 4) if cell_seconds else None,
               "worker_cpu_s": sorted((round(c, 2) for c in cpu), reverse=True)}
    return figures, ordered


def without_time(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "wallSeconds"} for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), default=None,
                        help="a preset of the options below (given options override it)")
    parser.add_argument("--nodes", type=int, default=None, help="nodes per snapshot (default 1000)")
    parser.add_argument("--pods", type=int, default=None, help="pending pods per snapshot (default 2000)")
    parser.add_argument("--bound", type=int, default=None, help="pods already running per node (default 0)")
    parser.add_argument("--format", choices=["json", "yaml"], default=None, help="the snapshots' files (default json)")
    parser.add_argument("--snapshots", type=int, default=None,
                        help="snapshots (x 3 algorithms x 2 scenarios = cells; default 4)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the parallel runs")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask run")
    args = parser.parse_args(argv)
    for key, value in {**DEFAULTS, **CASES.get(args.case, {})}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    with tempfile.TemporaryDirectory(prefix="sweep-benchmark-") as tmp:
        directory = Path(tmp)
        cells = plan(load_spec(write_spec(directory, args.nodes, args.pods, args.snapshots, args.bound, args.format)))
        bound = f", {args.bound} running pods per node" if args.bound else ""
        print(f"# {len(cells)} cells: {args.snapshots} snapshots of {args.nodes} nodes and {args.pods} pending pods"
              f"{bound} ({args.format}) x {len(ALGORITHMS)} algorithms x {len(SCENARIOS)} scenarios", file=sys.stderr)
        warm_up()
        runs = [timed(cells, MeasuredLocal(1), 1), timed(cells, MeasuredLocal(args.workers), args.workers)]
        if not args.no_dask:
            with local_dask_cluster(args.workers, directory / "dask") as cluster:
                backend = DaskBackend(cluster.address)
                try:
                    runs.append(timed(cells, backend, args.workers))
                finally:
                    backend.close()
    reference = without_time(runs[0][1])
    base = runs[0][0]["elapsed_s"]
    base_cpu = sum(runs[0][0]["worker_cpu_s"])
    for figures, rows in runs:
        figures["same_rows"] = without_time(rows) == reference
        figures["speedup_vs_local_1"] = round(base / figures["elapsed_s"], 3) if figures["elapsed_s"] else None
        busiest = max(figures["worker_cpu_s"], default=0.0)
        figures["cpu_speedup_vs_local_1"] = round(base_cpu / busiest, 3) if busiest and base_cpu else None
        print(json.dumps(figures))
    for figures, _ in runs:
        cpu = "+".join(f"{c:.1f}" for c in figures["worker_cpu_s"]) or "?"
        cpu_speedup = f"{figures['cpu_speedup_vs_local_1']:.2f}x" if figures["cpu_speedup_vs_local_1"] else "?"
        print(f"# {figures['executor']:5} {figures['workers']} worker(s): {figures['elapsed_s']:8.2f} s elapsed, "
              f"{figures['cell_s']:8.2f} s in cells, speed-up {figures['speedup_vs_local_1']:.2f}x, "
              f"overhead {100 * figures['overhead_fraction']:.1f} %; workers' CPU {cpu} s, "
              f"CPU speed-up {cpu_speedup}", file=sys.stderr)
    return 0 if all(f["same_rows"] for f, _ in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
