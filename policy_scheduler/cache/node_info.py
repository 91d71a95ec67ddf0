"""NodeInfo: the scheduler cache's per-node aggregate (``schedulercache.NodeInfo``)."""

from __future__ import annotations

from collections import Counter

from ..model.node import Node
from ..model.pod import Pod
from ..model.resources import Resource
from ..model.taints import Taint


class NodeInfo:
    """The node object plus the pods assigned or assumed to it and their summed requests.

    ``node`` is None for an entry that only holds pods whose Node object is not (yet) known.
    """

    __slots__ = (
        "node", "pods", "pods_with_affinity", "used_ports", "requested", "nonzero_milli_cpu",
        "nonzero_memory", "allocatable", "taints", "memory_pressure", "disk_pressure", "image_sizes",
        "generation",
    )

    def __init__(self, node: Node | None = None, pods: list[Pod] | None = None) -> None:
        self.node: Node | None = None
        self.pods: list[Pod] = []
        self.pods_with_affinity: list[Pod] = []
        self.used_ports: Counter[str] = Counter()
        self.requested = Resource()
        self.nonzero_milli_cpu = 0
        self.nonzero_memory = 0
        self.allocatable = Resource()
        self.taints: tuple[Taint, ...] = ()
        self.memory_pressure = ""
        self.disk_pressure = ""
        self.image_sizes: dict[str, int] = {}
        self.generation = 0
        if node is not None:
            self.set_node(node)
        for p in pods or ():
            self.add_pod(p)

    @property
    def name(self) -> str:
        return self.node.name if self.node is not None else ""

    def set_node(self, node: Node) -> None:
        self.node = node
        self.allocatable = node.allocatable.clone()
        self.taints = node.taints
        # Conditions are remembered from the last update that carried them, as upstream does.
        for c in node.conditions:
            if c.type == "MemoryPressure":
                self.memory_pressure = c.status
            elif c.type == "DiskPressure":
                self.disk_pressure = c.status
        sizes: dict[str, int] = {}
        for image in node.images:
            for name in image.names:
                sizes[name] = image.size_bytes
        self.image_sizes = sizes
        self.generation += 1

    def add_pod(self, pod: Pod) -> None:
        self.requested.add(pod.container_request)
        self.nonzero_milli_cpu += pod.nonzero_milli_cpu
        self.nonzero_memory += pod.nonzero_memory
        self.pods.append(pod)
        if pod.has_pod_affinity_constraints:
            self.pods_with_affinity.append(pod)
        self.used_ports.update(pod.host_ports)
        self.generation += 1

    def remove_pod(self, pod: Pod) -> None:
        """Remove the pod with ``pod.key``; ephemeral storage is subtracted too (1.9 forgot it)."""
        for i, p in enumerate(self.pods):
            if p.key == pod.key:
                removed = self.pods.pop(i)
                break
        else:
            raise KeyError(f"no corresponding pod {pod.name} in pods of node {self.name}")
        for i, p in enumerate(self.pods_with_affinity):
            if p.key == pod.key:
                del self.pods_with_affinity[i]
                break
        self.requested.sub(removed.container_request)
        self.nonzero_milli_cpu -= removed.nonzero_milli_cpu
        self.nonzero_memory -= removed.nonzero_memory
        self.used_ports.subtract(removed.host_ports)
        self.used_ports += Counter()  # drop ports no longer used
        self.generation += 1

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.used_ports = Counter(self.used_ports)
        c.requested = self.requested.clone()
        c.nonzero_milli_cpu = self.nonzero_milli_cpu
        c.nonzero_memory = self.nonzero_memory
        c.allocatable = self.allocatable.clone()
        c.taints = self.taints
        c.memory_pressure = self.memory_pressure
        c.disk_pressure = self.disk_pressure
        c.image_sizes = self.image_sizes
        c.generation = self.generation
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
