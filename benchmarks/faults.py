"""Schedulers under faults: upstream's scheduler_perf shapes through a real kube-apiserver 1.26 (envtest).

Runs upstream's **SchedulingBasic** (nodes from ``node-default.yaml``: cpu 4, memory 32Gi, pods 110; init pods
and measured pods from ``pod-default.yaml``: cpu 100m, memory 500Mi) and **PreemptionBasic** (init pods from
``pod-low-priority.yaml``: cpu 900m, grace 0, four per node fill every node; measured pods from
``pod-high-priority.yaml``: cpu 3000m, priority 10, each must preempt three) for **ours** (``policy-scheduler
run``, scheduler name ``policy-scheduler-bench`` as in ``daemon_throughput.py``; ``--feature-gates
PodPriority=true`` for PreemptionBasic) and the **modern** kube-scheduler 1.26 (default profile, scheduler name
``modern-scheduler-bench``), each on a fresh API server, under each fault:

``restart``
    the API server (etcd + kube-apiserver) is restarted in place ``--fault-at`` s (3) into the burst:
    ``envtest.py stop --keep-data``, ``--down`` s (5) down, ``start --reuse`` (same ports, data, token).
``leader-kill``
    two replicas with leader election on a Lease (lease 4 s, renew 3 s, retry 1 s; ours by its flags, the
    modern one by its configuration's ``leaderElection``); the leader is SIGKILLed ``--fault-at`` s into the burst.
``watch-cut``
    the scheduler talks through a ``FaultProxy`` (``benchmarks/harness/faultproxy.py``, plain http, in a child
    process of its own) that cuts every open watch ``--cuts`` times (3), ``--cut-interval`` s (2) apart, from
    ``--fault-at``.
``tight`` (SchedulingBasic pods only)
    ``--tight-nodes`` (50) nodes with room for exactly 40 pods each (allocatable pods 40, cpu 4), one pod already
    placed on each, ``--tight-pods`` (3000) pending pods created before the scheduler starts; the API server is
    restarted in place (as ``restart``) ``--tight-after`` s (1) after the first bind.

Every shape but ``tight`` follows scheduler_perf: nodes, then init pods that the scheduler under test binds (not
timed; this also proves it is up), then the measured pods, created by ``--threads`` (8) threads *while it runs*
(the burst). Pods are named ``init-NNNNNN`` and ``pod-NNNNNN`` in namespace ``default``.

Per run, one JSON line on standard output (progress goes to standard error):

- ``lost``: measured (and, except in PreemptionBasic, init) pods that vanished, plus measured pods still unbound
  at the end while the cluster had room for them (first fit over the server's final objects, counting pods of a
  lower priority as removable). ``unbound_no_room`` are the unbound ones without room (expected in ``tight``),
  ``unbound_nominated`` the unbound ones with a ``status.nominatedNodeName`` (preemptors still waiting).
  ``preempted``: PreemptionBasic's low-priority pods deleted. The end comes after the settle period: every pod
  that can fit is bound and ``--settle`` s (15) have passed since the fault, with 2 s quiet; or ``--settle`` s
  without any bind or deletion; or ``--timeout`` s (900) after the burst started.
- ``binds_409``: binds the API server refused with 409 Conflict (the pod was already bound), from its own
  ``/metrics`` (``apiserver_request_total{resource="pods",subresource="binding",code="409"}``), scraped just
  before each stop and at the end (a restart resets the counters). ``binds_409_audit`` counts the same from the
  API server's audit log (one line per bind with its response code, kept across restarts: nothing is lost in
  the moments between the scrape and the stop, but a bind still in flight when the server dies is missing
  from both); ``binds_201`` / ``binds_other`` the other codes from the metrics, ``binds_audit`` every code from
  the audit log (a 504 there is a bind whose client went away, e.g. a killed leader's: it may still have been
  committed); ``pods_with_409`` the distinct pods refused.
- ``overcommitted_nodes``: nodes where the bound pods' requests (cpu, memory) or their number exceed the node's
  allocatable, from the Node and Pod objects read back from the server at the end.
- ``recovery_s`` (``restart``, ``tight``): from the moment ``start --reuse`` returned (the server ready) to the
  first bind the server accepted after the restart, seen by this script's own pod watch, which reconnects at once
  from its last resourceVersion (a negative value: the scheduler bound before the launcher's readiness poll
  returned). "After the restart" means a resourceVersion above etcd's last revision before the stop (polled while
  the stop runs). ``recovery_audit_s`` is the same from the audit log's server-side timestamps;
  ``recovery_exact`` is false when the watch had to relist (410) and the bind was only seen in a list.
  ``watch_back_s``: when this script's watch was first answered by the restarted server, on the same scale (the
  server serves requests before its ``/healthz`` is ``ok``, which the launcher waits for).
- ``takeover_s`` (``leader-kill``): from the SIGKILL to the next bind (a resourceVersion above etcd's revision
  0.5 s after the kill: the dead leader's binds in flight are done by then, and the standby cannot lead before
  the lease runs out); ``lease_acquired_s``: to the standby's name in the Lease.
- ``pods_per_second``: (measured pods bound - 1) / (last bind - first bind), the watch's times (faults included).
- ``kubelet_removed``: pods left terminating that the script removed as a node's kubelet would (envtest runs no
  kubelet; a server stopped between the two writes of a grace-0 deletion leaves the victim terminating, and a
  preemptor waits for it forever, ours and the modern one alike). ``unbound_pods`` and ``scheduler_queues``
  (ours' ``scheduler_pending_pods`` at the end) say where an unbound pod waits.
- ``scheduler_peak_rss_mb`` (``VmHWM``), ``watches_cut``, ``watch_relists``, ``seconds_burst_to_last_bind``, ...

At the end a markdown table (scenario x scheduler; repeats separated by " / ") goes to standard error, and to a
file with ``--table PATH``; ``--render RUNS.jsonl`` prints the table of saved JSON lines without running anything.
Servers, schedulers and the proxy are stopped at the end of every run, also on an error or Ctrl-C (SIGTERM, then
SIGKILL, to each child's process group). ``--keep`` keeps the work directory (scheduler logs, audit logs).

    # the full table: 14 runs (upstream's 500-node shapes; 4,000 measured pods for SchedulingBasic); an estimate
    # from small runs, not measured: 15-25 minutes on 2 cores (PreemptionBasic for ours is the unknown)
    python benchmarks/faults.py --table faults-table.md > faults.jsonl
    # a quick smoke run (CI size; the faults moved earlier so that they land within the short bursts): ~4 min
    python benchmarks/faults.py --nodes 20 --pods 400 --tight-nodes 8 --tight-pods 400 \
        --fault-at 1 --cut-interval 0.5 --tight-after 0.2 --settle 6
    # one cell
    python benchmarks/faults.py --shape SchedulingBasic --fault restart --scheduler ours --nodes 50 --pods 600
    python benchmarks/faults.py --render faults.jsonl

Options: ``--shape SchedulingBasic|PreemptionBasic|all``, ``--fault restart|leader-kill|watch-cut|tight|all``
(both repeatable or comma-separated; ``--fault none`` adds a baseline without a fault, not part of ``all``), ``--scheduler ours|modern|both``, ``--nodes`` (500), ``--pods`` (4000,
SchedulingBasic's measured pods), ``--init-pods`` (SchedulingBasic, default: one per node), ``--preemption-pods``
(PreemptionBasic's measured pods, default: one per node; its init pods are always four per node),
``--repeat`` (1), ``--version 1.26|1.32``. Ours and modern alternate within each scenario and repeat. Ours is
the daemon of this checkout (its root first on ``PYTHONPATH``); ``commit`` in each line names it.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes.utils import parse_quantity  # noqa: E402

from benchmarks import perf_workloads  # noqa: E402
from benchmarks.daemon_throughput import SCHEDULER_NAME, create_all, daemon_command, vm_hwm_mb  # noqa: E402
from benchmarks.harness.daemon import wait_until  # noqa: E402
from benchmarks.harness.envtest import EnvtestServer, assets_dir  # noqa: E402
from benchmarks.harness.envtest import binary as envtest_binary  # noqa: E402
from benchmarks.harness.faultproxy import BINDING, FaultProxy  # noqa: E402
from benchmarks.harness.leaderlock import (  # noqa: E402
    LEASE,
    LOCK_NAME,
    LOCK_NAMESPACE,
    RENEW,
    RETRY,
    LockWatcher,
    current_holder,
    lock_flags,
)
from benchmarks.perf_workloads import (  # noqa: E402
    HIGH_PRIORITY,
    HIGH_PRIORITY_CLASS,
    NODE_CPU,
    NODE_MEMORY,
    POD_DEFAULT,
    POD_HIGH_PRIORITY,
    POD_LOW_PRIORITY,
    PodTemplate,
    node_object,
)
from policy_scheduler.kube.client.kubeconfig import api_client  # noqa: E402
from policy_scheduler.kube.client.rest import ApiError, RestClient  # noqa: E402

SHAPES = ("SchedulingBasic", "PreemptionBasic")
FAULTS = ("restart", "leader-kill", "watch-cut", "tight")
BASELINE = "none"  # no fault (not part of "all"): the same shapes, for comparison
ROOT = Path(__file__).resolve().parent.parent
SCHEDULERS = ("ours", "modern")
MODERN_SCHEDULER_NAME = "modern-scheduler-bench"
NAMESPACE = "default"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
LOCK = "leases"
KILL_SETTLE = 0.5  # after a SIGKILL, the dead leader's binds already at the server are done by then
QUIET_AT_END = 2.0
API_QPS = 5000  # both schedulers, as daemon_throughput.py runs ours (scheduler_perf's client is unthrottled too)

# node-default.yaml's room for pods; the tight shape's. Pod templates: pod-default / -low-priority / -high-priority.
NODE_PODS, TIGHT_NODE_PODS = perf_workloads.NODE_PODS, 40
TEMPLATES: dict[str, PodTemplate] = {"default": POD_DEFAULT, "low": POD_LOW_PRIORITY, "high": POD_HIGH_PRIORITY}


PROGRESS_NAME = "faults"  # the progress lines' prefix (scheduler_perf.py, which reuses this module, sets its own)


def progress(message: str) -> None:
    print(f"[{PROGRESS_NAME} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        time.sleep(delay)


# -- the scenarios ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    shape: str
    fault: str
    nodes: int
    init_pods: int
    measured_pods: int
    node_pods: int = NODE_PODS
    init_template: str = "default"
    measured_template: str = "default"
    prebound_init: bool = False  # init pods created already placed (tight), not bound by the scheduler
    pending_first: bool = False  # measured pods created before the scheduler starts (tight)

    @property
    def name(self) -> str:
        return f"{self.shape}/{self.fault}"

    @property
    def feature_gates(self) -> str:
        """What ours needs for the shape's pods (PodPriority=true for PreemptionBasic)."""
        return perf_workloads.WORKLOADS[self.shape].feature_gates

    @property
    def room_per_node(self) -> int:
        """How many measured pods one empty node holds."""
        template = TEMPLATES[self.measured_template]
        return min(self.node_pods, int(parse_quantity(NODE_CPU) / parse_quantity(template.cpu)),
                   int(parse_quantity(NODE_MEMORY) / parse_quantity(template.memory)))

    @property
    def expected_bound(self) -> int:
        """Measured pods that must end up bound: all, or as many as the room left by the init pods (tight).
        Preemption makes room by evicting init pods, so they do not count against it."""
        room = self.nodes * self.room_per_node
        if self.init_template == self.measured_template:
            room -= self.init_pods
        return max(0, min(self.measured_pods, room))


def scenarios(args: argparse.Namespace) -> list[Scenario]:
    out = []
    for shape in args.shape:
        for fault in args.fault:
            if fault == "tight":
                if shape == "SchedulingBasic":
                    out.append(Scenario(shape, fault, args.tight_nodes, args.tight_nodes, args.tight_pods,
                                        node_pods=TIGHT_NODE_PODS, prebound_init=True, pending_first=True))
            elif shape == "SchedulingBasic":
                init = args.nodes if args.init_pods is None else args.init_pods
                out.append(Scenario(shape, fault, args.nodes, init, args.pods))
            else:
                measured = args.nodes if args.preemption_pods is None else args.preemption_pods
                out.append(Scenario(shape, fault, args.nodes, 4 * args.nodes, measured,
                                    init_template="low", measured_template="high"))
    return out


# -- child processes --------------------------------------------------------------------------------
class Spawned:
    """A child in a session (process group) of its own, output to a log file; stopped by group."""

    def __init__(self, name: str, command: list[str], log_path: Path) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.process: subprocess.Popen[str] | None = None
        self.returncode: int | None = None

    def start(self, stdout_pipe: bool = False, stdin_pipe: bool = False) -> Spawned:
        """Start it; with ``stdout_pipe`` its standard output is a pipe (text) and only stderr goes to the log;
        with ``stdin_pipe`` its standard input is one too (else empty)."""
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command, stdout=subprocess.PIPE if stdout_pipe else log,
                stderr=log if stdout_pipe else subprocess.STDOUT,
                stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL, text=True,
                start_new_session=True, env=child_environment())
        LIVE.append(self)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal_group(self, sig: int) -> None:
        """Signal its process group, only while the child itself is not yet reaped (so the id is still ours)."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM to the group, SIGKILL after ``timeout``; the exit code (None if it was never started)."""
        if self.process is None:
            return None
        self.signal_group(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal_group(signal.SIGKILL)
            self.process.wait()
        self.returncode = self.process.returncode
        if self in LIVE:
            LIVE.remove(self)
        return self.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@functools.cache
def compile_checkout() -> None:
    """Compile this checkout's modules to bytecode, once, as installing the package does (pip compiles on
    install): an editable checkout run with ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every module at
    each start of the daemon, about half a second on this machine, and count it in its time to the first bind."""
    compileall.compile_dir(str(ROOT / "policy_scheduler"), quiet=1)


def child_environment() -> dict[str, str]:
    """This checkout first on the children's import path: ``ours`` is the daemon of the tree this script is in,
    whichever ``policy-scheduler`` or venv started it (its modules compiled: :func:`compile_checkout`)."""
    compile_checkout()
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def source_commit() -> str:
    """``git describe``-like provenance of this checkout: the commit, ``+dirty`` if the daemon's sources differ."""
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+dirty" if git("status", "--porcelain", "--", "policy_scheduler") else "")


LIVE: list[Spawned] = []  # every child still to stop
SERVERS: list[EnvtestServer] = []  # every API server still to stop


def stop_server(server: EnvtestServer) -> None:
    """Stop one of ``SERVERS`` (which it then leaves; nothing if it is not there)."""
    if server in SERVERS:
        try:
            server.stop()
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            progress(f"could not stop the API server in {server.dir}: {e}")
        SERVERS.remove(server)


def stop_everything() -> None:
    for child in list(reversed(LIVE)):
        child.stop(timeout=10)
    for server in list(SERVERS):
        stop_server(server)


class BenchRun(Protocol):
    """One run of a benchmark (``Run`` here, ``PerfRun`` in scheduler_perf.py), as :func:`run_all` drives it."""

    label: str

    def execute(self) -> dict[str, Any]: ...

    def close(self) -> None: ...

    def identity(self) -> dict[str, Any]: ...


RUN_ERRORS: tuple[type[Exception], ...] = (RuntimeError, AssertionError, ApiError, subprocess.SubprocessError, OSError)


def run_all(plan: list[Callable[[], BenchRun]], base: Path, render: Callable[[list[dict[str, Any]]], str],
            keep: bool, table_path: Path | None, errors: tuple[type[Exception], ...] = RUN_ERRORS) -> int:
    """Make and execute each run of ``plan`` in turn: its JSON line on standard output (the fields that name it
    and ``error`` when it raised one of ``errors``), then ``close`` it. Everything is stopped at the end, also on
    Ctrl-C or SIGTERM; the table of the lines (``render``) goes to standard error and ``table_path``; ``base``
    is removed unless ``keep``. 1 if a run failed or it was interrupted, else 0."""
    handlers = {signal.SIGINT: signal.getsignal(signal.SIGINT), signal.SIGTERM: signal.signal(signal.SIGTERM, _interrupt)}
    lines: list[dict[str, Any]] = []
    failed = 0
    progress(f"{len(plan)} runs; work directory {base}")
    try:
        for make in plan:
            started = time.monotonic()
            run = make()
            try:
                line = run.execute()
            except errors as e:
                failed += 1
                line = {**run.identity(), "error": f"{type(e).__name__}: {e}"[:2000]}
                progress(f"{run.label} failed: {line['error']}")
            finally:
                run.close()
            line["seconds"] = round(time.monotonic() - started, 1)
            lines.append(line)
            print(json.dumps(line), flush=True)
    except KeyboardInterrupt:
        progress("interrupted: stopping everything")
        failed += 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_everything()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if keep:
            progress(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    if lines:
        text = render(lines)
        print("\n" + text, file=sys.stderr, end="", flush=True)
        if table_path:
            table_path.write_text(text)
    return 1 if failed else 0


def saved_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of saved runs (``--render``); other lines skipped."""
    return [json.loads(s) for s in path.read_text().splitlines() if s.strip().startswith("{")]


def run_benchmark(name: str, args: argparse.Namespace, plan_for: Callable[[Path], list[Callable[[], BenchRun]]],
                  render: Callable[[list[dict[str, Any]]], str], errors: tuple[type[Exception], ...] = RUN_ERRORS) -> int:
    """Name the progress lines ``name``, set ``args.commit``, and :func:`run_all` the plan ``plan_for`` makes for
    a fresh work directory (``args.keep``, ``args.table``); with ``args.render``, print the table of those saved
    lines instead."""
    global PROGRESS_NAME
    if args.render:
        print(render(saved_lines(args.render)), end="")
        return 0
    PROGRESS_NAME = name
    args.commit = source_commit()
    base = Path(tempfile.mkdtemp(prefix=f"{name.replace('_', '-')}-"))
    return run_all(plan_for(base), base, render, args.keep, args.table, errors)


# -- the API server: metrics, etcd revision, audit log ----------------------------------------------
METRIC_LINE = re.compile(r"^apiserver_request_total\{([^}]*)\}\s+(\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def bind_counts(api: Any) -> Counter[str]:
    """``apiserver_request_total`` for POST pods/binding, by response code, from the server's ``/metrics``."""
    auth = api.configuration.auth_settings().get("BearerToken") or {}
    headers = {auth["key"]: auth["value"]} if auth.get("value") else {}
    response = api.rest_client.request("GET", api.configuration.host + "/metrics", headers=headers,
                                       _request_timeout=(5.0, 30.0)).response
    try:
        text = response.data.decode()
    finally:
        response.release_conn()
    if response.status != 200:
        raise RuntimeError(f"GET /metrics: {response.status}")
    out: Counter[str] = Counter()
    for line in text.splitlines():
        match = METRIC_LINE.match(line)
        if match:
            labels = dict(LABEL.findall(match.group(1)))
            if labels.get("resource") == "pods" and labels.get("subresource") == "binding":
                out[labels.get("code", "")] += int(float(match.group(2)))
    return out


def etcd_revision(etcd_url: str) -> int | None:
    request = urllib.request.Request(f"{etcd_url}/v3/kv/range", data=b'{"key": "AA=="}', method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=0.5) as response:
            return int(json.loads(response.read())["header"]["revision"])
    except (OSError, ValueError, KeyError):
        return None


class RevisionPoller:
    """Polls etcd's revision every 10 ms while the API server stops: the last answer is the final revision
    (the kube-apiserver, the only writer, is stopped before etcd)."""

    def __init__(self, etcd_url: str) -> None:
        self.etcd_url = etcd_url
        self.revision = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="etcd-revision", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            revision = etcd_revision(self.etcd_url)
            if revision is not None:
                self.revision = max(self.revision, revision)
            self._stop.wait(0.01)

    def __enter__(self) -> RevisionPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "verbs": ["create"], "resources": [{"group": "", "resources": ["pods/binding"]}]},
              {"level": "None"}],
}


def audit_args(policy: Path, log: Path) -> tuple[str, ...]:
    return (f"--apiserver-arg=--audit-policy-file={policy}", f"--apiserver-arg=--audit-log-path={log}")


@dataclass
class AuditBind:
    pod: str
    code: int
    received: float  # wall clock, seconds
    completed: float
    user_agent: str


def _wall(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_audit(path: Path) -> list[AuditBind]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        ref = event.get("objectRef") or {}
        if ref.get("subresource") != "binding" or event.get("stage") != "ResponseComplete":
            continue
        out.append(AuditBind(ref.get("name", ""), int((event.get("responseStatus") or {}).get("code") or 0),
                             _wall(event["requestReceivedTimestamp"]), _wall(event["stageTimestamp"]),
                             event.get("userAgent", "")))
    return sorted(out, key=lambda b: b.completed)


# -- this script's own pod watch --------------------------------------------------------------------
@dataclass
class Bind:
    at: float  # time.monotonic() when the watch saw it
    wall: float
    rv: int
    node: str
    exact: bool  # seen as a watch event (False: found bound in a relist after a 410)


class Kubelet:
    """What the nodes' kubelets would do, which envtest has none of: remove a bound pod left terminating.

    A deletion with grace period 0 is two writes in the API server (the deletionTimestamp, then the removal);
    a server stopped between them leaves the pod terminating in etcd, where only a kubelet ever finishes it.
    Without this a preemptor waits forever for such a victim (1.9's rule and the modern one alike), which a
    cluster with kubelets never sees. A pod still terminating ``GRACE`` s after the watch first showed it so
    is removed with grace period 0 (retried while the server is down); ``removed`` names them.
    """

    GRACE = 2.0

    def __init__(self, kubeconfig: str) -> None:
        self.rest = RestClient(api_client(kubeconfig, pool_size=2), qps=0, burst=1, timeout=10.0)
        self.pending: dict[str, float] = {}  # name -> when first seen terminating
        self.removed: list[str] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet", daemon=True)

    def start(self) -> Kubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)

    def terminating(self, name: str) -> None:
        with self._lock:
            self.pending.setdefault(name, time.monotonic())

    def gone(self, name: str) -> None:
        with self._lock:
            self.pending.pop(name, None)

    def _run(self) -> None:
        while not self._stopped.wait(0.2):
            now = time.monotonic()
            with self._lock:
                due = sorted(n for n, seen in self.pending.items() if now - seen >= self.GRACE)
            for name in due:
                try:
                    self.rest.delete(f"{PODS_PATH}/{name}", body={"apiVersion": "v1", "kind": "DeleteOptions",
                                                                  "gracePeriodSeconds": 0})
                    removed = True
                except ApiError as e:
                    if not e.not_found:
                        continue  # the server is away: next round
                    removed = False
                with self._lock:
                    self.pending.pop(name, None)
                    if removed:
                        self.removed.append(name)


class PodWatch:
    """Watches the pods of ``path`` (the namespace's, or ``/api/v1/pods`` for every namespace; pods are told
    apart by name alone) from a resourceVersion and keeps, per pod, its first bind and its deletion.

    On any break (the server going away, a cut) it reconnects at once from the last resourceVersion it saw,
    retrying every 10 ms while the server is down; only a 410 makes it relist. Bound pods left terminating
    are reported to ``kubelet`` (if any); ``on_bind`` (if any) is called with each pod's first bind, from the
    watch's thread.
    """

    def __init__(self, kubeconfig: str, resource_version: str, measured: set[str], kubelet: Kubelet | None,
                 path: str = PODS_PATH, on_bind: Callable[[str, Bind], None] | None = None) -> None:
        self.rest = RestClient(api_client(kubeconfig, pool_size=2), qps=0, burst=1, timeout=30.0)
        self.kubelet = kubelet
        self.on_bind = on_bind
        self.path = path
        self.rv = resource_version
        self.measured = measured
        self.binds: dict[str, Bind] = {}
        self.deleted: dict[str, float] = {}
        self.seen: set[str] = set()
        self.last_change = time.monotonic()
        self.first_measured_bind = threading.Event()
        self.reconnects = 0
        self.relists = 0
        self.opened: list[float] = []  # when each watch request was answered (200)
        self._lock = threading.Lock()
        self._stream: Any = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)

    def start(self) -> PodWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._stream = self.rest.watch(self.path, {"resourceVersion": self.rv, "allowWatchBookmarks": "true"},
                                               read_timeout=3600.0)
                self.opened.append(time.monotonic())
                for event in self._stream:
                    if not self._event(event):
                        break
                if not self._stopped.is_set():
                    self.reconnects += 1  # the stream ended: reopen it at once
            except ApiError as e:
                if self._stopped.is_set():
                    return
                if e.gone:
                    self._relist()
                else:
                    self._stopped.wait(0.01)

    def _event(self, event: dict[str, Any]) -> bool:
        """Handle one event; False to reconnect (after an ERROR event)."""
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                self._relist()
            else:
                self._stopped.wait(0.01)
            return False
        self.rv = (obj.get("metadata") or {}).get("resourceVersion") or self.rv
        if kind == "DELETED":
            self._gone(obj["metadata"]["name"], time.monotonic())
        elif kind in ("ADDED", "MODIFIED"):
            self._pod(obj, exact=True)
        return True

    def _relist(self) -> None:
        while not self._stopped.is_set():
            try:
                listed = self.rest.get(self.path)
                break
            except ApiError:
                self._stopped.wait(0.01)
        else:
            return
        self.relists += 1
        now = time.monotonic()
        names = set()
        for obj in listed.get("items") or ():
            names.add(obj["metadata"]["name"])
            self._pod(obj, exact=False)
        for name in self.seen - names:
            self._gone(name, now)
        self.rv = listed["metadata"]["resourceVersion"]

    def _pod(self, obj: dict[str, Any], exact: bool) -> None:
        name = obj["metadata"]["name"]
        node = (obj.get("spec") or {}).get("nodeName")
        if node and obj["metadata"].get("deletionTimestamp") and self.kubelet is not None:
            self.kubelet.terminating(name)
        bind = None
        with self._lock:
            self.seen.add(name)
            if node and name not in self.binds:
                now = time.monotonic()
                bind = self.binds[name] = Bind(now, time.time(), int(obj["metadata"]["resourceVersion"]), node, exact)
                self.last_change = now
                if name in self.measured:
                    self.first_measured_bind.set()
        if bind is not None and self.on_bind is not None:
            self.on_bind(name, bind)

    def _gone(self, name: str, at: float) -> None:
        if self.kubelet is not None:
            self.kubelet.gone(name)
        with self._lock:
            if name not in self.deleted:
                self.deleted[name] = at
                self.last_change = at

    def bound(self, names: Iterable[str]) -> int:
        with self._lock:
            return sum(1 for n in names if n in self.binds and n not in self.deleted)

    def first_bind_after(self, revision: int) -> Bind | None:
        """The first bind (by the time it was seen) with a resourceVersion above ``revision``."""
        with self._lock:
            later = [b for b in self.binds.values() if b.rv > revision]
        return min(later, key=lambda b: b.at) if later else None


# -- creating pods ----------------------------------------------------------------------------------
class Creator:
    """Creates pods with ``threads`` threads, retrying each until the server has it (a 409 AlreadyExists on a
    retry means an earlier attempt got through): the API server may be down for a while."""

    def __init__(self, rest: RestClient, bodies: list[dict[str, Any]], threads: int, deadline: float) -> None:
        self.rest = rest
        self.bodies = bodies
        self.threads = threads
        self.deadline = deadline
        self.created: dict[str, float] = {}
        self.failed: dict[str, str] = {}
        self.retries = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self.run, name="creator", daemon=True)

    def _create(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        while True:
            if self._stopped.is_set():
                return
            try:
                self.rest.post(PODS_PATH, body)
                break
            except ApiError as e:
                if e.conflict:  # AlreadyExists: an earlier attempt whose reply was lost
                    break
                if (e.status in (0, 429) or e.status >= 500) and time.monotonic() < self.deadline:
                    self.retries += 1
                    time.sleep(0.05)
                    continue
                self.failed[name] = str(e)
                return
        self.created[name] = time.monotonic()

    def run(self) -> None:
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for _ in pool.map(self._create, self.bodies):
                pass

    def start(self) -> Creator:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Give up on the pods not created yet (the pool's threads then finish at once)."""
        self._stopped.set()
        self.join()

    def join(self) -> None:
        if self._thread.ident is not None:  # (run in the caller's thread instead: nothing to wait for)
            self._thread.join()


# -- the schedulers ---------------------------------------------------------------------------------
def ours_command(kubeconfig: str, feature_gates: str, leader_elect: bool,
                 api_qps: int | None = API_QPS) -> tuple[list[str], int]:
    """``policy-scheduler run`` as daemon_throughput.py starts it (its name, qps, --v=0); the healthz port.
    ``api_qps`` None: the daemon's default client limits."""
    command = daemon_command(kubeconfig, None, feature_gates, api_qps=api_qps)
    if leader_elect:
        command[command.index("--leader-elect=false")] = "--leader-elect=true"
        command += lock_flags(LOCK)
    return command, int(command[command.index("--port") + 1])


def modern_config(kubeconfig: str, leader_elect: bool, json_only: bool,
                  api_qps: int | None = API_QPS) -> dict[str, Any]:
    """A KubeSchedulerConfiguration v1: the default profile under its own name; JSON through the proxy (it
    relays watch streams line by line, which binary protobuf frames do not survive). ``api_qps`` None: the
    default client connection (qps 50, burst 100)."""
    connection: dict[str, Any] = {"kubeconfig": kubeconfig}
    if api_qps is not None:
        connection.update(qps=api_qps, burst=api_qps)
    if json_only:
        connection.update(contentType="application/json", acceptContentTypes="application/json")
    election: dict[str, Any] = {"leaderElect": leader_elect}
    if leader_elect:
        election.update(leaseDuration=f"{LEASE:g}s", renewDeadline=f"{RENEW:g}s", retryPeriod=f"{RETRY:g}s",
                        resourceLock=LOCK, resourceName=LOCK_NAME, resourceNamespace=LOCK_NAMESPACE)
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": connection, "leaderElection": election,
            "profiles": [{"schedulerName": MODERN_SCHEDULER_NAME}]}


#: Per-pod phases of ours, and the histogram (``scheduler_<name>_latency_microseconds``) each is read from.
PHASES = {"decision_ms_mean": "scheduling_algorithm", "bind_ms_mean": "binding", "e2e_ms_mean": "e2e_scheduling"}


@dataclass
class SchedulerProcess:
    kind: str  # ours | modern
    child: Spawned
    leader_elect: bool
    port: int = 0  # ours: healthz
    killed: bool = False  # by the fault: its exit is expected

    def check(self) -> None:
        """Raise if it exited on its own."""
        if not self.killed and self.child.process is not None and self.child.process.poll() is not None:
            raise RuntimeError(f"{self.child.name} exited with {self.child.process.returncode}: "
                               f"{self.child.log()[-2000:]}")

    def metrics_text(self) -> str:
        """Ours: its /metrics ("" if it does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                return r.read().decode()
        except OSError:
            return ""

    def queue_depths(self) -> dict[str, float]:
        """Ours: ``scheduler_pending_pods`` by queue, from its /metrics ({} if it does not answer)."""
        return {m.group(1): float(m.group(2)) for m in
                re.finditer(r'^scheduler_pending_pods\{queue="([^"]+)"\} (\S+)$', self.metrics_text(), re.M)}

    def phase_means_ms(self) -> dict[str, float | None]:
        """Ours: the mean per pod, in ms, of its decision (``scheduler_scheduling_algorithm_latency_microseconds``),
        its bind request (``scheduler_binding_latency_microseconds``) and both with what lies between
        (``scheduler_e2e_scheduling_latency_microseconds``), from its /metrics (None where it does not answer)."""
        text = self.metrics_text()
        out: dict[str, float | None] = {}
        for name, metric in PHASES.items():
            total = re.search(rf"^scheduler_{metric}_latency_microseconds_sum (\S+)$", text, re.M)
            count = re.search(rf"^scheduler_{metric}_latency_microseconds_count (\S+)$", text, re.M)
            n = float(count.group(1)) if count else 0.0
            out[name] = round(float(total.group(1)) / n / 1000, 3) if total and n else None
        return out

    def healthy(self) -> bool:
        """Ours: /healthz 200 (its informers synced). Modern (no port served): with leader election, its
        election client runs, which it starts after its informers synced; without: running."""
        self.check()
        if self.kind == "ours":
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        return not self.leader_elect or "attempting to acquire leader lease" in self.child.log()


def start_scheduler(kind: str, feature_gates: str, kubeconfig: str, workdir: Path, name: str, leader_elect: bool,
                    json_only: bool, version: str, api_qps: int | None = API_QPS) -> SchedulerProcess:
    """Start ours (with ``feature_gates``) or the modern kube-scheduler of ``version``, logging to ``name``.log;
    both clients at ``api_qps`` (None: each one's default limits)."""
    log_path = workdir / f"{name}.log"
    if kind == "ours":
        command, port = ours_command(kubeconfig, feature_gates, leader_elect, api_qps)
        process = SchedulerProcess(kind, Spawned(name, command, log_path), leader_elect, port)
    else:
        config = workdir / f"{name}.json"
        config.write_text(json.dumps(modern_config(kubeconfig, leader_elect, json_only, api_qps), indent=1))
        binary = envtest_binary(version, "kube-scheduler")
        command = [str(binary), "--config", str(config), "--secure-port=0", "-v=2"]
        process = SchedulerProcess(kind, Spawned(name, command, log_path), leader_elect)
    progress(f"starting {name}: {' '.join(process.child.command)}")
    process.child.start()
    return process


class PipedChild:
    """A :class:`Spawned` child that reports on its standard output, a line at a time (read by a thread of
    ours); ``_expect`` waits for the next line with a given prefix."""

    def __init__(self, child: Spawned) -> None:
        self.child = child
        self.lines: queue.Queue[str | None] = queue.Queue()  # None: its standard output ended

    def _start_piped(self, stdin_pipe: bool = False) -> None:
        self.child.start(stdout_pipe=True, stdin_pipe=stdin_pipe)
        threading.Thread(target=self._read, name=f"{self.child.name}-stdout", daemon=True).start()

    def _read(self) -> None:
        assert self.child.process is not None and self.child.process.stdout is not None
        for line in self.child.process.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _expect(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
                if line is None:
                    self.lines.put(None)  # its output ended (and stays so for the next call)
            except queue.Empty:
                line = None
            if line is None:
                code = self.child.process.poll() if self.child.process is not None else None
                raise RuntimeError(f"the {self.child.name} did not say {prefix!r} (exit code {code}): "
                                   f"{self.child.log()[-2000:]}")
            if line.startswith(prefix):
                return line[len(prefix):].strip()


class ProxyProcess(PipedChild):
    """``FaultProxy`` in a child process (its own GIL, so relaying does not slow this script's watch and
    creators); SIGUSR1 makes it cut every open watch and print how many."""

    def __init__(self, upstream_kubeconfig: str, workdir: Path) -> None:
        self.kubeconfig = str(workdir / "proxy.kubeconfig")
        command = [sys.executable, str(Path(__file__).resolve()), "--serve-proxy", upstream_kubeconfig, self.kubeconfig]
        super().__init__(Spawned("proxy", command, workdir / "proxy.log"))
        self.stats: dict[str, Any] = {}

    def start(self) -> ProxyProcess:
        self._start_piped()
        self._expect("ready", 30)
        return self

    def cut(self) -> int:
        self.child.signal_group(signal.SIGUSR1)
        return int(self._expect("cut", 10))

    def stop(self) -> None:
        self.child.signal_group(signal.SIGTERM)
        try:
            self.stats = json.loads(self._expect("stats", 15))
        except (RuntimeError, ValueError):
            pass
        self.child.stop(timeout=5)


def serve_proxy(upstream_kubeconfig: str, kubeconfig_out: str) -> int:
    """The proxy child: forward to the upstream server until SIGTERM; SIGUSR1 cuts every open watch.

    The signals are blocked in every thread and taken with ``sigwait`` by the main thread: a process-directed
    signal may be delivered to any thread, and a Python handler would then wait for the main thread's next
    bytecode."""
    signals = {signal.SIGUSR1, signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)  # before the proxy's threads exist: they inherit it
    proxy = FaultProxy(upstream_kubeconfig).start()
    proxy.write_kubeconfig(kubeconfig_out)
    print("ready", flush=True)
    while signal.sigwait(signals) == signal.SIGUSR1:
        print(f"cut {proxy.cut_watches('.*')}", flush=True)
    binds: Counter[str] = Counter()
    for method, path, status in proxy.requests:
        if method == "POST" and re.search(BINDING, path.split("?")[0]):
            binds[str(status)] += 1
    print("stats " + json.dumps({"binds": binds, "requests": len(proxy.requests)}), flush=True)
    proxy.stop()
    return 0


# -- what the server holds at the end ---------------------------------------------------------------
def pod_requests(obj: dict[str, Any]) -> tuple[float, float]:
    """(cpu cores, memory bytes) the pod asks for: its containers' requests (these pods have no init
    containers and no overhead)."""
    cpu = memory = 0.0
    for container in (obj.get("spec") or {}).get("containers") or ():
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += float(parse_quantity(requests.get("cpu", "0")))
        memory += float(parse_quantity(requests.get("memory", "0")))
    return cpu, memory


@dataclass
class NodeState:
    cpu: float
    memory: float
    pods: int
    placed: list[tuple[int, float, float]] = field(default_factory=list)  # (priority, cpu, memory)
    used_cpu: float = 0.0
    used_memory: float = 0.0
    labels: dict[str, str] = field(default_factory=dict)  # the Node's

    def add(self, priority: int, cpu: float, memory: float) -> None:
        self.placed.append((priority, cpu, memory))
        self.used_cpu += cpu
        self.used_memory += memory

    def copy(self) -> NodeState:
        return NodeState(self.cpu, self.memory, self.pods, list(self.placed), self.used_cpu, self.used_memory,
                         dict(self.labels))

    def over(self) -> list[str]:
        reasons = []
        if self.used_cpu > self.cpu + 1e-9:
            reasons.append(f"cpu {self.used_cpu:g}/{self.cpu:g}")
        if self.used_memory > self.memory:
            reasons.append(f"memory {self.used_memory / 2**30:.2f}Gi/{self.memory / 2**30:.2f}Gi")
        if len(self.placed) > self.pods:
            reasons.append(f"pods {len(self.placed)}/{self.pods}")
        return reasons

    def fits(self, cpu: float, memory: float, freed: tuple[float, float, int] = (0.0, 0.0, 0)) -> bool:
        """Whether one more pod of these requests fits (after removing ``freed``: cpu, memory, pod count)."""
        return (self.used_cpu - freed[0] + cpu <= self.cpu + 1e-9 and self.used_memory - freed[1] + memory <= self.memory
                and len(self.placed) - freed[2] + 1 <= self.pods)

    def make_room(self, priority: int, cpu: float, memory: float) -> bool:
        """Place a pod if it fits once pods of a lower priority are removed (lowest first); False if not."""
        if not self.fits(cpu, memory):
            removable = sorted((p for p in self.placed if p[0] < priority), key=lambda p: p[0])
            if not removable or not self.fits(cpu, memory, (sum(p[1] for p in removable),
                                                            sum(p[2] for p in removable), len(removable))):
                return False
            for victim in removable:
                if self.fits(cpu, memory):
                    break
                self.placed.remove(victim)
                self.used_cpu -= victim[1]
                self.used_memory -= victim[2]
        self.add(priority, cpu, memory)
        return True


def final_state(rest: RestClient, path: str = PODS_PATH) -> tuple[dict[str, dict[str, Any]], dict[str, NodeState]]:
    """The pods of ``path`` by name, and every node with its allocatable, labels and bound pods' requests."""
    pods = {p["metadata"]["name"]: p for p in rest.get(path)["items"]}
    nodes = {}
    for n in rest.get("/api/v1/nodes")["items"]:
        allocatable = (n.get("status") or {}).get("allocatable") or {}
        nodes[n["metadata"]["name"]] = NodeState(float(parse_quantity(allocatable.get("cpu", "0"))),
                                                 float(parse_quantity(allocatable.get("memory", "0"))),
                                                 int(parse_quantity(allocatable.get("pods", "0"))),
                                                 labels=dict(n["metadata"].get("labels") or {}))
    for p in pods.values():
        node = (p.get("spec") or {}).get("nodeName")
        phase = (p.get("status") or {}).get("phase")
        if node and phase not in ("Succeeded", "Failed"):
            cpu, memory = pod_requests(p)
            nodes.setdefault(node, NodeState(0.0, 0.0, 0)).add(int((p.get("spec") or {}).get("priority") or 0), cpu, memory)
    return pods, nodes


def unbound_with_room(unbound: list[dict[str, Any]], nodes: dict[str, NodeState]) -> int:
    """How many of the unbound pods the final cluster has room for: first fit, highest priority first, on
    copies of the nodes, where a pod may displace pods of a lower priority (preemption)."""
    state = {name: n.copy() for name, n in nodes.items()}
    count = 0
    for p in sorted(unbound, key=lambda p: (-int(p["spec"].get("priority") or 0), p["metadata"]["name"])):
        cpu, memory = pod_requests(p)
        priority = int(p["spec"].get("priority") or 0)
        if any(n.make_room(priority, cpu, memory) for n in state.values()):
            count += 1
    return count


# -- one run ----------------------------------------------------------------------------------------
@dataclass
class Timeline:
    """Monotonic and wall times of the fault, and the etcd revisions that separate before from after."""

    burst: float = 0.0
    stop_revision: int | None = None
    stopped: float | None = None
    stopped_wall: float | None = None
    returned: float | None = None
    returned_wall: float | None = None
    killed: float | None = None
    killed_wall: float | None = None
    kill_revision: int | None = None
    fault_done: float = 0.0
    cuts: list[int] = field(default_factory=list)
    metrics_before_stop: Counter[str] = field(default_factory=Counter)


class Run:
    """One scenario for one scheduler on a fresh API server."""

    def __init__(self, scenario: Scenario, kind: str, repeat: int, args: argparse.Namespace, base: Path) -> None:
        self.scenario, self.kind, self.repeat, self.args = scenario, kind, repeat, args
        self.dir = base / f"{scenario.shape}-{scenario.fault}-{kind}-{repeat}"
        self.dir.mkdir(parents=True)
        self.audit_log = self.dir / "audit.log"
        self.extra = audit_args(base / "audit-policy.json", self.audit_log)
        self.server = EnvtestServer(args.version, self.dir / "envtest", assets_dir() / "envtest.py")
        self.scheduler_name = SCHEDULER_NAME if kind == "ours" else MODERN_SCHEDULER_NAME
        self.schedulers: list[SchedulerProcess] = []
        self.proxy: ProxyProcess | None = None
        self.watch: PodWatch | None = None
        self.kubelet: Kubelet | None = None
        self.lock_watch: LockWatcher | None = None
        self.holder = ""  # leader-kill: replica a's identity in the Lease
        self.creator: Creator | None = None
        self.t = Timeline()
        self.init_names = [f"init-{i:06d}" for i in range(scenario.init_pods)]
        self.measured_names = [f"pod-{i:06d}" for i in range(scenario.measured_pods)]
        self.label = f"{scenario.name} {kind} #{repeat}"

    def identity(self) -> dict[str, Any]:
        """The fields that name the run (in its line, also when it failed)."""
        sc = self.scenario
        return {"shape": sc.shape, "fault": sc.fault, "scheduler": self.kind, "repeat": self.repeat,
                "nodes": sc.nodes, "init_pods": sc.init_pods, "measured_pods": sc.measured_pods}

    # the steps
    def execute(self) -> dict[str, Any]:
        sc, args = self.scenario, self.args
        progress(f"{self.label}: envtest {args.version} in {self.server.dir}")
        SERVERS.append(self.server)
        self.server.start(*self.extra)
        self.rest = RestClient(api_client(self.server.kubeconfig, pool_size=args.threads + 4), qps=0, burst=1)
        wait_until(lambda: self._exists(f"/api/v1/namespaces/{LOCK_NAMESPACE}"), 60, what="namespace kube-system")
        if sc.measured_template == "high":
            self.rest.post("/apis/scheduling.k8s.io/v1/priorityclasses", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": HIGH_PRIORITY_CLASS}, "value": HIGH_PRIORITY})
        node_names = [f"node-{i:05d}" for i in range(sc.nodes)]
        create_all(self.rest, "/api/v1/nodes", [node_object(n, pods=sc.node_pods) for n in node_names], args.threads)
        progress(f"created {sc.nodes} nodes")
        init_bodies = [TEMPLATES[sc.init_template].pod(n, NAMESPACE, self.scheduler_name,
                                                       node_name=node_names[i % sc.nodes] if sc.prebound_init else None)
                       for i, n in enumerate(self.init_names)]
        measured_bodies = [TEMPLATES[sc.measured_template].pod(n, NAMESPACE, self.scheduler_name)
                           for n in self.measured_names]
        creator = None
        if sc.prebound_init:
            create_all(self.rest, PODS_PATH, init_bodies, args.threads)
            progress(f"created {len(init_bodies)} pods already placed")
        if sc.pending_first:
            creator = self.creator = Creator(self.rest, measured_bodies, args.threads, time.monotonic() + args.timeout)
            creator.run()
            progress(f"created {len(creator.created)} pending pods ({len(creator.failed)} failed)")
        resource_version = self.rest.get(PODS_PATH, {"limit": 1})["metadata"]["resourceVersion"]
        self.kubelet = Kubelet(self.server.kubeconfig).start()
        self.watch = PodWatch(self.server.kubeconfig, resource_version, set(self.measured_names), self.kubelet).start()

        kubeconfig = self.server.kubeconfig
        if sc.pending_first:
            self.t.burst = time.monotonic()  # every pod is there: the burst is the scheduler's start
        if sc.fault == "watch-cut":
            self.proxy = ProxyProcess(self.server.kubeconfig, self.dir).start()
            kubeconfig = self.proxy.kubeconfig
        self._start_schedulers(kubeconfig)
        if not sc.prebound_init:
            create_all(self.rest, PODS_PATH, init_bodies, args.threads)
            wait_until(lambda: self._check() and self.watch.bound(self.init_names) == len(self.init_names),  # type: ignore[union-attr]
                       args.timeout, interval=0.2, what=f"the {len(self.init_names)} init pods bound")
            progress(f"the scheduler bound the {len(self.init_names)} init pods")
        if sc.fault == "leader-kill":
            wait_until(lambda: self._check() and self.schedulers[1].healthy(), 60, interval=0.2,
                       what="the standby to be up")

        if creator is None:
            self.t.burst = time.monotonic()
            creator = self.creator = Creator(self.rest, measured_bodies, args.threads,
                                             self.t.burst + args.timeout).start()
            progress(f"burst: creating {len(measured_bodies)} pods with {args.threads} threads")
        self._fault()
        creator.join()
        progress(f"created {len(creator.created)} measured pods ({len(creator.failed)} failed, "
                 f"{creator.retries} retries)")
        ended = self._settle(creator)
        return self._result(creator, ended)

    def _exists(self, path: str) -> bool:
        try:
            self.rest.get(path)
            return True
        except ApiError:
            return False

    def _check(self) -> bool:
        for s in self.schedulers:
            s.check()
        return True

    def _start_schedulers(self, kubeconfig: str) -> None:
        sc, args = self.scenario, self.args
        json_only = self.proxy is not None
        if sc.fault != "leader-kill":
            s = start_scheduler(self.kind, sc.feature_gates, kubeconfig, self.dir, self.kind, False, json_only,
                                args.version)
            self.schedulers.append(s)
            if s.kind == "ours":
                wait_until(lambda: self._check() and s.healthy(), 60, interval=0.1, what=f"{s.child.name} healthy")
            return
        # Replica a alone first, so that it is the leader; then the standby.
        a = start_scheduler(self.kind, sc.feature_gates, kubeconfig, self.dir, f"{self.kind}-a", True, json_only,
                            args.version)
        self.schedulers.append(a)
        holder = wait_until(lambda: self._check() and current_holder(self.rest, LOCK), 60, interval=0.1,
                            what="replica a to lead")
        progress(f"replica a leads as {holder}")
        self.holder = holder
        b = start_scheduler(self.kind, sc.feature_gates, kubeconfig, self.dir, f"{self.kind}-b", True, json_only,
                            args.version)
        self.schedulers.append(b)
        self.lock_watch = LockWatcher(RestClient(api_client(self.server.kubeconfig, pool_size=2), qps=0, burst=1),
                                      LOCK).start()

    def _restart(self) -> None:
        assert self.watch is not None
        try:
            self.t.metrics_before_stop += bind_counts(self.rest.api)
        except (ApiError, RuntimeError, OSError) as e:
            progress(f"could not scrape /metrics before the stop: {e}")
        progress("stopping the API server (--keep-data)")
        with RevisionPoller(self.server.etcd) as poller:
            self.server.stop(keep_data=True)
        self.t.stop_revision = poller.revision
        self.t.stopped, self.t.stopped_wall = time.monotonic(), time.time()
        time.sleep(self.args.down)
        progress(f"starting it again (--reuse) after {self.args.down:g}s down; last revision {poller.revision}")
        self.server.start(*self.extra, reuse=True)
        self.t.returned, self.t.returned_wall = time.monotonic(), time.time()
        progress(f"the API server is back ({self.t.returned - self.t.burst:.1f}s into the burst)")

    def _fault(self) -> None:
        sc, args, t = self.scenario, self.args, self.t
        assert self.watch is not None
        if sc.fault == "restart":
            sleep_until(t.burst + args.fault_at)
            self._restart()
        elif sc.fault == "tight":
            if not self.watch.first_measured_bind.wait(args.timeout):
                raise RuntimeError("no pod bound")
            time.sleep(args.tight_after)
            self._restart()
        elif sc.fault == "leader-kill":
            sleep_until(t.burst + args.fault_at)
            leader = self.schedulers[0]
            if current_holder(self.rest, LOCK) != self.holder:
                raise RuntimeError("replica a no longer leads")
            leader.killed = True
            leader.child.signal_group(signal.SIGKILL)
            t.killed, t.killed_wall = time.monotonic(), time.time()
            leader.child.stop(timeout=5)
            progress(f"SIGKILLed the leader {leader.child.name} ({t.killed - t.burst:.1f}s into the burst)")
            sleep_until(t.killed + KILL_SETTLE)
            t.kill_revision = etcd_revision(self.server.etcd)
        elif sc.fault == "watch-cut":
            assert self.proxy is not None
            for k in range(args.cuts):
                sleep_until(t.burst + args.fault_at + k * args.cut_interval)
                t.cuts.append(self.proxy.cut())
                progress(f"cut {t.cuts[-1]} watches ({time.monotonic() - t.burst:.1f}s into the burst)")
        t.fault_done = time.monotonic()

    def _settle(self, creator: Creator) -> str:
        """Wait for the end: every pod that can fit bound, ``settle`` s after the fault and 2 s quiet; or
        ``settle`` s without a bind or deletion; or the timeout."""
        assert self.watch is not None
        args = self.args
        expected = min(self.scenario.expected_bound, len(creator.created))
        deadline = self.t.burst + args.timeout
        last_report = 0.0
        while True:
            self._check()
            now = time.monotonic()
            bound = self.watch.bound(self.measured_names)
            quiet = now - self.watch.last_change
            if bound >= expected and now - self.t.fault_done >= args.settle and quiet >= QUIET_AT_END:
                return "bound"
            if quiet >= args.settle and now - self.t.fault_done >= args.settle:
                return "quiet"
            if now > deadline:
                return "timeout"
            if now - last_report >= 5:
                last_report = now
                progress(f"bound {bound}/{expected} measured pods ({now - self.t.burst:.0f}s into the burst)")
            time.sleep(0.25)

    # the figures
    def _result(self, creator: Creator, ended: str) -> dict[str, Any]:
        sc, t = self.scenario, self.t
        watch = self.watch
        assert watch is not None
        metrics_end = bind_counts(self.rest.api)
        pods, nodes = final_state(self.rest)
        survivors = [s for s in self.schedulers if s.child.alive()]
        queues = {s.child.name: s.queue_depths() for s in survivors if s.kind == "ours"}
        rss = [vm_hwm_mb(s.child.pid) for s in survivors]
        codes = {s.child.name: s.child.stop() for s in self.schedulers}
        if self.proxy is not None:
            self.proxy.stop()
        watch.stop()
        if self.kubelet is not None:
            self.kubelet.stop()
        if self.lock_watch is not None:
            self.lock_watch.stop()

        measured = set(self.measured_names)
        created = [n for n in self.measured_names if n in creator.created]
        vanished = [n for n in created if n not in pods]
        init_vanished = [n for n in self.init_names if n not in pods]
        unbound = [pods[n] for n in created if n in pods and not pods[n]["spec"].get("nodeName")]
        with_room = unbound_with_room(unbound, nodes)
        preemption = sc.init_template != sc.measured_template
        lost = len(vanished) + with_room + (0 if preemption else len(init_vanished))
        over = {name: n.over() for name, n in nodes.items() if n.over()}

        binds = sorted(b.at for n, b in watch.binds.items() if n in measured and n in pods)
        span = binds[-1] - binds[0] if len(binds) > 1 else 0.0
        metrics = t.metrics_before_stop + metrics_end
        audit = read_audit(self.audit_log) if self.audit_log.exists() else []
        audit_codes = Counter(str(b.code) for b in audit)

        line: dict[str, Any] = {
            "shape": sc.shape, "fault": sc.fault, "scheduler": self.kind, "repeat": self.repeat,
            "version": self.args.version, "commit": self.args.commit, "nodes": sc.nodes, "init_pods": sc.init_pods,
            "measured_pods": sc.measured_pods, "created": len(created), "create_failures": len(creator.failed),
            "create_retries": creator.retries, "expected_bound": min(sc.expected_bound, len(created)),
            "bound": sum(1 for n in created if n in pods and pods[n]["spec"].get("nodeName")),
            "lost": lost, "lost_vanished": len(vanished) + (0 if preemption else len(init_vanished)),
            "lost_unbound_with_room": with_room, "unbound_no_room": len(unbound) - with_room,
            "unbound_nominated": sum(1 for p in unbound if (p.get("status") or {}).get("nominatedNodeName")),
            # For diagnosis: the first unbound measured pods, and ours' queues at the end (scheduler_pending_pods).
            "unbound_pods": [((p.get("metadata") or {}).get("name"), (p.get("status") or {}).get("nominatedNodeName"))
                             for p in unbound[:20]],
            "scheduler_queues": queues,
            "preempted": len(init_vanished) if preemption else 0,
            "binds_409": metrics.get("409", 0), "binds_409_audit": audit_codes.get("409", 0),
            "binds_201": metrics.get("201", 0), "binds_201_audit": audit_codes.get("201", 0),
            "binds_other": {c: n for c, n in metrics.items() if c not in ("201", "409")},
            "binds_audit": dict(sorted(audit_codes.items())),
            "pods_with_409": len({b.pod for b in audit if b.code == 409}),
            "overcommitted_nodes": len(over), "overcommit": dict(sorted(over.items())[:5]),
            "pods_per_second": round((len(binds) - 1) / span, 1) if span > 0 else None,
            "seconds_first_to_last_bind": round(span, 3),
            "seconds_burst_to_last_bind": round(binds[-1] - t.burst, 3) if binds else None,
            "recovery_s": None, "recovery_exact": None, "recovery_audit_s": None, "watch_back_s": None,
            "takeover_s": None, "lease_acquired_s": None,
            "watches_cut": t.cuts or None, "watch_reconnects": watch.reconnects, "watch_relists": watch.relists,
            # The terminating pods the kubelet stand-in removed (a server stopped mid-deletion leaves them).
            "kubelet_removed": list(self.kubelet.removed) if self.kubelet is not None else [],
            "ended": ended, "scheduler_peak_rss_mb": max((r for r in rss if r is not None), default=None),
            "scheduler_exit_codes": codes,
        }
        if t.returned is not None and t.stop_revision is not None:
            first = watch.first_bind_after(t.stop_revision)
            if first is not None:
                line["recovery_s"] = round(first.at - t.returned, 3)
                line["recovery_exact"] = first.exact
            after = [b for b in audit if b.code == 201 and t.stopped_wall is not None and b.received > t.stopped_wall]
            if after and t.returned_wall is not None:
                line["recovery_audit_s"] = round(after[0].completed - t.returned_wall, 3)
            back = [at for at in watch.opened if t.stopped is not None and at > t.stopped]
            if back:
                line["watch_back_s"] = round(back[0] - t.returned, 3)
            line["stop_revision"] = t.stop_revision
        if t.killed is not None and t.kill_revision is not None:
            first = watch.first_bind_after(t.kill_revision)
            if first is not None:
                line["takeover_s"] = round(first.at - t.killed, 3)
            if self.lock_watch is not None and t.killed_wall is not None:
                later = [at for at, holder in self.lock_watch.changes if holder not in ("", self.holder)]
                if later:
                    line["lease_acquired_s"] = round(later[0] - t.killed_wall, 3)
        if self.proxy is not None:
            line["proxy_binds"] = self.proxy.stats.get("binds")
        return line

    def close(self) -> None:
        """Stop whatever this run started (also after an error)."""
        if self.creator is not None:
            self.creator.stop()
        for s in self.schedulers:
            s.child.stop(timeout=10)
        if self.proxy is not None:
            self.proxy.child.stop(timeout=5)
        if self.watch is not None:
            self.watch.stop()
        if self.kubelet is not None:
            self.kubelet.stop()
        if self.lock_watch is not None:
            self.lock_watch.stop()
        stop_server(self.server)


# -- the table --------------------------------------------------------------------------------------
TABLE_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("bound / expected", lambda r: f"{r['bound']}/{r['expected_bound']}" if "bound" in r else "error"),
    ("lost", lambda r: r.get("lost")),
    ("409 binds (metrics; audit)", lambda r: None if "binds_409" not in r else
     f"{r['binds_409']}" + ("" if r["binds_409"] == r["binds_409_audit"] else f"; {r['binds_409_audit']}")),
    ("overcommitted nodes", lambda r: r.get("overcommitted_nodes")),
    ("server back → next bind s", lambda r: None if r.get("recovery_s") is None else
     f"{r['recovery_s']:.3f}" + ("" if r.get("recovery_exact") else "*")),
    ("takeover s", lambda r: r.get("takeover_s")),
    ("pods/s", lambda r: r.get("pods_per_second")),
]


def _cell(values: list[Any]) -> str:
    if all(v is None for v in values):
        return "—"
    return " / ".join("—" if v is None else str(v) for v in values)


def table(lines: list[dict[str, Any]]) -> str:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        groups[(line["shape"], line["fault"], line["scheduler"])].append(line)
    head = ["scenario", "scheduler", *(name for name, _ in TABLE_COLUMNS)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = {k: i for i, k in enumerate((*SHAPES, BASELINE, *FAULTS, *SCHEDULERS))}
    for (shape, fault, kind), runs in sorted(groups.items(), key=lambda kv: tuple(order.get(k, 99) for k in kv[0])):
        runs.sort(key=lambda r: r.get("repeat", 0))
        cells = [_cell([get(r) for r in runs]) for _, get in TABLE_COLUMNS]
        rows.append("| " + " | ".join([f"{shape}/{fault}", kind, *cells]) + " |")
    sizes = sorted({(r["shape"], r["fault"], r.get("nodes"), r.get("init_pods"), r.get("measured_pods"))
                    for r in lines}, key=lambda size: (order.get(size[0], 99), order.get(size[1], 99)))
    notes = [f"- {s}/{f}: {n} nodes, {i} init pods, {m} measured pods" for s, f, n, i, m in sizes]
    pods_s = [r["pods_per_second"] for r in lines if r.get("pods_per_second")]
    if pods_s:
        notes.append(f"- pods/s: median {statistics.median(pods_s):g} over all cells; "
                     "`*` after a recovery time: the bind was seen in a relist (an upper bound)")
    return "\n".join(rows + [""] + notes) + "\n"


# -- main -------------------------------------------------------------------------------------------
def _choices(values: Iterable[str], allowed: tuple[str, ...], what: str,
             everything: tuple[str, ...] | None = None) -> list[str]:
    out: list[str] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if item == "all":
                out.extend(everything or allowed)
            elif item in allowed:
                out.append(item)
            else:
                raise SystemExit(f"unknown {what} {item!r}: one of {', '.join(allowed)} (or all)")
    return list(dict.fromkeys(out))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", action="append", default=None, help="SchedulingBasic, PreemptionBasic or all")
    parser.add_argument("--fault", action="append", default=None,
                        help="restart, leader-kill, watch-cut, tight or all (default); none: a baseline, no fault")
    parser.add_argument("--scheduler", default="both", choices=("ours", "modern", "both"))
    parser.add_argument("--nodes", type=int, default=500, help="nodes of SchedulingBasic and PreemptionBasic")
    parser.add_argument("--pods", type=int, default=4000, help="SchedulingBasic's measured pods")
    parser.add_argument("--init-pods", type=int, default=None, help="SchedulingBasic's init pods (default: --nodes)")
    parser.add_argument("--preemption-pods", type=int, default=None,
                        help="PreemptionBasic's measured pods (default: --nodes; init pods are 4 per node)")
    parser.add_argument("--tight-nodes", type=int, default=50)
    parser.add_argument("--tight-pods", type=int, default=3000, help="tight's pending pods")
    parser.add_argument("--tight-after", type=float, default=1.0, help="tight: seconds from the first bind to the restart")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--version", default="1.26", choices=("1.26", "1.32", "1.36"), help="envtest line (server and modern)")
    parser.add_argument("--fault-at", type=float, default=3.0, help="seconds into the burst")
    parser.add_argument("--down", type=float, default=5.0, help="seconds the API server stays down")
    parser.add_argument("--cuts", type=int, default=3)
    parser.add_argument("--cut-interval", type=float, default=2.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run from the burst's start")
    parser.add_argument("--threads", type=int, default=8, help="threads creating objects")
    parser.add_argument("--table", type=Path, default=None, help="also write the markdown table to this file")
    parser.add_argument("--render", type=Path, default=None, help="print the table of these JSON lines and exit")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, audit logs)")
    parser.add_argument("--serve-proxy", nargs=2, metavar=("UPSTREAM", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.shape = _choices(args.shape or ["all"], SHAPES, "shape")
    args.fault = _choices(args.fault or ["all"], (*FAULTS, BASELINE), "fault", everything=FAULTS)
    args.schedulers = list(SCHEDULERS) if args.scheduler == "both" else [args.scheduler]
    args.commit = source_commit()
    return args


def runs(args: argparse.Namespace) -> Iterator[tuple[Scenario, int, str]]:
    for scenario in scenarios(args):
        for repeat in range(1, args.repeat + 1):
            for kind in args.schedulers:
                yield scenario, repeat, kind


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_proxy:
        return serve_proxy(*args.serve_proxy)
    if args.render:
        print(table(saved_lines(args.render)), end="")
        return 0
    base = Path(tempfile.mkdtemp(prefix="faults-bench-"))
    (base / "audit-policy.json").write_text(json.dumps(AUDIT_POLICY))
    plan = [functools.partial(Run, scenario, kind, repeat, args, base) for scenario, repeat, kind in runs(args)]
    return run_all(plan, base, table, args.keep, args.table)


if __name__ == "__main__":
    raise SystemExit(main())
