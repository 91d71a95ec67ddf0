"""Running the sweep in tests: specifications written to files, the command invoked in process, the example's
rows computed once per test process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from policy_scheduler.cli import main
from policy_scheduler.offline.examples import default_cluster_path, modern_cluster_path, priority_cluster_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sweep" / "sweep.yaml"
WEB_POD = ROOT / "examples" / "pods" / "web.yaml"
DEFAULT_CLUSTER = str(default_cluster_path())
MODERN_CLUSTER = str(modern_cluster_path())
PRIORITY_CLUSTER = str(priority_cluster_path())


def sweep(*args: str) -> Result:
    return CliRunner().invoke(main, ["sweep", *args], catch_exceptions=False)


def sweep_json(*args: str) -> dict[str, Any]:
    """``sweep ARGS -o json``, which must succeed; its result."""
    result = sweep(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def write_spec(directory: Path, spec: dict[str, Any] | str, name: str = "sweep.yaml") -> Path:
    path = directory / name
    path.write_text(spec if isinstance(spec, str) else yaml.safe_dump(spec, sort_keys=False))
    return path


def without_time(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as every executor must give them: all but the wall time."""
    return [{k: v for k, v in r.items() if k != "wallSeconds"} for r in rows]


@pytest.fixture(scope="session")
def example_local() -> dict[str, Any]:
    """The example sweep (examples/sweep/sweep.yaml) on a local pool of two processes."""
    return sweep_json(str(EXAMPLE), "--workers", "2")


def node(name: str, zone: str | None = None, cpu: str = "4", memory: str = "8Gi", *, unschedulable: bool = False,
         ready: str = "True", labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A v1 Node as the kubelet registers it (``topology.kubernetes.io/zone`` when ``zone``)."""
    meta_labels = {"kubernetes.io/hostname": name, **({"topology.kubernetes.io/zone": zone} if zone else {}),
                   **(labels or {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": meta_labels},
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def pod(name: str, cpu: str = "100m", memory: str = "128Mi", *, node_name: str | None = None,
        owner: tuple[str, str] | None = None, created: str = "2024-01-01T00:00:00Z", namespace: str = "default",
        labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A v1 Pod with one container; ``owner`` (kind, name) its controller; bound when ``node_name``."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                            "creationTimestamp": created, "labels": labels or {"app": owner[1] if owner else name}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1],
                                    "uid": f"uid-{owner[1]}", "controller": True}]
    body = {"containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body,
            "status": {"phase": "Running" if node_name else "Pending"}}


def write_manifests(directory: Path, *objects: dict[str, Any], name: str = "cluster.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path
