"""Steady churn: ours and upstream's kube-scheduler under a constant stream of short-lived pods (issue 33).

What an operator of a busy cluster sees, on a fresh envtest API server (``--version`` 1.26 or 1.32) per run:

- ``--nodes`` (100) nodes as upstream's scheduler_perf ``node-default.yaml`` (cpu 4, memory 32Gi, pods 110),
  with kubelet-style heartbeats: every node's ``Ready`` condition's ``lastHeartbeatTime`` PATCHed (``/status``,
  strategic merge) every 10 s, the nodes spread evenly over the interval;
- 10 ReplicaSets (``apps/v1``, replicas 0: nothing else acts on them) ``rs-<k>`` and a headless Service
  selecting each (``app: rs-<k>``), created before any pod;
- pods ``pod-NNNNNN`` in ``default`` created at a steady ``--rate`` per second (30) for ``--minutes`` (8), each
  asking cpu 100m and memory 100Mi (100 nodes never fill: about rate x lifetime pods live at a time). In every
  block of 30 (shuffled by ``--seed``): 10 carry the labels of a ReplicaSet (drawn from ``--seed``) and an
  ``ownerReference`` to it (its uid, ``controller: true``), 3 carry ``app: churn-anti`` and a preferred pod
  anti-affinity on it (weight 100, ``kubernetes.io/hostname``), 17 are plain;
- each pod deleted (grace period 0) ``--lifetime`` s (20) after this script's watch first saw it bound.

The pods are created by a child process (``--serve-creator``) from one thread pool: it pre-encodes every body,
opens a keep-alive HTTPS connection per thread, then submits create i at start + i / rate by the clock and
records when each create returned (``time.monotonic()``, one clock for every process on Linux). The scheduler
is **ours** (``policy-scheduler run --kubeconfig K --scheduler-name policy-scheduler-bench
--leader-elect=false``, and ``--secure-port 0 --insecure-metrics --address 127.0.0.1 --port N`` to read its
``/metrics``; no client flags: qps 50, burst 100) or the **modern** kube-scheduler of ``--version`` (the default
profile under the name ``modern-scheduler-bench``, the default client connection: qps 50, burst 100);
``--scheduler both`` (the default) runs ours, then modern, each on its own API server. Before the clock starts,
one ``warmup`` pod must be bound (the scheduler is up).

Per run, one JSON line on standard output (progress goes to standard error):

- ``p50_ms`` / ``p99_ms``: create-to-bind latency, from the create's return to this script's watch seeing
  ``spec.nodeName`` (nearest rank); ``per_minute``: for each minute from the first create to the last bind, the
  pods created in it with their ``p50_ms`` / ``p99_ms``, and the pods ``bound`` in it.
- ``created``, ``bound`` (created pods the watch saw bound), ``deleted`` (by this script), ``lost``: created
  pods that vanished before being bound, plus those still unbound at the end although the final cluster has room
  for them (``unbound_no_room``: the others); the end is when every created pod is bound, or 30 s without a
  bind after the last create.
- ``overcommitted_nodes``: nodes whose bound pods' requests (cpu, memory) or number exceed the node's
  allocatable, from the Node and Pod objects read back at the end.
- ``bound_without_scheduled_event``: bound pods that no Event with reason ``Scheduled`` regards (core/v1
  Events of ``default``, paged; upstream 1.26 writes events.k8s.io/v1 Events, which the core/v1 list shows too;
  matched on ``involvedObject`` namespace and name), listed 5 s after the last bind; ``scheduled_events``.
- ``rss_mb_start`` / ``rss_mb_minute2`` / ``rss_mb_end`` and ``rss_growth_pct`` (minute 2 to the end; None
  for runs shorter than that): the scheduler's ``VmRSS``, sampled every 10 s (``rss_samples``: [s, MB]).
- ``cpu_seconds`` (utime + stime of the scheduler process, all its threads, from the first create to the
  end) and ``cpu_seconds_per_1000_pods`` (per 1,000 pods bound).
- ``scheduler_event_metrics`` (ours): its ``/metrics`` samples whose name contains ``event``, at the end.
- ``create_rate`` (created / (last create - first create): the creator's own rate) and ``create_late_ms``
  (how far behind its schedule a create started: p50, p99, max); ``heartbeats`` / ``heartbeat_failures``.

At the end a markdown table (one column per scheduler, runs of one size together) goes to standard error, and
to a file with ``--table PATH``; ``--render RUNS.jsonl`` prints the table of saved JSON lines. Servers,
schedulers and the creator are stopped at the end of every run, also on an error or Ctrl-C; ``--keep`` keeps the
work directory (the schedulers' logs).

    # the issue's shape: 100 nodes, 30 pods/s, 8 minutes, both schedulers (about 18 minutes)
    python benchmarks/churn.py --table churn-table.md > churn.jsonl
    # at 100 pods/s (both bind at their client's default 50 requests/s: the pods queue, the runs take twice as long)
    python benchmarks/churn.py --rate 100 --table churn-100.md > churn-100.jsonl
    # a short run, ours only
    python benchmarks/churn.py --scheduler ours --minutes 1
    # the CI size (tests/benchmarks/test_churn.py)
    python benchmarks/churn.py --scheduler ours --nodes 10 --rate 10 --minutes 0.4 --lifetime 5

Options: ``--minutes`` (8; a fraction for short runs), ``--rate`` (30 pods/s), ``--nodes`` (100), ``--lifetime``
(20 s), ``--scheduler ours|modern|both``, ``--version 1.26|1.32``, ``--seed`` (1), ``--table``, ``--render``,
``--keep``. Ours is the daemon of this checkout (its root first on ``PYTHONPATH``); ``commit`` names it.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import queue
import random
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.daemon_throughput import SCHEDULER_NAME, controller, create_all, service, status_mb  # noqa: E402
from benchmarks.faults import (  # noqa: E402
    MODERN_SCHEDULER_NAME,
    NAMESPACE,
    PODS_PATH,
    SCHEDULERS,
    SERVERS,
    Bind,
    PodWatch,
    SchedulerProcess,
    _cell,
    final_state,
    progress,
    run_benchmark,
    sleep_until,
    start_scheduler,
    stop_server,
    unbound_with_room,
)
from benchmarks.harness.daemon import wait_until  # noqa: E402
from benchmarks.harness.envtest import EnvtestServer, assets_dir  # noqa: E402
from benchmarks.harness.proc import cpu_seconds  # noqa: E402
from benchmarks.perf_workloads import HOSTNAME_KEY, PodTemplate, node_object  # noqa: E402
from benchmarks.scheduler_perf import ApiConnection, CreatorProcess, create_raw  # noqa: E402
from benchmarks.throughput import percentile_ms  # noqa: E402
from policy_scheduler.kube.client.kubeconfig import api_client  # noqa: E402
from policy_scheduler.kube.client.rest import ApiError, RestClient  # noqa: E402

REPLICASETS = 10
RS_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets"
SERVICES_PATH = f"/api/v1/namespaces/{NAMESPACE}/services"
EVENTS_PATH = f"/api/v1/namespaces/{NAMESPACE}/events"
#: Of every 30 pods: this many owned by a ReplicaSet, with preferred anti-affinity, plain.
BLOCK = (("rs", 10), ("anti", 3), ("plain", 17))
POD_CPU, POD_MEMORY = "100m", "100Mi"
ANTI_LABELS = (("app", "churn-anti"),)
PLAIN = PodTemplate("churn-plain", cpu=POD_CPU, memory=POD_MEMORY)
ANTI = PodTemplate("churn-anti", cpu=POD_CPU, memory=POD_MEMORY, labels=ANTI_LABELS, affinity={"podAntiAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
        "labelSelector": {"matchLabels": dict(ANTI_LABELS)}, "topologyKey": HOSTNAME_KEY}}]}})
HEARTBEAT_PERIOD = 10.0  # a kubelet's node status update frequency
SAMPLE_PERIOD = 10.0  # the scheduler's RSS and CPU
THREADS = 8  # this script's own creates (nodes, ReplicaSets, Services)
CREATOR_THREADS = 8  # the creator's pool (and keep-alive connections)
DELETER_THREADS = 4
SETTLE = 30.0  # after the last create: at most this long without a bind for the last pods to bind
EVENT_GRACE = 5.0  # after the last bind, before the Events are listed
WARMUP = "warmup"
GRACE_0 = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}


# -- the objects ------------------------------------------------------------------------------------
def replicaset_name(k: int) -> str:
    return f"rs-{k}"


def replicaset_template(k: int) -> PodTemplate:
    return PodTemplate(replicaset_name(k), cpu=POD_CPU, memory=POD_MEMORY, labels=(("app", replicaset_name(k)),))


def owner_objects() -> list[tuple[str, dict[str, Any]]]:
    """(collection path, body) of the ReplicaSets (replicas 0) and their headless Services."""
    out = []
    for k in range(REPLICASETS):
        name, labels = replicaset_name(k), {"app": replicaset_name(k)}
        meta = {"name": name, "namespace": NAMESPACE}
        out.append((RS_PATH, controller({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
                                         "spec": {"replicas": 0, "selector": {"matchLabels": labels}}}, True)))
        out.append((SERVICES_PATH, service({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                                            "spec": {"selector": labels}})))
    return out


def pod_kinds(count: int, rng: random.Random) -> list[str]:
    """``count`` kinds, each block of 30 holding BLOCK's shares in a shuffled order."""
    block = [kind for kind, n in BLOCK for _ in range(n)]
    out: list[str] = []
    while len(out) < count:
        rng.shuffle(block)
        out.extend(block)
    return out[:count]


def churn_pods(count: int, scheduler_name: str, owners: dict[str, str], seed: int) -> list[dict[str, Any]]:
    """The pods ``pod-NNNNNN``, in creation order; ``owners``: the ReplicaSets' uids by name."""
    rng = random.Random(seed)
    pods = []
    for i, kind in enumerate(pod_kinds(count, rng)):
        name = f"pod-{i:06d}"
        if kind == "rs":
            k = rng.randrange(REPLICASETS)
            pod = replicaset_template(k).pod(name, NAMESPACE, scheduler_name)
            pod["metadata"]["ownerReferences"] = [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replicaset_name(k),
                "uid": owners[replicaset_name(k)], "controller": True, "blockOwnerDeletion": True}]
        else:
            pod = (ANTI if kind == "anti" else PLAIN).pod(name, NAMESPACE, scheduler_name)
        pods.append(pod)
    return pods


# -- the creator child --------------------------------------------------------------------------------
def serve_creator(spec_path: str, index: int) -> int:
    """The creator child: encodes every pod and opens its connections, says ``ready``, and on ``go`` submits
    create i at start + i / rate to a pool of threads, each create on a free connection of the pool; then it
    prints ``done`` with when each create returned, its start and how late the creates started."""
    spec = json.loads(Path(spec_path).read_text())
    bodies = churn_pods(spec["count"], spec["scheduler_name"], spec["owners"], spec["seed"])
    requests = [(b["metadata"]["name"], PODS_PATH, json.dumps(b).encode()) for b in bodies]
    configuration = api_client(spec["kubeconfig"]).configuration
    connections: queue.Queue[ApiConnection] = queue.Queue()
    for _ in range(spec["threads"]):
        connections.put(ApiConnection(configuration))
    created: dict[str, float] = {}
    failed: dict[str, str] = {}
    late: list[int] = []  # ns
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 0
    started = time.monotonic()
    deadline = started + len(requests) / spec["rate"] + 60

    def create(i: int, due: float) -> None:
        late.append(int((time.monotonic() - due) * 1e9))
        connection = connections.get()
        try:
            create_raw(connection, [requests[i]], deadline, created, failed)
        finally:
            connections.put(connection)

    with ThreadPoolExecutor(max_workers=spec["threads"]) as pool:
        for i in range(len(requests)):
            due = started + i / spec["rate"]
            sleep_until(due)
            pool.submit(create, i, due)
    late_ms = {"p50": percentile_ms(late, 50), "p99": percentile_ms(late, 99), "max": max(late, default=0) / 1e6}
    print("done " + json.dumps({"created": created, "failed": failed, "started": started,
                                "late_ms": {k: round(v, 2) for k, v in late_ms.items()}}), flush=True)
    return 0


# -- this script's kubelet stand-ins: deletions and heartbeats ------------------------------------------
class Deleter:
    """Deletes each pod (grace period 0) ``lifetime`` s after its bind was seen, on a few threads. The watch
    reports binds in the order it saw them, so the deletions fall due in the order they are scheduled."""

    def __init__(self, rest: RestClient, lifetime: float) -> None:
        self.rest = rest
        self.lifetime = lifetime
        self.deleted = 0
        self.failed = 0
        self._due: queue.Queue[tuple[float, str] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=DELETER_THREADS)
        self._thread = threading.Thread(target=self._run, name="deleter", daemon=True)

    def start(self) -> Deleter:
        self._thread.start()
        return self

    def schedule(self, name: str, bind: Bind) -> None:
        self._due.put((bind.at + self.lifetime, name))

    def _run(self) -> None:
        while (item := self._due.get()) is not None:
            due, name = item
            if self._stopped.wait(max(0.0, due - time.monotonic())):
                return
            self._pool.submit(self._delete, name)

    def _delete(self, name: str) -> None:
        try:
            self.rest.delete(f"{PODS_PATH}/{name}", body=GRACE_0)
            ok = True
        except ApiError as e:
            ok = e.not_found
        with self._lock:
            if ok:
                self.deleted += 1
            else:
                self.failed += 1

    def stop(self) -> None:
        self._stopped.set()
        self._due.put(None)
        self._thread.join(timeout=5)
        self._pool.shutdown(wait=True, cancel_futures=True)


class Ticker:
    """Calls ``tick(i)`` at ``start`` + i x ``period`` (i = 0, 1, ...; ``start`` default: when started) from a
    thread of its own, until stopped."""

    def __init__(self, name: str, period: float, tick: Callable[[int], None], start: float | None = None) -> None:
        self.period = period
        self.tick = tick
        self.start = start
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def begin(self) -> None:
        if self.start is None:
            self.start = time.monotonic()
        self._thread.start()

    def _run(self) -> None:
        assert self.start is not None
        i = 0
        while not self._stopped.wait(max(0.0, self.start + i * self.period - time.monotonic())):
            self.tick(i)
            i += 1

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)


class Heartbeats:
    """Every node's ``Ready`` condition's ``lastHeartbeatTime`` PATCHed every ``period`` s, node j at
    j / nodes of the period, as the nodes' kubelets would."""

    def __init__(self, rest: RestClient, nodes: list[str], period: float = HEARTBEAT_PERIOD) -> None:
        self.rest = rest
        self.nodes = nodes
        self.sent = 0
        self.failed = 0
        self.ticker = Ticker("heartbeats", period / len(nodes), self._beat)

    def start(self) -> Heartbeats:
        self.ticker.begin()
        return self

    def _beat(self, i: int) -> None:
        node = self.nodes[i % len(self.nodes)]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            self.rest.patch(f"/api/v1/nodes/{node}/status", {"status": {"conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now}]}})
            self.sent += 1
        except ApiError:
            self.failed += 1

    def stop(self) -> None:
        self.ticker.stop()


# -- the scheduler process: RSS, CPU, metrics -----------------------------------------------------------
class Sampler:
    """The scheduler's ``VmRSS`` (MB) and CPU seconds every ``period`` s from ``start``: (s, MB, CPU s)."""

    def __init__(self, pid: int, start: float, period: float = SAMPLE_PERIOD) -> None:
        self.pid = pid
        self.start = start
        self.samples: list[tuple[float, float | None, float | None]] = []
        self.ticker = Ticker("sampler", period, lambda _: self.sample(), start)

    def sample(self) -> None:
        self.samples.append((round(time.monotonic() - self.start, 1), status_mb(self.pid, "VmRSS"),
                             cpu_seconds(self.pid)))

    def begin(self) -> Sampler:
        self.ticker.begin()
        return self

    def stop(self) -> None:
        """Stop sampling, after a last sample."""
        self.ticker.stop()
        self.sample()


def event_metrics(text: str) -> dict[str, float]:
    """The samples of a /metrics text whose metric name contains ``event``, by name and labels."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "event" in line.split("{", 1)[0].split(" ", 1)[0]:
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def scheduled_events(rest: RestClient) -> tuple[set[str], int]:
    """The pods of ``default`` that an Event with reason ``Scheduled`` regards (by name), and how many such
    Events there are; listed in pages of 500."""
    names: set[str] = set()
    count, token = 0, ""
    while True:
        query = {"fieldSelector": "reason=Scheduled", "limit": 500, **({"continue": token} if token else {})}
        page = rest.get(EVENTS_PATH, query)
        for event in page.get("items") or ():
            count += 1
            involved = event.get("involvedObject") or {}
            if involved.get("kind") == "Pod" and (involved.get("namespace") or NAMESPACE) == NAMESPACE:
                names.add(involved.get("name", ""))
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return names, count


# -- the figures ------------------------------------------------------------------------------------------
def latency_figures(latencies_ns: list[int]) -> dict[str, float | None]:
    if not latencies_ns:
        return {"p50_ms": None, "p99_ms": None}
    return {"p50_ms": round(percentile_ms(latencies_ns, 50), 1), "p99_ms": round(percentile_ms(latencies_ns, 99), 1)}


def per_minute(created: dict[str, float], binds: dict[str, Bind], start: float, minutes: float) -> list[dict[str, Any]]:
    """Per minute from ``start`` to the last bind: pods created in it and their create-to-bind latency; pods bound
    in it. (A create returning after the last minute of ``minutes`` counts in that minute.)"""
    creating = max(1, math.ceil(minutes))  # the minutes with creates
    last = max((b.at for b in binds.values()), default=start)
    count = max(creating, math.ceil((last - start) / 60))

    def minute(at: float, most: int) -> int:
        return min(most - 1, max(0, int((at - start) // 60)))

    latencies: list[list[int]] = [[] for _ in range(count)]
    made, bound = [0] * count, [0] * count
    for name, at in created.items():
        m = minute(at, creating)
        made[m] += 1
        if name in binds:
            latencies[m].append(int((binds[name].at - at) * 1e9))
            bound[minute(binds[name].at, count)] += 1
    return [{"minute": m + 1, "created": made[m], "bound": bound[m], **latency_figures(latencies[m])}
            for m in range(count)]


def rss_figures(samples: list[tuple[float, float | None, float | None]]) -> dict[str, Any]:
    """RSS at the start, at minute 2 (the first sample from 120 s, if the run went on after it) and at the end;
    the growth from minute 2 to the end."""
    rss = [(t, mb) for t, mb, _ in samples if mb is not None]
    start, end = (rss[0][1], rss[-1][1]) if rss else (None, None)
    minute2 = next((mb for t, mb in rss[:-1] if t >= 120), None)
    growth = round((end - minute2) / minute2 * 100, 1) if minute2 and end is not None else None
    return {"rss_mb_start": start, "rss_mb_minute2": minute2, "rss_mb_end": end, "rss_growth_pct": growth,
            "rss_samples": [[t, mb] for t, mb in rss]}


# -- one run ----------------------------------------------------------------------------------------------
class ChurnRun:
    """One scheduler under churn on a fresh API server."""

    def __init__(self, kind: str, args: argparse.Namespace, base: Path) -> None:
        self.kind, self.args = kind, args
        self.dir = base / kind
        self.dir.mkdir(parents=True)
        self.server = EnvtestServer(args.version, self.dir / "envtest", assets_dir() / "envtest.py")
        self.scheduler_name = SCHEDULER_NAME if kind == "ours" else MODERN_SCHEDULER_NAME
        self.count = max(1, round(args.rate * args.minutes * 60))
        self.node_names = [f"node-{i:05d}" for i in range(args.nodes)]
        self.scheduler: SchedulerProcess | None = None
        self.creator: CreatorProcess | None = None
        self.watch: PodWatch | None = None
        self.deleter: Deleter | None = None
        self.heartbeats: Heartbeats | None = None
        self.sampler: Sampler | None = None
        self.last_bind = 0.0  # when the watch saw the last bind
        self.label = f"churn {kind}"

    def identity(self) -> dict[str, Any]:
        """The fields that name the run (in its line, also when it failed)."""
        a = self.args
        return {"scheduler": self.kind, "version": a.version, "commit": a.commit, "nodes": a.nodes, "rate": a.rate,
                "minutes": a.minutes, "lifetime": a.lifetime, "seed": a.seed, "pods": self.count}

    def execute(self) -> dict[str, Any]:
        args = self.args
        progress(f"{self.label}: envtest {args.version} in {self.server.dir}")
        SERVERS.append(self.server)
        self.server.start()
        kubeconfig = self.server.kubeconfig
        self.rest = RestClient(api_client(kubeconfig, pool_size=THREADS + DELETER_THREADS + 4), qps=0, burst=1)
        create_all(self.rest, "/api/v1/nodes", [node_object(n) for n in self.node_names], THREADS)
        owners = {}
        for path, body in owner_objects():
            made = self.rest.post(path, body)
            if made["kind"] == "ReplicaSet":
                owners[made["metadata"]["name"]] = made["metadata"]["uid"]
        progress(f"created {args.nodes} nodes, {REPLICASETS} ReplicaSets and their Services")
        spec = self.dir / "creator.json"
        spec.write_text(json.dumps({"kubeconfig": kubeconfig, "scheduler_name": self.scheduler_name, "count": self.count,
                                    "rate": args.rate, "seed": args.seed, "owners": owners, "threads": CREATOR_THREADS}))
        self.creator = CreatorProcess(0, spec, self.dir, script=Path(__file__).resolve()).start()

        self.deleter = Deleter(self.rest, args.lifetime).start()
        resource_version = self.rest.get(PODS_PATH, {"limit": 1})["metadata"]["resourceVersion"]
        self.watch = PodWatch(kubeconfig, resource_version, set(), None, on_bind=self._bound).start()
        self.heartbeats = Heartbeats(self.rest, self.node_names).start()
        self._start_scheduler()

        self.creator.ready(120)
        start = time.monotonic()
        assert self.scheduler is not None
        self.sampler = Sampler(self.scheduler.child.pid, start).begin()
        self.creator.go()
        progress(f"creating {self.count} pods at {args.rate:g}/s for {args.minutes:g} min")
        self._churn(start)
        result = self.creator.result(60 + SETTLE)
        created: dict[str, float] = result["created"]
        progress(f"created {len(created)} pods ({len(result['failed'])} failed; starts late by "
                 f"p99 {result['late_ms']['p99']:g} ms)")
        self._settle(created)
        return self._result(result)

    def _bound(self, name: str, bind: Bind) -> None:
        assert self.deleter is not None
        self.last_bind = bind.at
        self.deleter.schedule(name, bind)

    def _start_scheduler(self) -> None:
        """Start it with its default client limits; once the warm-up pod is bound, it is up."""
        s = self.scheduler = start_scheduler(self.kind, "", self.server.kubeconfig, self.dir, self.kind, False,
                                             False, self.args.version, api_qps=None)
        watch = self.watch
        assert watch is not None
        if s.kind == "ours":
            wait_until(lambda: s.healthy(), 60, interval=0.1, what=f"{self.kind} healthy")
        self.rest.post(PODS_PATH, PLAIN.pod(WARMUP, NAMESPACE, self.scheduler_name))
        wait_until(lambda: s.check() or WARMUP in watch.binds, 120, interval=0.05, what="the warm-up pod bound")
        progress(f"{self.kind} bound the warm-up pod")

    def _churn(self, start: float) -> None:
        """While the creator runs: check that the scheduler lives, report every 10 s."""
        assert self.scheduler is not None and self.creator is not None and self.watch is not None
        end, report = start + self.args.minutes * 60, start + 10
        while time.monotonic() < end:
            self.scheduler.check()
            if not self.creator.child.alive():
                raise RuntimeError(f"the creator exited: {self.creator.child.log()[-2000:]}")
            if time.monotonic() >= report:
                report += 10
                self._report(start)
            time.sleep(0.25)

    def _report(self, start: float) -> None:
        assert self.watch is not None and self.deleter is not None and self.sampler is not None
        _, rss, cpu = self.sampler.samples[-1]
        progress(f"{time.monotonic() - start:.0f}s: {len(self.watch.seen) - 1} pods seen, "
                 f"{len(self.watch.binds) - 1} bound, {self.deleter.deleted} deleted; {self.kind} RSS {rss} MB, "
                 f"CPU {cpu} s")

    def _settle(self, created: dict[str, float]) -> None:
        """Until every created pod is bound, or SETTLE s without a bind."""
        watch = self.watch
        assert watch is not None and self.scheduler is not None
        while (waiting := sum(1 for n in created if n not in watch.binds)) and (
                time.monotonic() - self.last_bind < SETTLE):
            self.scheduler.check()
            time.sleep(0.1)
        if waiting:
            progress(f"{waiting} created pods still unbound")

    def _result(self, creator: dict[str, Any]) -> dict[str, Any]:
        args, watch, scheduler, sampler = self.args, self.watch, self.scheduler, self.sampler
        assert watch is not None and scheduler is not None and sampler is not None and self.deleter is not None
        assert self.heartbeats is not None
        self.deleter.stop()
        sleep_until(self.last_bind + EVENT_GRACE)
        with_event, events = scheduled_events(self.rest)
        metrics = event_metrics(scheduler.metrics_text()) if scheduler.kind == "ours" else None
        sampler.stop()
        pods, nodes = final_state(self.rest)
        code = scheduler.child.stop()
        self.heartbeats.stop()
        watch.stop()

        created: dict[str, float] = creator["created"]
        start: float = creator["started"]
        binds = {n: watch.binds[n] for n in created if n in watch.binds}
        latencies = [int((b.at - created[n]) * 1e9) for n, b in binds.items()]
        vanished = [n for n in created if n not in pods and n not in binds]
        unbound = [pods[n] for n in created if n in pods and n not in binds and not pods[n]["spec"].get("nodeName")]
        with_room = unbound_with_room(unbound, nodes)
        cpu = [c for _, _, c in sampler.samples if c is not None]
        cpu_used = round(cpu[-1] - cpu[0], 2) if len(cpu) > 1 else None
        times = sorted(created.values())
        return {
            **self.identity(), "created": len(created), "create_failures": len(creator["failed"]),
            "create_rate": round((len(times) - 1) / (times[-1] - times[0]), 2) if len(times) > 1 else None,
            "create_late_ms": creator["late_ms"],
            "bound": len(binds), "deleted": self.deleter.deleted, "delete_failures": self.deleter.failed,
            "lost": len(vanished) + with_room, "lost_vanished": len(vanished), "lost_unbound_with_room": with_room,
            "unbound_no_room": len(unbound) - with_room,
            "overcommitted_nodes": sum(1 for n in nodes.values() if n.over()),
            **latency_figures(latencies), "per_minute": per_minute(created, binds, start, args.minutes),
            "scheduled_events": events, "bound_without_scheduled_event": sum(1 for n in binds if n not in with_event),
            **rss_figures(sampler.samples), "cpu_seconds": cpu_used,
            "cpu_seconds_per_1000_pods": round(cpu_used / len(binds) * 1000, 2) if cpu_used and binds else None,
            "scheduler_event_metrics": metrics,
            "heartbeats": self.heartbeats.sent, "heartbeat_failures": self.heartbeats.failed,
            "scheduler_command": scheduler.child.command, "scheduler_exit_code": code,
        }

    def close(self) -> None:
        """Stop whatever this run started (also after an error)."""
        for part in (self.deleter, self.heartbeats):
            if part is not None:
                part.stop()
        if self.scheduler is not None:
            self.scheduler.child.stop(timeout=10)
        if self.creator is not None:
            self.creator.child.stop(timeout=5)
        if self.watch is not None:
            self.watch.stop()
        stop_server(self.server)


# -- the table --------------------------------------------------------------------------------------------
def _pair(r: dict[str, Any], a: str, b: str) -> str | None:
    return None if r.get(a) is None else f"{r[a]:g} / {r[b]:g}"


def _rss(r: dict[str, Any]) -> str | None:
    if r.get("rss_mb_end") is None:
        return None
    middle = "" if r.get("rss_mb_minute2") is None else f"{r['rss_mb_minute2']:g} → "
    growth = "" if r.get("rss_growth_pct") is None else f" ({r['rss_growth_pct']:+g} %)"
    return f"{r['rss_mb_start']:g} → {middle}{r['rss_mb_end']:g}{growth}"


def _per_minute(r: dict[str, Any], key: str) -> str | None:
    values = [m[key] for m in r.get("per_minute") or ()]
    return ", ".join("—" if v is None else f"{v:g}" for v in values) or None


TABLE_ROWS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("create-to-bind p50 / p99 ms", lambda r: _pair(r, "p50_ms", "p99_ms")),
    ("p99 ms, minute by minute", lambda r: _per_minute(r, "p99_ms")),
    ("pods created / bound / lost", lambda r: None if "bound" not in r else f"{r['created']} / {r['bound']} / {r['lost']}"),
    ("overcommitted nodes", lambda r: r.get("overcommitted_nodes")),
    ("bound pods without a `Scheduled` event", lambda r: r.get("bound_without_scheduled_event")),
    ("pods bound, minute by minute", lambda r: _per_minute(r, "bound")),
    ("scheduler CPU s per 1,000 pods bound", lambda r: r.get("cpu_seconds_per_1000_pods")),
    ("scheduler RSS MB: start → minute 2 → end", _rss),
    ("creates per s; started late p99 ms", lambda r: None if r.get("create_rate") is None else
     f"{r['create_rate']:g}; {r['create_late_ms']['p99']:g}"),
]
COLUMN = {"ours": "`policy-scheduler run` (defaults)", "modern": "upstream kube-scheduler (defaults)"}


def table(lines: list[dict[str, Any]]) -> str:
    """Per size (nodes, rate, minutes, lifetime, version), a row per figure and a column per scheduler."""
    sizes: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for line in lines:
        sizes.setdefault(tuple(line.get(k) for k in ("nodes", "rate", "minutes", "lifetime", "version")), []).append(line)
    out = []
    for (nodes, rate, minutes, lifetime, version), runs in sizes.items():
        kinds = [k for k in SCHEDULERS if any(r["scheduler"] == k for r in runs)]
        commits = ", ".join(f"`{c}`" for c in sorted({str(r.get("commit")) for r in runs}))
        out.append(f"{nodes} nodes, {rate:g} pods/s for {minutes:g} min, lifetime {lifetime:g} s, envtest {version}, "
                   f"commit {commits}:\n")
        out.append("| | " + " | ".join(COLUMN[k] for k in kinds) + " |")
        out.append("|---|" + "---|" * len(kinds))
        for name, get in TABLE_ROWS:
            cells = [_cell(["error" if "error" in r else get(r) for r in runs if r["scheduler"] == k]) for k in kinds]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


# -- main -------------------------------------------------------------------------------------------------
class OneLineParser(argparse.ArgumentParser):
    """An argument error is one line on standard error (no usage), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value
    return parse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(prog="churn.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve-creator", nargs=2, metavar=("SPEC", "INDEX"), help=argparse.SUPPRESS)
    parser.add_argument("--minutes", type=_positive(float), default=8.0, help="how long pods are created (8)")
    parser.add_argument("--rate", type=_positive(float), default=30.0, help="pods created per second (30)")
    parser.add_argument("--nodes", type=_positive(int), default=100)
    parser.add_argument("--lifetime", type=_positive(float), default=20.0,
                        help="seconds from a pod's bind to its deletion (20)")
    parser.add_argument("--scheduler", default="both", choices=("ours", "modern", "both"))
    parser.add_argument("--version", default="1.26", choices=("1.26", "1.32", "1.36"), help="envtest line (server and modern)")
    parser.add_argument("--seed", type=int, default=1, help="the pods' kinds and ReplicaSets")
    parser.add_argument("--table", type=Path, default=None, help="also write the markdown table to this file")
    parser.add_argument("--render", type=Path, default=None, help="print the table of these JSON lines and exit")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = parser.parse_args(argv)
    args.schedulers = list(SCHEDULERS) if args.scheduler == "both" else [args.scheduler]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_creator:
        return serve_creator(args.serve_creator[0], int(args.serve_creator[1]))
    return run_benchmark("churn", args, lambda base: [functools.partial(ChurnRun, kind, args, base)
                                                      for kind in args.schedulers], table)


if __name__ == "__main__":
    raise SystemExit(main())
