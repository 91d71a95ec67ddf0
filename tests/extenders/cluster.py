"""Small clusters and pods for the extender tests, and the example extender's view of them."""

from __future__ import annotations

from typing import Any

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod

MAINTENANCE = "example.com/maintenance"
SCORE = "example.com/score"
GPU = "example.com/gpu"


def node(name: str, maintenance: bool = False, score: int | None = None, gpus: int = 0) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, MAINTENANCE: "true" if maintenance else "false"}
    if score is not None:
        labels[SCORE] = str(score)
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110", **({GPU: str(gpus)} if gpus else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, cpu: str = "100m", gpus: int = 0, limits_only: bool = False, namespace: str = "default",
        node_name: str = "") -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "64Mi"}}
    if gpus:
        resources["limits" if limits_only else "requests"] = {**resources.get("limits", {}), GPU: str(gpus)}
        if limits_only:
            resources["requests"][GPU] = str(gpus)  # requests default to limits for extended resources
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                                                            "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": spec, "status": {"phase": "Pending" if not node_name else "Running"}}


#: node-0 in maintenance; node-1 scores 2, node-2 scores 9, node-3 scores 5 and has GPUs.
NODES = [node("node-0", maintenance=True, score=10), node("node-1", score=2), node("node-2", score=9),
         node("node-3", score=5, gpus=4)]


def cluster(nodes: list[dict[str, Any]] | None = None) -> ClusterState:
    state = ClusterState()
    for raw in nodes or NODES:
        state.add_node(Node(raw))
    return state


def as_pod(raw: dict[str, Any]) -> Pod:
    return Pod(raw)
