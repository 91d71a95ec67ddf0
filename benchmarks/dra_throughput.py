"""Offline scheduling throughput on upstream's DRA scheduler_perf workloads (``perf_workloads.DRA_WORKLOADS``).

SchedulingWithResourceClaimTemplate (every node a ResourceSlice of 10 devices, each pod one device through a claim
made from a template, as the snapshot loader makes it) and SchedulingWithResourceClaim (2 devices a node, claims
shared by 5 pods) on the offline engine: the init pods are scheduled first (timed apart), then the measured ones;
each placed pod is assumed and its claims written before the next, as ``capacity`` does. One JSON line per workload
and node count: pods/s and ms per pod of the measured pods, peak RSS, the placement hash (FNV-1a 64 as
``benchmarks/throughput.py``'s ``placementFNV64a``, over init and measured pods in order) and ``allocationsFNV64a``,
the same hash over ``<claim>=<driver/pool/device,...>`` of every claim after the run.

    python benchmarks/dra_throughput.py [--nodes 500,5000] [--workload NAME,...] [--init N] [--measured N]
        [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.perf_workloads import DRA_WORKLOADS, Workload  # noqa: E402
from benchmarks.placement_hash import placement_hash  # noqa: E402
from policy_scheduler.algorithm_source import from_provider  # noqa: E402
from policy_scheduler.core.generic_scheduler import GenericScheduler  # noqa: E402
from policy_scheduler.model.pod import Pod  # noqa: E402
from policy_scheduler.offline.simulate import schedule_one  # noqa: E402
from policy_scheduler.offline.snapshot import load_objects  # noqa: E402

SCHEDULER_NAME = "default-scheduler"


def objects(w: Workload, nodes: int, init: int, measured: int) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The run's objects (namespaces, nodes, pods with uids, the DRA objects) and the pending pods' keys, in order."""
    assert w.dra is not None
    init_pods = w.init_pods(init, SCHEDULER_NAME)
    measured_pods = w.measured_pods(measured, SCHEDULER_NAME)
    pods = init_pods + measured_pods
    for pod in pods:
        meta = pod["metadata"]
        meta["uid"] = f"uid-{meta['namespace']}-{meta['name']}"
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                  for n in dict.fromkeys((*w.init_namespaces(), w.namespaces[1])) if n != "default"]
    out = namespaces + w.nodes(nodes) + w.dra.objects(w.node_names(nodes), pods) + pods
    return out, [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]


def prepare(w: Workload, nodes: int, init: int, measured: int) -> tuple[GenericScheduler, list[Pod], list[Pod]]:
    objs, keys = objects(w, nodes, init, measured)
    snapshot = load_objects(objs, "dra-benchmark")
    snapshot.instantiate_claim_templates()  # what the resourceclaim controller does (as load_snapshot does)
    cluster = snapshot.cluster_state()
    scheduler = from_provider("DefaultProvider").build(cluster)
    by_key = {(p.namespace, p.name): p for p in snapshot.pods}
    pending = [by_key[k] for k in keys]
    return scheduler, pending[:init], pending[init:]


def allocations_hash(scheduler: GenericScheduler) -> str:
    pairs = []
    for claim in sorted(scheduler.cluster.iter_resource_claims(), key=lambda c: c.key):
        devices = ",".join("/".join(r.device_id) for r in claim.results)
        pairs.append((f"{claim.namespace}/{claim.name}", devices))
    return placement_hash(pairs)


def run(name: str, nodes: int, init: int | None, measured: int | None,
        profiler: cProfile.Profile | None = None) -> dict[str, Any]:
    w = DRA_WORKLOADS[name]
    scale = 5000 if nodes >= 5000 else 500
    _, default_init, default_measured = w.sizes[scale]
    init = default_init if init is None else init
    measured = default_measured if measured is None else measured
    scheduler, init_pods, measured_pods = prepare(w, nodes, init, measured)
    gc.collect()
    clock = time.perf_counter_ns
    placements = []
    t0 = clock()
    for pod in init_pods:
        placements.append(schedule_one(scheduler, pod))
    t1 = clock()
    if profiler is not None:
        profiler.enable()
    for pod in measured_pods:
        placements.append(schedule_one(scheduler, pod))
    t2 = clock()
    if profiler is not None:
        profiler.disable()
    seconds = (t2 - t1) / 1e9
    return {
        "workload": name, "nodes": nodes, "init": init, "measured": measured,
        "scheduled": sum(1 for p in placements if p.node),
        "init_seconds": round((t1 - t0) / 1e9, 3),
        "seconds": round(seconds, 3),
        "pods_per_second": round(measured / seconds, 2) if seconds > 0 else None,
        "ms_per_pod": round(seconds * 1e3 / measured, 3) if measured else None,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "placementFNV64a": placement_hash((p.pod.name, p.node) for p in placements),
        "allocationsFNV64a": allocations_hash(scheduler),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="500,5000", help="node counts, comma-separated")
    parser.add_argument("--workload", default=",".join(DRA_WORKLOADS), help="workloads, comma-separated")
    parser.add_argument("--init", type=int, help="init pods (default: the workload's)")
    parser.add_argument("--measured", type=int, help="measured pods (default: the workload's)")
    parser.add_argument("--profile", help="write cProfile stats of the measured pods to this file")
    args = parser.parse_args(argv)
    for name in args.workload.split(","):
        if name not in DRA_WORKLOADS:
            parser.error(f"--workload {name}: not one of {', '.join(DRA_WORKLOADS)}")
        for nodes in (int(n) for n in args.nodes.split(",")):
            profiler = cProfile.Profile() if args.profile else None
            print(json.dumps(run(name, nodes, args.init, args.measured, profiler)), flush=True)
            if profiler is not None:
                profiler.dump_stats(f"{args.profile}.{name}.{nodes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
