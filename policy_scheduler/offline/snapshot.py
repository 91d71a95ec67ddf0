"""Cluster snapshots from manifests: YAML/JSON files and directories, as ``kubectl get -o yaml`` prints
them or as operators write them.

Objects pass through the defaulting the API server would have applied to them (namespace ``default``
for namespaced objects, node allocatable from capacity) and are then parsed once into the engine's
types. Kinds the scheduler does not read are skipped and counted. A malformed object is a
:class:`SnapshotError` naming the file, the document index, the object and the field.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..cache.cluster import ClusterState
from ..dra import allocator as dra_allocator
from ..dra.claims import instantiate_template_claims
from ..errors import ObjectError, SnapshotError
from ..features import NEWEST_LINE, KubernetesLine, Rules
from ..model.disruption import PodDisruptionBudget
from ..model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice, selector_expressions
from ..model.fields import describe, string_map
from ..model.namespace import Namespace
from ..model.node import Node
from ..model.openapi import OpenAPIValidator
from ..model.pod import Pod
from ..model.priority import PriorityClass
from ..model.validation import (
    check_csi_node,
    check_label_selector,
    check_labels,
    check_node,
    check_persistent_volume,
    check_persistent_volume_claim,
    check_pod,
    check_storage_class,
)
from ..model.volumes import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from ..model.workloads import LabelSelectedController, ReplicationController, Service
from ..syntax import json_problem, syntax_problem, yaml_problem

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
    "CSINode": ("storage.k8s.io/v1", "storage.k8s.io/v1beta1"),
    "Namespace": ("v1",),
    "ConfigMap": ("v1",),
    "PriorityClass": ("scheduling.k8s.io/v1alpha1", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1"),
    "PodDisruptionBudget": ("policy/v1beta1", "policy/v1"),
    # Dynamic resource allocation (structured parameters, GA in 1.34).
    "DeviceClass": ("resource.k8s.io/v1",),
    "ResourceSlice": ("resource.k8s.io/v1",),
    "ResourceClaim": ("resource.k8s.io/v1",),
    "ResourceClaimTemplate": ("resource.k8s.io/v1",),
}
CLUSTER_SCOPED = {"Node", "PersistentVolume", "StorageClass", "CSINode", "PriorityClass", "Namespace", "DeviceClass",
                  "ResourceSlice"}
MANIFEST_SUFFIXES = {".yaml", ".yml", ".json"}
TERMINATED_PHASES = {"Succeeded", "Failed"}


class ManifestLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML as the API server reads it: timestamps stay strings (JSON has no timestamp type)."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


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
    csi_nodes: list[CSINode] = field(default_factory=list)
    # Namespace objects (their labels: pod (anti-)affinity namespaceSelector); none: namespaces have no labels.
    namespaces: list[Namespace] = field(default_factory=list)
    config_maps: list[dict] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # unknown fields, as kubectl warns of them
    priority_classes: list[PriorityClass] = field(default_factory=list)  # read with the PodPriority gate
    pod_disruption_budgets: list[PodDisruptionBudget] = field(default_factory=list)  # read by preemption
    origins: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (kind, ns, name) -> file: document
    rules: Rules = Rules.CLUSTER  # how the pods were parsed (what counts of the fields 1.9 never knew)
    # Dynamic resource allocation's objects.
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    resource_claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    # The Kubernetes line of the server the snapshot was read from (--from-cluster); None: manifests, whose
    # decisions use the newest line's wording.
    kubernetes_line: KubernetesLine | None = None

    def under(self, rules: Rules) -> Snapshot:
        """This snapshot with its pods parsed under ``rules`` (itself when they already are)."""
        if rules is self.rules:
            return self
        return dataclasses.replace(self, pods=[Pod(p.raw, rules) for p in self.pods], rules=rules)

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
        cluster.kubernetes_line = self.kubernetes_line or NEWEST_LINE
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
        for csi_node in self.csi_nodes:
            cluster.put_csi_node(csi_node)
        for namespace in self.namespaces:
            cluster.put_namespace(namespace.name, namespace.labels)
        for device_class in self.device_classes:
            cluster.add_device_class(device_class)
        for resource_slice in self.resource_slices:
            cluster.add_resource_slice(resource_slice)
        for claim in self.resource_claims:
            cluster.add_resource_claim(claim)
        for template in self.resource_claim_templates:
            cluster.add_resource_claim_template(template)
        return cluster

    def instantiate_claim_templates(self) -> None:
        """Manifests: what the resourceclaim controller would have done before the scheduler saw the pending pods
        (:func:`~policy_scheduler.dra.claims.instantiate_template_claims`): their claims made from templates."""
        if not self.resource_claim_templates:
            return
        templates = {t.key: t for t in self.resource_claim_templates}
        existing = {c.key for c in self.resource_claims}
        for i, pod in enumerate(self.pods):
            if pod.node_name or pod.phase in TERMINATED_PHASES or not pod.resource_claims:
                continue
            updated, claims = instantiate_template_claims(pod, templates)
            made = [ResourceClaim.from_dict(c) for c in claims if (pod.namespace, c["metadata"]["name"]) not in existing]
            if len(made) != len(claims):
                continue  # a claim of that name exists already: the pod must own it (PreFilter checks it)
            self.pods[i] = updated
            self.resource_claims.extend(made)


@dataclass(frozen=True)
class Checks:
    """What loading checks beyond the field types the engine reads: the OpenAPI schema (when given a
    validator) and the API server's semantic rules (:mod:`..model.validation`)."""

    openapi: OpenAPIValidator | None = None
    api_rules: bool = True


NO_CHECKS = Checks(None, api_rules=False)  # --no-validate: objects as upstream's unit tests build them


def manifest_checks(validate: bool = True, kubernetes_version: str | None = None) -> Checks:
    """The checks ``--validate`` / ``--no-validate`` and ``--kubernetes-version`` ask for on manifest files."""
    if not validate:
        return NO_CHECKS
    from ..model.openapi import resolve_version

    return Checks(OpenAPIValidator(resolve_version(kubernetes_version)))


def load_snapshot(paths: Iterable[str | Path], checks: Checks = Checks()) -> Snapshot:
    """Load every manifest under ``paths`` (files or directories, recursively, sorted)."""
    return load_manifests(((path, read_manifest(path)) for path in manifest_files(paths)), checks)


def load_manifests(files: Iterable[tuple[str | Path, bytes]], checks: Checks = Checks()) -> Snapshot:
    """Build a snapshot from manifest files already read: (the file's path, its bytes), in order. The
    path names the file in messages and chooses JSON (``.json``) or YAML, as :func:`load_snapshot` does."""
    snapshot = Snapshot()
    seen = snapshot.origins
    for path, data in files:
        path = Path(path)
        snapshot.sources.append(str(path))
        for index, obj in _documents(path, data):
            add_object(snapshot, obj, f"{path}: document {index}", seen, checks)
    snapshot.instantiate_claim_templates()
    return snapshot


def load_pod_file(path: str | Path, checks: Checks = Checks(), rules: Rules = Rules.CLUSTER) -> tuple[Pod, list[str]]:
    """The one Pod of a manifest file (a pod template), parsed under ``rules``; and the file's warnings."""
    loaded = load_snapshot([path], checks).under(rules)
    if len(loaded.pods) != 1:
        raise SnapshotError(f"{path}: expected exactly one Pod, found {len(loaded.pods)}")
    return loaded.pods[0], loaded.warnings


def load_objects(objects: Iterable[dict[str, Any]], source: str, checks: Checks = Checks()) -> Snapshot:
    """Build a snapshot from already-decoded objects (e.g. read from an API server)."""
    snapshot = Snapshot(sources=[source])
    seen = snapshot.origins
    for i, obj in enumerate(objects):
        add_object(snapshot, obj, f"{source}: object {i}", seen, checks)
    return snapshot


def manifest_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The manifest files under ``paths`` (a directory: its .yaml, .yml and .json files, recursively, sorted)."""
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


def read_manifest(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise SnapshotError(f"{path}: cannot read: {e}") from None


def _documents(path: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    try:  # as a text-mode read decodes it: UTF-8, universal newlines
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as e:
        raise SnapshotError(f"{path}: cannot read: {e}") from None
    if path.suffix == ".json":
        try:
            docs = [json.loads(text)]
        except json.JSONDecodeError as e:
            raise SnapshotError(f"{path}: invalid JSON: {json_problem(e)}") from None
    else:
        try:
            docs = list(yaml.load_all(text, Loader=ManifestLoader))
        except yaml.YAMLError as e:
            # A file named neither .yaml nor .json that starts with "{" or "[" is reported as the JSON it is.
            problem = syntax_problem(text, path.name, loader=ManifestLoader, multiple=True)
            raise SnapshotError(f"{path}: {problem or f'invalid YAML: {yaml_problem(e, text)}'}") from None
    for index, doc in enumerate(docs):
        if doc is not None:
            yield index, doc


def add_object(
    snapshot: Snapshot, obj: Any, where: str, seen: dict[tuple[str, str, str], str],
    checks: Checks = Checks(),
) -> None:
    if not isinstance(obj, dict):
        raise SnapshotError(f"{where}: expected a Kubernetes object, got {type(obj).__name__}")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise SnapshotError(f"{where}: kind: {_missing_or_wrong(kind)}")
    if kind == "List" or kind.endswith("List") and isinstance(obj.get("items"), list):
        items = obj.get("items")
        if not isinstance(items, list):
            raise SnapshotError(f"{where}: {kind}: items: expected a list")
        item_kind = kind[: -len("List")] if kind != "List" else None
        for i, item in enumerate(items):
            if item_kind and isinstance(item, dict) and "kind" not in item:
                item = {**item, "kind": item_kind, "apiVersion": obj.get("apiVersion")}
            add_object(snapshot, item, f"{where} item {i}", seen, checks)
        return
    if kind not in KINDS:
        snapshot.skipped[kind] += 1
        return
    api_version = obj.get("apiVersion")
    if api_version not in KINDS[kind]:
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
        what = f"{kind} {name}" if isinstance(name, str) and name else kind
        accepted = ", ".join(KINDS[kind])
        if api_version is None or api_version == "":
            problem = f"missing (one of {accepted})"
        elif isinstance(api_version, str):
            problem = f"{api_version!r} is not one of {accepted}"
        else:
            problem = f"expected one of {accepted}, got {describe(api_version)}"
        raise SnapshotError(f"{where}: {what}: apiVersion: {problem}")
    if checks.openapi is not None:
        try:
            unknown = checks.openapi.check(obj, _describe_object(kind, obj))
        except ObjectError as e:
            raise SnapshotError(f"{where}: {e}") from None
        snapshot.warnings.extend(f"{where}: {_describe_object(kind, obj)}: unknown field \"{f}\"" for f in unknown)
    obj = _apply_api_defaults(kind, obj, where)
    meta = obj["metadata"]
    key = (kind, meta.get("namespace", ""), meta["name"])
    if key in seen:
        ref = f"{key[1]}/{key[2]}" if key[1] else key[2]
        raise SnapshotError(f"{where}: {kind} {ref}: already defined at {seen[key]}")
    seen[key] = where
    try:
        _parse_into(snapshot, kind, obj, checks.api_rules)
    except ObjectError as e:
        raise SnapshotError(f"{where}: {e}") from None


def _apply_api_defaults(kind: str, obj: dict[str, Any], where: str) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        problem = _missing_or_wrong(meta) if meta is None or meta == "" else f"expected an object, got {describe(meta)}"
        raise SnapshotError(f"{where}: {kind}: metadata: {problem}")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise SnapshotError(f"{where}: {kind}: metadata.name: {_missing_or_wrong(name)}")
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
    if kind == "Pod" and isinstance(obj.get("spec"), dict):
        obj["spec"] = _default_requests_from_limits(obj["spec"])
    return obj


def _default_requests_from_limits(spec: dict[str, Any]) -> dict[str, Any]:
    """``SetDefaults_Pod``: a container's limit with no request of that resource is also its request."""
    out = spec
    for field_name in ("containers", "initContainers"):
        containers = spec.get(field_name)
        if not isinstance(containers, list):
            continue
        defaulted = []
        for c in containers:
            resources = c.get("resources") if isinstance(c, dict) else None
            limits = resources.get("limits") if isinstance(resources, dict) else None
            requests = resources.get("requests") if isinstance(resources, dict) else None
            if isinstance(limits, dict) and limits and (requests is None or isinstance(requests, dict)):
                missing = {k: v for k, v in limits.items() if k not in (requests or {})}
                if missing:
                    c = {**c, "resources": {**resources, "requests": {**(requests or {}), **missing}}}
            defaulted.append(c)
        if defaulted != containers:
            out = {**out, field_name: defaulted}
    return out


#: kind -> (parse, the API server's checks, the snapshot's list)
_STORAGE_KINDS: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[Any], None], str]] = {
    "PersistentVolume": (PersistentVolume.from_dict, check_persistent_volume, "persistent_volumes"),
    "PersistentVolumeClaim": (PersistentVolumeClaim.from_dict, check_persistent_volume_claim,
                              "persistent_volume_claims"),
    "StorageClass": (StorageClass.from_dict, check_storage_class, "storage_classes"),
    "CSINode": (CSINode.from_dict, check_csi_node, "csi_nodes"),
}


def _parse_into(snapshot: Snapshot, kind: str, obj: dict[str, Any], api_rules: bool) -> None:
    """Parse one object into the engine's types, then (``api_rules``) apply the API server's checks."""
    if kind == "Node":
        node = Node(obj)
        if api_rules:
            check_node(node)
        snapshot.nodes.append(node)
        return
    if kind == "Pod":
        pod = Pod(obj)
        if api_rules:
            check_pod(pod)
        snapshot.pods.append(pod)
        return
    what = _describe_object(kind, obj)
    labels = string_map(what, "metadata.labels", obj["metadata"].get("labels"))
    if api_rules:
        check_labels(what, "metadata.labels", labels)
    if kind == "Service":
        service = Service.from_dict(obj)
        if api_rules:
            check_labels(what, "spec.selector", service.selector or {})
        snapshot.services.append(service)
    elif kind == "ReplicationController":
        rc = ReplicationController.from_dict(obj)
        if api_rules:
            check_labels(what, "spec.selector", rc.selector or {})
        snapshot.replication_controllers.append(rc)
    elif kind in ("ReplicaSet", "StatefulSet"):
        controller = LabelSelectedController.from_dict(kind, obj)
        if api_rules:
            check_label_selector(what, "spec.selector", (obj.get("spec") or {}).get("selector"))
        (snapshot.replica_sets if kind == "ReplicaSet" else snapshot.stateful_sets).append(controller)
    elif kind in _STORAGE_KINDS:
        parse, check, attribute = _STORAGE_KINDS[kind]
        parsed = parse(obj)
        if api_rules:
            check(parsed)
        getattr(snapshot, attribute).append(parsed)
    elif kind == "Namespace":
        snapshot.namespaces.append(Namespace.from_dict(obj))  # its labels were checked above
    elif kind == "ConfigMap":
        snapshot.config_maps.append(obj)
    elif kind == "PriorityClass":
        snapshot.priority_classes.append(PriorityClass.from_dict(obj))
    elif kind == "PodDisruptionBudget":
        snapshot.pod_disruption_budgets.append(PodDisruptionBudget.from_dict(obj))
    elif kind in _DRA_KINDS:
        parse, attribute = _DRA_KINDS[kind]
        parsed = parse(obj)
        if api_rules:
            check_cel_selectors(what, parsed)
        getattr(snapshot, attribute).append(parsed)


_DRA_KINDS: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "DeviceClass": (DeviceClass.from_dict, "device_classes"),
    "ResourceSlice": (ResourceSlice.from_dict, "resource_slices"),
    "ResourceClaim": (ResourceClaim.from_dict, "resource_claims"),
    "ResourceClaimTemplate": (ResourceClaimTemplate.from_dict, "resource_claim_templates"),
}


def check_cel_selectors(what: str, obj: Any) -> None:
    """``validateCELSelector``: every selector of a class, claim or template compiles (upstream's message)."""
    if isinstance(obj, DeviceClass):
        expressions = [(f"spec.selectors[{i}].cel.expression", e) for i, e in enumerate(obj.selectors)]
    elif isinstance(obj, ResourceClaim):
        expressions = [(f"spec.{p}", e) for p, e in selector_expressions(obj.spec)]
    elif isinstance(obj, ResourceClaimTemplate):
        expressions = [(f"spec.spec.{p}", e) for p, e in selector_expressions(obj.spec)]
    else:
        return
    if not expressions:
        return
    cel = dra_allocator.default_environment()
    for path, expression in expressions:
        try:
            cel.compile(expression)
        except cel.compile_error as e:
            message = getattr(e, "message", None) or str(e)
            # CEL's message may go on with the expression and a caret under the error: one line here.
            first = message.splitlines()[0] if message else message
            raise ObjectError(what, path, f"Invalid value: {json.dumps(expression)}: {first}") from None


def _missing_or_wrong(value: Any) -> str:
    """For an identifying string field (kind, apiVersion, metadata.name) that is not a non-empty string."""
    if value is None or value == "":
        return "missing"
    return f"expected a string, got {describe(value)}"


def _describe_object(kind: str, obj: dict[str, Any]) -> str:
    """``Kind namespace/name`` for messages, as far as the object's metadata allows."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return kind
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):  # the error is about it: name no namespace
        return f"{kind} {meta['name']}"
    namespace = namespace or ""
    if kind not in CLUSTER_SCOPED:
        namespace = namespace or "default"
    return f"{kind} {namespace}/{meta['name']}" if namespace else f"{kind} {meta['name']}"
