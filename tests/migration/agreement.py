"""Helpers of ``test_agreement.py``: one scenario run by our engine offline (``simulate --rules 1.9``) and by
the real modern kube-scheduler started with ``migrate``'s configuration, and the outcomes compared.

A scenario is a small cluster (Ready, schedulable nodes; PVs, PVCs and pods already bound where it needs
them) and pods in queue order. Ours: ``simulate`` takes them in that order, assuming each before the next.
Modern: the pods are created one at a time and each is waited for until it is bound or reported
unschedulable (``PodScheduled=False``, the condition the kube-scheduler sets with its FailedScheduling
event) before the next is created.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks.harness.daemon import node, pod, wait_until
from benchmarks.harness.envtest import EnvtestServer
from policy_scheduler.kube.client.rest import ApiError, RestClient
from tests.kube.reference import ReferenceScheduler

SCHEDULER_NAME = "migrated"
NAMESPACE = "default"
HOSTNAME = "kubernetes.io/hostname"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
#: Seconds a pod may take to be bound or reported unschedulable (the first includes the scheduler's start).
DECISION_TIMEOUT = 30.0

#: Reason families: the same refusal as 1.9 names it (the predicate's name, ``predicates/reasons.py``) and
#: as the modern plugins word it.
FAMILIES: dict[str, re.Pattern[str]] = {
    "resources": re.compile(r"Insufficient |Too many pods"),
    "ports": re.compile(r"PodFitsHostPorts|free ports"),
    "hostname": re.compile(r"\bHostName\b|requested (hostname|node name)"),
    "node-selector": re.compile(r"MatchNodeSelector|node selector|node affinity/selector"),
    "disk": re.compile(r"NoDiskConflict|no available disk"),
    "volume-zone": re.compile(r"NoVolumeZoneConflict|no available volume zone"),
    "inter-pod-affinity": re.compile(r"MatchInterPodAffinity|AffinityRulesNotMatch|pods? (anti-)?affinity"),
    "taints": re.compile(r"PodToleratesNodeTaints|taint"),
    "topology-spread": re.compile(r"topology spread"),
    "node-features": re.compile(r"NodeDeclaredFeatures|required features"),
}


def families(message: str) -> frozenset[str]:
    """The reason families a 'no node fits' message names."""
    return frozenset(name for name, pattern in FAMILIES.items() if pattern.search(message))


@dataclass
class Scenario:
    """``entry``: the Policy entry under test; ``policy``: the Policy (naming only that entry, plus
    PodFitsResources for priorities); ``cluster``: nodes, storage and bound pods; ``pods``: the pending
    pods in queue order. ``pending`` (predicates): the pods that must stay pending, each with its reason
    family (``""``: a scheduling error, no family); ``hosts`` (priorities): where each pod must go.
    ``rules``: ``1.9`` or ``cluster``. A known disagreement sets ``modern_pending``, what the modern
    kube-scheduler leaves pending instead, and ``disagreement``, why. ``since``: the first line whose API
    server keeps the fields the scenario needs (``""``: every line)."""

    id: str
    entry: str
    kind: str
    policy: dict[str, Any]
    cluster: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    pending: dict[str, str] = field(default_factory=dict)
    hosts: dict[str, str] = field(default_factory=dict)
    rules: str = "1.9"
    note: str = ""
    modern_pending: dict[str, str] | None = None
    disagreement: str = ""
    since: str = ""

    @property
    def names(self) -> list[str]:
        return [p["metadata"]["name"] for p in self.pods]


@dataclass
class Outcome:
    """Where each pod went ("" when pending) and, for the pending ones, the 'no node fits' message."""

    hosts: dict[str, str]
    messages: dict[str, str]

    @property
    def pending(self) -> list[str]:
        return [name for name, host in self.hosts.items() if not host]

    @property
    def bound(self) -> dict[str, str]:
        return {name: host for name, host in self.hosts.items() if host}

    def families(self) -> dict[str, frozenset[str]]:
        return {name: families(self.messages.get(name, "")) for name in self.pending}

    def describe(self, kind: str) -> str:
        if kind == "priority":
            return ", ".join(f"{name}→{host or 'pending'}" for name, host in self.hosts.items())
        pending = ", ".join(f"{name} ({'/'.join(sorted(families(self.messages.get(name, '')))) or 'other'})"
                            for name in self.pending)
        return f"pending: {pending or 'none'}"


# -- objects ------------------------------------------------------------------------------------------
def ready_node(name: str, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None,
               taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    obj = node(name, cpu=cpu, memory=memory, labels=labels)
    if taints:
        obj["spec"]["taints"] = taints
    return obj


def pending_pod(name: str, cpu: str = "100m", memory: str = "64Mi", labels: dict[str, str] | None = None,
                **spec: Any) -> dict[str, Any]:
    return pod(name, cpu=cpu, memory=memory, scheduler=SCHEDULER_NAME, labels=labels or {"app": name}, **spec)


def bound_pod(name: str, node_name: str, cpu: str = "100m", memory: str = "64Mi",
              labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return pod(name, cpu=cpu, memory=memory, scheduler=SCHEDULER_NAME, labels=labels or {"app": name},
               node_name=node_name, **spec)


def policy(predicates: list[str], priorities: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    return {"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": n} for n in predicates],
            "priorities": priorities or [], **fields}


# -- ours: simulate offline ---------------------------------------------------------------------------
def _command() -> list[str]:
    exe = shutil.which("policy-scheduler")
    return [exe] if exe else [sys.executable, "-m", "policy_scheduler.cli"]


def cli_json(*args: str) -> dict[str, Any]:
    done = subprocess.run([*_command(), *args, "-o", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"policy-scheduler {' '.join(args)}: exit {done.returncode}\n{done.stderr}"
    return json.loads(done.stdout)


def write_policy(scenario: Scenario, directory: Path) -> Path:
    path = directory / f"{scenario.id}.policy.json"
    path.write_text(json.dumps(scenario.policy, indent=1))
    return path


def offline_manifests(scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's objects as ``simulate --cluster`` reads them: namespaced, the pending pods created one
    second apart in queue order."""
    objects = []
    for obj in scenario.cluster:
        obj = json.loads(json.dumps(obj))
        if obj["kind"] in ("Pod", "PersistentVolumeClaim"):
            obj["metadata"]["namespace"] = NAMESPACE
        objects.append(obj)
    for i, p in enumerate(scenario.pods):
        p = json.loads(json.dumps(p))
        p["metadata"].update(namespace=NAMESPACE, creationTimestamp=f"2024-01-01T00:00:{i:02d}Z")
        objects.append(p)
    return objects


def ours(scenario: Scenario, directory: Path) -> tuple[Outcome, dict[str, Any]]:
    """``simulate --cluster DIR --policy-config-file P --rules R --explain``: the outcome and the raw result."""
    cluster = directory / "cluster"
    cluster.mkdir(parents=True, exist_ok=True)
    (cluster / "objects.yaml").write_text(yaml.safe_dump_all(offline_manifests(scenario)))
    result = cli_json("simulate", "--cluster", str(cluster), "--policy-config-file", str(write_policy(scenario, directory)),
                      "--rules", scenario.rules, "--scheduler-name", SCHEDULER_NAME, "--explain")
    hosts: dict[str, str] = {}
    messages: dict[str, str] = {}
    for placement in result["placements"]:
        name = placement["pod"].split("/", 1)[1]
        hosts[name] = placement["node"] or ""
        if not placement["node"]:
            messages[name] = placement["error"] or ""
    assert set(hosts) == set(scenario.names), (sorted(hosts), scenario.names)
    return Outcome({name: hosts[name] for name in scenario.names}, messages), result


def unique_best(result: dict[str, Any]) -> dict[str, list[str]]:
    """For each placed pod of ``simulate --explain``, the nodes sharing the best total score (one when the
    choice was not a tie)."""
    out = {}
    for placement in result["placements"]:
        explain = placement.get("explain") or {}
        totals = {n: v["total"] for n, v in (explain.get("nodes") or {}).items() if v.get("fit")}
        if placement["node"] and totals:
            best = max(totals.values())
            out[placement["pod"].split("/", 1)[1]] = sorted(n for n, t in totals.items() if t == best)
    return out


# -- modern: the real kube-scheduler ------------------------------------------------------------------
def migrated(scenario: Scenario, version: str, directory: Path) -> dict[str, Any]:
    """``migrate --policy-config-file P --rules R --to V --scheduler-name migrated -o json``."""
    return cli_json("migrate", "--policy-config-file", str(write_policy(scenario, directory)), "--rules", scenario.rules,
                    "--to", version, "--scheduler-name", SCHEDULER_NAME)


COLLECTIONS = (f"/api/v1/namespaces/{NAMESPACE}/pods", f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims",
               "/api/v1/persistentvolumes", "/api/v1/nodes")


def clear(rest: RestClient) -> None:
    """Delete every pod (grace 0: there is no kubelet), PVC, PV and node, and wait until they are gone."""
    for path in COLLECTIONS:
        rest.delete(path, {"gracePeriodSeconds": "0"})
    wait_until(lambda: all(not rest.get(path)["items"] for path in COLLECTIONS), 30, what="an empty cluster")


def _create(rest: RestClient, obj: dict[str, Any]) -> None:
    obj = json.loads(json.dumps(obj))
    status = obj.pop("status", None)
    kind = obj["kind"]
    if kind == "Node":
        rest.post("/api/v1/nodes", {**obj, "status": status})
        return
    path = {"Pod": f"/api/v1/namespaces/{NAMESPACE}/pods",
            "PersistentVolumeClaim": f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims",
            "PersistentVolume": "/api/v1/persistentvolumes"}[kind]
    created = rest.post(path, obj)
    if status and kind != "Pod":
        # a PV's and a PVC's phase is set through the status subresource only
        created["status"] = status
        rest.put(f"{path}/{obj['metadata']['name']}/status", created)


def _decision(rest: RestClient, name: str) -> tuple[str, str] | None:
    """('node', '') once bound, ('', message) once reported unschedulable, else None."""
    try:
        p = rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
    except ApiError as e:
        if e.not_found:
            return None
        raise
    if p["spec"].get("nodeName"):
        return p["spec"]["nodeName"], ""
    for c in p.get("status", {}).get("conditions") or ():
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return "", c.get("message") or c.get("reason") or "unschedulable"
    return None


def modern(server: EnvtestServer, scenario: Scenario, configuration: dict[str, Any], log_dir: Path) -> Outcome:
    """Clear the cluster, create the scenario's cluster, start the kube-scheduler with ``configuration``,
    then create the pods one at a time, each decided before the next; the pods' final state."""
    rest = server.rest()
    clear(rest)
    for obj in scenario.cluster:
        _create(rest, obj)
    reference = ReferenceScheduler(server, log_dir, configuration=configuration).start()
    messages: dict[str, str] = {}
    try:
        for p in scenario.pods:
            name = p["metadata"]["name"]
            _create(rest, p)
            try:
                _, message = wait_until(lambda n=name: _decision(rest, n), DECISION_TIMEOUT, interval=0.05,
                                        what=f"{scenario.id}/{name} bound or unschedulable")
            except AssertionError as e:
                raise AssertionError(f"{e}\n--- kube-scheduler {server.version} log:\n{reference.log()[-4000:]}") from None
            if message:
                messages[name] = message
            assert not reference.exited(), reference.log()[-4000:]
        time.sleep(0.2)  # a retry the last bind triggered (none of the scenarios should have one)
        items = {p["metadata"]["name"]: p for p in rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]}
    finally:
        reference.stop()
    hosts = {name: items[name]["spec"].get("nodeName") or "" for name in scenario.names}
    for name, host in hosts.items():
        if not host:
            for c in items[name].get("status", {}).get("conditions") or ():
                if c["type"] == "PodScheduled" and c.get("message"):
                    messages[name] = c["message"]
    return Outcome(hosts, {name: messages[name] for name in hosts if not hosts[name] and name in messages})


# -- the table ------------------------------------------------------------------------------------------
@dataclass
class Row:
    scenario: str
    entry: str
    version: str
    ours: str
    modern: str
    agree: bool


COLUMNS = ("scenario", "Policy entry", "version", "ours (pending pods or hosts)", "modern", "agree")


def markdown(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in sorted(rows, key=lambda r: (r.scenario, r.version)):
        cells = (r.scenario, r.entry, r.version, r.ours, r.modern, "yes" if r.agree else "**NO**")
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_table(root: Path, title: str, rows: list[Row]) -> None:
    """``root/migration-agreement.md``: the table of every row this test run has made. Under pytest-xdist each
    worker holds some of the rows, so each writes its own to a file of the run's (``PYTEST_XDIST_TESTRUNUID``) and
    renders the table from all of them, under a lock: the last worker to finish writes the whole table."""
    root.mkdir(parents=True, exist_ok=True)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "serial")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(root / "migration-agreement.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for stale in root.glob("migration-agreement-rows-*.json"):
            if not stale.name.startswith(f"migration-agreement-rows-{run}-"):
                stale.unlink()
        (root / f"migration-agreement-rows-{run}-{worker}.json").write_text(json.dumps([asdict(r) for r in rows]))
        every = [Row(**r) for f in sorted(root.glob(f"migration-agreement-rows-{run}-*.json"))
                 for r in json.loads(f.read_text())]
        (root / "migration-agreement.md").write_text(f"# {title}\n\n{markdown(every)}")
