"""The Pod as the engine sees it: parsed once from a v1 Pod dict."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import ObjectError
from .affinity import Affinity, parse_affinity
from .quantity import QuantityError, milli_value, parse_quantity, value
from .resources import CPU, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, MEMORY, Resource
from .taints import Toleration


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str
    requests: dict[str, Any]
    limits: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


def _check_resource_list(obj: str, path: str, rl: Any) -> dict[str, Any]:
    if rl is None:
        return {}
    if not isinstance(rl, dict):
        raise ObjectError(obj, path, f"expected a map of resource quantities, got {type(rl).__name__}")
    for name, q in rl.items():
        try:
            parse_quantity(q)
        except QuantityError as e:
            raise ObjectError(obj, f"{path}.{name}", str(e)) from None
    return rl


def _parse_containers(obj: str, path: str, raw: Any) -> tuple[Container, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ObjectError(obj, path, f"expected a list, got {type(raw).__name__}")
    out = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict):
            raise ObjectError(obj, f"{path}[{i}]", "expected an object")
        res = c.get("resources") or {}
        out.append(
            Container(
                name=c.get("name") or "",
                image=c.get("image") or "",
                requests=_check_resource_list(obj, f"{path}[{i}].resources.requests", res.get("requests")),
                limits=_check_resource_list(obj, f"{path}[{i}].resources.limits", res.get("limits")),
            )
        )
    return tuple(out)


def _host_ports(obj: str, raw_containers: Any) -> tuple[str, ...]:
    ports = []
    for i, c in enumerate(raw_containers or ()):
        for j, p in enumerate((c or {}).get("ports") or ()):
            hp = (p or {}).get("hostPort") or 0
            if not isinstance(hp, int) or isinstance(hp, bool):
                raise ObjectError(obj, f"spec.containers[{i}].ports[{j}].hostPort", f"expected an integer, got {hp!r}")
            if hp == 0:
                continue
            proto = p.get("protocol") or "TCP"
            ip = p.get("hostIP") or "0.0.0.0"
            ports.append(f"{proto}/{ip}/{hp}")
    return tuple(ports)


class Pod:
    """A v1 Pod, with everything the predicates and priorities need computed once."""

    __slots__ = (
        "raw", "name", "namespace", "uid", "labels", "annotations", "node_name", "scheduler_name",
        "creation_timestamp", "deletion_timestamp", "phase", "owner_references", "containers",
        "init_containers", "volumes", "tolerations", "affinity", "priority", "node_selector",
        "request", "container_request", "nonzero_milli_cpu", "nonzero_memory", "limits",
        "host_ports", "best_effort", "key",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        if not isinstance(raw, dict):
            raise ObjectError("Pod", "", f"expected an object, got {type(raw).__name__}")
        self.raw = raw
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        self.name: str = meta.get("name") or ""
        self.namespace: str = meta.get("namespace") or ""
        self.uid: str = meta.get("uid") or ""
        obj = f"Pod {self.namespace}/{self.name}"
        self.labels: dict[str, str] = _string_map(obj, "metadata.labels", meta.get("labels"))
        self.annotations: dict[str, str] = _string_map(obj, "metadata.annotations", meta.get("annotations"))
        self.node_name: str = spec.get("nodeName") or ""
        self.scheduler_name: str = spec.get("schedulerName") or "default-scheduler"
        self.creation_timestamp: str = _timestamp(meta.get("creationTimestamp")) or ""
        self.deletion_timestamp: str | None = _timestamp(meta.get("deletionTimestamp"))
        self.phase: str = status.get("phase") or ""
        self.owner_references = tuple(
            OwnerReference(
                o.get("apiVersion") or "", o.get("kind") or "", o.get("name") or "", o.get("uid") or "",
                bool(o.get("controller")),
            )
            for o in meta.get("ownerReferences") or ()
        )
        self.containers = _parse_containers(obj, "spec.containers", spec.get("containers"))
        self.init_containers = _parse_containers(obj, "spec.initContainers", spec.get("initContainers"))
        self.volumes: tuple[dict, ...] = tuple(v or {} for v in spec.get("volumes") or ())
        self.tolerations = tuple(Toleration.from_dict(t or {}) for t in spec.get("tolerations") or ())
        self.affinity: Affinity | None = parse_affinity(spec.get("affinity"))
        prio = spec.get("priority")
        self.priority: int = prio if isinstance(prio, int) else 0
        self.node_selector: dict[str, str] = _string_map(obj, "spec.nodeSelector", spec.get("nodeSelector"))
        self.host_ports = _host_ports(obj, spec.get("containers"))
        self.key = self.uid or f"{self.namespace}/{self.name}"
        self._compute_resources()

    def _compute_resources(self) -> None:
        # NodeInfo accounting: regular containers only.
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
        clone = object.__new__(Pod)
        for slot in Pod.__slots__:
            setattr(clone, slot, getattr(self, slot))
        clone.raw = raw
        clone.node_name = node_name
        return clone

    def __repr__(self) -> str:
        return f"Pod({self.namespace}/{self.name})"


def _timestamp(raw: Any) -> str | None:
    """RFC 3339 text; YAML loaders turn unquoted timestamps (as kubectl prints them) into datetimes."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, datetime):
        if raw.tzinfo is not None:
            raw = raw.astimezone(timezone.utc).replace(tzinfo=None)
        return raw.strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(raw)


def _string_map(obj: str, path: str, raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ObjectError(obj, path, f"expected a map of strings, got {type(raw).__name__}")
    for k, v in raw.items():
        if not isinstance(v, str):
            raise ObjectError(obj, f"{path}.{k}", f"expected a string, got {v!r}")
    return raw

