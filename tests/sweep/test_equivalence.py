"""A sweep's rows are what ``simulate`` and ``capacity`` say, cell by cell: each row against the measures read
independently from the command's ``-o json`` output, for every algorithm form and every scenario kind (a
what-if is written out as manifests and simulated as any snapshot is)."""

from __future__ import annotations

import math
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.offline.snapshot import load_snapshot
from policy_scheduler.report.units import millicores
from policy_scheduler.sweep.cells import plan, run_cell
from policy_scheduler.sweep.spec import load_spec
from tests.offline.cli import run_json

from .conftest import DEFAULT_CLUSTER, MODERN_CLUSTER, ROOT, WEB_POD, write_spec

UPSTREAM_POLICY = str(ROOT / "policies" / "upstream-example.json")
ALGORITHMS = {  # label -> (the sweep's entry, the same algorithm as simulate/capacity flags)
    "default": ({"provider": "DefaultProvider"}, ["--algorithm-provider", "DefaultProvider"]),
    "autoscaler": ({"provider": "ClusterAutoscalerProvider"}, ["--algorithm-provider", "ClusterAutoscalerProvider"]),
    "upstream": ({"policy": UPSTREAM_POLICY}, ["--policy-config-file", UPSTREAM_POLICY]),
    "replay-1.9": ({"provider": "DefaultProvider", "rules": "1.9", "schedulingQueue": "three-queue"},
                   ["--algorithm-provider", "DefaultProvider", "--rules", "1.9", "--scheduling-queue", "three-queue"]),
}
IDENTITY = ("snapshot", "algorithm", "scenario", "cell", "error", "wallSeconds")


def _distribution(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"mean": round(sum(ordered) / len(ordered), 4), "p90": round(ordered[math.ceil(0.9 * len(ordered)) - 1], 4),
            "max": round(ordered[-1], 4)}


def _usable(cluster: list[str]) -> set[str]:
    snapshot = load_snapshot(cluster)
    return {n.name for n in snapshot.nodes if not n.unschedulable and n.condition_status("Ready") in ("", "True")}


def _measures(nodes: list[dict[str, Any]], usable: set[str], workloads: set[str]) -> dict[str, Any]:
    """Utilisation, nodes used, largest free room and zone skew of ``nodes``: (name, zone, allocatable (cpu m,
    memory), requested (cpu m, memory), pods that are not a DaemonSet's, workload -> pods)."""
    cpu = [n["requested"][0] / n["allocatable"][0] for n in nodes if n["allocatable"][0]]
    memory = [n["requested"][1] / n["allocatable"][1] for n in nodes if n["allocatable"][1]]
    free = [(n["allocatable"][0] - n["requested"][0], n["allocatable"][1] - n["requested"][1], n["name"])
            for n in nodes if n["name"] in usable]
    best_cpu = max(free, key=lambda f: (f[0], f[2]))
    best_memory = max(free, key=lambda f: (f[1], f[2]))
    zones = {n["zone"] for n in nodes if n["zone"]}
    per = {w: Counter() for w in workloads}
    for n in nodes:
        for w, count in n["workloads"].items():
            if w in per and n["zone"]:
                per[w][n["zone"]] += count
    skews = {w: max(c[z] for z in zones) - min(c[z] for z in zones) for w, c in sorted(per.items())}
    return {
        "cpu": _distribution(cpu), "memory": _distribution(memory), "nodes": len(nodes),
        "nodesUsed": sum(1 for n in nodes if n["own_pods"] > 0),
        "largestFree": {"cpu": f"{best_cpu[0]}m", "cpuNode": best_cpu[2], "memory": best_memory[1],
                        "memoryNode": best_memory[2]},
        "zoneSkew": {"max": max(skews.values()), "workloads": skews} if skews and zones else {"max": None, "workloads": {}},
    }


def _node(n: dict[str, Any], which: str, extra: tuple[int, int, int] = (0, 0, 0), workloads=None) -> dict[str, Any]:
    requested = n[f"requested{which}"]
    own = requested["pods"] - sum(c for w, c in n[f"workloads{which}"].items() if w.startswith("DaemonSet "))
    return {"name": n["node"], "zone": n["zone"],
            "allocatable": (millicores(n["allocatable"]["cpu"]), n["allocatable"]["memory"]),
            "requested": (millicores(requested["cpu"]) + extra[0], requested["memory"] + extra[1]),
            "own_pods": own + extra[2], "workloads": workloads if workloads is not None else n[f"workloads{which}"]}


def _main_reason(p: dict[str, Any]) -> str:
    if p.get("reasons"):
        return next(iter(p["reasons"]))
    error = (p["error"] or "").strip()
    return "preempted" if error.startswith("preempted by") else error.splitlines()[0]


def expected_from_simulate(sim: dict[str, Any], usable: set[str]) -> dict[str, Any]:
    queued = sim["placements"] + sim.get("gated", [])
    failed = Counter(_main_reason(p) for p in sim["placements"] if p["node"] is None)
    return {
        "pending": len(queued), "placed": sum(1 for p in sim["placements"] if p["node"]), "gated": len(sim.get("gated", [])),
        "unschedulable": {"total": sum(failed.values()),
                          "byReason": dict(sorted(failed.items(), key=lambda kv: (-kv[1], kv[0])))},
        **_measures([_node(n, "After") for n in sim["nodes"]], usable, {p["workload"] for p in queued if p["workload"]}),
        "preemptions": {"count": len(sim.get("preemptions") or []),
                        "victims": sum(len(p.get("victims") or []) for p in sim.get("preemptions") or [])},
    }


def expected_from_capacity(cap: dict[str, Any], before: dict[str, Any], usable: set[str]) -> dict[str, Any]:
    cpu, memory = millicores(cap["requests"]["cpu"]), cap["requests"]["memory"]
    copies = {n["node"]: n["replicas"] for n in cap["nodes"]}
    nodes = [_node(n, "Before", (copies[n["node"]] * cpu, copies[n["node"]] * memory, copies[n["node"]]))
             for n in before["nodes"]]
    zones = {n["zone"] for n in cap["nodes"] if n["zone"]}
    per_zone = Counter({z: 0 for z in zones})
    for n in cap["nodes"]:
        if n["zone"]:
            per_zone[n["zone"]] += n["replicas"]
    skew = max(per_zone.values()) - min(per_zone.values())
    measures = _measures(nodes, usable, set())
    measures["zoneSkew"] = {"max": skew, "workloads": {f"copies of Pod {cap['pod']}": skew}}
    return {"pending": 0, "placed": cap["replicas"], "gated": 0, "unschedulable": {"total": 0, "byReason": {}},
            **measures, "preemptions": {"count": 0, "victims": 0},
            "capacity": {"replicas": cap["replicas"], "stopReason": cap["stopReason"], "limitedByMax": cap["stopReason"] is None}}


def _rows(spec: Path) -> list[dict[str, Any]]:
    return [run_cell(c) for c in plan(load_spec(spec))]


def _measured(row: dict[str, Any]) -> dict[str, Any]:
    assert row["error"] is None, row["error"]
    return {k: v for k, v in row.items() if k not in IDENTITY}


@pytest.mark.parametrize("cluster", [DEFAULT_CLUSTER, MODERN_CLUSTER])
def test_as_is_and_capacity_rows_are_simulate_and_capacity(tmp_path, cluster):
    spec = write_spec(tmp_path, {"snapshots": [cluster], "algorithms": [{"label": k, **e} for k, (e, _) in ALGORITHMS.items()],
                                 "scenarios": ["as-is", {"capacity": {"template": str(WEB_POD)}}]})
    rows = iter(_rows(spec))
    usable = _usable([cluster])
    for label, (_, flags) in ALGORITHMS.items():
        sim = run_json("simulate", "--cluster", cluster, *flags)
        cap_flags = [f for f in flags if f not in ("--scheduling-queue", "three-queue")]  # capacity has no queue
        cap = run_json("capacity", str(WEB_POD), "--cluster", cluster, *cap_flags)
        as_is, counted = next(rows), next(rows)
        assert (as_is["algorithm"], as_is["scenario"], counted["scenario"]) == (label, "as-is", "capacity web.yaml")
        assert _measured(as_is) == expected_from_simulate(sim, usable), label
        assert _measured(counted) == expected_from_capacity(cap, sim, usable), label


def _write_what_if(directory: Path, snapshot) -> str:
    """A changed snapshot as manifests: its nodes and pods, and the example's other objects as they are."""
    directory.mkdir()
    shutil.copy(Path(DEFAULT_CLUSTER) / "workloads.yaml", directory / "workloads.yaml")
    (directory / "nodes.yaml").write_text(yaml.safe_dump_all([n.raw for n in snapshot.nodes], sort_keys=False))
    (directory / "pods.yaml").write_text(yaml.safe_dump_all([p.raw for p in snapshot.pods], sort_keys=False))
    return str(directory)


SCENARIOS = [{"scale": {"factor": 1.5}}, {"scale": {"factor": 0.5}}, {"drain": {"zone": "eu-west-1a"}},
             {"drain": {"nodes": ["worker-1b-01", "worker-1c-01"]}}, {"add-nodes": {"like": "worker-1c-02", "count": 3}}]


def test_what_if_rows_are_simulate_on_the_changed_snapshot(tmp_path):
    spec = load_spec(write_spec(tmp_path, {"snapshots": [DEFAULT_CLUSTER], "scenarios": SCENARIOS,
                                           "algorithms": [{"provider": "DefaultProvider"}]}))
    example = load_snapshot([DEFAULT_CLUSTER])
    for i, (cell, scenario) in enumerate(zip(plan(spec), spec.scenarios)):
        cluster = _write_what_if(tmp_path / f"what-if-{i}", scenario.apply(example, spec.scheduler_name))
        sim = run_json("simulate", "--cluster", cluster)
        assert _measured(run_cell(cell)) == expected_from_simulate(sim, _usable([cluster])), scenario.name
