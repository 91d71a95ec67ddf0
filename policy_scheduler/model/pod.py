"""The Pod as the engine sees it: parsed once from a v1 Pod dict."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import ObjectError
from ..features import Rules
from .affinity import Affinity, parse_affinity
from .fields import (
    bool_field,
    int_field,
    obj_field,
    obj_list_field,
    opt_obj_field,
    resource_list_field,
    str_field,
    string_map,
)
from .node_features import check_pod_feature_fields
from .quantity import QuantityError, milli_value, parse_quantity, value
from .resources import CPU, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, MEMORY, Resource
from .taints import Toleration
from .topology_spread import TopologySpreadConstraint, parse_topology_spread_constraints
from .volumes import check_volume_source


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One ``spec.resourceClaims`` entry: exactly one of ``resource_claim_name`` /
    ``resource_claim_template_name`` is set (the API server's rule)."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


def _resource_claims(obj: str, spec: dict[str, Any]) -> tuple[PodResourceClaim, ...]:
    out = []
    seen: set[str] = set()
    for i, c in enumerate(obj_list_field(obj, "spec.resourceClaims", spec.get("resourceClaims"))):
        path = f"spec.resourceClaims[{i}]"
        name = str_field(obj, f"{path}.name", c.get("name"))
        if not name:
            raise ObjectError(obj, f"{path}.name", "Required value")
        if name in seen:
            raise ObjectError(obj, f"{path}.name", f'Duplicate value: "{name}"')
        seen.add(name)
        if "source" in c:  # 1.26's form (classic DRA, resource.k8s.io/v1alpha1): refused (core/modern_pods.py)
            out.append(PodResourceClaim(name))
            continue
        claim = c.get("resourceClaimName")
        template = c.get("resourceClaimTemplateName")
        if claim is not None:
            claim = str_field(obj, f"{path}.resourceClaimName", claim)
        if template is not None:
            template = str_field(obj, f"{path}.resourceClaimTemplateName", template)
        if (claim is None) == (template is None):
            detail = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            if claim is not None:
                detail = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            raise ObjectError(obj, path, f"Invalid value: null: {detail}" if claim is not None
                              else f"Required value: {detail}")
        out.append(PodResourceClaim(name, claim, template))
    return tuple(out)


def _resource_claim_statuses(obj: str, status: dict[str, Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for i, s in enumerate(obj_list_field(obj, "status.resourceClaimStatuses", status.get("resourceClaimStatuses"))):
        name = str_field(obj, f"status.resourceClaimStatuses[{i}].name", s.get("name"))
        claim = s.get("resourceClaimName")
        out[name] = str_field(obj, f"status.resourceClaimStatuses[{i}].resourceClaimName", claim) if claim else None
    return out


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str
    requests: dict[str, Any]
    limits: dict[str, Any]
    # An init container's restartPolicy: "Always" makes it a native sidecar (1.28+); "" otherwise.
    restart_policy: str = ""

    @property
    def is_sidecar(self) -> bool:
        return self.restart_policy == "Always"


@dataclass(frozen=True, slots=True)
class ResizeStatus:
    """What the kubelet reports of a bound pod's resources, which the cluster's accounting reads while an
    in-place resize is under way (``status``, 1.33+; pod-level 1.35+)."""

    # Container name -> (``resources.requests`` it runs with, ``allocatedResources`` it was admitted with), for
    # the statuses that report ``resources`` (upstream reads a status only when ``cs.Resources != nil``).
    containers: dict[str, tuple[dict[str, Any], dict[str, Any]] | None]
    # (``status.resources.requests``, ``status.allocatedResources``) when ``status.resources`` is set.
    pod_level: tuple[dict[str, Any], dict[str, Any]] | None
    # The ``PodResizePending`` condition's reason is ``Infeasible`` (``IsPodResizeInfeasible``).
    infeasible: bool

    def under_way(self, pod: Pod) -> bool:
        """Whether anything reported differs from ``pod``'s spec, for a container whose status is read or for the
        pod level (else the spec alone says what the pod holds, and nothing is kept)."""
        for c in (*pod.containers, *(c for c in pod.init_containers if c.is_sidecar)):
            st = self.containers.get(c.name)
            if st is not None and (st[0] != c.requests or st[1] != c.requests):
                return True
        spec = pod.pod_level_requests
        return self.pod_level is not None and (CPU in spec or MEMORY in spec) and (
            self.pod_level[0] != spec or self.pod_level[1] != spec)

    def effective(self, spec: dict[str, Any], actuated: dict[str, Any], allocated: dict[str, Any]) -> dict[str, Any]:
        """``determineEffectiveRequests``: per resource the largest of the spec, what runs and what the kubelet
        admitted; an infeasible resize's spec does not count (the kubelet will never admit it)."""
        if actuated == spec and allocated == spec:  # no resize under way (the kubelet writes canonical quantities)
            return spec
        if self.infeasible:
            return _max_lists(actuated, allocated)
        return _max_lists(spec, actuated, allocated)


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


def _parse_containers(obj: str, path: str, raw: Any) -> tuple[Container, ...]:
    out = []
    for i, c in enumerate(obj_list_field(obj, path, raw)):
        res = obj_field(obj, f"{path}[{i}].resources", c.get("resources"))
        out.append(
            Container(
                name=str_field(obj, f"{path}[{i}].name", c.get("name")),
                image=str_field(obj, f"{path}[{i}].image", c.get("image")),
                requests=resource_list_field(obj, f"{path}[{i}].resources.requests", res.get("requests")),
                limits=resource_list_field(obj, f"{path}[{i}].resources.limits", res.get("limits")),
                restart_policy=str_field(obj, f"{path}[{i}].restartPolicy", c.get("restartPolicy")),
            )
        )
    return tuple(out)


def _host_ports(obj: str, raw_containers: Any, field: str = "spec.containers", sidecars_only: bool = False
                ) -> tuple[str, ...]:
    """The ``proto/ip/port`` of every host port of ``field``'s containers; with ``sidecars_only``, of its
    containers with ``restartPolicy: Always`` only (native sidecars run as long as the pod)."""
    ports = []
    for i, c in enumerate(obj_list_field(obj, field, raw_containers)):
        if sidecars_only and c.get("restartPolicy") != "Always":
            continue
        path = f"{field}[{i}].ports"
        for j, p in enumerate(obj_list_field(obj, path, c.get("ports"))):
            hp = int_field(obj, f"{path}[{j}].hostPort", p.get("hostPort"))
            if hp == 0:
                continue
            proto = str_field(obj, f"{path}[{j}].protocol", p.get("protocol")) or "TCP"
            ip = str_field(obj, f"{path}[{j}].hostIP", p.get("hostIP")) or "0.0.0.0"
            ports.append(f"{proto}/{ip}/{hp}")
    return tuple(ports)


class Pod:
    """A v1 Pod, with everything the predicates and priorities need computed once."""

    __slots__ = (
        "raw", "name", "namespace", "uid", "labels", "annotations", "node_name", "scheduler_name",
        "creation_timestamp", "deletion_timestamp", "phase", "owner_references", "containers",
        "init_containers", "volumes", "tolerations", "affinity", "priority", "node_selector",
        "request", "container_request", "nonzero_milli_cpu", "nonzero_memory", "limits",
        "host_ports", "best_effort", "key", "rules", "overhead", "pod_level_requests", "scheduling_gates",
        "preemption_policy", "topology_spread", "ephemeral_claims", "resize", "resource_claims",
        "resource_claim_statuses",
    )

    def __init__(self, raw: dict[str, Any], rules: Rules = Rules.CLUSTER) -> None:
        """Parse ``raw``; ``rules`` decides how what 1.9 never knew counts (:class:`~..features.Rules`):
        the resources below, and what the engine reads of the gates and policies kept here."""
        if not isinstance(raw, dict):
            raise ObjectError("Pod", "", f"expected an object, got {type(raw).__name__}")
        self.raw = raw
        meta = obj_field("Pod", "metadata", raw.get("metadata"))
        self.name: str = str_field("Pod", "metadata.name", meta.get("name"))
        self.namespace: str = str_field(f"Pod {self.name}", "metadata.namespace", meta.get("namespace"))
        obj = f"Pod {self.namespace}/{self.name}"
        spec = obj_field(obj, "spec", raw.get("spec"))
        status = obj_field(obj, "status", raw.get("status"))
        self.uid: str = str_field(obj, "metadata.uid", meta.get("uid"))
        self.labels: dict[str, str] = _string_map(obj, "metadata.labels", meta.get("labels"))
        self.annotations: dict[str, str] = _string_map(obj, "metadata.annotations", meta.get("annotations"))
        self.node_name: str = str_field(obj, "spec.nodeName", spec.get("nodeName"))
        self.scheduler_name: str = str_field(obj, "spec.schedulerName", spec.get("schedulerName")) or "default-scheduler"
        self.creation_timestamp: str = _timestamp(meta.get("creationTimestamp")) or ""
        self.deletion_timestamp: str | None = _timestamp(meta.get("deletionTimestamp"))
        self.phase: str = str_field(obj, "status.phase", status.get("phase"))
        self.owner_references = tuple(
            OwnerReference(
                *(str_field(obj, f"metadata.ownerReferences[{i}].{k}", o.get(k)) for k in ("apiVersion", "kind", "name", "uid")),
                bool_field(obj, f"metadata.ownerReferences[{i}].controller", o.get("controller")),
            )
            for i, o in enumerate(obj_list_field(obj, "metadata.ownerReferences", meta.get("ownerReferences")))
        )
        self.containers = _parse_containers(obj, "spec.containers", spec.get("containers"))
        self.init_containers = _parse_containers(obj, "spec.initContainers", spec.get("initContainers"))
        self.volumes: tuple[dict, ...] = _volumes(obj, spec.get("volumes"))
        # Generic ephemeral volumes (GA 1.23): under the cluster's rules each is its claim
        # ``<pod>-<volume>`` (``ephemeral.VolumeClaimName``), which every volume predicate then reads.
        self.ephemeral_claims: frozenset[str] = frozenset()
        if rules is Rules.CLUSTER and any("ephemeral" in v for v in self.volumes):
            self.volumes, self.ephemeral_claims = _ephemeral_as_claims(self.name, self.volumes)
        self.tolerations = tuple(
            Toleration.from_dict(_toleration(obj, f"spec.tolerations[{i}]", t))
            for i, t in enumerate(obj_list_field(obj, "spec.tolerations", spec.get("tolerations")))
        )
        self.affinity: Affinity | None = parse_affinity(spec.get("affinity"), obj)
        prio = spec.get("priority")
        self.priority: int = prio if isinstance(prio, int) and not isinstance(prio, bool) else 0
        self.node_selector: dict[str, str] = _string_map(obj, "spec.nodeSelector", spec.get("nodeSelector"))
        self.host_ports = _host_ports(obj, spec.get("containers"))
        if rules is Rules.CLUSTER:  # 1.33+ NodePorts (util.GetHostPorts): native sidecars' host ports too
            self.host_ports += _host_ports(obj, spec.get("initContainers"), "spec.initContainers", sidecars_only=True)
        self.key = self.uid or f"{self.namespace}/{self.name}"
        self.rules = rules
        # Fields 1.9 never knew, parsed whatever the rules (the engine decides what they mean).
        self.overhead: dict[str, Any] = resource_list_field(obj, "spec.overhead", spec.get("overhead"))
        pod_resources = obj_field(obj, "spec.resources", spec.get("resources"))
        self.pod_level_requests: dict[str, Any] = resource_list_field(
            obj, "spec.resources.requests", pod_resources.get("requests"))
        resource_list_field(obj, "spec.resources.limits", pod_resources.get("limits"))
        self.scheduling_gates: tuple[str, ...] = tuple(
            str_field(obj, f"spec.schedulingGates[{i}].name", g.get("name"))
            for i, g in enumerate(obj_list_field(obj, "spec.schedulingGates", spec.get("schedulingGates")))
        )
        self.preemption_policy: str = (
            str_field(obj, "spec.preemptionPolicy", spec.get("preemptionPolicy")) or PREEMPT_LOWER_PRIORITY)
        self.topology_spread: tuple[TopologySpreadConstraint, ...] = parse_topology_spread_constraints(
            obj, spec.get("topologySpreadConstraints"), self.labels)
        check_pod_feature_fields(obj, spec)  # what NodeDeclaredFeatures infers from (model/node_features.py)
        # Dynamic resource allocation: the claims the pod names, and the claims made from templates for it.
        self.resource_claims: tuple[PodResourceClaim, ...] = _resource_claims(obj, spec)
        self.resource_claim_statuses: dict[str, str | None] = _resource_claim_statuses(obj, status)
        # What the kubelet reports of the resources, read under the cluster's rules only (1.9 knew none of it).
        self.resize: ResizeStatus | None = None
        if rules is Rules.CLUSTER and (resize := _resize_status(obj, status)) is not None and resize.under_way(self):
            self.resize = resize
        if rules is Rules.CLUSTER:
            self._compute_effective_resources()
        else:
            self._compute_resources()

    def _compute_resources(self) -> None:
        """1.9's accounting. NodeInfo: regular containers only."""
        container_request = Resource()
        nz_cpu = 0
        nz_mem = 0
        best_effort = True
        for c in self.containers:
            container_request.add_list(c.requests)
            nz_cpu += milli_value(c.requests[CPU]) if CPU in c.requests else DEFAULT_MILLI_CPU_REQUEST
            nz_mem += value(c.requests[MEMORY]) if MEMORY in c.requests else DEFAULT_MEMORY_REQUEST
            if best_effort:
                for rl in (c.requests, c.limits):
                    for name in (CPU, MEMORY):
                        if name in rl and parse_quantity(rl[name]) > 0:
                            best_effort = False
        self.container_request = container_request
        self.nonzero_milli_cpu = nz_cpu
        self.nonzero_memory = nz_mem
        self.best_effort = best_effort
        # PodFitsResources (GetResourceRequest): containers summed, then max with each init container.
        request = container_request.clone()
        for c in self.init_containers:
            request.set_max_list(c.requests)
        self.request = request
        limits = Resource()
        for c in self.containers:
            limits.add_list(c.limits)
        for c in self.init_containers:
            limits.set_max_list(c.limits)
        self.limits = limits

    def _compute_effective_resources(self) -> None:
        """The cluster's accounting, as the kubelet admits and the modern scheduler counts (upstream's
        ``PodRequests``, ``k8s.io/component-helpers/resource``, and ``PodInfo.CalculateResource``): the same
        total for the pod being placed and for every pod on a node (1.9 counted app containers only there)."""
        self._compute_resources()  # limits and best_effort as 1.9
        request, named, missing = self._effective_requests(frozenset())
        self.request = request
        self.container_request = request.clone()
        # The non-zero form (priorities, node non-zero totals; ``getNonMissingContainerRequests``): a container's
        # missing cpu/memory request counts as 100m / 200Mi; with pod-level requests, only for a resource the
        # pod's total does not name at all. No container misses one: the same as the request.
        if CPU in self.pod_level_requests or MEMORY in self.pod_level_requests:
            missing -= named
        nonzero = self._effective_requests(frozenset(missing))[0] if missing else request
        self.nonzero_milli_cpu = nonzero.milli_cpu
        self.nonzero_memory = nonzero.memory

    def _effective_requests(self, defaults: frozenset[str]) -> tuple[Resource, set[str], set[str]]:
        """max(app containers + native sidecars, each regular init container + the sidecars started
        before it); pod-level cpu/memory requests replace the containers' sum; plus overhead. A container's
        request missing one of ``defaults`` (cpu, memory) counts as its non-zero default.

        A bound pod being resized in place counts, per container (app containers and sidecars, not regular init
        containers) and for its pod-level requests, the largest of its spec, what it runs with and what the
        kubelet admitted, its spec left out once the kubelet found the resize infeasible
        (``AggregateContainerRequests``, ``determineEffectiveRequests``); a pod being placed counts its spec
        (``computePodResourceRequest``). Also returned: which of cpu and memory the total names, and which some
        container does not name (``getNonMissingContainerRequests`` reads them)."""
        resize = self.resize if self.node_name else None
        named: set[str] = set()
        missing: set[str] = set()
        default_cpu, default_memory = CPU in defaults, MEMORY in defaults

        def requests(c: Container, reads_status: bool) -> Resource:
            rl = c.requests
            if reads_status and resize is not None:
                st = resize.containers.get(c.name)
                if st is not None:
                    rl = resize.effective(rl, *st)
            r = Resource.from_list(rl)
            if CPU in rl:
                named.add(CPU)
            else:
                missing.add(CPU)
                if default_cpu:
                    r.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
            if MEMORY in rl:
                named.add(MEMORY)
            else:
                missing.add(MEMORY)
                if default_memory:
                    r.memory = DEFAULT_MEMORY_REQUEST
            return r

        total = Resource()
        for c in self.containers:
            total.add(requests(c, True))
        if self.init_containers:
            sidecars = Resource()
            init = Resource()
            for c in self.init_containers:
                r = requests(c, c.is_sidecar)
                if c.is_sidecar:
                    total.add(r)
                    sidecars.add(r)
                    init.set_max(sidecars)
                else:
                    r.add(sidecars)
                    init.set_max(r)
            total.set_max(init)
        pod_level = self.pod_level_requests
        if CPU in pod_level or MEMORY in pod_level:
            if resize is not None and resize.pod_level is not None:
                effective = resize.effective(pod_level, *resize.pod_level)
                pod_level = {name: effective.get(name, 0) for name in pod_level}
            if CPU in pod_level:
                total.milli_cpu = milli_value(pod_level[CPU])
                named.add(CPU)
            if MEMORY in pod_level:
                total.memory = value(pod_level[MEMORY])
                named.add(MEMORY)
        overhead = self.overhead
        if overhead:
            total.add_list(overhead)
            named.update(name for name in (CPU, MEMORY) if name in overhead)
        return total, named, missing

    @property
    def full_name(self) -> str:
        """``util.GetPodFullName``: ``name_namespace``."""
        return f"{self.name}_{self.namespace}"

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_pod_affinity_constraints(self) -> bool:
        a = self.affinity
        return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)

    def controller_ref(self) -> OwnerReference | None:
        for o in self.owner_references:
            if o.controller:
                return o
        return None

    def with_node_name(self, node_name: str) -> Pod:
        """A copy of this pod bound to ``node_name`` (what assume does to the pod object)."""
        raw = dict(self.raw)
        raw["spec"] = dict(raw.get("spec") or {})
        raw["spec"]["nodeName"] = node_name
        clone = self._clone(raw)
        clone.node_name = node_name
        return clone

    def with_status(self, status: dict[str, Any], annotations: dict[str, str] | None = None) -> Pod:
        """A copy of this pod after a status write (and, given, new annotations): what the API server would
        send back after the scheduler's PATCH, without parsing the pod again."""
        raw = {**self.raw, "status": status}
        if annotations is not None:
            raw["metadata"] = {**(raw.get("metadata") or {}), "annotations": annotations}
        clone = self._clone(raw)
        if annotations is not None:
            clone.annotations = annotations
        if isinstance(status, dict) and "resourceClaimStatuses" in status:
            clone.resource_claim_statuses = _resource_claim_statuses(f"Pod {self.namespace}/{self.name}", status)
        return clone

    def adopt(self, latest: Pod) -> None:
        """Take ``latest``'s API object, which differs from this pod's only where the engine does not read (status,
        resourceVersion): the scheduler's cache keeps this object, which the cluster's structures hold, while the
        informer's store and the cache share one copy of the document instead of holding one each."""
        self.raw = latest.raw
        self.phase = latest.phase

    def _clone(self, raw: dict[str, Any]) -> Pod:
        clone = object.__new__(Pod)
        for slot in Pod.__slots__:
            setattr(clone, slot, getattr(self, slot))
        clone.raw = raw
        return clone

    def __repr__(self) -> str:
        return f"Pod({self.namespace}/{self.name})"


def pod_condition(raw: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """The pod object's status condition of type ``type_`` (e.g. ``PodScheduled``), if any."""
    for c in (raw.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == type_:
            return c
    return None


def _timestamp(raw: Any) -> str | None:
    """RFC 3339 text; YAML loaders turn unquoted timestamps (as kubectl prints them) into datetimes."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, datetime):
        if raw.tzinfo is not None:
            raw = raw.astimezone(timezone.utc).replace(tzinfo=None)
        return raw.strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(raw)


_string_map = string_map

POD_RESIZE_PENDING = "PodResizePending"
POD_REASON_INFEASIBLE = "Infeasible"


def _max_lists(*lists: dict[str, Any]) -> dict[str, Any]:
    """``max``: per resource named in any of ``lists``, the largest quantity (``Quantity.Cmp``)."""
    out = dict(lists[0])
    for rl in lists[1:]:
        for name, q in rl.items():
            current = out.get(name)
            if current is None or parse_quantity(q) > parse_quantity(current):
                out[name] = q
    return out


def _resource_list(obj: str, path: str, i: int, field: str, raw: Any) -> dict[str, Any]:
    """``resource_list_field`` at ``path[i].field``, a path made only for an error (every running pod's status
    has such lists)."""
    if isinstance(raw, dict):
        try:
            for name, q in raw.items():
                if not isinstance(name, str):
                    break
                parse_quantity(q)
            else:
                return raw
        except QuantityError:
            pass
    return resource_list_field(obj, f"{path}[{i}].{field}", raw)


def _objects(obj: str, path: str, raw: Any) -> list[dict[str, Any]]:
    """``obj_list_field`` without copying a list that is well formed (the usual case)."""
    if isinstance(raw, list) and all(isinstance(item, dict) for item in raw):
        return raw
    return obj_list_field(obj, path, raw)


def _resize_status(obj: str, status: dict[str, Any]) -> ResizeStatus | None:
    """The status fields the cluster's accounting reads, typed as the API server's decoder types them; None
    when the kubelet reports no resources (nothing to read)."""
    containers: dict[str, tuple[dict[str, Any], dict[str, Any]] | None] = {}
    reported = False
    for path in ("status.containerStatuses", "status.initContainerStatuses"):
        for i, cs in enumerate(_objects(obj, path, status.get(path[7:]))):
            name = cs.get("name")
            if not isinstance(name, str):
                name = str_field(obj, f"{path}[{i}].name", name)
            allocated = cs.get("allocatedResources")
            allocated = {} if allocated is None else _resource_list(obj, path, i, "allocatedResources", allocated)
            resources = cs.get("resources")
            if resources is None:
                containers[name] = None
                continue
            if not isinstance(resources, dict):
                obj_field(obj, f"{path}[{i}].resources", resources)
            actuated = resources.get("requests")
            actuated = {} if actuated is None else _resource_list(obj, path, i, "resources.requests", actuated)
            containers[name] = (actuated, allocated)
            reported = True
    pod_level = None
    if "resources" in status or "allocatedResources" in status:
        pod_resources = opt_obj_field(obj, "status.resources", status.get("resources"))
        pod_allocated = resource_list_field(obj, "status.allocatedResources", status.get("allocatedResources"))
        if pod_resources is not None:
            pod_level = (resource_list_field(obj, "status.resources.requests", pod_resources.get("requests")),
                         pod_allocated)
    infeasible = False
    for i, c in enumerate(_objects(obj, "status.conditions", status.get("conditions"))):
        kind = c.get("type")
        if kind == POD_RESIZE_PENDING:
            infeasible = str_field(obj, f"status.conditions[{i}].reason", c.get("reason")) == POD_REASON_INFEASIBLE
            break
        if not isinstance(kind, str):
            str_field(obj, f"status.conditions[{i}].type", kind)
    if pod_level is None and not reported:
        return None
    return ResizeStatus(containers, pod_level, infeasible)


PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"

def _volumes(obj: str, raw: Any) -> tuple[dict, ...]:
    """``spec.volumes``: objects whose sources are objects; the fields the predicates read typed."""
    volumes = obj_list_field(obj, "spec.volumes", raw)
    for i, v in enumerate(volumes):
        str_field(obj, f"spec.volumes[{i}].name", v.get("name"))
        for key, source in v.items():
            if key == "name":
                continue
            check_volume_source(obj, f"spec.volumes[{i}].{key}", key, source)
    return tuple(v or {} for v in volumes)


def pod_claim_names(pod: Pod) -> list[str]:
    """The claims the pod's volumes name, in volume order (ephemeral volumes' under the cluster's rules)."""
    names = []
    for volume in pod.volumes:
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict):
            names.append(claim.get("claimName") or "")
    return names


def ephemeral_claim_name(pod_name: str, volume_name: str) -> str:
    """``ephemeral.VolumeClaimName``: the claim the ephemeral-volume controller makes for the volume."""
    return f"{pod_name}-{volume_name}"


def _ephemeral_as_claims(pod_name: str, volumes: tuple[dict, ...]) -> tuple[tuple[dict, ...], frozenset[str]]:
    """Each ``ephemeral`` volume with a ``persistentVolumeClaim`` source naming its claim added (the pod's
    ``raw`` is untouched); the names of those claims, which the pod must own."""
    out, claims = [], set()
    for v in volumes:
        if "ephemeral" in v:
            name = ephemeral_claim_name(pod_name, v.get("name") or "")
            v = {**v, "persistentVolumeClaim": {"claimName": name}}
            claims.add(name)
        out.append(v)
    return tuple(out), frozenset(claims)


def _toleration(obj: str, path: str, raw: dict[str, Any]) -> dict[str, Any]:
    for key in ("key", "operator", "value", "effect"):
        str_field(obj, f"{path}.{key}", raw.get(key))
    seconds = raw.get("tolerationSeconds")
    if seconds is not None:
        int_field(obj, f"{path}.tolerationSeconds", seconds)
    return raw

