"""Resource arithmetic (``schedulercache.Resource``) and the 1.9 pod request rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .quantity import milli_value, value

CPU = "cpu"
MEMORY = "memory"
NVIDIA_GPU = "alpha.kubernetes.io/nvidia-gpu"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def is_extended_resource_name(name: str) -> bool:
    """Not in the default (kubernetes.io) namespace and not a quota ``requests.`` name."""
    default_namespace = "/" not in name or "kubernetes.io/" in name
    return not default_namespace and not name.startswith("requests.")


def is_scalar_resource_name(name: str) -> bool:
    """Extended resources and huge pages are tracked as scalar resources in 1.9."""
    return is_extended_resource_name(name) or name.startswith("hugepages-")


@dataclass(slots=True)
class Resource:
    milli_cpu: int = 0
    memory: int = 0
    nvidia_gpu: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: Mapping[str, object] | None) -> Resource:
        r = cls()
        r.add_list(rl)
        return r

    def add_list(self, rl: Mapping[str, object] | None) -> None:
        """``Resource.Add``: accumulate a ResourceList; unknown names are ignored."""
        if not rl:
            return
        for name, q in rl.items():
            if name == CPU:
                self.milli_cpu += milli_value(q)
            elif name == MEMORY:
                self.memory += value(q)
            elif name == NVIDIA_GPU:
                self.nvidia_gpu += value(q)
            elif name == PODS:
                self.allowed_pod_number += value(q)
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += value(q)
            elif is_scalar_resource_name(name):
                self.scalar[name] = self.scalar.get(name, 0) + value(q)

    def set_max_list(self, rl: Mapping[str, object] | None) -> None:
        """``Resource.SetMaxResource``: per resource, keep the larger value."""
        if not rl:
            return
        for name, q in rl.items():
            if name == CPU:
                self.milli_cpu = max(self.milli_cpu, milli_value(q))
            elif name == MEMORY:
                self.memory = max(self.memory, value(q))
            elif name == NVIDIA_GPU:
                self.nvidia_gpu = max(self.nvidia_gpu, value(q))
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage = max(self.ephemeral_storage, value(q))
            elif is_scalar_resource_name(name):
                v = value(q)
                if v > self.scalar.get(name, 0):
                    self.scalar[name] = v

    def set_max(self, other: Resource) -> None:
        """Per resource, keep the larger of this and ``other`` (``maxResourceList`` on parsed values)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.nvidia_gpu = max(self.nvidia_gpu, other.nvidia_gpu)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for k, v in other.scalar.items():
            if v > self.scalar.get(k, 0):
                self.scalar[k] = v

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.nvidia_gpu += other.nvidia_gpu
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.nvidia_gpu -= other.nvidia_gpu
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.nvidia_gpu,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )

    def request_key(self) -> tuple[int, int, int, int, tuple[tuple[str, int], ...]]:
        """The amounts a pod requests, hashable (pods asking the same share what is derived from them)."""
        return (self.milli_cpu, self.memory, self.nvidia_gpu, self.ephemeral_storage, tuple(sorted(self.scalar.items())))

    def is_zero_request(self) -> bool:
        return (
            self.milli_cpu == 0
            and self.memory == 0
            and self.nvidia_gpu == 0
            and self.ephemeral_storage == 0
            and not self.scalar
        )
