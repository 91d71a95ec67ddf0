"""Upstream's scheduler_perf workloads end to end through a real kube-apiserver, for ours and the modern one.

Kubernetes benchmarks its scheduler with ``test/integration/scheduler_perf/``; ``perf_workloads.py`` holds 14
of its workloads (``WORKLOADS``; SchedulingCSIVolumes, upstream's SchedulingCSIPVs, in ``VOLUME_WORKLOADS``;
in ``MODERN_FIELD_WORKLOADS`` SchedulingDaemonSets and upstream's ns-selector pod affinity, required and
preferred; in ``DRA_WORKLOADS`` upstream's SchedulingWithResourceClaimTemplate and SchedulingWithResourceClaim,
only on a line that serves ``resource.k8s.io/v1`` (``--version 1.36``): nodes, init pods, measured pods, sizes at
500 and 5,000 nodes). This script runs each of them for
**ours** (``policy-scheduler run`` of this checkout: DefaultProvider, scheduler name ``policy-scheduler-bench``,
``--feature-gates`` from the workload, e.g. ``PodPriority=true`` for PreemptionBasic) and the **modern**
kube-scheduler of ``--version`` (1.26, 1.32 or 1.36: the default profile under the name ``modern-scheduler-bench``),
each run on a fresh envtest API server of that line (with the DRA workloads' templates, also that line's
kube-controller-manager running only its resourceclaim controller, which makes each pod's claim), every client
unthrottled (qps = burst = 5000). Every run
starts the same way: the workload's namespaces (``sched-0``/``sched-1``; the ns-selector workloads'
``init-ns-<j>`` and ``measure-ns-0``, labelled ``team: devops``), its PriorityClass and DaemonSets where it
needs them (the DaemonSets' uids go into their pods' owner references), the nodes (zones drawn from
``--seed``), for SchedulingCSIVolumes a CSINode per node (``--csi-limit`` volumes of ``ebs.csi.aws.com``,
upstream's 39 by default) and every pod's PV and claim, bound (as upstream's
fake PV controller would leave them), then the scheduler under test, and the init pods, which it binds (the
run waits for all of them; in Unschedulable, whose init pods never fit, only until the scheduler has tried
one: it is up). Then, by ``--mode``:

``backlog``
    that scheduler is stopped, every measured pod is created (the run waits until all exist, and in the DRA
    template workload until the resourceclaim controller has made every pod's claim), and a fresh
    scheduler of the same kind is started: the measurement starts with its process.
``stream``
    the measured pods are created while the scheduler runs, by ``--creators`` (4) processes of
    ``--creator-threads`` (4) threads each, every thread posting pre-encoded bodies over a keep-alive HTTPS
    connection of its own (opened before the start); each records when each of its creates returned
    (``time.monotonic()``: one clock for every process on Linux).

The measured pods of ``backlog`` are created by the same creators.

Measured pods are ``pod-NNNNNN`` (init pods ``init-NNNNNN``) in the workload's namespaces; this script's own
watch on every namespace's pods times each bind. A run ends when every measured pod that can fit is bound, or
``--timeout`` s (600) after the measurement started; a run that runs out reports what bound (``ended``:
``timeout``) and its figures over those pods. Per run, one JSON line on standard output (progress on standard
error):

- ``bound`` / ``expected_bound``: measured pods bound / the measured pods there is room for (all of them at
  upstream's sizes); ``init_bound``, ``created``, ``create_failures``.
- ``pods_per_second``: (n - 1) / (last measured bind - first measured bind), n the measured pods bound.
- ``pods_per_second_from_start``: backlog: n / (last measured bind - the scheduler's start); stream:
  n / (last measured bind - first measured create). ``seconds_to_first_bind``: from the same origin.
- ``p50_ms`` / ``p99_ms`` (stream): create-to-bind latency of the measured pods (the create's return to the
  watch's event; nearest rank).
- ``creator_pods_per_second``: measured pods / (last create - first create), the creators' own rate: above the
  scheduler's, it shows that the pods came faster than either scheduler took them.
- ``decision_ms_mean`` / ``bind_ms_mean`` / ``e2e_ms_mean`` (ours only: the modern one serves no port here):
  the mean per pod of its decision, of its bind request, and of both with what lies between, from its own
  histograms scraped just before it is stopped (init pods included in a stream run; the phases, beside
  ``seconds_to_first_bind``, show where the next bottleneck is).
- ``cpu_seconds``: the scheduler's CPU (user + system, its process group) from its start to just before it is
  stopped (backlog: start-up and the whole backlog); ``server_cpu_seconds``: the API server's and etcd's over the
  measurement (from the scheduler's start, or the first create, to the end): on a 2-core machine the three share
  the cores, so this is what a faster scheduler cannot take back.
- ``peak_rss_mb``: the scheduler's peak resident set (``VmHWM``) just before it is stopped; the sum over its
  process group's processes if it has children (``peak_rss_of`` says which; ``peak_rss_group_max_mb``).
- the placement checks, counts from the Node and Pod objects read back at the end (each should be 0):
  ``overcommitted_nodes`` (cpu, memory or pod count over allocatable), ``unfit_bound`` (a pod bound where it
  could never fit, e.g. Unschedulable's cpu-9 pods), ``node_affinity_violations`` (required node affinity:
  ``matchExpressions`` on the node's labels, ``matchFields`` on its name), ``anti_affinity_violations`` (pods
  with a pod matching their required anti-affinity term in the same topology domain),
  ``pod_affinity_violations`` (pods without another matching pod in their domain, but for the first of their
  term; a term's namespaces are its ``namespaces`` and those its ``namespaceSelector`` picks by the
  namespaces' labels read back), ``spread_violations`` (DoNotSchedule topology spread: final skew of the
  matching pods across the domains over maxSkew; ``spread_skew`` the largest), ``csi_limit_violations`` (nodes where
  the distinct CSI volumes of a driver, over the claims of the node's pods, outnumber its CSINode's
  ``allocatable.count``; ``csi_volumes_max`` the most on one node, ``csi_volumes_unresolved`` bound pods' claims
  that lead to no CSI PV), ``daemon_pods_missing`` (SchedulingDaemonSets: of the ``daemon_pods_expected``
  (DaemonSet, node) pairs the measured pods name, those without a bound pod on that node whose controller
  reference names that DaemonSet with its uid as read back), and for preemption, ``victims`` (bound init pods
  deleted), ``dra_violations`` (DRA workloads: bound pods whose claim is missing, unallocated, allocated
  devices of another node's pool or not reserved for the pod, and devices held by two claims;
  ``dra_devices_allocated`` the devices held at the end), ``victim_nodes_without_preemptor`` (nodes that lost victims but hold no pod of a higher
  priority) and ``unneeded_victims`` (victims that would still fit back on their node beside its final pods).
  ``failed_checks`` names the non-zero ones.

At the end a markdown table (workload x mode: ours and modern pods/s and their ratio, p50/p99, the creators'
rate, peak RSS and its ratio, the checks; repeats separated by " / ", ratios of medians) goes to standard
error, and to a file with ``--table PATH``; ``--render RUNS.jsonl`` prints the table of saved JSON lines
without running anything. Servers, schedulers and creators are stopped at the end of every run, also on an
error or Ctrl-C; ``--keep`` keeps the work directory (the schedulers' and creators' logs).

    # the 500-node table on the 1.36 line, both schedulers interleaved (ours then modern, the other way round on
    # even repeats), and 1.26's kube-scheduler as a second column
    python benchmarks/scheduler_perf.py --repeat 2 --baseline 1.26 --table perf-table.md > perf.jsonl
    # one cell
    python benchmarks/scheduler_perf.py --workload SchedulingBasic --mode stream --scheduler ours
    # the 5,000-node variants (600 s per run)
    python benchmarks/scheduler_perf.py --scale 5000 --table perf-5000.md > perf-5000.jsonl
    # a small smoke run
    python benchmarks/scheduler_perf.py --workload SchedulingBasic,PreemptionBasic --nodes 20 --init-pods 20 \\
        --measured-pods 40
    # the CSI attach limit binding: 2 volumes per node, so a third of the pods stay pending
    python benchmarks/scheduler_perf.py --workload SchedulingCSIVolumes --nodes 8 --csi-limit 2
    python benchmarks/scheduler_perf.py --render perf.jsonl

Options: ``--workload A,B`` (repeatable; default: all 14, and the 2 DRA workloads from 1.34), ``--scale 500|5000``, ``--nodes`` (the init and
measured pods then scale with it from the variant's, unless given too), ``--init-pods``, ``--measured-pods``,
``--seed`` (1), ``--scheduler ours|modern|both``, ``--mode backlog|stream|both``, ``--version 1.26|1.32|1.36`` (1.36),
``--baseline LINE`` (after each pair, that line's modern scheduler on a server of its line, e.g. ``1.26``: a
second modern column in the table; not for the DRA workloads),
``--repeat`` (1), ``--csi-limit`` (the CSINodes' count, default 39), ``--timeout`` (600 s for the measurement;
the init pods get as long, and a run whose init pods do not all bind in it fails), ``--creators``,
``--creator-threads``. Ours is the daemon of this checkout (its root first on ``PYTHONPATH``); ``commit`` in
each line names it.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import math
import ssl
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kubernetes.client import Configuration
from kubernetes.utils import parse_quantity

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(ROOT))

from benchmarks.daemon_throughput import SCHEDULER_NAME, create_all, ensure_namespaces, vm_hwm_mb  # noqa: E402
from benchmarks.faults import (  # noqa: E402
    MODERN_SCHEDULER_NAME,
    PHASES,
    RUN_ERRORS,
    SCHEDULERS,
    SERVERS,
    Bind,
    NodeState,
    PipedChild,
    PodWatch,
    SchedulerProcess,
    Spawned,
    _cell,
    _choices,
    final_state,
    pod_requests,
    progress,
    run_benchmark,
    start_scheduler,
    stop_server,
)
from benchmarks.harness.controllers import ControllerManager  # noqa: E402
from benchmarks.harness.daemon import wait_until  # noqa: E402
from benchmarks.harness.envtest import EnvtestServer, assets_dir  # noqa: E402
from benchmarks.harness.proc import cpu_seconds  # noqa: E402
from benchmarks.perf_workloads import (  # noqa: E402
    DRA_WORKLOADS,
    HOSTNAME_KEY,
    MODERN_FIELD_WORKLOADS,
    NODE_CPU,
    NODE_MEMORY,
    NODE_NAME_FIELD,
    NODE_PODS,
    VOLUME_WORKLOADS,
    WORKLOADS,
    DRADevices,
    PodTemplate,
    Workload,
)
from benchmarks.throughput import percentile_ms  # noqa: E402
from policy_scheduler.kube.client.kubeconfig import api_client  # noqa: E402
from policy_scheduler.kube.client.rest import ApiError, RestClient  # noqa: E402

MODES = ("backlog", "stream")
SCALES = (500, 5000)
ALL_PODS = "/api/v1/pods"
POD_PATH = "/api/v1/namespaces/{ns}/pods"
THREADS = 8  # this script's own creates (nodes, init pods)
QUIET, QUIET_MAX = 0.5, 5.0  # after the last measured bind: until 0.5 s without a bind or deletion (5 s at most)
CHECKS = ("overcommitted_nodes", "unfit_bound", "node_affinity_violations", "anti_affinity_violations",
          "pod_affinity_violations", "spread_violations", "csi_limit_violations", "daemon_pods_missing",
          "victim_nodes_without_preemptor", "unneeded_victims", "dra_violations")
PERF_WORKLOADS: dict[str, Workload] = {**WORKLOADS, **VOLUME_WORKLOADS, **MODERN_FIELD_WORKLOADS, **DRA_WORKLOADS}
#: The resourceclaim controller's client, unthrottled as the schedulers' (its default, 20 requests/s, would pace
#: the pods: a claim and a pod status update each).
CONTROLLER_CLIENT = ("--kube-api-qps=5000", "--kube-api-burst=5000")
DRA_FROM = "1.34"  # the first line that serves resource.k8s.io/v1 (DRA GA)
VERSIONS = ("1.26", "1.32", "1.36")  # the envtest lines with a modern kube-scheduler
DRA_PATHS = {"DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
             "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
             "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
             "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates"}
PV_PATH, CLAIM_PATH = "/api/v1/persistentvolumes", "/api/v1/namespaces/{ns}/persistentvolumeclaims"
CSINODE_PATH = "/apis/storage.k8s.io/v1/csinodes"
NAMESPACES_PATH = "/api/v1/namespaces"
DAEMONSET_PATH, ALL_DAEMONSETS = "/apis/apps/v1/namespaces/{ns}/daemonsets", "/apis/apps/v1/daemonsets"


# -- the sizes --------------------------------------------------------------------------------------
def room_per_node(template: PodTemplate, csi_limit: int | None = None, dra: DRADevices | None = None) -> int:
    """How many pods of the template one empty node-default.yaml node holds (each pod with a CSI volume of its
    own: at most ``csi_limit``; with ``dra``, a device per claim: its devices times the pods sharing a claim)."""
    room = NODE_PODS if csi_limit is None else min(NODE_PODS, csi_limit)
    if dra is not None:
        room = min(room, dra.per_node * (dra.pods_per_claim or 1))
    if not template.requests:
        return room
    return min(room, int(parse_quantity(NODE_CPU) / parse_quantity(template.cpu)),
               int(parse_quantity(NODE_MEMORY) / parse_quantity(template.memory)))


def one_per_host(template: PodTemplate) -> bool:
    """Whether the template's pods repel each other per node (required anti-affinity on the hostname)."""
    return any(t.get("topologyKey") == HOSTNAME_KEY for t in required_terms(template.affinity, "podAntiAffinity"))


@dataclass(frozen=True)
class Cell:
    """One workload at one size: upstream's variant for the scale, or the overrides."""

    workload: Workload
    nodes: int
    init: int
    measured: int
    csi_limit: int | None = None  # the CSINodes' count (workloads with volumes)
    init_namespaces: tuple[str, ...] = ()  # where the init pods go (createPodSets); default the workload's

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def expected_init(self) -> int:
        """Init pods that fit (none in Unschedulable; one per node at most with hostname anti-affinity; the CSI
        limit per node where each pod has a volume: init and measured pods share it)."""
        room = self.nodes * room_per_node(self.workload.init, self.csi_limit, self.workload.dra)
        return min(self.init, room, self.nodes if one_per_host(self.workload.init) else room)

    @property
    def expected_bound(self) -> int:
        """Measured pods there is room for. A measured pod of a higher priority may evict init pods, so they do
        not count against it; otherwise they do (they are of the measured pods' size wherever they fit)."""
        w = self.workload
        if w.daemonsets:  # one pod per (DaemonSet, node): each small beside its node's init pods
            return min(self.measured, self.nodes * len(w.daemonsets))
        room = self.nodes * room_per_node(w.measured, self.csi_limit, w.dra)
        if (w.measured.priority or 0) <= (w.init.priority or 0):
            room -= self.expected_init
        if one_per_host(w.measured):
            room = min(room, self.nodes - self.expected_init)
        return max(0, min(self.measured, room))


def cells(args: argparse.Namespace) -> list[Cell]:
    out = []
    for name in args.workload:
        workload = PERF_WORKLOADS[name]
        nodes, init, measured = workload.sizes[args.scale]
        if args.nodes is not None:  # the variant's pods per node, kept
            init, measured = round(init * args.nodes / nodes), max(1, round(measured * args.nodes / nodes))
            nodes = args.nodes
        csi_limit = None
        if workload.csi is not None:
            csi_limit = workload.csi.limit if args.csi_limit is None else args.csi_limit
        measured = measured if args.measured_pods is None else args.measured_pods
        if workload.daemonsets and measured > nodes * len(workload.daemonsets):
            raise SystemExit(f"{name}: at most {nodes * len(workload.daemonsets)} measured pods on {nodes} nodes "
                             f"({len(workload.daemonsets)} DaemonSets)")
        out.append(Cell(workload, nodes, init if args.init_pods is None else args.init_pods, measured, csi_limit,
                        workload.init_namespaces(args.scale)))
    return out


# -- the creators -----------------------------------------------------------------------------------
class CreatorProcess(PipedChild):
    """One creator child (``--serve-creator``): says ``ready`` once its connections are open, creates its share
    of the measured pods when its standard input says ``go``, then says ``done`` with when each create returned.
    Not a signal: the thread numpy starts on import does not block it, and a signal the main thread blocks
    until its ``sigwait`` goes to that thread, whose default action ends the process."""

    def __init__(self, index: int, spec: Path, workdir: Path, script: Path | None = None) -> None:
        """``script``: the benchmark whose ``--serve-creator SPEC INDEX`` serves it (default: this one)."""
        script = script or Path(__file__).resolve()
        command = [sys.executable, str(script), "--serve-creator", str(spec), str(index)]
        super().__init__(Spawned(f"creator-{index}", command, workdir / f"creator-{index}.log"))

    def start(self) -> CreatorProcess:
        self._start_piped(stdin_pipe=True)
        return self

    def ready(self, timeout: float) -> None:
        self._expect("ready", timeout)

    def go(self) -> None:
        assert self.child.process is not None and self.child.process.stdin is not None
        self.child.process.stdin.write("go\n")
        self.child.process.stdin.flush()

    def result(self, timeout: float) -> dict[str, Any]:
        return json.loads(self._expect("done", timeout))


class Creators:
    """``processes`` creator processes: the k-th creates the measured pods k, k + processes, k + 2 processes..."""

    def __init__(self, workdir: Path, spec: dict[str, Any], processes: int) -> None:
        path = workdir / "creators.json"
        path.write_text(json.dumps({**spec, "processes": processes}))
        self.children = [CreatorProcess(i, path, workdir) for i in range(processes)]
        self.created: dict[str, float] = {}
        self.failed: dict[str, str] = {}
        self.done = False

    def start(self) -> Creators:
        for child in self.children:
            child.start()
        return self

    def go(self) -> None:
        for child in self.children:
            child.ready(120)
        for child in self.children:
            child.go()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for child in self.children:
            result = child.result(max(1.0, deadline - time.monotonic()))
            self.created.update(result["created"])
            self.failed.update(result["failed"])
        self.done = True
        self.stop()

    def stop(self) -> None:
        for child in self.children:
            child.child.stop(timeout=5)

    def rate(self) -> float | None:
        times = sorted(self.created.values())
        return round(len(times) / (times[-1] - times[0]), 1) if len(times) > 1 and times[-1] > times[0] else None


class ApiConnection:
    """One keep-alive HTTPS connection to the API server of a kubeconfig, for raw POSTs of encoded bodies: no
    client library on the way (half the CPU of :class:`RestClient` per create) and the reply left unparsed."""

    def __init__(self, configuration: Configuration) -> None:
        url = urlsplit(configuration.host)
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, configuration.key_file)
        auth = configuration.auth_settings().get("BearerToken") or {}
        self.headers = {"Content-Type": "application/json", "Accept": "application/json",
                        **({auth["key"]: auth["value"]} if auth.get("value") else {})}
        self.connection = http.client.HTTPSConnection(url.hostname or "", url.port, context=context, timeout=30)
        self.connection.connect()

    def post(self, path: str, body: bytes) -> int:
        """The reply's status (0: none; the next request opens a new connection)."""
        try:
            self.connection.request("POST", path, body=body, headers=self.headers)
            response = self.connection.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            self.connection.close()
            return 0


def create_raw(connection: ApiConnection, requests: list[tuple[str, str, bytes]], deadline: float,
               created: dict[str, float], failed: dict[str, str]) -> None:
    """POST each (pod name, path, body), retrying on no reply, 429 or 5xx until ``deadline`` (a 409
    AlreadyExists on a retry: an earlier attempt got through); ``created``: when each create returned."""
    for name, path, body in requests:
        retried = False
        while True:
            status = connection.post(path, body)
            if status == 201 or (status == 409 and retried):
                created[name] = time.monotonic()
            elif (status in (0, 429) or status >= 500) and time.monotonic() < deadline:
                retried = True
                time.sleep(0.05)
                continue
            else:
                failed[name] = f"HTTP {status}"
            break


def serve_creator(spec_path: str, index: int) -> int:
    """The creator child: its share of the measured pods, split over its threads, each with a connection of
    its own (opened first); it waits for ``go`` on its standard input, creates, and prints the create times."""
    spec = json.loads(Path(spec_path).read_text())
    bodies = PERF_WORKLOADS[spec["workload"]].measured_pods(spec["measured"], spec["scheduler_name"],
                                                            nodes=spec["nodes"], owners=spec["owners"])
    bodies = bodies[index::spec["processes"]]
    requests = [(b["metadata"]["name"], POD_PATH.format(ns=b["metadata"]["namespace"]), json.dumps(b).encode())
                for b in bodies]
    threads = spec["threads"]
    configuration = api_client(spec["kubeconfig"]).configuration
    connections = [ApiConnection(configuration) for _ in range(threads)]
    created: dict[str, float] = {}
    failed: dict[str, str] = {}
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 0
    deadline = time.monotonic() + spec["timeout"]
    workers = [threading.Thread(target=create_raw, args=(c, requests[i::threads], deadline, created, failed))
               for i, c in enumerate(connections)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print("done " + json.dumps({"created": created, "failed": failed}), flush=True)
    return 0


# -- the placement checks ---------------------------------------------------------------------------
def required_terms(affinity: dict[str, Any] | None, kind: str) -> list[dict[str, Any]]:
    return list(((affinity or {}).get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def requirement_holds(requirement: dict[str, Any], labels: dict[str, str]) -> bool:
    """One ``matchExpressions`` entry of a label or node selector."""
    key, operator, values = requirement["key"], requirement["operator"], requirement.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels:
        value, bound = int(labels[key]), int(values[0])
        return value > bound if operator == "Gt" else value < bound
    return False


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    return (all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())
            and all(requirement_holds(r, labels) for r in selector.get("matchExpressions") or ()))


def node_term_holds(term: dict[str, Any], labels: dict[str, str], node_name: str | None) -> bool:
    """One nodeSelectorTerm: every ``matchExpressions`` entry on the node's labels and every ``matchFields``
    entry on its fields (``metadata.name``); a term with neither matches no node."""
    expressions, fields = term.get("matchExpressions") or (), term.get("matchFields") or ()
    node_fields = {NODE_NAME_FIELD: node_name} if node_name is not None else {}
    return bool(expressions or fields) and (all(requirement_holds(r, labels) for r in expressions)
                                            and all(requirement_holds(r, node_fields) for r in fields))


def node_affinity_holds(spec: dict[str, Any], labels: dict[str, str], node_name: str | None = None) -> bool:
    """``nodeSelector`` and required node affinity (any term, every requirement of it) on a node of these labels
    and name."""
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(node_term_holds(term, labels, node_name) for term in required.get("nodeSelectorTerms") or ())


def term_namespace_holds(term: dict[str, Any], namespace: str, candidate: str,
                         namespace_labels: Mapping[str, dict[str, str]]) -> bool:
    """Whether a pod in ``candidate`` is in the namespaces of a pod (anti-)affinity term of a pod in
    ``namespace``: those ``namespaces`` names and those its ``namespaceSelector`` picks (``{}``: every
    namespace); with neither, the pod's own."""
    names, selector = term.get("namespaces") or (), term.get("namespaceSelector")
    if not names and selector is None:
        return candidate == namespace
    return candidate in names or (selector is not None
                                  and selector_matches(selector, namespace_labels.get(candidate) or {}))


class Placement:
    """The bound pods read back at the end, on their nodes; matching pods counted per topology domain;
    ``namespace_labels``: the labels of each namespace (for terms' ``namespaceSelector``)."""

    def __init__(self, pods: dict[str, dict[str, Any]], nodes: dict[str, NodeState], bound_at: dict[str, float],
                 namespace_labels: Mapping[str, dict[str, str]] | None = None):
        self.nodes = nodes
        self.bound = [p for p in pods.values() if (p.get("spec") or {}).get("nodeName")]
        self.bound_at = bound_at
        self.namespace_labels = namespace_labels or {}
        self._counts: dict[str, Counter[str]] = {}

    def labels_of_node(self, pod: dict[str, Any]) -> dict[str, str]:
        node = self.nodes.get(pod["spec"]["nodeName"])
        return node.labels if node is not None else {}

    def in_term(self, pod: dict[str, Any], term: dict[str, Any], namespace: str) -> bool:
        """Whether ``pod`` matches a pod (anti-)affinity term of a pod in ``namespace``."""
        return (term_namespace_holds(term, namespace, pod["metadata"].get("namespace") or "default",
                                     self.namespace_labels)
                and selector_matches(term.get("labelSelector"), pod["metadata"].get("labels") or {}))

    def per_domain(self, term: dict[str, Any], namespace: str) -> Counter[str]:
        key = json.dumps([term, namespace], sort_keys=True)
        if key not in self._counts:
            self._counts[key] = Counter(
                d for p in self.bound if self.in_term(p, term, namespace)
                and (d := self.labels_of_node(p).get(term["topologyKey"])) is not None)
        return self._counts[key]

    def others(self, pod: dict[str, Any], term: dict[str, Any]) -> int | None:
        """Bound pods other than ``pod`` matching its term in its domain (None: its node has no domain)."""
        namespace = pod["metadata"].get("namespace") or "default"
        domain = self.labels_of_node(pod).get(term["topologyKey"])
        if domain is None:
            return None
        return self.per_domain(term, namespace)[domain] - (1 if self.in_term(pod, term, namespace) else 0)

    def first_of(self, term: dict[str, Any], namespace: str) -> str | None:
        """The first bound pod matching the term (by the watch's bind time, then name)."""
        matching = [p["metadata"]["name"] for p in self.bound if self.in_term(p, term, namespace)]
        return min(matching, key=lambda n: (self.bound_at.get(n, math.inf), n), default=None)

    def spread_skews(self) -> list[tuple[int, int]]:
        """(final skew, maxSkew) of every distinct DoNotSchedule constraint of the bound pods (per namespace):
        matching pods of that namespace counted over every domain of the nodes that have the key."""
        constraints = {json.dumps([c, p["metadata"].get("namespace")], sort_keys=True)
                       for p in self.bound for c in p["spec"].get("topologySpreadConstraints") or ()
                       if c.get("whenUnsatisfiable") == "DoNotSchedule"}
        out = []
        for constraint, namespace in map(json.loads, sorted(constraints)):
            key = constraint["topologyKey"]
            counts = Counter({n.labels[key]: 0 for n in self.nodes.values() if key in n.labels})
            for p in self.bound:
                domain = self.labels_of_node(p).get(key)
                if (domain is not None and p["metadata"].get("namespace") == namespace
                        and selector_matches(constraint.get("labelSelector"), p["metadata"].get("labels") or {})):
                    counts[domain] += 1
            if counts:
                out.append((max(counts.values()) - min(counts.values()), int(constraint["maxSkew"])))
        return out


@dataclass
class Volumes:
    """The claims (by namespace and name), PVs and CSINodes (by name) read back at the end."""

    claims: dict[tuple[str, str], dict[str, Any]]
    volumes: dict[str, dict[str, Any]]
    csinodes: dict[str, dict[str, Any]]

    @classmethod
    def read(cls, rest: RestClient) -> Volumes:
        return cls({(c["metadata"]["namespace"], c["metadata"]["name"]): c
                    for c in rest.get("/api/v1/persistentvolumeclaims")["items"]},
                   {v["metadata"]["name"]: v for v in rest.get(PV_PATH)["items"]},
                   {n["metadata"]["name"]: n for n in rest.get(CSINODE_PATH)["items"]})

    def csi_volume(self, namespace: str, volume: dict[str, Any]) -> tuple[str, str] | None:
        """(driver, handle) of a pod volume's claim's PV, if it is a CSI one."""
        claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        claim = self.claims.get((namespace, claim_name)) if claim_name else None
        pv = self.volumes.get(((claim or {}).get("spec") or {}).get("volumeName") or "")
        csi = ((pv or {}).get("spec") or {}).get("csi")
        return (csi["driver"], csi["volumeHandle"]) if csi else None

    def limits(self, node: str) -> dict[str, int]:
        """The node's CSINode's ``allocatable.count`` per driver (drivers without one: not limited)."""
        drivers = ((self.csinodes.get(node) or {}).get("spec") or {}).get("drivers") or ()
        return {d["name"]: int(d["allocatable"]["count"]) for d in drivers
                if (d.get("allocatable") or {}).get("count") is not None}


def csi_volume_checks(bound: list[dict[str, Any]], volumes: Volumes | None) -> dict[str, Any]:
    """``csi_limit_violations``: nodes where, for some driver, the distinct CSI volumes (driver and handle) of
    the node's pods outnumber the node's CSINode's count; ``csi_volumes_max``: the most volumes of one driver
    on one node (None when no pod has one); ``csi_volumes_unresolved``: claim volumes of bound pods that lead to
    no CSI PV (their claim unbound, its PV missing or not CSI)."""
    per_node: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    unresolved = 0
    for pod in bound if volumes is not None else ():
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        namespace = pod["metadata"].get("namespace") or "default"
        for volume in pod["spec"].get("volumes") or ():
            if "persistentVolumeClaim" not in volume:
                continue
            found = volumes.csi_volume(namespace, volume)  # type: ignore[union-attr]
            if found is None:
                unresolved += 1
            else:
                per_node[pod["spec"]["nodeName"]][found[0]].add(found[1])
    violations = 0
    for node, drivers in per_node.items():
        limits = volumes.limits(node)  # type: ignore[union-attr]
        violations += any(len(handles) > limits[d] for d, handles in drivers.items() if d in limits)
    counts = [len(handles) for drivers in per_node.values() for handles in drivers.values()]
    return {"csi_limit_violations": violations, "csi_volumes_max": max(counts, default=None),
            "csi_volumes_unresolved": unresolved}


def pod_claim_names(pod: dict[str, Any]) -> list[str]:
    """The ResourceClaims a pod uses: ``resourceClaimName``, or for a template the name its status records."""
    generated = {s["name"]: s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
    out = []
    for entry in pod["spec"].get("resourceClaims") or ():
        name = entry.get("resourceClaimName") or generated.get(entry["name"])
        out.append(name or "")
    return out


def dra_checks(bound: list[dict[str, Any]], claims: Mapping[tuple[str, str], dict[str, Any]] | None) -> dict[str, Any]:
    """``dra_violations``: bound pods with a claim that is missing, not allocated, allocated devices of a pool
    other than the pod's node's (every slice here is its node's pool), or not reserved for the pod; plus devices
    allocated to two claims. ``dra_devices_allocated``: the devices the claims hold at the end."""
    if claims is None:
        return {"dra_violations": 0, "dra_devices_allocated": None}
    violations = 0
    for pod in bound:
        namespace = pod["metadata"].get("namespace") or "default"
        for name in pod_claim_names(pod):
            claim = claims.get((namespace, name)) or {}
            status = claim.get("status") or {}
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or ()
            reserved = {r.get("uid") for r in status.get("reservedFor") or ()}
            violations += (not results or any(r.get("pool") != pod["spec"]["nodeName"] for r in results)
                           or pod["metadata"].get("uid") not in reserved)
    devices = Counter((r.get("driver"), r.get("pool"), r.get("device")) for c in claims.values()
                      for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
                      or ())
    violations += sum(n - 1 for n in devices.values() if n > 1)
    return {"dra_violations": violations, "dra_devices_allocated": len(devices)}


def read_claims(rest: RestClient) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["metadata"]["namespace"], c["metadata"]["name"]): c
            for c in rest.get("/apis/resource.k8s.io/v1/resourceclaims")["items"]}


@dataclass
class Daemons:
    """What SchedulingDaemonSets should end with: a pod of each DaemonSet on each node its created pods name
    (``expected``: (DaemonSet, node) pairs), and the DaemonSets' uids as read back (``uids``, by name)."""

    expected: set[tuple[str, str]]
    uids: dict[str, str]

    @staticmethod
    def named_node(pod: dict[str, Any]) -> str | None:
        """The node a DaemonSet pod's required affinity names (its one term's ``matchFields`` value)."""
        required = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        for term in required.get("nodeSelectorTerms") or ():
            for r in term.get("matchFields") or ():
                if r.get("key") == NODE_NAME_FIELD and r.get("operator") == "In" and len(r.get("values") or ()) == 1:
                    return str(r["values"][0])
        return None

    @staticmethod
    def owner(pod: dict[str, Any]) -> tuple[str, str] | None:
        """(name, uid) of the pod's controlling DaemonSet."""
        for ref in pod["metadata"].get("ownerReferences") or ():
            if ref.get("kind") == "DaemonSet" and ref.get("controller"):
                return ref["name"], ref["uid"]
        return None

    @classmethod
    def of(cls, created: list[dict[str, Any]], uids: dict[str, str]) -> Daemons:
        pairs = {(owner[0], node) for p in created if (owner := cls.owner(p)) and (node := cls.named_node(p))}
        return cls(pairs, uids)

    def missing(self, bound: list[dict[str, Any]]) -> int:
        """Expected (DaemonSet, node) pairs without a bound pod on that node whose controller reference names
        that DaemonSet with its uid."""
        found = {(owner[0], p["spec"]["nodeName"]) for p in bound
                 if (owner := self.owner(p)) and self.uids.get(owner[0]) == owner[1]}
        return len(self.expected - found)


def placement_checks(workload: Workload, pods: dict[str, dict[str, Any]], nodes: dict[str, NodeState],
                     binds: Mapping[str, Bind], init_names: list[str],
                     volumes: Volumes | None = None, *, namespace_labels: Mapping[str, dict[str, str]] | None = None,
                     daemons: Daemons | None = None,
                     claims: Mapping[tuple[str, str], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The counts of ``CHECKS`` (and ``spread_skew``, ``victims``, the CSI volumes' figures) over the final
    objects and the binds the watch saw (victims: init pods bound, then gone); ``volumes``: the claims, PVs and
    CSINodes (None: no pod has a volume); ``namespace_labels``: each namespace's labels (terms'
    ``namespaceSelector``); ``daemons``: the DaemonSet pods that should run where (None: no DaemonSets);
    ``claims``: the ResourceClaims read back (None: no pod has one)."""
    placement = Placement(pods, nodes, {n: b.at for n, b in binds.items()}, namespace_labels)
    out: dict[str, Any] = dict.fromkeys(CHECKS, 0)
    out["overcommitted_nodes"] = sum(1 for n in nodes.values() if n.over())
    for pod in placement.bound:
        spec, node = pod["spec"], nodes.get(pod["spec"]["nodeName"])
        cpu, memory = pod_requests(pod)
        namespace = pod["metadata"].get("namespace") or "default"
        out["unfit_bound"] += node is None or cpu > node.cpu + 1e-9 or memory > node.memory
        out["node_affinity_violations"] += not node_affinity_holds(spec, placement.labels_of_node(pod),
                                                                   spec["nodeName"])
        for term in required_terms(spec.get("affinity"), "podAntiAffinity"):
            out["anti_affinity_violations"] += bool(placement.others(pod, term))
        for term in required_terms(spec.get("affinity"), "podAffinity"):
            alone = not placement.others(pod, term)
            out["pod_affinity_violations"] += alone and placement.first_of(term, namespace) != pod["metadata"]["name"]
    skews = placement.spread_skews()
    out["spread_violations"] = sum(1 for skew, most in skews if skew > most)
    out["spread_skew"] = max((skew for skew, _ in skews), default=None)
    out.update(csi_volume_checks(placement.bound, volumes))
    out["daemon_pods_missing"] = daemons.missing(placement.bound) if daemons is not None else 0
    out["daemon_pods_expected"] = len(daemons.expected) if daemons is not None else None
    out.update(dra_checks(placement.bound, claims))

    # Preemption: the init pods bound and gone at the end, by the node they were bound to.
    victims = Counter(binds[n].node for n in init_names if n in binds and n not in pods)
    out["victims"] = sum(victims.values())
    priority = workload.init.priority or 0
    cpu, memory = pod_requests(workload.init.pod("victim", "default", ""))
    for name, count in victims.items():
        node = nodes.get(name)
        if node is None:
            out["victim_nodes_without_preemptor"] += 1
            continue
        if not any(p > priority for p, _, _ in node.placed):
            out["victim_nodes_without_preemptor"] += 1
        state = node.copy()  # the victims put back one by one, as long as they fit
        for _ in range(count):
            if not state.fits(cpu, memory):
                break
            state.add(priority, cpu, memory)
            out["unneeded_victims"] += 1
    out["failed_checks"] = [c for c in CHECKS if out[c]]
    return out


# -- one run ----------------------------------------------------------------------------------------
def create_volumes(rest: RestClient, workload: Workload, pods: list[dict[str, Any]], threads: int) -> None:
    """Each pod's PV (pre-bound to its claim) and claim (naming the PV, ``bind-completed``), each then given the
    ``Bound`` phase: what upstream's harness leaves with its fake PV controller (a create resets the status)."""
    csi = workload.csi
    assert csi is not None

    def create(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
        pv, claim = pair
        made = rest.post(PV_PATH, pv)
        rest.put(f"{PV_PATH}/{pv['metadata']['name']}/status", {**made, "status": csi.pv_status()})
        path = CLAIM_PATH.format(ns=claim["metadata"]["namespace"])
        made = rest.post(path, claim)
        rest.put(f"{path}/{claim['metadata']['name']}/status", {**made, "status": csi.claim_status()})

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(create, workload.volume_objects(pods)):
            pass


def create_dra_objects(rest: RestClient, objects: list[dict[str, Any]]) -> None:
    """The DRA workloads' class, slices, and templates or claims (as their ``createAny`` ops do)."""
    for kind in DRA_PATHS:
        bodies = [o for o in objects if o["kind"] == kind]
        namespaces = {o["metadata"].get("namespace", "") for o in bodies}
        for namespace in sorted(namespaces):
            path = DRA_PATHS[kind].format(ns=namespace)
            create_all(rest, path, [o for o in bodies if o["metadata"].get("namespace", "") == namespace], THREADS)


def total_cpu_seconds(pids: list[int]) -> float:
    """User and system CPU (s) the processes ``pids`` have used so far (those still alive)."""
    return sum(c for c in map(cpu_seconds, pids) if c is not None)


SERVER_PROGRAMS = ("kube-apiserver", "etcd")


def server_processes(directory: str) -> list[int]:
    """The API server and etcd of the envtest server in ``directory`` (their command lines name it; so does a
    scheduler's ``--kubeconfig``, which is why the program is checked too)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            program = Path(argv[0].decode(errors="replace")).name
            if program in SERVER_PROGRAMS and any(directory.encode() in a for a in argv[1:]):
                out.append(int(entry.name))
    return out


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:  # (state, ppid, pgrp, ...)
            members.append(int(entry.name))
    return members


def group_peak_rss(pgid: int) -> list[float]:
    """``VmHWM`` (MB) of every live process in the process group ``pgid``, the leader first."""
    peaks = [vm_hwm_mb(pid) for pid in sorted(group_members(pgid), key=lambda pid: pid != pgid)]
    return [p for p in peaks if p is not None]


class PerfRun:
    """One workload at one size, in one mode, for one scheduler, on a fresh API server."""

    def __init__(self, cell: Cell, mode: str, kind: str, repeat: int, args: argparse.Namespace, base: Path,
                 version: str | None = None) -> None:
        self.cell, self.mode, self.kind, self.repeat, self.args = cell, mode, kind, repeat, args
        self.version = version or args.version  # a --baseline run: the modern scheduler of that line, on its server
        suffix = "" if self.version == args.version else f"-{self.version}"
        self.dir = base / f"{cell.name}-{mode}-{kind}{suffix}-{repeat}"
        self.dir.mkdir(parents=True)
        self.server = EnvtestServer(self.version, self.dir / "envtest", assets_dir() / "envtest.py")
        self.scheduler_name = SCHEDULER_NAME if kind == "ours" else MODERN_SCHEDULER_NAME
        self.init_bodies = cell.workload.init_pods(cell.init, self.scheduler_name, namespaces=cell.init_namespaces)
        self.measured_bodies = cell.workload.measured_pods(cell.measured, self.scheduler_name, nodes=cell.nodes)
        self.init_names = [b["metadata"]["name"] for b in self.init_bodies]
        self.measured_names = [b["metadata"]["name"] for b in self.measured_bodies]
        self.schedulers: list[SchedulerProcess] = []
        self.watch: PodWatch | None = None
        self.creators: Creators | None = None
        self.controllers: ControllerManager | None = None
        self.server_cpu = 0.0  # the API server's and etcd's CPU (s) when the measurement started
        self.label = f"{cell.name}/{mode} {kind}{suffix.replace('-', ' ')} #{repeat}"

    def identity(self) -> dict[str, Any]:
        """The fields that name the run (in its line, also when it failed)."""
        cell, args = self.cell, self.args
        return {"workload": cell.name, "mode": self.mode, "scheduler": self.kind, "repeat": self.repeat,
                "version": self.version, "scale": args.scale, "seed": args.seed, "commit": args.commit,
                "nodes": cell.nodes, "init_pods": cell.init, "measured_pods": cell.measured,
                "csi_limit": cell.csi_limit}

    def execute(self) -> dict[str, Any]:
        cell, args, w = self.cell, self.args, self.cell.workload
        progress(f"{self.label}: envtest {self.version} in {self.server.dir}")
        SERVERS.append(self.server)
        self.server.start()
        self.rest = RestClient(api_client(self.server.kubeconfig, pool_size=THREADS + 2), qps=0, burst=1)
        for namespace in w.namespace_objects(args.scale):  # (labelled, before any pod)
            try:
                self.rest.post(NAMESPACES_PATH, namespace)
            except ApiError as e:  # kube-system
                if not e.conflict:
                    raise
        ensure_namespaces(self.rest, self.init_bodies + self.measured_bodies)
        owners = {}  # the DaemonSets' uids, for their pods' owner references
        for daemonset in w.daemonset_objects(self.scheduler_name):
            made = self.rest.post(DAEMONSET_PATH.format(ns=daemonset["metadata"]["namespace"]), daemonset)
            owners[made["metadata"]["name"]] = made["metadata"]["uid"]
        for name, value in w.priority_classes:
            self.rest.post("/apis/scheduling.k8s.io/v1/priorityclasses", {"apiVersion": "scheduling.k8s.io/v1",
                           "kind": "PriorityClass", "metadata": {"name": name}, "value": value})
        create_all(self.rest, "/api/v1/nodes", w.nodes(cell.nodes, args.seed, cell.csi_limit), THREADS)
        if w.csi is not None:
            create_all(self.rest, CSINODE_PATH, w.csinodes(cell.nodes, cell.csi_limit), THREADS)
            began = time.monotonic()
            create_volumes(self.rest, w, self.init_bodies + self.measured_bodies, THREADS)
            progress(f"created {cell.nodes} CSINodes (limit {cell.csi_limit}) and "
                     f"{len(self.init_bodies) + len(self.measured_bodies)} bound PVs and claims "
                     f"in {time.monotonic() - began:.1f}s")
        if w.dra is not None:
            began = time.monotonic()
            create_dra_objects(self.rest, w.dra.objects(w.node_names(cell.nodes), self.init_bodies + self.measured_bodies))
            if not w.dra.pods_per_claim:  # the resourceclaim controller makes each pod's claim from the template
                self.controllers = ControllerManager(self.server, self.dir, ("resourceclaim-controller",),
                                                     *CONTROLLER_CLIENT).start()
            progress(f"created the DeviceClass and {cell.nodes} ResourceSlices of {w.dra.per_node} devices "
                     f"in {time.monotonic() - began:.1f}s")
        resource_version = self.rest.get(ALL_PODS, {"limit": 1})["metadata"]["resourceVersion"]
        self.watch = PodWatch(self.server.kubeconfig, resource_version, set(self.measured_names), None,
                              path=ALL_PODS).start()
        self.creators = Creators(self.dir, {
            "kubeconfig": self.server.kubeconfig, "workload": w.name, "measured": cell.measured,
            "scheduler_name": self.scheduler_name, "threads": args.creator_threads, "timeout": args.timeout,
            "nodes": cell.nodes, "owners": owners,
        }, args.creators).start()
        progress(f"created {cell.nodes} nodes; {args.creators} creator processes starting")

        self._start_scheduler(wait_healthy=True)
        create_all(self.rest, POD_PATH, self.init_bodies, THREADS)
        if w.wait_init:
            wait_until(lambda: self._check() and self.watch.bound(self.init_names) >= cell.expected_init,  # type: ignore[union-attr]
                       args.timeout, interval=0.1, what=f"{cell.expected_init} init pods bound")
        else:  # (they never fit) once the scheduler has tried one, it is up: go on
            wait_until(lambda: self._check() and self._tried_init(), args.timeout, interval=0.2,
                       what="the scheduler to try an init pod")
        progress(f"{len(self.init_bodies)} init pods created, {self.watch.bound(self.init_names)} bound")
        if self.mode == "backlog":
            first = self.schedulers[0]
            first.killed = True  # stopped on purpose
            first.child.stop()
            self.creators.go()
            self.creators.join(args.timeout)
            wait_until(lambda: self.watch.seen.issuperset(self.creators.created), 60,  # type: ignore[union-attr]
                       what="the watch to see every measured pod")
            if self.controllers is not None:  # a backlog is ready when the controller has made every pod's claim
                wait_until(lambda: self._claims_made() >= len(self.creators.created), args.timeout,  # type: ignore[union-attr]
                           interval=0.5, what="the resourceclaim controller to make every measured pod's claim")
            progress(f"{len(self.creators.created)} measured pods created; a fresh scheduler starts")
            self.server_cpu = total_cpu_seconds(server_processes(str(self.server.dir)))
            start = time.monotonic()
            self._start_scheduler(wait_healthy=False)
        else:
            self.server_cpu = total_cpu_seconds(server_processes(str(self.server.dir)))
            self.creators.go()
            start = time.monotonic()
            progress(f"creating {len(self.measured_bodies)} measured pods while the scheduler runs")
        ended = self._measure(start)
        return self._result(start, ended)

    def _check(self) -> bool:
        for s in self.schedulers:
            s.check()
        return True

    def _claims_made(self) -> int:
        """The measured pods' claims the resourceclaim controller has made (in the measured pods' namespace)."""
        path = DRA_PATHS["ResourceClaim"].format(ns=self.cell.workload.namespaces[1])
        return len(self.rest.get(path)["items"])

    def _tried_init(self) -> bool:
        """Whether an init pod has a PodScheduled condition (the scheduler tried it)."""
        pods = self.rest.get(POD_PATH.format(ns=self.cell.workload.namespaces[0]))["items"]
        return any(c.get("type") == "PodScheduled" for p in pods if p["metadata"]["name"] in self.init_names
                   for c in (p.get("status") or {}).get("conditions") or ())

    def _start_scheduler(self, wait_healthy: bool) -> None:
        name = f"{self.kind}-{len(self.schedulers) + 1}"
        s = start_scheduler(self.kind, self.cell.workload.feature_gates, self.server.kubeconfig, self.dir, name,
                            False, False, self.version)
        self.schedulers.append(s)
        if wait_healthy and s.kind == "ours":  # (the modern one serves no port: its init pods bound say it is up)
            wait_until(lambda: self._check() and s.healthy(), 60, interval=0.1, what=f"{name} healthy")

    def _measure(self, start: float) -> str:
        """Wait until every measured pod that fits is bound (then for quiet), or the timeout."""
        watch = self.watch
        assert watch is not None
        expected, deadline, report = self.cell.expected_bound, start + self.args.timeout, start + 5
        while (bound := watch.bound(self.measured_names)) < expected:
            self._check()
            if time.monotonic() > deadline:
                return "timeout"
            if time.monotonic() >= report:  # every 5 s
                progress(f"bound {bound}/{expected} measured pods ({report - start:.0f}s)")
                report += 5
            time.sleep(0.05)
        settled = time.monotonic() + QUIET_MAX
        while time.monotonic() - watch.last_change < QUIET and time.monotonic() < settled:
            time.sleep(0.1)
        return "bound"

    def _result(self, start: float, ended: str) -> dict[str, Any]:
        cell, args, watch, creators = self.cell, self.args, self.watch, self.creators
        assert watch is not None and creators is not None
        scheduler = self.schedulers[-1]
        peaks = group_peak_rss(scheduler.child.pid) if scheduler.child.alive() else []
        cpu = total_cpu_seconds(group_members(scheduler.child.pid)) if scheduler.child.alive() else None
        server_cpu = total_cpu_seconds(server_processes(str(self.server.dir))) - self.server_cpu
        phases = scheduler.phase_means_ms() if scheduler.kind == "ours" else dict.fromkeys(PHASES)
        codes = {s.child.name: s.child.stop() for s in self.schedulers}
        if not creators.done:
            creators.join(args.timeout)
        watch.stop()
        pods, nodes = final_state(self.rest, ALL_PODS)

        created = creators.created
        binds = sorted(watch.binds[n].at for n in self.measured_names if n in watch.binds)
        if self.mode == "stream" and created:
            start = min(created.values())  # the first measured create
        latencies = [int((watch.binds[n].at - created[n]) * 1e9) for n in self.measured_names
                     if n in watch.binds and n in created]
        span = binds[-1] - binds[0] if len(binds) > 1 else 0.0
        stream = self.mode == "stream"
        return {
            **self.identity(), "created": len(created), "create_failures": len(creators.failed),
            "init_bound": sum(1 for n in self.init_names if n in watch.binds),
            "bound": sum(1 for n in self.measured_names if (pods.get(n) or {}).get("spec", {}).get("nodeName")),
            "expected_bound": min(cell.expected_bound, len(created)), "ended": ended,
            "pods_per_second": round((len(binds) - 1) / span, 1) if span > 0 else None,
            "pods_per_second_from_start":
                round(len(binds) / (binds[-1] - start), 1) if binds and binds[-1] > start else None,
            "seconds_to_first_bind": round(binds[0] - start, 3) if binds else None,
            "seconds_first_to_last_bind": round(span, 3),
            "cpu_seconds": None if cpu is None else round(cpu, 2),
            "server_cpu_seconds": round(server_cpu, 2),
            **phases,
            "p50_ms": round(percentile_ms(latencies, 50), 1) if stream and latencies else None,
            "p99_ms": round(percentile_ms(latencies, 99), 1) if stream and latencies else None,
            "creator_pods_per_second": creators.rate(), "creators": args.creators,
            "creator_threads": args.creator_threads,
            "peak_rss_mb": round(sum(peaks), 1) if peaks else None,
            "peak_rss_of": "process" if len(peaks) <= 1 else f"sum over its process group ({len(peaks)} processes)",
            "peak_rss_group_max_mb": max(peaks, default=None),
            **placement_checks(cell.workload, pods, nodes, watch.binds, self.init_names,
                               Volumes.read(self.rest) if cell.workload.csi is not None else None,
                               namespace_labels={n["metadata"]["name"]: n["metadata"].get("labels") or {}
                                                 for n in self.rest.get(NAMESPACES_PATH)["items"]},
                               daemons=self._daemons(),
                               claims=read_claims(self.rest) if cell.workload.dra is not None else None),
            "scheduler_exit_codes": codes,
        }

    def _daemons(self) -> Daemons | None:
        """The (DaemonSet, node) pairs of the measured pods, and the DaemonSets' uids read back."""
        if not self.cell.workload.daemonsets:
            return None
        uids = {d["metadata"]["name"]: d["metadata"]["uid"] for d in self.rest.get(ALL_DAEMONSETS)["items"]}
        return Daemons.of(self.measured_bodies, uids)

    def close(self) -> None:
        """Stop whatever this run started (also after an error): the schedulers, the creators, the watch, the
        API server."""
        for s in self.schedulers:
            s.child.stop(timeout=10)
        for part in (self.creators, self.watch):
            if part is not None:
                part.stop()
        if self.controllers is not None:
            self.controllers.stop()
        stop_server(self.server)


# -- the table --------------------------------------------------------------------------------------
def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or not b else f"{a / b:.2f}"


def _problems(kind: str, runs: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in runs:
        if "error" in r:
            out.append(f"{kind} error")
            continue
        if r["bound"] < r["expected_bound"]:
            out.append(f"{kind} {r['bound']}/{r['expected_bound']} bound ({r['ended']})")
        out.extend(f"{kind} {check} {r[check]}" for check in r["failed_checks"])
    return out


def table(lines: list[dict[str, Any]]) -> str:
    """Ours against the modern scheduler of the same line, and, where ``--baseline`` ran, against that line's too
    (the modern scheduler of another line is ``modern <line>``)."""
    main = statistics.mode([str(r.get("version")) for r in lines if r["scheduler"] == "ours"] or
                           [str(r.get("version")) for r in lines])
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for line in lines:
        kind = line["scheduler"] if str(line.get("version")) == main else f"{line['scheduler']} {line.get('version')}"
        groups[(line["workload"], line["mode"])][kind].append(line)
    baselines = sorted({k for kinds in groups.values() for k in kinds if k not in SCHEDULERS})
    head = ["workload", "mode", "ours pods/s", "modern pods/s", "ours/modern", "ours from start", "modern from start",
            "ours/modern from start",
            *(h for b in baselines for h in (f"{b} from start", f"ours/{b} from start")),
            "ours s to first bind", "modern s to first bind", "ours p50/p99 ms", "modern p50/p99 ms",
            "CPU s ours", "CPU s modern", "server CPU s, ours' run", "server CPU s, modern's run",
            "creators pods/s (min)", "peak RSS MB ours", "peak RSS MB modern", "RSS ours/modern", "checks"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = {k: i for i, k in enumerate((*PERF_WORKLOADS, *MODES))}
    for (workload, mode), kinds in sorted(groups.items(), key=lambda kv: tuple(order.get(k, 99) for k in kv[0])):
        ours, modern = (sorted(kinds.get(k, []), key=lambda r: r.get("repeat", 0)) for k in SCHEDULERS)
        rates = [r["creator_pods_per_second"] for r in ours + modern if r.get("creator_pods_per_second")]
        problems = _problems("ours", ours) + _problems("modern", modern) + [
            p for b in baselines for p in _problems(b, kinds.get(b, []))]
        rows.append("| " + " | ".join([
            workload, mode,
            _cell([r.get("pods_per_second") for r in ours]), _cell([r.get("pods_per_second") for r in modern]),
            _ratio(_median(ours, "pods_per_second"), _median(modern, "pods_per_second")),
            _cell([r.get("pods_per_second_from_start") for r in ours]),
            _cell([r.get("pods_per_second_from_start") for r in modern]),
            _ratio(_median(ours, "pods_per_second_from_start"), _median(modern, "pods_per_second_from_start")),
            *(c for b in baselines for c in (
                _cell([r.get("pods_per_second_from_start") for r in kinds.get(b, [])]),
                _ratio(_median(ours, "pods_per_second_from_start"),
                       _median(kinds.get(b, []), "pods_per_second_from_start")))),
            _cell([r.get("seconds_to_first_bind") for r in ours]), _cell([r.get("seconds_to_first_bind") for r in modern]),
            _cell([None if r.get("p50_ms") is None else f"{r['p50_ms']:g}/{r['p99_ms']:g}" for r in ours]),
            _cell([None if r.get("p50_ms") is None else f"{r['p50_ms']:g}/{r['p99_ms']:g}" for r in modern]),
            _cell([r.get("cpu_seconds") for r in ours]), _cell([r.get("cpu_seconds") for r in modern]),
            _cell([r.get("server_cpu_seconds") for r in ours]), _cell([r.get("server_cpu_seconds") for r in modern]),
            f"{min(rates):g}" if rates else "—",
            _cell([r.get("peak_rss_mb") for r in ours]), _cell([r.get("peak_rss_mb") for r in modern]),
            _ratio(_median(ours, "peak_rss_mb"), _median(modern, "peak_rss_mb")),
            "; ".join(problems) or "ok",
        ]) + " |")
    sizes = sorted({(r["workload"], r.get("nodes"), r.get("init_pods"), r.get("measured_pods"), r.get("csi_limit"))
                    for r in lines}, key=lambda size: order.get(size[0], 99))
    notes = [f"- {w}: {n} nodes, {i} init pods, {m} measured pods" + ("" if c is None else f", CSINode limit {c}")
             for w, n, i, m, c in sizes]
    notes.append(f"- versions {sorted({str(r.get('version')) for r in lines})}, commits "
                 f"{sorted({str(r.get('commit')) for r in lines})}; pods/s: (measured pods bound - 1) / (first to "
                 "last measured bind); from start: n / (last measured bind - the scheduler's start (backlog) or "
                 "the first measured create (stream)); ratios of medians; checks: `ok` when every expected pod bound and every "
                 "placement check is 0")
    return "\n".join(rows + [""] + notes) + "\n"


# -- main -------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve-creator", nargs=2, metavar=("SPEC", "INDEX"), help=argparse.SUPPRESS)
    parser.add_argument("--render", type=Path, default=None, help="print the table of these JSON lines and exit")
    parser.add_argument("--workload", action="append", default=None, help="workloads (comma-separated); default all")
    parser.add_argument("--scale", type=int, default=500, choices=SCALES, help="upstream's variant: 500 or 5000 nodes")
    parser.add_argument("--nodes", type=int, default=None, help="override the variant's nodes (pods scale with it)")
    parser.add_argument("--init-pods", type=int, default=None)
    parser.add_argument("--measured-pods", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1, help="the nodes' zones")
    parser.add_argument("--scheduler", default="both", choices=("ours", "modern", "both"))
    parser.add_argument("--mode", default="both", choices=("backlog", "stream", "both"))
    parser.add_argument("--version", default="1.36", choices=VERSIONS, help="envtest line (server and modern)")
    parser.add_argument("--baseline", default=None, choices=VERSIONS,
                        help="also run this line's modern scheduler on its own server: a second modern column")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--csi-limit", type=int, default=None,
                        help="the CSINodes' volume count of the volume workloads (default: upstream's 39)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run's measurement (and init pods)")
    parser.add_argument("--creators", type=int, default=4, help="processes creating the measured pods")
    parser.add_argument("--creator-threads", type=int, default=4, help="threads (and connections) per creator")
    parser.add_argument("--table", type=Path, default=None, help="also write the markdown table to this file")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = parser.parse_args(argv)
    args.schedulers = list(SCHEDULERS) if args.scheduler == "both" else [args.scheduler]
    if args.baseline == args.version:
        args.baseline = None
    args.modes = list(MODES) if args.mode == "both" else [args.mode]
    dra_served = tuple(int(x) for x in args.version.split(".")) >= tuple(int(x) for x in DRA_FROM.split("."))
    everything = tuple(n for n in PERF_WORKLOADS if dra_served or n not in DRA_WORKLOADS)
    args.workload = _choices(args.workload or ["all"], tuple(PERF_WORKLOADS), "workload", everything=everything)
    if not dra_served and any(n in DRA_WORKLOADS for n in args.workload):
        raise SystemExit(f"--workload {','.join(n for n in args.workload if n in DRA_WORKLOADS)}: DRA needs a server "
                         f"of {DRA_FROM} or newer (resource.k8s.io/v1): --version 1.36")
    return args


def runs(args: argparse.Namespace) -> Iterator[tuple[Cell, str, int, str, str]]:
    """Per workload and mode, the schedulers interleaved: ours first on odd repeats, modern first on even; then
    the ``--baseline`` line's modern scheduler (not for the DRA workloads, which it cannot serve)."""
    for cell in cells(args):
        for mode in args.modes:
            for repeat in range(1, args.repeat + 1):
                for kind in args.schedulers if repeat % 2 else args.schedulers[::-1]:
                    yield cell, mode, repeat, kind, args.version
                if args.baseline and cell.name not in DRA_WORKLOADS:
                    yield cell, mode, repeat, "modern", args.baseline


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_creator:
        return serve_creator(args.serve_creator[0], int(args.serve_creator[1]))
    return run_benchmark("scheduler_perf", args, lambda base: [
        functools.partial(PerfRun, cell, mode, kind, repeat, args, base, version)
        for cell, mode, repeat, kind, version in runs(args)],
        table, errors=(*RUN_ERRORS, ValueError))


if __name__ == "__main__":
    raise SystemExit(main())
