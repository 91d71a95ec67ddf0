"""Small builders for predicate tests: v1 objects as dicts, parsed into the engine's model.

They mirror the helpers of upstream ``predicates_test.go`` (``newResourcePod``, ``makeAllocatableResources``,
``newPod`` with host ports, ``createPodWithVolume``) so that ported tables read like the originals.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from policy_scheduler.algorithm import PluginFactoryArgs
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.volumes import PersistentVolume, PersistentVolumeClaim, StorageClass
from policy_scheduler.model.workloads import Service
from policy_scheduler.predicates.metadata import PredicateMetadata, PredicateMetadataFactory

EXTENDED_A = "example.com/aaa"
EXTENDED_B = "example.com/bbb"
HUGE_PAGE_A = "hugepages-2Mi"
NVIDIA_GPU = "alpha.kubernetes.io/nvidia-gpu"

_uids = itertools.count(1)


def make_pod(
    name: str = "",
    namespace: str = "",
    labels: Mapping[str, str] | None = None,
    node_name: str = "",
    uid: str | None = None,
    **spec: Any,
) -> Pod:
    """A pod; ``spec`` keys are v1 PodSpec fields (``containers``, ``affinity``, ``volumes``, ...)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        meta["labels"] = dict(labels)
    if uid is not None:
        meta["uid"] = uid
    body = dict(spec)
    if node_name:
        body["nodeName"] = node_name
    return Pod({"metadata": meta, "spec": body})


def unique(pod: Pod) -> Pod:
    """A copy of ``pod`` with a fresh uid, so identical test pods can share one cluster cache."""
    raw = dict(pod.raw)
    raw["metadata"] = dict(raw.get("metadata") or {}, uid=f"uid-{next(_uids)}")
    return Pod(raw)


def make_node(
    name: str = "node1",
    labels: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    conditions: Iterable[tuple[str, str]] = (),
    taints: Iterable[Mapping[str, str]] = (),
    unschedulable: bool = False,
    annotations: Mapping[str, str] | None = None,
) -> Node:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = dict(labels)
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    return Node(
        {
            "metadata": meta,
            "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
            "status": {
                "allocatable": dict(allocatable or {}),
                "conditions": [{"type": t, "status": s} for t, s in conditions],
            },
        }
    )


def make_node_info(node: Node | None = None, pods: Iterable[Pod] = ()) -> NodeInfo:
    return NodeInfo(node, list(pods))


def make_cluster(
    nodes: Iterable[Node] = (),
    pods: Iterable[Pod] = (),
    services: Iterable[Mapping[str, Any]] = (),
    pvs: Iterable[Mapping[str, Any]] = (),
    pvcs: Iterable[Mapping[str, Any]] = (),
    storage_classes: Iterable[Mapping[str, Any]] = (),
) -> ClusterState:
    """A cluster cache; pods keep their identity when they already have a uid, else get a fresh one."""
    cluster = ClusterState()
    for n in nodes:
        cluster.add_node(n)
    for p in pods:
        cluster.add_pod(p if p.uid else unique(p))
    for s in services:
        cluster.add_service(Service.from_dict(dict(s)))
    for pv in pvs:
        cluster.add_persistent_volume(PersistentVolume.from_dict(dict(pv)))
    for pvc in pvcs:
        cluster.add_persistent_volume_claim(PersistentVolumeClaim.from_dict(dict(pvc)))
    for sc in storage_classes:
        cluster.add_storage_class(StorageClass.from_dict(dict(sc)))
    return cluster


def make_args(cluster: ClusterState | None = None, rules: Rules = Rules.CLUSTER, **gates: bool) -> PluginFactoryArgs:
    return PluginFactoryArgs(cluster=cluster or ClusterState(), feature_gates=FeatureGates(gates, rules))


def metadata(pod: Pod, node_infos: Mapping[str, NodeInfo] | None = None, cluster: ClusterState | None = None) -> PredicateMetadata | None:
    """Upstream's test helper ``PredicateMetadata(pod, nodeInfo)``."""
    return PredicateMetadataFactory(cluster or ClusterState(), {}).get_metadata(pod, node_infos or {})


# -- resources ----------------------------------------------------------------------------------------

def resource_list(
    milli_cpu: int = 0,
    memory: int = 0,
    nvidia_gpu: int = 0,
    ephemeral_storage: int = 0,
    scalar: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """``schedulercache.Resource{...}.ResourceList()``: every key, zeros included."""
    rl = {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        NVIDIA_GPU: str(nvidia_gpu),
        "pods": "0",
        "ephemeral-storage": str(ephemeral_storage),
    }
    for k, v in (scalar or {}).items():
        rl[k] = str(v)
    return rl


def resource_pod(*usages: Mapping[str, str], init: Iterable[Mapping[str, str]] = (), **pod_kwargs: Any) -> Pod:
    """``newResourcePod`` (one container per usage) plus ``newResourceInitPod`` (``init`` containers)."""
    containers = [{"resources": {"requests": dict(u)}} for u in usages]
    init_containers = [{"resources": {"requests": dict(u)}} for u in init]
    spec: dict[str, Any] = {"containers": containers}
    if init_containers:
        spec["initContainers"] = init_containers
    return make_pod(**pod_kwargs, **spec)


def allocatable(
    milli_cpu: int, memory: int, nvidia_gpu: int, pods: int, extended_a: int, storage: int, huge_page_a: int
) -> dict[str, str]:
    """``makeAllocatableResources``."""
    return {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        NVIDIA_GPU: str(nvidia_gpu),
        EXTENDED_A: str(extended_a),
        "ephemeral-storage": str(storage),
        HUGE_PAGE_A: str(huge_page_a),
    }


# -- ports and volumes -----------------------------------------------------------------------------

def port_pod(node_name: str, *ports: str) -> Pod:
    """``newPod(host, "PROTO/IP/PORT", ...)``: one container with those host ports."""
    container_ports = []
    for p in ports:
        protocol, host_ip, host_port = p.split("/")
        container_ports.append({"hostIP": host_ip, "hostPort": int(host_port), "protocol": protocol})
    return make_pod(node_name=node_name, containers=[{"ports": container_ports}])


def pod_with_volume(pod: str, pv: str, pvc: str) -> Pod:
    """``createPodWithVolume``."""
    return make_pod(
        name=pod, namespace="default", volumes=[{"name": pv, "persistentVolumeClaim": {"claimName": pvc}}]
    )


def pvc_dict(name: str, namespace: str = "", volume_name: str = "", storage_class: str | None = None, **spec: Any) -> dict:
    body: dict[str, Any] = {"volumeName": volume_name, **spec}
    if storage_class is not None:
        body["storageClassName"] = storage_class
    return {"metadata": {"name": name, "namespace": namespace}, "spec": body}


def pv_dict(name: str, labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None, **spec: Any) -> dict:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = dict(labels)
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    return {"metadata": meta, "spec": dict(spec)}


# -- affinity ------------------------------------------------------------------------------------------

def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


def pod_affinity_term(*expressions: Mapping[str, Any], topology_key: str = "", namespaces: Iterable[str] = ()) -> dict:
    term: dict[str, Any] = {"labelSelector": {"matchExpressions": [dict(e) for e in expressions]}}
    if topology_key:
        term["topologyKey"] = topology_key
    if namespaces:
        term["namespaces"] = list(namespaces)
    return term


def affinity(
    required: Iterable[Mapping[str, Any]] = (), anti: Iterable[Mapping[str, Any]] = (), node: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A v1 Affinity with required pod (anti-)affinity terms and an optional nodeAffinity."""
    out: dict[str, Any] = {}
    required, anti = list(required), list(anti)
    if required:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [dict(t) for t in required]}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [dict(t) for t in anti]}
    if node is not None:
        out["nodeAffinity"] = dict(node)
    return out


def node_affinity_terms(*terms: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """nodeAffinity with required ``nodeSelectorTerms``; each term is a list of expressions (None: no key)."""
    out = []
    for t in terms:
        out.append({} if t is None else {"matchExpressions": [dict(e) for e in t]})
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": out}}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("KUBE_MAX_PD_VOLS", raising=False)
    return monkeypatch
