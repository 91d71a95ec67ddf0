"""CPU per API request: the daemon's keep-alive transport against the official client's REST layer.

Starts an envtest API server (``--version``, 1.26), then POSTs ``--requests`` (1,500) core/v1 Events, as the
daemon records ``Scheduled``, through :class:`~policy_scheduler.kube.client.rest.RestClient` twice: over
``kube/transport.py`` (what the daemon uses for request/reply calls) and over the ``kubernetes`` client's
urllib3 pool manager (what it used before, and still uses for watches). Prints, for each, this process's CPU
time per request (``time.process_time``) and the wall time per request, one request at a time.

    python benchmarks/rest_transport.py [--requests 1500] [--version 1.26]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.daemon_throughput import start_envtest, stop_envtest  # noqa: E402
from policy_scheduler.kube.client.kubeconfig import api_client  # noqa: E402
from policy_scheduler.kube.client.rest import RestClient  # noqa: E402

EVENTS = "/api/v1/namespaces/default/events"


def event(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": name, "uid": f"uid-{name}"},
            "reason": "Scheduled", "message": f"Successfully assigned default/{name} to node-1", "type": "Normal",
            "source": {"component": "policy-scheduler"}, "count": 1,
            "firstTimestamp": "2026-11-27T00:00:00Z", "lastTimestamp": "2026-11-27T00:00:00Z"}


def measure(rest: RestClient, prefix: str, requests: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per POST."""
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(requests):
        rest.post(EVENTS, event(f"{prefix}-{i}"))
    return (time.process_time() - cpu) * 1000 / requests, (time.perf_counter() - wall) * 1000 / requests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--version", default="1.26")
    args = parser.parse_args(argv)
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    with tempfile.TemporaryDirectory(prefix="rest-transport-") as tmp:
        server = start_envtest(args.version, Path(tmp))
        try:
            lean = RestClient(api_client(server["kubeconfig"]), qps=0)
            official = RestClient(api_client(server["kubeconfig"]), qps=0)
            official.transport = None  # the kubernetes client's REST layer, as for watches
            measure(lean, "warm-lean", 50)
            measure(official, "warm-official", 50)
            print("| path | CPU ms per request | wall ms per request |")
            print("|---|---:|---:|")
            for label, rest in (("keep-alive transport (kube/transport.py)", lean),
                                ("kubernetes client REST layer (urllib3)", official)):
                cpu, wall = measure(rest, label.split()[0], args.requests)
                print(f"| {label} | {cpu:.3f} | {wall:.3f} |")
        finally:
            stop_envtest(Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
