"""What validation costs when loading a large snapshot: the throughput benchmark's cluster (5,000 nodes
and 50,000 pods by default) written as one JSON and one YAML ``List`` file, loaded three ways:

* ``--no-validate``: only the typed readers the engine needs to parse objects;
* the API server's semantic rules (label keys and values, selector operators, resource names, ...);
* the rules plus the OpenAPI schema: the default of every offline command.

It also times the YAML parse alone with PyYAML's pure-Python ``SafeLoader`` (what loading used before
validation came) and with the C-based loader it uses now.

    python benchmarks/snapshot_loading.py [--nodes 5000] [--pods 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generator import generate, to_objects  # noqa: E402
from policy_scheduler.model.openapi import OpenAPIValidator, resolve_version  # noqa: E402
from policy_scheduler.offline.snapshot import NO_CHECKS, Checks, ManifestLoader, load_snapshot  # noqa: E402


def best_of(repeat: int, path: Path, checks: Checks) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        load_snapshot([path], checks)
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    objects = to_objects(generate(args.nodes, args.pods, args.seed))
    document = {"apiVersion": "v1", "kind": "List", "items": objects}
    validator = OpenAPIValidator(resolve_version(None))
    levels = {
        "--no-validate (typed readers only)": NO_CHECKS,
        "API server rules": Checks(),
        f"rules + OpenAPI schema {validator.version_text} (default)": Checks(validator),
    }
    with tempfile.TemporaryDirectory() as tmp:
        files = {"JSON": Path(tmp) / "cluster.json", "YAML": Path(tmp) / "cluster.yaml"}
        files["JSON"].write_text(json.dumps(document), encoding="utf-8")
        files["YAML"].write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        load_snapshot([files["JSON"]], Checks(validator))  # compile (or read from the cache) the validators
        print(f"{args.nodes} nodes, {args.pods} pods ({len(objects)} objects); best of {args.repeat}")
        for fmt, path in files.items():
            size = path.stat().st_size / 1e6
            base = None
            for label, checks in levels.items():
                seconds = best_of(args.repeat, path, checks)
                base = base or seconds
                print(f"  {fmt} ({size:.0f} MB)  {label:<45} {seconds:6.2f} s  ({seconds / base - 1:+.0%})")
        text = files["YAML"].read_text(encoding="utf-8")
        for label, loader in (("pure-Python SafeLoader (before)", yaml.SafeLoader), ("ManifestLoader (C)", ManifestLoader)):
            start = time.perf_counter()
            list(yaml.load_all(text, Loader=loader))
            print(f"  YAML parse only, {label:<37} {time.perf_counter() - start:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
