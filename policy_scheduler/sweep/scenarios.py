"""What-if scenarios: a snapshot changed before its pending pods are scheduled (or a template counted).

Each scenario is a pure function of the snapshot it is given (the cached one is never changed: a changed
snapshot is a new :class:`~..offline.snapshot.Snapshot` with new lists), so every executor gives the same
rows. docs/sweep.md defines each kind; in short:

* ``as-is``: the snapshot's pending pods, as ``simulate`` schedules them;
* ``scale``: each workload's pending pods (the pods of one controller; a pod without one is a workload of
  its own) become ``round(n * factor)`` (half up): copies of its pods, in turn, queued right after them; a
  factor below 1 leaves out the last ones in queue order;
* ``drain``: the nodes chosen (by name, label selector or zone) are cordoned and their pods pending again,
  queued after every other pending pod, except DaemonSet and mirror (static) pods, which stay;
* ``add-nodes``: ``count`` copies of node ``like`` (labels, taints, conditions, allocatable; no images
  pulled), named ``<like>-added-<i>``, with a copy of its CSINode if it has one;
* ``capacity``: how many copies of a pod template fit (``capacity``), on the snapshot as it is.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, ClassVar

from ..errors import UserError
from ..model.labels import SelectorError, label_selector
from ..model.node import Node
from ..model.pod import Pod
from ..model.priority import MIRROR_POD_ANNOTATION
from ..offline.results import node_zone, workload_of
from ..offline.snapshot import Snapshot

HOSTNAME_LABEL = "kubernetes.io/hostname"


class ScenarioError(UserError):
    """A scenario cannot be applied to a snapshot (a node it names is not there): that cell's row says so."""


@dataclass(frozen=True)
class Scenario:
    """A what-if. ``name`` identifies it in the rows; ``entry`` is what the specification said (its part of
    a cell's fingerprint)."""

    kind: ClassVar[str] = "as-is"
    name: str
    entry: Any = field(default=None, compare=False)

    def apply(self, snapshot: Snapshot, scheduler_name: str) -> Snapshot:
        """The snapshot whose pending pods are scheduled (``capacity`` counts on the snapshot as it is)."""
        return snapshot

    def weight(self) -> float:
        """How much this scenario multiplies a cell's work (only the order cells are started in reads it)."""
        return 1.0


@dataclass(frozen=True)
class AsIs(Scenario):
    kind: ClassVar[str] = "as-is"


@dataclass(frozen=True)
class Scale(Scenario):
    kind: ClassVar[str] = "scale"
    factor: float = 1.0

    def apply(self, snapshot: Snapshot, scheduler_name: str) -> Snapshot:
        groups: dict[str, list[Pod]] = {}
        for pod in snapshot.pending_pods(scheduler_name):
            groups.setdefault(workload_of(pod) or f"Pod {pod.ref}", []).append(pod)
        taken = {(p.namespace, p.name) for p in snapshot.pods}
        dropped: set[str] = set()
        added: list[Pod] = []
        for pods in groups.values():
            target = int(len(pods) * self.factor + 0.5)
            dropped.update(p.key for p in pods[target:])
            for k in range(target - len(pods)):
                source = pods[k % len(pods)]
                added.append(_copy_pod(source, f"{source.name}-scale-{k // len(pods) + 1}", taken, snapshot))
        return dataclasses.replace(snapshot, pods=[p for p in snapshot.pods if p.key not in dropped] + added)

    def weight(self) -> float:
        return self.factor


@dataclass(frozen=True)
class Drain(Scenario):
    kind: ClassVar[str] = "drain"
    nodes: tuple[str, ...] = ()
    selector: Mapping[str, Any] | None = field(default=None, hash=False)
    zone: str | None = None

    def chosen(self, snapshot: Snapshot) -> list[Node]:
        """The nodes drained, in the snapshot's order; naming a node it does not have, or choosing none, is an error."""
        if self.nodes:
            known = {n.name for n in snapshot.nodes}
            missing = [n for n in self.nodes if n not in known]
            if missing:
                raise ScenarioError(f"scenario {self.name!r}: drain: no node {', '.join(missing)} in the snapshot")
            return [n for n in snapshot.nodes if n.name in self.nodes]
        if self.zone is not None:
            chosen = [n for n in snapshot.nodes if node_zone(n.labels) == self.zone]
            what = f"no node in zone {self.zone}"
        else:
            selector = label_selector(self.selector)
            chosen = [n for n in snapshot.nodes if selector.matches(n.labels)]
            what = "the selector matches no node"
        if not chosen:
            raise ScenarioError(f"scenario {self.name!r}: drain: {what} in the snapshot")
        return chosen

    def apply(self, snapshot: Snapshot, scheduler_name: str) -> Snapshot:
        drained = {n.name for n in self.chosen(snapshot)}
        nodes = [_cordoned(n) if n.name in drained else n for n in snapshot.nodes]
        evicted = [p for p in snapshot.bound_pods() if p.node_name in drained and _evicted_by_drain(p)]
        gone = {p.key for p in evicted}
        # Re-created by their controllers after the drain: queued after every pod the snapshot has.
        stamp = _later_than(p.creation_timestamp for p in snapshot.pods)
        requeued = [_pending_again(p, stamp, snapshot) for p in evicted]
        return dataclasses.replace(snapshot, nodes=nodes, pods=[p for p in snapshot.pods if p.key not in gone] + requeued)

    def weight(self) -> float:
        return 1.2


@dataclass(frozen=True)
class AddNodes(Scenario):
    kind: ClassVar[str] = "add-nodes"
    like: str = ""
    count: int = 1

    def apply(self, snapshot: Snapshot, scheduler_name: str) -> Snapshot:
        model = next((n for n in snapshot.nodes if n.name == self.like), None)
        if model is None:
            raise ScenarioError(f"scenario {self.name!r}: add-nodes: no node {self.like} in the snapshot")
        taken = {n.name for n in snapshot.nodes}
        names = []
        for i in range(1, self.count + 1):
            name = f"{self.like}-added-{i}"
            while name in taken:
                name += "-x"
            taken.add(name)
            names.append(name)
        csi = next((c for c in snapshot.csi_nodes if c.name == self.like), None)
        return dataclasses.replace(
            snapshot, nodes=[*snapshot.nodes, *(_node_like(model, name) for name in names)],
            csi_nodes=[*snapshot.csi_nodes, *(dataclasses.replace(csi, name=name) for name in names if csi is not None)])

    def weight(self) -> float:
        return 1.0 + min(self.count, 100) / 100


@dataclass(frozen=True)
class Capacity(Scenario):
    kind: ClassVar[str] = "capacity"
    template: Mapping[str, Any] = field(default_factory=dict, hash=False)  # the Pod, API defaults applied
    max_replicas: int | None = None


KINDS: dict[str, type[Scenario]] = {c.kind: c for c in (AsIs, Scale, Drain, AddNodes, Capacity)}


def default_name(kind: str, args: Mapping[str, Any]) -> str:
    """A scenario's name when the specification gives none: its kind and arguments, short."""
    if kind == "scale":
        return f"scale x{args['factor']:g}"
    if kind == "drain":
        if "nodes" in args:
            nodes = args["nodes"]
            return f"drain {', '.join(nodes)}" if len(nodes) <= 3 else f"drain {len(nodes)} nodes"
        if "zone" in args:
            return f"drain zone {args['zone']}"
        return f"drain {selector_text(args['selector'])}"
    if kind == "add-nodes":
        return f"add {args['count']} x {args['like']}"
    if kind == "capacity":
        extra = f" max {args['max']}" if args.get("max") is not None else ""
        return f"capacity {Path(args['template']).name}{extra}"
    return kind


def selector_text(selector: Mapping[str, Any]) -> str:
    """A LabelSelector as kubectl's ``-l`` syntax: ``app=web,tier in (a,b),!legacy``."""
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or ():
        op, key, values = e["operator"], e["key"], ",".join(e.get("values") or ())
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}[op])
    return ",".join(parts)


def check_selector(selector: Mapping[str, Any]) -> str | None:
    """Why a drain selector is invalid (as the API server would say), None when it is valid."""
    try:
        label_selector(selector)
    except SelectorError as e:
        return str(e)
    return None


# -- building the changed objects ----------------------------------------------------------------------
def _copy_pod(pod: Pod, name: str, taken: set[tuple[str, str]], snapshot: Snapshot) -> Pod:
    while (pod.namespace, name) in taken:
        name += "-x"
    taken.add((pod.namespace, name))
    raw = copy.deepcopy(pod.raw)
    meta = raw["metadata"]
    meta["name"] = name
    meta["uid"] = f"{pod.uid or pod.ref}/{name}"
    return Pod(raw, snapshot.rules)


def _cordoned(node: Node) -> Node:
    raw = {**node.raw, "spec": {**(node.raw.get("spec") or {}), "unschedulable": True}}
    return Node(raw)


def _evicted_by_drain(pod: Pod) -> bool:
    """``kubectl drain --ignore-daemonsets``: every pod but DaemonSet and mirror pods leaves the node."""
    ref = pod.controller_ref()
    return (ref is None or ref.kind != "DaemonSet") and MIRROR_POD_ANNOTATION not in pod.annotations


def _later_than(stamps: Any) -> str:
    """One second after the latest RFC 3339 timestamp of ``stamps`` ("" when none can be read)."""
    latest = None
    for text in stamps:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is None:  # RFC 3339 has an offset; read one without it as UTC
            moment = moment.replace(tzinfo=timezone.utc)
        latest = moment if latest is None or moment > latest else latest
    if latest is None:
        return ""
    return (latest + timedelta(seconds=1)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pending_again(pod: Pod, stamp: str, snapshot: Snapshot) -> Pod:
    raw = copy.deepcopy(pod.raw)
    raw["spec"].pop("nodeName", None)
    raw["status"] = {"phase": "Pending"}
    if stamp:
        raw["metadata"]["creationTimestamp"] = stamp
    return Pod(raw, snapshot.rules)


def _node_like(model: Node, name: str) -> Node:
    raw = copy.deepcopy(model.raw)
    meta = raw["metadata"]
    meta["name"] = name
    meta.pop("uid", None)
    labels = meta.get("labels")
    if isinstance(labels, dict) and HOSTNAME_LABEL in labels:
        labels[HOSTNAME_LABEL] = name
    for key in ("providerID", "externalID", "podCIDR", "podCIDRs"):
        (raw.get("spec") or {}).pop(key, None)
    status = raw.get("status")
    if isinstance(status, dict):
        status.pop("images", None)
    return Node(raw)
