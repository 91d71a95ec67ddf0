"""Bundled example cluster snapshots (package data)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def default_cluster_path() -> Path:
    """The bundled three-zone example cluster used when no ``--cluster`` is given."""
    return Path(str(resources.files(__package__).joinpath("default-cluster")))


def priority_cluster_path() -> Path:
    """The bundled example for ``--feature-gates PodPriority=true``: PriorityClasses, PDBs, preemption."""
    return Path(str(resources.files(__package__).joinpath("priority-cluster")))


def modern_cluster_path() -> Path:
    """The bundled example of a modern cluster's pods (overhead, init containers, topology spread,
    scheduling gates, a late-bound claim, a refused field), for ``--rules cluster`` against ``--rules 1.9``."""
    return Path(str(resources.files(__package__).joinpath("modern-cluster")))


def dra_cluster_path() -> Path:
    """The bundled example of GPUs handed out by Dynamic Resource Allocation (``examples/dra``): slices, a
    class, templates, a shared claim and the pods asking for them."""
    return Path(str(resources.files(__package__).joinpath("dra-cluster")))
