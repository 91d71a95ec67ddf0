"""Scheduling throughput on the synthetic benchmark cluster (``shared/benchmarks/README.md``).

Times only the loop schedule + assume over the pending pods, in index order, as upstream's figure
does: generation, parsing, cache construction and scheduler construction are excluded. Each repeat
starts from a freshly loaded snapshot, a fresh cluster and a fresh scheduler (round-robin counter 0).
One JSON line per run on standard output.

    python benchmarks/throughput.py --nodes 100 --pods 500 --seed 1 [--provider NAME | --policy F] [--repeat R]
        [--variant topology-spread]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generator import VARIANTS, generate, to_objects  # noqa: E402
from benchmarks.placement_hash import placement_hash  # noqa: E402
from policy_scheduler.algorithm_source import AlgorithmSource, from_policy_file, from_provider  # noqa: E402
from policy_scheduler.core.generic_scheduler import GenericScheduler  # noqa: E402
from policy_scheduler.model.pod import Pod  # noqa: E402
from policy_scheduler.offline.simulate import Placement, schedule_one  # noqa: E402
from policy_scheduler.offline.snapshot import load_objects  # noqa: E402

DEFAULT_PROVIDER = "DefaultProvider"


@dataclass
class RunResult:
    placements: list[Placement]
    latencies_ns: list[int]
    total_ns: int

    @property
    def pairs(self) -> list[tuple[str, str | None]]:
        return [(p.pod.name, p.node) for p in self.placements]

    @property
    def scheduled(self) -> int:
        return sum(1 for p in self.placements if p.node)

    @property
    def placement_hash(self) -> str:
        return placement_hash(self.pairs)


def prepare(
    data: dict[str, Any], source: AlgorithmSource, vectorized: bool = True
) -> tuple[GenericScheduler, list[Pod]]:
    """Load the objects, build the cluster and the scheduler; the pending pods in index order."""
    snapshot = load_objects(to_objects(data), "benchmark")
    cluster = snapshot.cluster_state()
    weight = data.get("hardPodAffinitySymmetricWeight") or 1
    scheduler = source.build(cluster, hard_pod_affinity_symmetric_weight=weight, vectorized=vectorized)
    by_name = {(p.namespace, p.name): p for p in snapshot.pods if not p.node_name}
    pending = [
        by_name[(raw["metadata"].get("namespace") or "default", raw["metadata"]["name"])]
        for raw in data.get("pending") or ()
    ]
    return scheduler, pending


def schedule_pending(scheduler: GenericScheduler, pods: list[Pod]) -> RunResult:
    """The timed part: schedule and assume each pod in turn."""
    placements: list[Placement] = []
    latencies: list[int] = []
    clock = time.perf_counter_ns
    start = clock()
    for pod in pods:
        t0 = clock()
        placements.append(schedule_one(scheduler, pod))
        latencies.append(clock() - t0)
    return RunResult(placements, latencies, clock() - start)


def run(data: dict[str, Any], source: AlgorithmSource, vectorized: bool = True) -> RunResult:
    """One benchmark run on a fresh cluster and a fresh scheduler."""
    scheduler, pending = prepare(data, source, vectorized)
    gc.collect()
    return schedule_pending(scheduler, pending)


def percentile_ms(latencies_ns: list[int], q: float) -> float:
    """Nearest-rank percentile, in milliseconds."""
    if not latencies_ns:
        return 0.0
    ordered = sorted(latencies_ns)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1] / 1e6


def peak_rss_mb() -> float:
    """Peak resident set size of this process (``ru_maxrss`` is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(
    nodes: int, pods: int, seed: int, source: AlgorithmSource, result: RunResult, reference: bool = False
) -> dict[str, Any]:
    seconds = result.total_ns / 1e9
    line: dict[str, Any] = {"nodes": nodes, "pods": pods, "seed": seed}
    if reference:
        line["path"] = "reference"
    if source.provider is not None:
        line["provider"] = source.provider
    else:
        line["policy"] = source.label
    line.update(
        scheduled=result.scheduled,
        unschedulable=len(result.placements) - result.scheduled,
        seconds=round(seconds, 6),
        pods_per_second=round(len(result.placements) / seconds, 3) if seconds > 0 else None,
        p50_ms=round(percentile_ms(result.latencies_ns, 50), 3),
        p99_ms=round(percentile_ms(result.latencies_ns, 99), 3),
        peak_rss_mb=round(peak_rss_mb(), 1),
        placementFNV64a=result.placement_hash,
    )
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--pods", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--provider", help=f"algorithm provider (default {DEFAULT_PROVIDER})")
    group.add_argument("--policy", help="a Policy file instead of a provider")
    parser.add_argument("--repeat", type=int, default=1, help="runs, each on a fresh cluster and scheduler")
    parser.add_argument("--variant", choices=VARIANTS, help="the workload variant (generator.VARIANTS)")
    parser.add_argument("--reference", action="store_true",
                        help="schedule on the per-node reference path only (to verify the vectorised placements)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    source = from_policy_file(args.policy) if args.policy else from_provider(args.provider or DEFAULT_PROVIDER)
    data = generate(args.nodes, args.pods, args.seed, args.variant)
    rates = []
    for _ in range(args.repeat):
        result = run(data, source, vectorized=not args.reference)
        line = report(args.nodes, args.pods, args.seed, source, result, args.reference)
        if args.variant:
            line["variant"] = args.variant
        rates.append(line["pods_per_second"] or 0.0)
        print(json.dumps(line), flush=True)
    if args.repeat > 1:
        print(f"median pods_per_second over {args.repeat} runs: {statistics.median(rates)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
