"""simulate and explain with late-bound claims (WaitForFirstConsumer): where each claim is bound or
provisioned, a PV taken by one pod not offered to the next, and ``--rules 1.9`` restoring today's output."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.offline.report import explain_schema, result_schema

HOSTNAME = "kubernetes.io/hostname"


def _node(name: str, zone: str) -> dict:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME: name, "topology.kubernetes.io/zone": zone}},
            "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]}}


def _claim(name: str, class_name: str) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class_name, "resources": {"requests": {"storage": "1Gi"}}}}


def _pod(name: str, claim: str, created: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}


def write_cluster(tmp_path) -> str:
    objects = [
        _node("node-a", "z1"), _node("node-b", "z2"),
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
         "provisioner": "pd.csi.storage.gke.io", "volumeBindingMode": "WaitForFirstConsumer",
         "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["z1"]}]}]},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-b"},
         "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                  "local": {"path": "/mnt/disks/vol1"},
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-b"]}]}]}}},
         "status": {"phase": "Available"}},
        _claim("data-db-0", "local"), _claim("data-db-1", "local"), _claim("data-web-0", "zonal"),
        _pod("db-0", "data-db-0", "2024-01-01T00:00:00Z"), _pod("db-1", "data-db-1", "2024-01-01T00:00:01Z"),
        _pod("web-0", "data-web-0", "2024-01-01T00:00:02Z"),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.stdout


def test_simulate_shows_where_claims_are_bound_or_provisioned(tmp_path):
    cluster = write_cluster(tmp_path)
    out = json.loads(cli("simulate", "--cluster", cluster, "-o", "json"))
    jsonschema.validate(out, result_schema("simulate"))
    placements = {p["pod"]: p for p in out["placements"]}
    assert placements["default/db-0"]["node"] == "node-b"
    assert placements["default/db-0"]["volumes"] == [
        {"claim": "default/data-db-0", "action": "bind", "volume": "local-b", "node": "node-b"}]
    # The only local PV is taken by db-0: db-1 finds none anywhere.
    assert placements["default/db-1"]["node"] is None
    assert placements["default/db-1"]["error"] == "0/2 nodes are available: 2 VolumeBindingNoMatch."
    assert "volumes" not in placements["default/db-1"]
    assert placements["default/web-0"]["node"] == "node-a"  # allowedTopologies: zone z1 only
    assert placements["default/web-0"]["volumes"] == [
        {"claim": "default/data-web-0", "action": "provision", "volume": None, "node": "node-a"}]
    table = cli("simulate", "--cluster", cluster)
    assert "Volumes (late-bound claims):" in table
    assert "default/db-0   default/data-db-0   PV local-b   node-b" in table
    assert "default/web-0  default/data-web-0  provisioned  node-a" in table


def test_explain_shows_the_volume_decision(tmp_path):
    cluster = write_cluster(tmp_path)
    out = json.loads(cli("explain", "default/db-1", "--cluster", cluster, "-o", "json"))
    jsonschema.validate(out, explain_schema())
    assert out["host"] == "node-b"  # alone, db-1 gets the PV
    assert out["volumes"] == [{"claim": "default/data-db-1", "action": "bind", "volume": "local-b", "node": "node-b"}]
    assert out["nodes"]["node-a"]["predicates"]["CheckVolumeBinding"] == {"fit": False, "reasons": ["VolumeBindingNoMatch"]}
    table = cli("explain", "default/db-1", "--cluster", cluster)
    assert "Volume: default/data-db-1 -> PV local-b" in table
    assert "VolumeBindingNoMatch (node(s) didn't find available persistent volumes to bind)" in table
    table = cli("explain", "default/web-0", "--cluster", cluster)
    assert "Volume: default/data-web-0 -> provisioned on node-a" in table


def test_rules_1_9_restore_todays_output(tmp_path):
    cluster = write_cluster(tmp_path)
    out = json.loads(cli("simulate", "--cluster", cluster, "-o", "json", "--rules", "1.9"))
    assert all("volumes" not in p for p in out["placements"])
    assert all(p["node"] for p in out["placements"])  # 1.9 without the gate ignores the claims
    table = cli("simulate", "--cluster", cluster, "--rules", "1.9")
    assert "Volumes" not in table
    explain = json.loads(cli("explain", "default/db-1", "--cluster", cluster, "-o", "json", "--rules", "1.9"))
    assert "volumes" not in explain
    assert explain["nodes"]["node-a"]["predicates"]["CheckVolumeBinding"] == {"fit": True, "reasons": []}


BAD_OBJECTS = [
    ({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p",
      "volumeBindingMode": "Later"},
     "StorageClass sc: volumeBindingMode: Unsupported value: 'Later': supported values: \"Immediate\", \"WaitForFirstConsumer\""),
    ({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p",
      "volumeBindingMode": 7},
     "StorageClass sc: volumeBindingMode: expected a string, got 7"),
    ({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p",
      "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]},
     "StorageClass sc: allowedTopologies[0].matchLabelExpressions[0].values: Required value"),
    ({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p",
      "allowedTopologies": [{"matchLabelExpressions": [{"key": "bad key", "values": ["a"]}]}]},
     "StorageClass sc: allowedTopologies[0].matchLabelExpressions[0].key: Invalid value: 'bad key': name part must consist of"),
    ({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p",
      "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}]}]},
     "StorageClass sc: allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: 'a'"),
    ({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p",
      "allowedTopologies": "z1"},
     "StorageClass sc: allowedTopologies: expected a list, got \"z1\""),
    ({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
      "spec": {"capacity": {"storage": "1Gi"}, "nodeAffinity": {}}},
     "PersistentVolume pv: spec.nodeAffinity.required: Required value: must specify required node constraints"),
    ({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
      "spec": {"capacity": {"storage": "1Gi"}, "nodeAffinity": {"required": {"nodeSelectorTerms": []}}}},
     "PersistentVolume pv: spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"),
    ({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
      "spec": {"capacity": {"storage": "1Gi"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "k", "operator": "Near", "values": ["a"]}]}]}}}},
     "PersistentVolume pv: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: 'Near'"),
    ({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
      "spec": {"capacity": {"storage": "1Gi"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
          {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a"]}]}]}}}},
     "PersistentVolume pv: spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key: Invalid value: 'metadata.uid': not a valid field selector key"),
]


@pytest.mark.parametrize("obj,message", BAD_OBJECTS, ids=[m.split(":")[1].strip() + str(i) for i, (_, m) in enumerate(BAD_OBJECTS)])
def test_malformed_storage_objects_get_the_api_servers_message(tmp_path, obj, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(obj))
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {path}: document 0: {message}"), lines[0]
