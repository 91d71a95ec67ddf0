"""Snapshot loading: files and directories, multi-document YAML, kind: List, JSON, API defaults, errors."""

from __future__ import annotations

import json
import textwrap

import pytest

from policy_scheduler.errors import SnapshotError
from policy_scheduler.offline.snapshot import load_snapshot

NODE = """
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {zone: a}}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_mixed_files_lists_and_defaults(tmp_path):
    write(tmp_path, "cluster/nodes.yaml", NODE)
    write(tmp_path, "cluster/pods.yaml", """
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: Pod
          metadata: {name: running, creationTimestamp: "2018-01-01T00:00:00Z"}
          spec: {nodeName: node-a, containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
        - apiVersion: v1
          kind: Pod
          metadata: {name: done, namespace: jobs}
          spec: {nodeName: node-a, containers: [{name: c}]}
          status: {phase: Succeeded}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: b-pending, namespace: default, creationTimestamp: "2018-01-01T00:00:02Z"}
        spec: {containers: [{name: c}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: a-pending, creationTimestamp: "2018-01-01T00:00:02Z"}
        spec: {containers: [{name: c}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: other, creationTimestamp: "2018-01-01T00:00:01Z"}
        spec: {schedulerName: other-scheduler, containers: [{name: c}]}
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        """)
    write(tmp_path, "extra.json", json.dumps({
        "apiVersion": "extensions/v1beta1", "kind": "ReplicaSet",
        "metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }))
    snap = load_snapshot([tmp_path / "cluster", tmp_path / "extra.json"])
    assert [n.name for n in snap.nodes] == ["node-a"]
    # The API server defaults allocatable from capacity and the namespace to "default".
    assert snap.nodes[0].allocatable.milli_cpu == 4000
    assert snap.find_pod("running").namespace == "default"
    assert [p.ref for p in snap.pending_pods()] == ["default/a-pending", "default/b-pending"]
    assert [p.ref for p in snap.pending_pods("other-scheduler")] == ["default/other"]
    assert [p.name for p in snap.bound_pods()] == ["running"]
    assert snap.skipped == {"Deployment": 1}
    assert snap.replica_sets[0].namespace == "default"
    cluster = snap.cluster_state()
    assert cluster.node_infos["node-a"].requested.milli_cpu == 500


@pytest.mark.parametrize(
    "text, message",
    [
        ("kind: Pod\napiVersion: v1\nmetadata: {name: p}\nspec: {containers: [{resources: {requests: {cpu: lots}}}]}\n",
         "pods.yaml: document 0: Pod default/p: spec.containers[0].resources.requests.cpu: quantities must match"),
        ("kind: Pod\napiVersion: v1\nmetadata: {namespace: x}\n", "pods.yaml: document 0: Pod: metadata.name: missing"),
        ("---\nkind: Node\napiVersion: v1\nmetadata: {name: n}\n---\nkind: ReplicaSet\napiVersion: apps/v2\nmetadata: {name: r}\n",
         "pods.yaml: document 1: ReplicaSet r: apiVersion: 'apps/v2' is not one of extensions/v1beta1, apps/v1beta2, apps/v1"),
        ("kind: Pod\napiVersion: v1\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
         "kind: Pod\napiVersion: v1\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
         "pods.yaml: document 1: Pod default/p: already defined at"),
        ("key: [unclosed\n", "pods.yaml: invalid YAML"),
        ("- a\n- b\n", "pods.yaml: document 0: expected a Kubernetes object, got list"),
        ("apiVersion: v1\nmetadata: {name: p}\n", "pods.yaml: document 0: kind: missing"),
        ("kind: 5\napiVersion: v1\n", "pods.yaml: document 0: kind: expected a string, got 5"),
        ("kind: Pod\nmetadata: {name: p}\n", "pods.yaml: document 0: Pod p: apiVersion: missing (one of v1)"),
        ("kind: Pod\napiVersion: [v1]\n", "pods.yaml: document 0: Pod: apiVersion: expected one of v1, got a list"),
        ("kind: Pod\napiVersion: v1\nmetadata: 5\n", "pods.yaml: document 0: Pod: metadata: expected an object, got 5"),
        ("kind: Pod\napiVersion: v1\n", "pods.yaml: document 0: Pod: metadata: missing"),
        ("kind: Node\napiVersion: v1\nmetadata: {name: true}\n",
         "pods.yaml: document 0: Node: metadata.name: expected a string, got true"),
    ],
)
def test_malformed_objects_name_file_document_object_and_field(tmp_path, text, message):
    path = write(tmp_path, "pods.yaml", text)
    with pytest.raises(SnapshotError) as exc:
        load_snapshot([path])
    assert message in str(exc.value)
    assert str(exc.value).startswith(str(tmp_path))


def test_missing_paths_and_empty_directories(tmp_path):
    with pytest.raises(SnapshotError, match="no such file or directory"):
        load_snapshot([tmp_path / "nope.yaml"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(SnapshotError, match="no .yaml, .yml or .json files"):
        load_snapshot([tmp_path / "empty"])


def test_unknown_pod_reference(tmp_path):
    snap = load_snapshot([write(tmp_path, "n.yaml", NODE)])
    with pytest.raises(SnapshotError, match="pod default/ghost is not in the snapshot"):
        snap.find_pod("ghost")


def test_unquoted_timestamps_as_kubectl_prints_them(tmp_path):
    path = write(tmp_path, "pods.yaml", """
        apiVersion: v1
        kind: List
        items:
        - {apiVersion: v1, kind: Pod, metadata: {name: later, creationTimestamp: 2018-01-02T00:00:00Z}, spec: {containers: [{name: c}]}}
        - {apiVersion: v1, kind: Pod, metadata: {name: earlier, creationTimestamp: "2018-01-01T00:00:00Z"}, spec: {containers: [{name: c}]}}
        - {apiVersion: v1, kind: Pod, metadata: {name: unset}, spec: {containers: [{name: c}]}}
        """)
    snap = load_snapshot([path])
    assert [p.name for p in snap.pending_pods()] == ["unset", "earlier", "later"]
    assert snap.find_pod("later").creation_timestamp == "2018-01-02T00:00:00Z"
