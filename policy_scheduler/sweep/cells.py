"""Cells: one (snapshot, algorithm, scenario) each, planned on the client, run on a worker.

:func:`plan` makes the cells of a specification; :func:`run_cell` runs one wherever it is sent and returns
its row (a failure is a row with its ``error``: the sweep goes on). A cell is a pure function of its
inputs, so any worker gives the same row, whatever it ran before.

A snapshot is parsed once per worker process, not once per cell: the parsed snapshot is kept in a small
per-process cache keyed by the digest of its files' bytes (and how it was checked and the rules its pods
were parsed under), and the sweep sends a snapshot's cells to the worker that has it parsed
(:mod:`.executors`; :func:`run_cell_measured` tells it how long parsing took). A worker reads the files
from their path (``--executor local``) or receives their bytes, shipped once (:class:`Manifests`, scattered
to a Dask cluster).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..algorithm_source import scheduler_builder
from ..errors import UserError
from ..features import Rules
from ..model.pod import Pod
from ..offline.simulate import capacity, simulate
from ..offline.snapshot import Snapshot, load_manifests, manifest_checks, manifest_files, read_manifest
from ..runtime import tune_garbage_collector
from .metrics import capacity_metrics, simulation_metrics
from .scenarios import Capacity, Scenario
from .spec import AlgorithmSpec, SpecError, SweepSpec, digest

log = logging.getLogger(__name__)

#: Parsed snapshots a worker process keeps (each also once per rules it was asked under).
CACHE_SIZE = int(os.environ.get("POLICY_SCHEDULER_SWEEP_CACHE", "4") or 4)

# For the order cells are started in only: a fast count of Nodes, Pods and bound Pods in a file's text.
_NODE_OR_POD = re.compile(rb"""["']?kind["']?\s*:\s*["']?(Node|Pod)["']?(?=[\s,}\]])""")
_BOUND = re.compile(rb"""["']?nodeName["']?\s*:\s*["']?[A-Za-z0-9]""")


@dataclass(frozen=True)
class SnapshotRef:
    """A snapshot as cells carry it: where its files are, what they hold, roughly how big it is."""

    name: str
    path: str
    files: tuple[str, ...]
    digest: str
    nodes: int  # estimated (the order cells start in reads it, nothing else)
    pending: int
    validate: bool = True
    kubernetes_version: str | None = None


@dataclass(frozen=True)
class Manifests:
    """A snapshot's files as shipped to a worker: (path, bytes), in the order they are loaded."""

    digest: str
    files: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Cell:
    position: tuple[int, int, int]  # (snapshot, algorithm, scenario) in the specification's order
    snapshot: SnapshotRef
    algorithm: AlgorithmSpec
    scenario: Scenario
    scheduler_name: str
    metrics: tuple[str, ...]
    key: str  # the fingerprint of every input: a row of another key is not this cell's (resume)

    @property
    def names(self) -> tuple[str, str, str]:
        return self.snapshot.name, self.algorithm.label, self.scenario.name

    @property
    def size(self) -> float:
        """Nodes x pending pods, as estimated, times the scenario's weight: cells are started largest first."""
        return self.snapshot.nodes * max(1, self.snapshot.pending) * self.scenario.weight()

    def describe(self) -> str:
        return " · ".join(self.names)


def plan(spec: SweepSpec) -> list[Cell]:
    """Every cell of ``spec``, in its order (snapshots, then algorithms, then scenarios)."""
    refs = [snapshot_ref(s.name, s.path, spec) for s in spec.snapshots]
    cells = []
    for i, ref in enumerate(refs):
        for j, algorithm in enumerate(spec.algorithms):
            for k, scenario in enumerate(spec.scenarios):
                key = digest(ref.digest, algorithm.fingerprint, json.dumps(scenario.entry, sort_keys=True),
                             spec.scheduler_name, str(spec.validate), spec.kubernetes_version or "",
                             ",".join(spec.metrics), __version__)
                cells.append(Cell((i, j, k), ref, algorithm, scenario, spec.scheduler_name, spec.metrics, key))
    return cells


def start_order(cells: list[Cell]) -> list[Cell]:
    """Largest snapshots first and, within one, largest cells first: the long cells do not end the sweep
    alone, and a worker's cached snapshot serves the cells that follow."""
    largest = {}
    for c in cells:
        largest[c.snapshot.name] = max(largest.get(c.snapshot.name, 0.0), c.size)
    return sorted(cells, key=lambda c: (-largest[c.snapshot.name], c.position[0], -c.size, c.position))


def snapshot_ref(name: str, path: str, spec: SweepSpec) -> SnapshotRef:
    try:
        files = tuple(str(f) for f in manifest_files([path]))
        contents = [read_manifest(f) for f in map(Path, files)]
    except UserError as e:
        raise SpecError(f"{spec.path}: snapshot {name!r}: {e}") from None
    nodes = pods = bound = 0
    for data in contents:
        for m in _NODE_OR_POD.finditer(data):
            if m.group(1) == b"Node":
                nodes += 1
            else:
                pods += 1
        bound += len(_BOUND.findall(data))
    return SnapshotRef(name, path, files, digest(*files, *contents), nodes, max(0, pods - bound), spec.validate,
                       spec.kubernetes_version)


def read_manifests(ref: SnapshotRef) -> Manifests:
    """The snapshot's files, to ship to workers that cannot read its path."""
    return Manifests(ref.digest, tuple((f, read_manifest(Path(f))) for f in ref.files))


# -- on the worker -----------------------------------------------------------------------------------------
_cache: OrderedDict[tuple[Any, ...], Snapshot] = OrderedDict()
_cache_lock = threading.Lock()
_registry_lock = threading.Lock()
_tuned = False
_parse_seconds = 0.0  # spent parsing snapshots in this process, so far (read by run_cell_measured)


def worker_version() -> str:
    """On a Dask worker, before any cell: the engine imported (as a local pool's fork server has it), and the
    version of policy-scheduler there, which must be the client's."""
    return __version__


def worker_init() -> None:
    """A local worker process: Ctrl-C is for the sweep's own process to handle (it stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def cached_snapshot(ref: SnapshotRef, shipped: Manifests | None, rules: Rules) -> Snapshot:
    """The snapshot parsed under ``rules``, from this process's cache when it was parsed here before."""
    key = (ref.digest, ref.validate, ref.kubernetes_version)
    with _cache_lock:
        for k in ((*key, rules), key):
            if k in _cache:
                _cache.move_to_end(k)
                snapshot = _cache[k]
                break
        else:
            global _parse_seconds
            start = time.perf_counter()
            try:
                checks = manifest_checks(ref.validate, ref.kubernetes_version)
                if shipped is not None:
                    snapshot = load_manifests(shipped.files, checks)
                else:
                    snapshot = load_manifests(((f, read_manifest(Path(f))) for f in ref.files), checks)
            finally:
                _parse_seconds += time.perf_counter() - start
            _remember(key, snapshot)
        if snapshot.rules is not rules:
            snapshot = snapshot.under(rules)
            _remember((*key, rules), snapshot)
    return snapshot


def _remember(key: tuple[Any, ...], snapshot: Snapshot) -> None:
    _cache[key] = snapshot
    _cache.move_to_end(key)
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)


def run_cell(cell: Cell, shipped: Manifests | None = None) -> dict[str, Any]:
    """The cell's row: its measures, or its error; and its wall time (parsing the snapshot included, when
    this process had to)."""
    global _tuned
    if not _tuned:
        tune_garbage_collector()
        _tuned = True
    start = time.perf_counter()
    try:
        measures = evaluate(cell, shipped)
        row = {**identity(cell), "error": None, **measures}
    except UserError as e:
        row = {**identity(cell), "error": str(e)}
    except Exception as e:  # a bug, not the input: still this cell's row, and the sweep goes on
        log.exception("sweep cell %s failed", cell.describe())
        row = {**identity(cell), "error": f"internal error: {type(e).__name__}: {e}"}
    if "wallTime" in cell.metrics:
        row["wallSeconds"] = round(time.perf_counter() - start, 3)
    return row


def run_cell_measured(cell: Cell, shipped: Manifests | None = None) -> tuple[dict[str, Any], float, float]:
    """:func:`run_cell`, for the loop that places cells (:mod:`.executors`): the row, the seconds this process
    spent parsing the snapshot for it (0.0 when it had it parsed already) and the cell's seconds in all."""
    parsed = _parse_seconds
    start = time.perf_counter()
    row = run_cell(cell, shipped)
    return row, _parse_seconds - parsed, time.perf_counter() - start


def evaluate(cell: Cell, shipped: Manifests | None = None) -> dict[str, Any]:
    algorithm, scenario = cell.algorithm, cell.scenario
    rules = Rules(algorithm.rules)
    snapshot = cached_snapshot(cell.snapshot, shipped, rules)
    gates = algorithm.gates()
    with _registry_lock:  # the process registry loads its plugins once; a threaded worker asks at once
        build = scheduler_builder(algorithm.source, gates, algorithm.hard_pod_affinity_symmetric_weight)
    if isinstance(scenario, Capacity):
        result = capacity(snapshot, dict(scenario.template), build, scenario.max_replicas)
        return capacity_metrics(result, Pod(dict(scenario.template), rules), cell.metrics)
    changed = scenario.apply(snapshot, cell.scheduler_name)
    result = simulate(changed, build, scheduler_name=cell.scheduler_name, pod_priority=gates.enabled("PodPriority"),
                      queue=algorithm.scheduling_queue)
    return simulation_metrics(result, cell.metrics)


def identity(cell: Cell) -> dict[str, Any]:
    snapshot, algorithm, scenario = cell.names
    return {"snapshot": snapshot, "algorithm": algorithm, "scenario": scenario, "cell": cell.key}


def error_row(cell: Cell, message: str) -> dict[str, Any]:
    """The row of a cell that did not run to its end (its worker lost, say)."""
    return {**identity(cell), "error": message}
