"""Small builders for the priority tests, mirroring upstream's test helpers (``makeNode``,
``makeNodeList``, ``makeLabeledNodeList``, ``buildPod``, ``priorityFunction``,
``schedulercache.CreateNodeNameToInfoMap``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from policy_scheduler.algorithm import HostPriority, PluginFactoryArgs
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.workloads import LabelSelectedController, ReplicationController, Service

_uids = itertools.count(1)


def make_pod(
    *,
    name: str = "",
    namespace: str = "",
    labels: Mapping[str, str] | None = None,
    node_name: str = "",
    containers: list[dict] | None = None,
    init_containers: list[dict] | None = None,
    affinity: dict | None = None,
    tolerations: list[dict] | None = None,
    owner_references: list[dict] | None = None,
    deletion_timestamp: str | None = None,
    uid: str | None = None,
) -> Pod:
    """A v1 Pod; every pod gets a unique uid (upstream's test pods are often nameless)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"test-uid-{next(_uids)}"}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if owner_references is not None:
        metadata["ownerReferences"] = owner_references
    if deletion_timestamp is not None:
        metadata["deletionTimestamp"] = deletion_timestamp
    spec: dict[str, Any] = {"nodeName": node_name, "containers": containers or []}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if affinity is not None:
        spec["affinity"] = affinity
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return Pod({"metadata": metadata, "spec": spec})


def container(requests: dict | None = None, limits: dict | None = None, image: str = "") -> dict:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "", "image": image, "resources": resources}


def make_node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    milli_cpu: int | None = None,
    memory: int | None = None,
    taints: list[dict] | None = None,
    annotations: Mapping[str, str] | None = None,
    images: list[tuple[list[str], int]] | None = None,
) -> Node:
    """A v1 Node; ``milli_cpu``/``memory`` set capacity and allocatable as upstream's ``makeNode`` does."""
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    status: dict[str, Any] = {}
    if milli_cpu is not None or memory is not None:
        resources = {"cpu": f"{milli_cpu or 0}m", "memory": str(memory or 0)}
        status["capacity"] = dict(resources)
        status["allocatable"] = dict(resources)
    if images is not None:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return Node({"metadata": metadata, "spec": {"taints": taints or []}, "status": status})


def resource_node(name: str, milli_cpu: int, memory: int) -> Node:
    """``makeNode(name, milliCPU, memory)``."""
    return make_node(name, milli_cpu=milli_cpu, memory=memory)


def node_list(names: Iterable[str]) -> list[Node]:
    """``makeNodeList``."""
    return [make_node(n) for n in names]


def labeled_node_list(labels_by_name: Mapping[str, Mapping[str, str]]) -> list[Node]:
    """``makeLabeledNodeList``."""
    return [make_node(n, labels=labels) for n, labels in labels_by_name.items()]


def service(selector: Mapping[str, str] | None, namespace: str = "") -> Service:
    return Service.from_dict({"metadata": {"namespace": namespace}, "spec": {"selector": selector}})


def replication_controller(selector: Mapping[str, str], namespace: str = "") -> ReplicationController:
    return ReplicationController.from_dict({"metadata": {"namespace": namespace}, "spec": {"selector": selector}})


def replica_set(match_labels: Mapping[str, str], namespace: str = "") -> LabelSelectedController:
    raw = {"metadata": {"namespace": namespace}, "spec": {"selector": {"matchLabels": dict(match_labels)}}}
    return LabelSelectedController.from_dict("ReplicaSet", raw)


def stateful_set(match_labels: Mapping[str, str], namespace: str = "") -> LabelSelectedController:
    raw = {"metadata": {"namespace": namespace}, "spec": {"selector": {"matchLabels": dict(match_labels)}}}
    return LabelSelectedController.from_dict("StatefulSet", raw)


def make_cluster(
    nodes: Iterable[Node] = (),
    pods: Iterable[Pod] = (),
    *,
    services: Iterable[Service] = (),
    rcs: Iterable[ReplicationController] = (),
    replica_sets: Iterable[LabelSelectedController] = (),
    stateful_sets: Iterable[LabelSelectedController] = (),
) -> ClusterState:
    """A cluster whose ``node_infos`` are what ``CreateNodeNameToInfoMap(pods, nodes)`` builds, and whose
    listers serve the given objects."""
    cluster = ClusterState()
    for n in nodes:
        cluster.add_node(n)
    for p in pods:
        cluster.add_pod(p)
    for s in services:
        cluster.add_service(s)
    for rc in rcs:
        cluster.add_replication_controller(rc)
    for rs in replica_sets:
        cluster.add_replica_set(rs)
    for ss in stateful_sets:
        cluster.add_stateful_set(ss)
    return cluster


def factory_args(cluster: ClusterState, hard_pod_affinity_symmetric_weight: int = 1) -> PluginFactoryArgs:
    return PluginFactoryArgs(cluster=cluster, hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight)


def prioritize(
    map_fn: Callable[[Pod, Any, NodeInfo | None], int],
    reduce_fn: Callable[[Pod, Any, Mapping[str, NodeInfo], list[HostPriority]], None] | None,
    pod: Pod,
    meta: Any,
    node_infos: Mapping[str, NodeInfo],
    nodes: Iterable[Node],
) -> list[tuple[str, int]]:
    """Upstream's ``priorityFunction`` test helper: map over the nodes in order, then reduce."""
    results = [HostPriority(n.name, map_fn(pod, meta, node_infos.get(n.name))) for n in nodes]
    if reduce_fn is not None:
        reduce_fn(pod, meta, node_infos, results)
    return [(r.host, r.score) for r in results]


def host_scores(results: Iterable[HostPriority]) -> list[tuple[str, int]]:
    return [(r.host, r.score) for r in results]


# -- affinity builders (raw v1 JSON) ---------------------------------------------------------------


def label_requirement(key: str, operator: str, values: list[str] | None = None) -> dict:
    req: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        req["values"] = values
    return req


def pod_affinity_term(expressions: list[dict], topology_key: str, namespaces: list[str] | None = None) -> dict:
    term: dict[str, Any] = {"labelSelector": {"matchExpressions": expressions}, "topologyKey": topology_key}
    if namespaces is not None:
        term["namespaces"] = namespaces
    return term


def weighted_term(weight: int, expressions: list[dict], topology_key: str) -> dict:
    return {"weight": weight, "podAffinityTerm": pod_affinity_term(expressions, topology_key)}


# -- the pod specs shared by upstream's resource priority tests --------------------------------------

LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}


def no_resources(node_name: str = "", labels: Mapping[str, str] | None = None) -> Pod:
    """``noResources`` (no containers) or ``machineNSpec`` (a node name and no containers)."""
    return make_pod(node_name=node_name, labels=labels)


def cpu_only(node_name: str = "machine1", labels: Mapping[str, str] | None = None) -> Pod:
    """``cpuOnly`` / ``cpuOnly2``: 1000m + 2000m CPU, memory explicitly 0."""
    containers = [container({"cpu": "1000m", "memory": "0"}), container({"cpu": "2000m", "memory": "0"})]
    return make_pod(node_name=node_name, labels=labels, containers=containers)


def cpu_and_memory(node_name: str = "machine2", labels: Mapping[str, str] | None = None) -> Pod:
    """``cpuAndMemory``: 1000m/2000 + 2000m/3000."""
    containers = [container({"cpu": "1000m", "memory": "2000"}), container({"cpu": "2000m", "memory": "3000"})]
    return make_pod(node_name=node_name, labels=labels, containers=containers)


# -- the resource scenarios shared by upstream's LeastRequested, MostRequested and
# -- BalancedResourceAllocation tables (same inputs, different expected scores) ----------------------
def two_nodes(spec1: tuple[int, int], spec2: tuple[int, int]) -> list:
    """machine1 and machine2 with (milliCPU, memory) allocatable."""
    return [resource_node("machine1", *spec1), resource_node("machine2", *spec2)]


def big_cpu_and_memory():
    """``bigCpuAndMemory``: 2000m/4000 + 3000m/5000."""
    containers = [container({"cpu": "2000m", "memory": "4000"}), container({"cpu": "3000m", "memory": "5000"})]
    return make_pod(node_name="machine1", containers=containers)


def _resource_scenarios() -> dict[str, tuple]:
    """Scenario id (upstream's row description) -> (pod, existing pods, nodes)."""
    return {
        "nothing scheduled, nothing requested": (no_resources(), [], two_nodes((4000, 10000), (4000, 10000))),
        "nothing scheduled, resources requested, differently sized machines":
            (cpu_and_memory(), [], two_nodes((4000, 10000), (6000, 10000))),
        "no resources requested, pods scheduled": (
            no_resources(),
            [no_resources("machine1", LABELS2), no_resources("machine1", LABELS1),
             no_resources("machine2", LABELS1), no_resources("machine2", LABELS1)],
            two_nodes((4000, 10000), (4000, 10000)),
        ),
        "no resources requested, pods scheduled with resources": (
            no_resources(),
            [cpu_only(labels=LABELS2), cpu_only(labels=LABELS1),
             cpu_only("machine2", LABELS1), cpu_and_memory(labels=LABELS1)],
            two_nodes((10000, 20000), (10000, 20000)),
        ),
        "resources requested, pods scheduled with resources":
            (cpu_and_memory(), [cpu_only(), cpu_and_memory()], two_nodes((10000, 20000), (10000, 20000))),
        "resources requested, pods scheduled with resources, differently sized machines":
            (cpu_and_memory(), [cpu_only(), cpu_and_memory()], two_nodes((10000, 20000), (10000, 50000))),
        "requested resources exceed node capacity":
            (cpu_only(), [cpu_only(), cpu_and_memory()], two_nodes((4000, 10000), (4000, 10000))),
        "zero node resources, pods scheduled with resources":
            (no_resources(), [cpu_only(), cpu_and_memory()], two_nodes((0, 0), (0, 0))),
        "resources requested with more than the node, pods scheduled with resources":
            (big_cpu_and_memory(), [], two_nodes((4000, 10000), (10000, 8000))),
    }


def resource_table(expected: dict[str, tuple[int, int]]) -> list:
    """pytest params (pod, pods, nodes, expected host scores) for the named scenarios, in order."""
    scenarios = _resource_scenarios()
    return [
        pytest.param(*scenarios[name], [("machine1", m1), ("machine2", m2)], id=name)
        for name, (m1, m2) in expected.items()
    ]
