"""End-to-end throughput of the live daemon (``policy-scheduler run``) against a real API server.

Starts a fresh envtest kube-apiserver + etcd (``shared/envtest``), loads the synthetic benchmark cluster
(``shared/benchmarks/README.md``) into it, the pending pods one by one in index order, computes the
expected placements with the offline engine on the snapshot read back from the API server (as
``policy-scheduler simulate --from-cluster`` does), then runs the daemon as a subprocess until every pod
the offline engine scheduled is bound, watching the pods to time each binding. One JSON line on
standard output; progress on standard error. The API server is always stopped at the end.

    python benchmarks/daemon_throughput.py --nodes 1000 --pods 2000 --seed 1 [--version 1.26] [--bind-workers N]
        [--feature-gates PodPriority=true] [--scheduling-queue 1.9|three-queue] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generator import VARIANTS, generate  # noqa: E402
from benchmarks.harness.ports import free_port  # noqa: E402
from benchmarks.placement_hash import placement_hash  # noqa: E402
from benchmarks.throughput import DEFAULT_PROVIDER, percentile_ms  # noqa: E402
from benchmarks.throughput import run as run_offline  # noqa: E402
from policy_scheduler.algorithm_source import from_provider  # noqa: E402
from policy_scheduler.kube.client.kubeconfig import api_client  # noqa: E402
from policy_scheduler.kube.client.rest import ApiError, RestClient  # noqa: E402
from policy_scheduler.kube.client.snapshot import read_cluster_snapshot  # noqa: E402
from policy_scheduler.offline.simulate import simulate  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENVTEST = Path(os.environ.get("ENVTEST_SCRIPT", ROOT.parent / "shared" / "envtest" / "envtest.py"))
SCHEDULER_NAME = "policy-scheduler-bench"
CREATE_THREADS = 8
BIND_TIMEOUT = 600.0
WATCH_READ_TIMEOUT = 3600.0


def progress(message: str) -> None:
    print(f"[daemon_throughput {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the API server ---------------------------------------------------------------------------------
def start_envtest(version: str, directory: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(ENVTEST), "start", "--version", version, "--dir", str(directory)],
        check=True, stdout=subprocess.PIPE, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def stop_envtest(directory: Path) -> None:
    subprocess.run([sys.executable, str(ENVTEST), "stop", "--dir", str(directory)],
                   check=False, stdout=subprocess.DEVNULL)


# -- the objects, as a 1.26 API server accepts them -------------------------------------------------
def without_nulls(value: Any) -> Any:
    """Drop ``null`` members (Go's zero values in the generator's layout) recursively."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def _template(labels: dict[str, str]) -> dict[str, Any]:
    """A pod template: the apps/v1 and v1 controllers require one (no controller runs, so no pods)."""
    return {"metadata": {"labels": dict(labels)}, "spec": {"containers": [{"name": "c0", "image": "registry/bench:v1"}]}}


def _namespace(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("namespace") or "default"


def service(obj: dict[str, Any]) -> dict[str, Any]:
    # Headless: no cluster IP to allocate (10.0.0.0/24 holds 253) and no ports needed; the spreading
    # priorities read only the selector.
    out = without_nulls(obj)
    spec = out.setdefault("spec", {})
    spec.pop("clusterIPs", None)
    spec["clusterIP"] = "None"
    out.pop("status", None)
    return out


def controller(obj: dict[str, Any], match_labels: bool) -> dict[str, Any]:
    out = without_nulls(obj)
    spec = out.setdefault("spec", {})
    selector = spec.get("selector") or {}
    labels = (selector.get("matchLabels") or {}) if match_labels else selector
    spec["template"] = _template(labels)
    out.pop("status", None)
    return out


def statefulset(obj: dict[str, Any]) -> dict[str, Any]:
    out = controller(obj, match_labels=True)
    out["spec"].pop("updateStrategy", None)
    out["spec"]["serviceName"] = out["spec"].get("serviceName") or "bench"
    return out


def pod(obj: dict[str, Any], scheduler_name: str) -> dict[str, Any]:
    out = without_nulls(obj)
    out.setdefault("spec", {})["schedulerName"] = scheduler_name
    out.pop("status", None)
    return out


def api_objects(data: dict[str, Any], scheduler_name: str) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(label, collection path template, bodies) for everything but the pending pods, in creation order."""
    def items(key: str) -> list[dict[str, Any]]:
        return list(data.get(key) or ())

    return [
        ("nodes", "/api/v1/nodes", [without_nulls(n) for n in items("nodes")]),
        ("persistentvolumes", "/api/v1/persistentvolumes", [without_nulls(v) for v in items("pvs")]),
        ("persistentvolumeclaims", "/api/v1/namespaces/{ns}/persistentvolumeclaims",
         [without_nulls(c) for c in items("pvcs")]),
        ("services", "/api/v1/namespaces/{ns}/services", [service(s) for s in items("services")]),
        ("replicationcontrollers", "/api/v1/namespaces/{ns}/replicationcontrollers",
         [controller(r, match_labels=False) for r in items("replicationControllers")]),
        ("replicasets", "/apis/apps/v1/namespaces/{ns}/replicasets",
         [controller(r, match_labels=True) for r in items("replicaSets")]),
        ("statefulsets", "/apis/apps/v1/namespaces/{ns}/statefulsets", [statefulset(s) for s in items("statefulSets")]),
        ("bound pods", "/api/v1/namespaces/{ns}/pods", [pod(p, scheduler_name) for p in items("pods")]),
    ]


def ensure_namespaces(rest: RestClient, objects: Iterable[dict[str, Any]]) -> None:
    for ns in sorted({_namespace(o) for o in objects} - {"default"}):
        try:
            rest.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except ApiError as e:
            if not e.conflict:
                raise


def create_all(rest: RestClient, path: str, bodies: list[dict[str, Any]], threads: int) -> None:
    def create(body: dict[str, Any]) -> None:
        rest.post(path.format(ns=_namespace(body)), body)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(create, bodies):
            pass


def create_pending(rest: RestClient, pending: list[dict[str, Any]], scheduler_name: str) -> dict[str, float]:
    """Create the pending pods one by one in index order; ``perf_counter`` when each create returned."""
    created: dict[str, float] = {}
    clock = time.perf_counter
    for i, raw in enumerate(pending, 1):
        body = pod(raw, scheduler_name)
        rest.post(f"/api/v1/namespaces/{_namespace(body)}/pods", body)
        created[f"{_namespace(body)}/{body['metadata']['name']}"] = clock()
        if i % 500 == 0:
            progress(f"created {i}/{len(pending)} pending pods")
    return created


# -- watching the bindings --------------------------------------------------------------------------
class BindWatch:
    """A watch on all pods from ``resource_version``: when each pod of ``wanted`` is first seen bound."""

    def __init__(self, rest: RestClient, resource_version: str, wanted: set[str]) -> None:
        self.rest = rest
        self.resource_version = resource_version
        self.wanted = set(wanted)
        self.bound_at: dict[str, float] = {}
        self.bound_to: dict[str, str] = {}
        self.all_bound = threading.Event()
        self.error: str | None = None
        self._stream: Any = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="bind-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        clock = time.perf_counter
        try:
            while not self._stopped:
                self._stream = self.rest.watch("/api/v1/pods", {"resourceVersion": self.resource_version},
                                               WATCH_READ_TIMEOUT)
                for event in self._stream:
                    obj = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    if event.get("type") == "ERROR":
                        raise ApiError(obj.get("code") or 0, obj.get("reason") or "", obj.get("message") or "")
                    self.resource_version = meta.get("resourceVersion") or self.resource_version
                    node = (obj.get("spec") or {}).get("nodeName")
                    key = f"{meta.get('namespace')}/{meta.get('name')}"
                    if node and key not in self.bound_at and key in self.wanted:
                        self.bound_at[key] = clock()
                        self.bound_to[key] = node
                        if len(self.bound_at) == len(self.wanted):
                            self.all_bound.set()
        except ApiError as e:
            if not self._stopped:
                self.error = str(e)
                self.all_bound.set()

    def stop(self) -> None:
        self._stopped = True
        if self._stream is not None:
            self._stream.close()
        self._thread.join(timeout=5)


# -- the daemon -------------------------------------------------------------------------------------
def status_mb(pid: int, key: str) -> float | None:
    """A memory figure of ``/proc/PID/status`` (``VmHWM``, ``VmRSS``, ...) in MB; None if the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def vm_hwm_mb(pid: int) -> float | None:
    return status_mb(pid, "VmHWM")


def daemon_command(kubeconfig: str, bind_workers: int | None, feature_gates: str = "",
                   scheduling_queue: str | None = None, api_qps: int | None = 5000) -> list[str]:
    """``policy-scheduler run`` as the benchmarks start it; ``api_qps`` sets ``--kube-api-qps`` and
    ``--kube-api-burst`` (None: the daemon's own defaults, 50 and 100)."""
    exe = shutil.which("policy-scheduler")
    cmd = [exe] if exe else [sys.executable, "-m", "policy_scheduler.cli"]
    cmd += [
        "run", "--kubeconfig", kubeconfig, "--scheduler-name", SCHEDULER_NAME, "--leader-elect=false",
        "--address", "127.0.0.1", "--port", str(free_port()), "--v=0",
        # The benchmarks read /metrics over loopback (faults.py's queue depths); no HTTPS listener, so runs never
        # contend for 10259.
        "--insecure-metrics", "--secure-port", "0",
    ]
    if api_qps is not None:
        cmd += ["--kube-api-qps", str(api_qps), "--kube-api-burst", str(api_qps)]
    if bind_workers:
        cmd += ["--bind-workers", str(bind_workers)]
    if feature_gates:
        cmd += ["--feature-gates", feature_gates]
    if scheduling_queue:
        cmd += ["--scheduling-queue", scheduling_queue]
    return cmd


def wait_bound(watch: BindWatch, daemon: subprocess.Popen[bytes], timeout: float,
               report: Callable[[int], None]) -> None:
    deadline = time.monotonic() + timeout
    last = -1
    while not watch.all_bound.wait(2.0):
        if daemon.poll() is not None:
            raise RuntimeError(f"the daemon exited early with code {daemon.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(watch.bound_at)}/{len(watch.wanted)} pods bound after {timeout:.0f}s")
        if len(watch.bound_at) != last:
            last = len(watch.bound_at)
            report(last)
    if watch.error:
        raise RuntimeError(f"the watch failed: {watch.error}")


# -- the run ----------------------------------------------------------------------------------------
def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    data = generate(args.nodes, args.pods, args.seed, args.variant)
    progress(f"starting envtest {args.version} in {workdir}")
    env = start_envtest(args.version, workdir / "envtest")
    kubeconfig = env["kubeconfig"]
    rest = RestClient(api_client(kubeconfig, pool_size=CREATE_THREADS + 2), qps=0, burst=1)

    objects = api_objects(data, SCHEDULER_NAME)
    pending_raw = list(data.get("pending") or ())
    ensure_namespaces(rest, [o for _, _, bodies in objects for o in bodies] + pending_raw)
    t0 = time.perf_counter()
    for label, path, bodies in objects:
        if bodies:
            create_all(rest, path, bodies, CREATE_THREADS)
            progress(f"created {len(bodies)} {label}")
    created = create_pending(rest, pending_raw, SCHEDULER_NAME)
    progress(f"cluster loaded in {time.perf_counter() - t0:.1f}s")
    resource_version = rest.get("/api/v1/pods", {"limit": 1})["metadata"]["resourceVersion"]

    progress("expected placements: offline engine on the snapshot read back from the API server")
    snapshot = read_cluster_snapshot(kubeconfig=kubeconfig)
    source = from_provider(DEFAULT_PROVIDER)
    expected = simulate(snapshot, lambda cluster: source.build(cluster), scheduler_name=SCHEDULER_NAME)
    order = [f"{p.pod.namespace}/{p.pod.name}" for p in expected.placements]
    expected_pairs = [(p.pod.name, p.node) for p in expected.placements]
    expected_hash = placement_hash(expected_pairs)
    benchmark_hash = run_offline(data, source).placement_hash
    wanted = {key for key, p in zip(order, expected.placements) if p.node}
    progress(f"expected: {len(wanted)}/{len(order)} scheduled, hash {expected_hash} (index order {benchmark_hash})")

    watch = BindWatch(RestClient(api_client(kubeconfig, pool_size=2), qps=0, burst=1), resource_version, wanted)
    watch.start()
    log_path = workdir / "daemon.log"
    cmd = daemon_command(kubeconfig, args.bind_workers, args.feature_gates, args.scheduling_queue)
    progress(f"starting the daemon: {' '.join(cmd)} (log {log_path})")
    with open(log_path, "wb") as log:
        started = time.perf_counter()
        daemon = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_bound(watch, daemon, BIND_TIMEOUT,
                       lambda n: progress(f"bound {n}/{len(wanted)} ({time.perf_counter() - started:.1f}s)"))
            peak_rss = vm_hwm_mb(daemon.pid)
        finally:
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
                try:
                    daemon.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()
            watch.stop()
    progress(f"daemon exited with {daemon.returncode}")

    items = rest.get("/api/v1/pods")["items"]
    actual_node = {f"{o['metadata'].get('namespace')}/{o['metadata']['name']}": (o.get("spec") or {}).get("nodeName")
                   for o in items}
    actual_pairs = [(name, actual_node.get(key)) for key, (name, _) in zip(order, expected_pairs)]
    actual_hash = placement_hash(actual_pairs)

    bound_times = sorted(watch.bound_at.values())
    span = bound_times[-1] - bound_times[0] if len(bound_times) > 1 else 0.0
    latencies_ns = [int((watch.bound_at[k] - created[k]) * 1e9) for k in watch.bound_at if k in created]
    line: dict[str, Any] = {
        "nodes": args.nodes, "pods": args.pods, "seed": args.seed, "version": args.version, "variant": args.variant,
        "scheduled": sum(1 for _, node in actual_pairs if node),
        "pods_bound_per_second": round((len(bound_times) - 1) / span, 1) if span > 0 else None,
        "p50_ms": round(percentile_ms(latencies_ns, 50), 1),
        "p99_ms": round(percentile_ms(latencies_ns, 99), 1),
        "daemon_peak_rss_mb": peak_rss,
        "placementFNV64a": actual_hash,
        "expected_placementFNV64a": expected_hash,
        "match": actual_hash == expected_hash,
        "benchmark_index_order_placementFNV64a": benchmark_hash,
        "daemon_exit_code": daemon.returncode,
        "seconds_to_first_bind": round(bound_times[0] - started, 3) if bound_times else None,
        "seconds_first_to_last_bind": round(span, 3),
    }
    if not line["match"]:
        for i, ((name, want), (_, got)) in enumerate(zip(expected_pairs, actual_pairs)):
            if want != got:
                line["first_difference"] = {"index": i, "pod": name, "expected": want, "daemon": got}
                break
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--pods", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--version", default="1.26", choices=("1.10", "1.26"), help="envtest API server line")
    parser.add_argument("--variant", choices=VARIANTS, help="the workload variant (generator.VARIANTS); the "
                        "modern ones need a server that keeps their fields (1.26)")
    parser.add_argument("--bind-workers", type=int, default=None, help="the daemon's --bind-workers (its default if unset)")
    parser.add_argument("--feature-gates", default="",
                        help="the daemon's --feature-gates, e.g. PodPriority=true (priority queue, nominations)")
    parser.add_argument("--scheduling-queue", choices=("1.9", "three-queue"), default=None,
                        help="the daemon's --scheduling-queue (its default, 1.9's queue, if unset)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (daemon.log, envtest state); the API server is stopped anyway")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="daemon-throughput-"))
    try:
        line = run(args, workdir)
    finally:
        stop_envtest(workdir / "envtest")
        if args.keep:
            progress(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(line), flush=True)
    return 0 if line["match"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
