"""A sweep's result: the document ``-o json`` prints (``kind: SweepResult``), the table and CSV views of its
rows, saving it as it grows, and reading a saved one back for ``--resume``."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..offline.report import SWEEP_KIND
from ..terminal import FULL, Layout, text_table

if TYPE_CHECKING:
    from .cells import Cell
    from .spec import SweepSpec

Position = tuple[int, int, int]
#: Nested objects whose keys are data (reasons, workloads), kept whole in one CSV column as JSON.
DATA_KEYED = ("byReason", "workloads")


def document(spec: SweepSpec, rows: Mapping[Position, dict[str, Any]], *, executor: str,
             interrupted: bool = False) -> dict[str, Any]:
    """The result: what was swept, and one row per cell that has one, in the specification's order."""
    ordered = [rows[p] for p in sorted(rows)]
    return {
        "kind": SWEEP_KIND,
        "spec": spec.path,
        "snapshots": [{"name": s.name, "path": s.path} for s in spec.snapshots],
        "algorithms": [_algorithm(a) for a in spec.algorithms],
        "scenarios": [{"name": s.name, "kind": s.kind} for s in spec.scenarios],
        "metrics": list(spec.metrics),
        "schedulerName": spec.scheduler_name,
        "executor": executor,
        "cells": spec.cells,
        "finished": len(ordered),
        "failed": sum(1 for r in ordered if r.get("error")),
        "interrupted": interrupted,
        "rows": ordered,
    }


def _algorithm(a: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"label": a.label}
    if a.source.provider is not None:
        out["provider"] = a.source.provider
    else:
        out["policy"] = a.policy_path
    out["rules"] = a.rules
    if a.scheduling_queue:
        out["schedulingQueue"] = a.scheduling_queue
    if a.feature_gates:
        out["featureGates"] = a.feature_gates
    return out


# -- resume ---------------------------------------------------------------------------------------------
def load_previous(path: str) -> list[dict[str, Any]]:
    """The rows of a saved ``sweep -o json`` (or ``-o yaml``) result."""
    from .spec import read_yaml

    data = read_yaml(path, f"--resume {path}")  # JSON is YAML
    if not isinstance(data, dict) or data.get("kind") != SWEEP_KIND or not isinstance(data.get("rows"), list):
        raise UserError(f"--resume {path}: not a sweep result (the -o json output of sweep, kind {SWEEP_KIND})")
    return [r for r in data["rows"] if isinstance(r, dict)]


def reusable(cells: Iterable[Cell], previous: Iterable[dict[str, Any]]) -> dict[Position, dict[str, Any]]:
    """The previous rows that are these cells' (the same names and the same inputs) and did not fail."""
    by_names = {(r.get("snapshot"), r.get("algorithm"), r.get("scenario")): r for r in previous}
    out = {}
    for cell in cells:
        row = by_names.get(cell.names)
        if row is not None and row.get("cell") == cell.key and not row.get("error"):
            out[cell.position] = row
    return out


# -- saving ---------------------------------------------------------------------------------------------
def save(data: dict[str, Any], path: str) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a reader never sees half a file)."""
    target = Path(path)
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.replace(temp, target)
    except OSError as e:
        raise UserError(f"--save {path}: cannot write: {e.strerror or e}") from None


# -- views ----------------------------------------------------------------------------------------------
def flat(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A row as one level of camelCase keys (``cpu.p90`` -> ``cpuP90``); reasons and workloads as JSON."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = prefix + (key[:1].upper() + key[1:] if prefix else key)
        if isinstance(value, dict) and key not in DATA_KEYED:
            out.update(flat(value, name))
        elif isinstance(value, dict):
            out[name] = json.dumps(value, sort_keys=False)
        else:
            out[name] = value
    return out


def csv_text(data: Mapping[str, Any]) -> str:
    rows = [flat(r) for r in data["rows"]]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _fractions(d: Mapping[str, Any] | None) -> str:
    if not d or d.get("mean") is None:
        return "-"
    return "/".join(f"{round(100 * d[k])}" for k in ("mean", "p90", "max")) + "%"


def _cells(row: Mapping[str, Any]) -> dict[str, str]:
    """The table's columns of one row (only those its metrics gave)."""
    from ..report.units import binary_bytes, millicores

    out: dict[str, str] = {}
    if "placed" in row:
        out["PLACED"] = f"{row['capacity']['replicas']} fit" if "capacity" in row else f"{row['placed']}/{row['pending']}"
    if "unschedulable" in row:
        out["UNSCHED"] = str(row["unschedulable"]["total"])
    if "cpu" in row:
        out["CPU mean/p90/max"] = _fractions(row["cpu"])
    if "memory" in row:
        out["MEM mean/p90/max"] = _fractions(row["memory"])
    if "nodesUsed" in row:
        out["NODES USED"] = f"{row['nodesUsed']}/{row['nodes']}"
    if "largestFree" in row:
        free = row["largestFree"]
        cpu = "-" if free["cpu"] is None else f"{millicores(free['cpu']) / 1000:g}"
        memory = "-" if free["memory"] is None else binary_bytes(free["memory"])
        out["FREE cpu,mem"] = f"{cpu}, {memory}"
    if "zoneSkew" in row:
        out["SKEW"] = "-" if row["zoneSkew"]["max"] is None else str(row["zoneSkew"]["max"])
    if "preemptions" in row:
        out["PREEMPT"] = str(row["preemptions"]["count"])
    if "wallSeconds" in row:
        out["SECONDS"] = f"{row['wallSeconds']:.2f}"
    return out


#: The measures a narrow terminal loses first: wall time, preemptions, skew, free room, nodes used, memory, cpu
#: (the cell's name, what it placed or left unschedulable, and its error stay).
NARROW_DROPS = ("SECONDS", "PREEMPT", "SKEW", "FREE cpu,mem", "NODES USED", "MEM mean/p90/max", "CPU mean/p90/max")


def table(data: Mapping[str, Any], layout: Layout = FULL) -> str:
    """One line per cell; a failed cell's line ends with its error."""
    rows = data["rows"]
    measured = [_cells(r) for r in rows]
    columns = list(dict.fromkeys(c for m in measured for c in m))
    failed = [r for r in rows if r.get("error")]
    header = ["SNAPSHOT", "ALGORITHM", "SCENARIO", *columns, *(["ERROR"] if failed else [])]
    lines = [header]
    for row, cells in zip(rows, measured):
        line = [row["snapshot"], row["algorithm"], row["scenario"], *(cells.get(c, "-") for c in columns)]
        lines.append(line + ([row.get("error") or ""] if failed else []))
    summary = f"{len(rows)} of {data['cells']} cells" + (f", {len(failed)} failed" if failed else "")
    if data.get("interrupted"):
        summary += " (interrupted)"
    seconds = sum(r.get("wallSeconds") or 0 for r in rows)
    if any("wallSeconds" in r for r in rows):
        summary += f"; {seconds:.1f} s of cell time"
    shown = text_table(lines, layout, drop=NARROW_DROPS, wrap=("ERROR",))
    return f"{shown}\n\n{summary}." if rows else f"{summary}."
