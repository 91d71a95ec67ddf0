"""CSINodes in snapshots: read as ``kubectl get csinodes,... -o yaml`` prints them, put into the cluster state,
and refused with the API server's message (one line: file, object, field; exit 2) when it would refuse them."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.model.volumes import ANN_MIGRATED_PLUGINS
from policy_scheduler.offline.snapshot import NO_CHECKS, load_snapshot

NODE = "ip-10-0-1-23.ec2.internal"
MIGRATED = ("kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,"
            "kubernetes.io/gce-pd,kubernetes.io/vsphere-volume")


def csi_node(name: str = NODE, driver: dict | None = None) -> dict:
    """A CSINode as the API server returns it (the kubelet's object, owned by its Node); ``driver`` overrides
    fields of its one driver."""
    return {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
        "metadata": {
            "name": name, "uid": "5d3e1f0a-2b1c-4d8e-9f6a-7b8c9d0e1f2a", "resourceVersion": "81733",
            "creationTimestamp": "2024-05-02T10:11:12Z", "annotations": {ANN_MIGRATED_PLUGINS: MIGRATED},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                 "uid": "0b5b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"}],
        },
        "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-0123456789abcdef0",
                              "allocatable": {"count": 25}, "topologyKeys": ["topology.ebs.csi.aws.com/zone"],
                              **(driver or {})}]},
    }


def kubectl_list(tmp_path) -> str:
    """``kubectl get csinodes,pv,pvc,pods,nodes -o yaml``: one List, kinds in that order."""
    capacity = {"cpu": "2", "memory": "8Gi", "pods": "110", "attachable-volumes-aws-ebs": "25"}
    items = [
        csi_node(),
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
         "metadata": {"name": "ip-10-0-2-7.ec2.internal", "resourceVersion": "81740"},
         "spec": {"drivers": None}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pvc-1f2e"},
         "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                  "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0a1b2c3d"},
                  "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data-db-0",
                               "uid": "data-db-0-uid"}},
         "status": {"phase": "Bound"}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "data-db-0", "namespace": "default", "uid": "data-db-0-uid"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3", "volumeName": "pvc-1f2e",
                  "resources": {"requests": {"storage": "10Gi"}}},
         "status": {"phase": "Bound"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0", "namespace": "default"},
         "spec": {"nodeName": NODE, "containers": [{"name": "db", "image": "postgres"}],
                  "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]},
         "status": {"phase": "Running"}},
        *({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
           "status": {"capacity": capacity, "allocatable": capacity,
                      "conditions": [{"type": "Ready", "status": "True"}]}}
          for name in (NODE, "ip-10-0-2-7.ec2.internal", "ip-10-0-3-9.ec2.internal")),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items,
                                    "metadata": {"resourceVersion": ""}}))
    return str(path)


def test_kubectl_list_of_csinodes_reaches_the_cluster_state(tmp_path):
    snapshot = load_snapshot([kubectl_list(tmp_path)])
    assert not snapshot.skipped
    assert [c.name for c in snapshot.csi_nodes] == [NODE, "ip-10-0-2-7.ec2.internal"]
    cluster = snapshot.cluster_state()
    node = cluster.get_csi_node(NODE)
    assert node is snapshot.csi_nodes[0]
    ((driver),) = node.drivers
    assert (driver.name, driver.node_id, driver.allocatable_count) == ("ebs.csi.aws.com", "i-0123456789abcdef0", 25)
    assert node.migrated_plugins == frozenset(MIGRATED.split(","))
    bare = cluster.get_csi_node("ip-10-0-2-7.ec2.internal")
    assert bare is not None and bare.drivers == () and bare.migrated_plugins == frozenset()
    assert cluster.get_csi_node("ip-10-0-3-9.ec2.internal") is None  # no CSI driver registered there


def test_kubectl_list_is_a_valid_snapshot_for_the_cli(tmp_path):
    result = CliRunner().invoke(main, ["simulate", "--cluster", kubectl_list(tmp_path), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert "unknown field" not in result.output
    json.loads(result.stdout)


def test_csinode_list_and_v1beta1_are_read(tmp_path):
    """A ``CSINodeList`` (items without kind) and the 1.14-1.21 ``storage.k8s.io/v1beta1`` version."""
    beta = csi_node("node-b")
    beta["apiVersion"] = "storage.k8s.io/v1beta1"
    items = [{k: v for k, v in csi_node("node-a").items() if k not in ("kind", "apiVersion")}]
    (tmp_path / "list.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINodeList", "items": items}, beta]))
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(tmp_path), "-o", "json"])
    assert result.exit_code == 0, result.output
    snapshot = load_snapshot([tmp_path])
    assert sorted(snapshot.cluster_state().csi_nodes) == ["node-a", "node-b"]


def _with_driver(**fields) -> dict:
    return csi_node("node-a", fields)


def _v1beta1(**fields) -> dict:
    return {**_with_driver(**fields), "apiVersion": "storage.k8s.io/v1beta1"}


def _two_drivers(second: dict) -> dict:
    obj = csi_node("node-a")
    obj["spec"]["drivers"].append(second)
    return obj


BAD_CSI_NODES = [
    (_with_driver(name=""), "spec.drivers[0].name: Required value"),
    (_with_driver(name="ebs_csi"), "spec.drivers[0].name: Invalid value: 'ebs_csi': a lowercase RFC 1123 subdomain"),
    (_with_driver(name="a" * 64), "spec.drivers[0].name: Too long: must have at most 63 bytes"),
    (_two_drivers({"name": "ebs.csi.aws.com", "nodeID": "i-2"}),
     "spec.drivers[1].name: Duplicate value: 'ebs.csi.aws.com'"),
    (_with_driver(nodeID=""), "spec.drivers[0].nodeID: Required value"),
    (_with_driver(nodeID="i" * 257), "spec.drivers[0].nodeID: Invalid value: 'iii"),
    (_with_driver(allocatable={"count": -1}),
     "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0"),
    (_with_driver(topologyKeys=["topology.ebs.csi.aws.com/zone", "bad key"]),
     "spec.drivers[0]: Invalid value: 'bad key': name part must consist of alphanumeric characters"),
    (_with_driver(topologyKeys=[""]), "spec.drivers[0]: Required value"),
    (_with_driver(topologyKeys=["zone", "zone"]), "spec.drivers[0]: Duplicate value: 'zone'"),
    # Types, as the API server's decoder refuses them (the OpenAPI schema).
    (_with_driver(allocatable={"count": "25"}), 'spec.drivers[0].allocatable.count: expected an integer, got "25"'),
    (_with_driver(topologyKeys="zone"), 'spec.drivers[0].topologyKeys: expected a list, got "zone"'),
    # v1beta1 (served 1.14-1.21) is checked against its successor's schema and the same rules.
    (_v1beta1(allocatable={"count": "25"}), 'spec.drivers[0].allocatable.count: expected an integer, got "25"'),
    (_v1beta1(nodeID=""), "spec.drivers[0].nodeID: Required value"),
]


@pytest.mark.parametrize(("obj", "message"), BAD_CSI_NODES, ids=[m.split(":")[0] + f"-{i}" for i, (_, m) in
                                                                   enumerate(BAD_CSI_NODES)])
def test_malformed_csinodes_get_the_api_servers_message(tmp_path, obj, message):
    path = tmp_path / "csinodes.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [obj]}))
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {path}: document 0 item 0: CSINode node-a: {message}"), lines[0]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("allocatable", {"count": "25"}, 'spec.drivers[0].allocatable.count: expected an integer, got "25"'),
    ("nodeID", 7, "spec.drivers[0].nodeID: expected a string, got 7"),
    ("topologyKeys", [1], "spec.drivers[0].topologyKeys[0]: expected a string, got 1"),
])
def test_wrong_types_without_the_schema_are_the_readers_errors(tmp_path, field, value, message):
    """``--no-validate``: no schema, no API rules; the typed readers still name the field."""
    path = tmp_path / "csinode.yaml"
    path.write_text(yaml.safe_dump(_with_driver(**{field: value})))
    result = CliRunner().invoke(main, ["simulate", "--no-validate", "--cluster", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output == f"error: {path}: document 0: CSINode node-a: {message}\n"


def test_no_validate_skips_the_api_servers_rules(tmp_path):
    path = tmp_path / "csinode.yaml"
    path.write_text(yaml.safe_dump(_with_driver(allocatable={"count": -1}, topologyKeys=["bad key"])))
    (csi,) = load_snapshot([path], NO_CHECKS).csi_nodes
    assert csi.drivers[0].allocatable_count == -1


def test_wrong_api_version_and_duplicates_are_refused(tmp_path):
    alpha = csi_node("node-a")
    alpha["apiVersion"] = "storage.k8s.io/v1alpha1"
    path = tmp_path / "csinode.yaml"
    path.write_text(yaml.safe_dump(alpha))
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(path)])
    assert result.exit_code == 2
    assert result.output == (f"error: {path}: document 0: CSINode node-a: apiVersion: 'storage.k8s.io/v1alpha1' "
                             "is not one of storage.k8s.io/v1, storage.k8s.io/v1beta1\n")
    path.write_text(yaml.safe_dump_all([csi_node("node-a"), copy.deepcopy(csi_node("node-a"))]))
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(path)])
    assert result.exit_code == 2
    assert result.output == f"error: {path}: document 1: CSINode node-a: already defined at {path}: document 0\n"
