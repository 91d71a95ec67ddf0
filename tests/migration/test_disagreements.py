"""Where our engine (pure 1.9) and the modern kube-scheduler under the migrated configuration part ways, and
the mapping therefore says ``approximate``: each scenario shows the difference on the real 1.26, 1.32 and 1.36
schedulers, so a note cannot claim more (or less) than the binaries do.

InterPodAffinityPriority: both sum the same preferred terms, but 1.9 normalises from 0 and v1 from the
lowest node. Two regions, the pod prefers region-mates of app=s: region a holds 2 of them on a busy node,
region b 1 on an idle node. 1.9: affinity a 10, b 5; least-requested a 0, b 8: b wins 13 to 10. v1:
affinity a 100, b 0 (the lowest); least-allocated a 7, b 82: a wins 107 to 82.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchmarks.harness.daemon import Cluster, node, pod, wait_until
from policy_scheduler.cli import main

from ..kube.reference import ReferenceScheduler

MIGRATED = "migrated"
POLICY = {"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsResources"}],
          "priorities": [{"name": "InterPodAffinityPriority", "weight": 1}, {"name": "LeastRequestedPriority", "weight": 1}]}
NODES = [node("busy", cpu="4", memory="8Gi", labels={"region": "a"}),
         node("idle", cpu="4", memory="8Gi", labels={"region": "b"})]
BOUND = [pod("s-1", cpu="1800m", memory="3686Mi", node_name="busy", labels={"app": "s"}),
         pod("s-2", cpu="1800m", memory="3686Mi", node_name="busy", labels={"app": "s"}),
         pod("s-3", cpu="600m", memory="1228Mi", node_name="idle", labels={"app": "s"})]
PREFERS_S = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 1, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "s"}}, "topologyKey": "region"}}]}}


def newcomer(scheduler: str) -> dict[str, Any]:
    return pod("newcomer", cpu="100m", memory="100Mi", scheduler=scheduler, affinity=PREFERS_S)


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_inter_pod_affinity_priority_is_marked_approximate(tmp_path: Path):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    data = json.loads(cli("migrate", "--policy-config-file", str(policy), "-o", "json"))
    (entry,) = [e for e in data["mapping"] if e["from"] == "InterPodAffinityPriority"]
    assert entry["status"] == "approximate" and "normalises between the lowest and the highest" in entry["note"]


def ours(tmp_path: Path, policy: Path) -> str:
    cluster = tmp_path / "cluster.yaml"
    objects = [*NODES, *BOUND, newcomer("default-scheduler")]
    cluster.write_text(yaml.safe_dump_all([{**o, "metadata": {"namespace": "default", **o["metadata"]}} for o in objects]))
    out = json.loads(cli("simulate", "--cluster", str(cluster), "--policy-config-file", str(policy), "--rules", "1.9",
                         "-o", "json"))
    (placement,) = [p for p in out["placements"] if p["pod"].endswith("newcomer")]
    return placement["node"]


@pytest.mark.parametrize("version", ["1.26", "1.32", "1.36"], ids=lambda v: f"k8s-{v}")
def test_inter_pod_affinity_normalisation_differs(tmp_path: Path, version: str, envtest_pool):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    assert ours(tmp_path, policy) == "idle"
    config = json.loads(cli("migrate", "--policy-config-file", str(policy), "--rules", "1.9", "--to", version,
                            "--scheduler-name", MIGRATED, "-o", "json"))["configuration"]
    server = envtest_pool.lease(version)
    scheduler = None
    try:
        cluster = Cluster(server.rest())
        for obj in NODES:
            cluster.add_node(obj)
        for obj in BOUND:
            cluster.add_pod(obj)
        scheduler = ReferenceScheduler(server, tmp_path, configuration=config).start()
        cluster.add_pod(newcomer(MIGRATED))
        host = wait_until(lambda: cluster.placements().get("newcomer"), 60, what="newcomer bound")
        assert host == "busy", scheduler.log()[-3000:]
    finally:
        if scheduler is not None:
            scheduler.stop()
        envtest_pool.release(server)
