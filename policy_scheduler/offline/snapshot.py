"""Cluster snapshots from manifests: YAML/JSON files and directories, as ``kubectl get -o yaml`` prints
them or as operators write them.

Objects pass through the defaulting the API server would have applied to them (namespace ``default``
for namespaced objects, node allocatable from capacity) and are then parsed once into the engine's
types. Kinds the scheduler does not read are skipped and counted. A malformed object is a
:class:`SnapshotError` naming the file, the document index, the object and the field.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..cache.cluster import ClusterState
from ..errors import ObjectError, SnapshotError
from ..model.fields import describe
from ..model.node import Node
from ..model.pod import Pod
from ..model.quantity import parse_quantity
from ..model.volumes import PersistentVolume, PersistentVolumeClaim, StorageClass
from ..model.workloads import LabelSelectedController, ReplicationController, Service

# kind -> accepted apiVersions (1.9-era and current).
KINDS: dict[str, tuple[str, ...]] = {
    "Node": ("v1",),
    "Pod": ("v1",),
    "Service": ("v1",),
    "ReplicationController": ("v1",),
    "ReplicaSet": ("extensions/v1beta1", "apps/v1beta2", "apps/v1"),
    "StatefulSet": ("apps/v1beta1", "apps/v1beta2", "apps/v1"),
    "PersistentVolume": ("v1",),
    "PersistentVolumeClaim": ("v1",),
    "StorageClass": ("storage.k8s.io/v1", "storage.k8s.io/v1beta1"),
    "ConfigMap": ("v1",),
}
CLUSTER_SCOPED = {"Node", "PersistentVolume", "StorageClass"}
MANIFEST_SUFFIXES = {".yaml", ".yml", ".json"}
TERMINATED_PHASES = {"Succeeded", "Failed"}


@dataclass
class Snapshot:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    replication_controllers: list[ReplicationController] = field(default_factory=list)
    replica_sets: list[LabelSelectedController] = field(default_factory=list)
    stateful_sets: list[LabelSelectedController] = field(default_factory=list)
    persistent_volumes: list[PersistentVolume] = field(default_factory=list)
    persistent_volume_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    storage_classes: list[StorageClass] = field(default_factory=list)
    config_maps: list[dict] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    sources: list[str] = field(default_factory=list)

    def bound_pods(self) -> list[Pod]:
        """Pods the scheduler cache holds: assigned to a node and not terminated."""
        return [p for p in self.pods if p.node_name and p.phase not in TERMINATED_PHASES]

    def pending_pods(self, scheduler_name: str = "default-scheduler") -> list[Pod]:
        """Pods this scheduler would schedule, in queue order: creationTimestamp, then namespace/name."""
        pending = [
            p for p in self.pods
            if not p.node_name and p.phase not in TERMINATED_PHASES and p.scheduler_name == scheduler_name
        ]
        return sorted(pending, key=lambda p: (p.creation_timestamp, p.namespace, p.name))

    def find_pod(self, ref: str) -> Pod:
        namespace, sep, name = ref.partition("/")
        if not sep:
            namespace, name = "default", ref
        for p in self.pods:
            if p.namespace == namespace and p.name == name:
                return p
        raise SnapshotError(f"pod {namespace}/{name} is not in the snapshot")

    def cluster_state(self) -> ClusterState:
        """A scheduler cache holding the nodes, bound pods and every lister's objects."""
        cluster = ClusterState()
        for node in self.nodes:
            cluster.add_node(node)
        for pod in self.bound_pods():
            cluster.add_pod(pod)
        for svc in self.services:
            cluster.add_service(svc)
        for rc in self.replication_controllers:
            cluster.add_replication_controller(rc)
        for rs in self.replica_sets:
            cluster.add_replica_set(rs)
        for ss in self.stateful_sets:
            cluster.add_stateful_set(ss)
        for pv in self.persistent_volumes:
            cluster.add_persistent_volume(pv)
        for pvc in self.persistent_volume_claims:
            cluster.add_persistent_volume_claim(pvc)
        for sc in self.storage_classes:
            cluster.add_storage_class(sc)
        return cluster


def load_snapshot(paths: Iterable[str | Path]) -> Snapshot:
    """Load every manifest under ``paths`` (files or directories, recursively, sorted)."""
    snapshot = Snapshot()
    seen: dict[tuple[str, str, str], str] = {}
    for path in _manifest_files(paths):
        snapshot.sources.append(str(path))
        for index, obj in _documents(path):
            add_object(snapshot, obj, f"{path}: document {index}", seen)
    return snapshot


def load_objects(objects: Iterable[dict[str, Any]], source: str) -> Snapshot:
    """Build a snapshot from already-decoded objects (e.g. read from an API server)."""
    snapshot = Snapshot(sources=[source])
    seen: dict[tuple[str, str, str], str] = {}
    for i, obj in enumerate(objects):
        add_object(snapshot, obj, f"{source}: object {i}", seen)
    return snapshot


def _manifest_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
            if not files:
                raise SnapshotError(f"{path}: no .yaml, .yml or .json files in this directory")
            yield from files
        elif path.is_file():
            yield path
        else:
            raise SnapshotError(f"{path}: no such file or directory")


def _documents(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{path}: cannot read: {e}") from None
    if path.suffix == ".json":
        try:
            docs = [json.loads(text)]
        except json.JSONDecodeError as e:
            raise SnapshotError(f"{path}: invalid JSON: {e}") from None
    else:
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as e:
            raise SnapshotError(f"{path}: invalid YAML: {' '.join(str(e).split())}") from None
    for index, doc in enumerate(docs):
        if doc is not None:
            yield index, doc


def add_object(snapshot: Snapshot, obj: Any, where: str, seen: dict[tuple[str, str, str], str]) -> None:
    if not isinstance(obj, dict):
        raise SnapshotError(f"{where}: expected a Kubernetes object, got {type(obj).__name__}")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise SnapshotError(f"{where}: kind: missing")
    if kind == "List" or kind.endswith("List") and isinstance(obj.get("items"), list):
        items = obj.get("items")
        if not isinstance(items, list):
            raise SnapshotError(f"{where}: {kind}: items: expected a list")
        item_kind = kind[: -len("List")] if kind != "List" else None
        for i, item in enumerate(items):
            if item_kind and isinstance(item, dict) and "kind" not in item:
                item = {**item, "kind": item_kind, "apiVersion": obj.get("apiVersion")}
            add_object(snapshot, item, f"{where} item {i}", seen)
        return
    if kind not in KINDS:
        snapshot.skipped[kind] += 1
        return
    api_version = obj.get("apiVersion")
    if api_version not in KINDS[kind]:
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
        what = f"{kind} {name}" if name else kind
        raise SnapshotError(
            f"{where}: {what}: apiVersion: {api_version!r} is not one of {', '.join(KINDS[kind])}"
        )
    obj = _apply_api_defaults(kind, obj, where)
    meta = obj["metadata"]
    key = (kind, meta.get("namespace", ""), meta["name"])
    if key in seen:
        ref = f"{key[1]}/{key[2]}" if key[1] else key[2]
        raise SnapshotError(f"{where}: {kind} {ref}: already defined at {seen[key]}")
    seen[key] = where
    try:
        _parse_into(snapshot, kind, obj)
    except ObjectError as e:
        raise SnapshotError(f"{where}: {e}") from None


def _apply_api_defaults(kind: str, obj: dict[str, Any], where: str) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise SnapshotError(f"{where}: {kind}: metadata: missing")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise SnapshotError(f"{where}: {kind}: metadata.name: missing")
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise SnapshotError(f"{where}: {kind} {name}: metadata.namespace: expected a string, got {describe(namespace)}")
    obj = dict(obj)
    if kind not in CLUSTER_SCOPED and not namespace:
        obj["metadata"] = {**meta, "namespace": "default"}
    if kind == "Node" and isinstance(obj.get("status") or {}, dict):
        status = obj.get("status") or {}
        if status.get("allocatable") is None and status.get("capacity") is not None:
            obj["status"] = {**status, "allocatable": status["capacity"]}
    return obj


def _parse_into(snapshot: Snapshot, kind: str, obj: dict[str, Any]) -> None:
    if kind == "Node":
        node = Node(obj)
        _validate_node(node)
        snapshot.nodes.append(node)
    elif kind == "Pod":
        pod = Pod(obj)
        _validate_pod(pod)
        snapshot.pods.append(pod)
    elif kind == "Service":
        snapshot.services.append(Service.from_dict(obj))
    elif kind == "ReplicationController":
        snapshot.replication_controllers.append(ReplicationController.from_dict(obj))
    elif kind == "ReplicaSet":
        snapshot.replica_sets.append(LabelSelectedController.from_dict("ReplicaSet", obj))
    elif kind == "StatefulSet":
        snapshot.stateful_sets.append(LabelSelectedController.from_dict("StatefulSet", obj))
    elif kind == "PersistentVolume":
        snapshot.persistent_volumes.append(PersistentVolume.from_dict(obj))
    elif kind == "PersistentVolumeClaim":
        snapshot.persistent_volume_claims.append(PersistentVolumeClaim.from_dict(obj))
    elif kind == "StorageClass":
        snapshot.storage_classes.append(StorageClass.from_dict(obj))
    elif kind == "ConfigMap":
        snapshot.config_maps.append(obj)


# -- the API server's semantic checks the engine relies on ------------------------------------------
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("", "Exists", "Equal")


def _check_non_negative(obj: str, path: str, rl: dict[str, Any]) -> None:
    for name, q in rl.items():
        if parse_quantity(q) < 0:
            raise ObjectError(obj, f"{path}.{name}", f"must be greater than or equal to 0, got {q!r}")


def _validate_pod(pod: Pod) -> None:
    obj = f"Pod {pod.ref}"
    for field_name, containers in (("containers", pod.containers), ("initContainers", pod.init_containers)):
        for i, c in enumerate(containers):
            _check_non_negative(obj, f"spec.{field_name}[{i}].resources.requests", c.requests)
            _check_non_negative(obj, f"spec.{field_name}[{i}].resources.limits", c.limits)
    for i, t in enumerate(pod.tolerations):
        path = f"spec.tolerations[{i}]"
        if t.operator not in TOLERATION_OPERATORS:
            raise ObjectError(obj, f"{path}.operator", f"Unsupported value: {t.operator!r}: supported values: \"Equal\", \"Exists\"")
        if t.operator == "Exists" and t.value:
            raise ObjectError(obj, f"{path}.operator", "value must be empty when `operator` is 'Exists'")
        if t.effect and t.effect not in TAINT_EFFECTS:
            raise ObjectError(obj, f"{path}.effect", _unsupported_effect(t.effect))


def _validate_node(node: Node) -> None:
    obj = f"Node {node.name}"
    allocatable = (node.raw.get("status") or {}).get("allocatable") or {}
    _check_non_negative(obj, "status.allocatable", allocatable)
    for i, t in enumerate(node.taints):
        if t.effect not in TAINT_EFFECTS:
            raise ObjectError(obj, f"spec.taints[{i}].effect", _unsupported_effect(t.effect))


def _unsupported_effect(effect: str) -> str:
    if not effect:
        return "Required value"
    return f"Unsupported value: {effect!r}: supported values: " + ", ".join(f'"{e}"' for e in TAINT_EFFECTS)
