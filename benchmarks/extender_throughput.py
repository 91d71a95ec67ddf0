"""Scheduling throughput with an HTTP extender (filter + prioritize) on the synthetic benchmark cluster.

The example extender (``examples/extender``) runs as its own process on 127.0.0.1; the offline engine
(the ``simulate`` path: schedule + assume, pods in index order) calls it for every pod, once with
``nodeCacheCapable: false`` (every candidate Node's JSON in each request) and once with ``true`` (names
only). Every 10th node carries ``example.com/maintenance: "true"`` (the extender rejects it) and every
node an ``example.com/score`` label (0-10, the extender's score, weight 2). One JSON line per mode on
standard output: pods/s, request bytes per pod, the placements' hash. The run fails if a pod lands on a
node the extender rejects, or if the two modes place pods differently.

    python benchmarks/extender_throughput.py --nodes 1000 --pods 500 --seed 1
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(ROOT))

from benchmarks.generator import generate, to_objects  # noqa: E402
from benchmarks.placement_hash import placement_hash  # noqa: E402
from policy_scheduler.algorithm_source import AlgorithmSource  # noqa: E402
from policy_scheduler.api import load_policy_file, policy_from_dict  # noqa: E402
from policy_scheduler.core.http_extender import HTTPExtenderFactory  # noqa: E402
from policy_scheduler.offline.simulate import schedule_one  # noqa: E402
from policy_scheduler.offline.snapshot import load_objects  # noqa: E402

MAINTENANCE = "example.com/maintenance"
SCORE = "example.com/score"
WEIGHT = 2


def label_nodes(objects: list[dict[str, Any]]) -> set[str]:
    """Give the nodes the example extender's labels; the names of the nodes it rejects."""
    rejected = set()
    nodes = [o for o in objects if o["kind"] == "Node"]
    for i, node in enumerate(nodes):
        labels = node["metadata"].setdefault("labels", {})
        labels[SCORE] = str((i * 7) % 11)
        if i % 10 == 3:
            labels[MAINTENANCE] = "true"
            rejected.add(node["metadata"]["name"])
    return rejected


def start_extender(nodes_file: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "examples.extender", "--port", "0", "--nodes", str(nodes_file)],
                               cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("listening on "):
        process.kill()
        raise SystemExit(f"the example extender did not start: {line!r}")
    return process, line.removeprefix("listening on ")


def source_with_extender(url: str, node_cache_capable: bool) -> AlgorithmSource:
    """DefaultProvider's predicates and priorities (policies/default-provider.json) plus the extender."""
    policy = load_policy_file(ROOT / "policies" / "default-provider.json").to_dict()
    policy["extenders"] = [{"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize",
                            "weight": WEIGHT, "nodeCacheCapable": node_cache_capable, "httpTimeout": 10_000_000_000}]
    return AlgorithmSource(label=f"default-provider+extender(nodeCacheCapable={node_cache_capable})",
                           policy=policy_from_dict(policy))


def run(objects: list[dict[str, Any]], data: dict[str, Any], source: AlgorithmSource) -> dict[str, Any]:
    snapshot = load_objects(copy.deepcopy(objects), "benchmark")
    cluster = snapshot.cluster_state()
    factory = HTTPExtenderFactory()
    scheduler = source.build(cluster, hard_pod_affinity_symmetric_weight=data.get("hardPodAffinitySymmetricWeight") or 1,
                             extender_factory=factory)
    by_name = {(p.namespace, p.name): p for p in snapshot.pods if not p.node_name}
    pending = [by_name[(raw["metadata"].get("namespace") or "default", raw["metadata"]["name"])]
               for raw in data.get("pending") or ()]
    gc.collect()
    start = time.perf_counter_ns()
    placements = [schedule_one(scheduler, pod) for pod in pending]
    seconds = (time.perf_counter_ns() - start) / 1e9
    (extender,) = factory.extenders
    return {"placements": placements, "seconds": seconds, "stats": extender.stats}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    data = generate(args.nodes, args.pods, args.seed)
    objects = to_objects(data)
    rejected = label_nodes(objects)
    with tempfile.TemporaryDirectory() as directory:
        nodes_file = Path(directory) / "nodes.json"
        nodes_file.write_text(json.dumps({"kind": "List", "items": [o for o in objects if o["kind"] == "Node"]}))
        process, url = start_extender(nodes_file)
        try:
            hashes = {}
            for node_cache_capable in (False, True):
                result = run(objects, data, source_with_extender(url, node_cache_capable))
                placements, seconds, stats = result["placements"], result["seconds"], result["stats"]
                bad = [(p.pod.name, p.node) for p in placements if p.node in rejected]
                assert not bad, f"pods placed on nodes the extender rejects: {bad[:5]}"
                digest = placement_hash([(p.pod.name, p.node) for p in placements])
                hashes[node_cache_capable] = digest
                scheduled = sum(1 for p in placements if p.node)
                print(json.dumps({
                    "nodes": args.nodes, "pods": len(placements), "seed": args.seed,
                    "nodeCacheCapable": node_cache_capable, "scheduled": scheduled,
                    "unschedulable": len(placements) - scheduled, "seconds": round(seconds, 3),
                    "pods_per_second": round(len(placements) / seconds, 1) if seconds else None,
                    "bytes_sent_per_pod": round(stats.bytes_sent / max(1, len(placements))),
                    "bytes_received_per_pod": round(stats.bytes_received / max(1, len(placements))),
                    "extender_calls": dict(stats.calls), "extender_errors": sum(stats.errors.values()),
                    "placementFNV64a": digest,
                }), flush=True)
            assert hashes[False] == hashes[True], f"placements differ: {hashes}"
        finally:
            process.terminate()
            process.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
