"""``--from-cluster`` reads the snapshot through the official kubernetes client over real HTTP.

A minimal read-only API server on 127.0.0.1 serves the list endpoints the client calls, from the
bundled example's objects; the client is configured by a generated kubeconfig.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.offline.examples import default_cluster_path

# list path -> kind
ROUTES = {
    "/api/v1/nodes": "Node",
    "/api/v1/pods": "Pod",
    "/api/v1/services": "Service",
    "/api/v1/replicationcontrollers": "ReplicationController",
    "/apis/apps/v1/replicasets": "ReplicaSet",
    "/apis/apps/v1/statefulsets": "StatefulSet",
    "/api/v1/persistentvolumes": "PersistentVolume",
    "/api/v1/persistentvolumeclaims": "PersistentVolumeClaim",
    "/apis/storage.k8s.io/v1/storageclasses": "StorageClass",
}


def _example_objects() -> dict[str, list[dict]]:
    by_kind: dict[str, list[dict]] = {kind: [] for kind in ROUTES.values()}
    for path in sorted(default_cluster_path().glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            for obj in doc.get("items", [doc]) if doc else ():
                if obj.get("kind") in by_kind:
                    by_kind[obj["kind"]].append(json.loads(json.dumps(obj, default=str)))
    return by_kind


@pytest.fixture
def api_server(tmp_path):
    objects = _example_objects()
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            path = self.path.split("?")[0]
            requests.append(path)
            kind = ROUTES.get(path)
            if path == "/version":
                body = json.dumps({"major": "1", "minor": "26+", "gitVersion": "v1.26.1"}).encode()
            elif kind is None:
                self.send_response(404)
                self.end_headers()
                return
            else:
                body = json.dumps({"kind": f"{kind}List", "apiVersion": "v1", "metadata": {}, "items": objects[kind]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "local", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [{"name": "test", "context": {"cluster": "local", "user": "me"}}],
    }))
    yield kubeconfig, requests
    server.shutdown()


def test_simulate_from_cluster_matches_the_manifests(api_server):
    kubeconfig, requests = api_server
    live = CliRunner().invoke(main, ["simulate", "--from-cluster", "--kubeconfig", str(kubeconfig), "-o", "json"])
    assert live.exit_code == 0, live.output
    offline = CliRunner().invoke(main, ["simulate", "-o", "json"])
    assert json.loads(live.stdout)["placements"] == json.loads(offline.stdout)["placements"]
    # /version chooses the OpenAPI schema the objects are validated against; PriorityClasses,
    # PodDisruptionBudgets, CSINodes, Namespaces and the DRA objects are tried in each version the server might
    # serve (this one serves none: the pods' namespaces have no labels, and no pod has claims).
    assert set(requests) == {*ROUTES, "/version", *(f"/apis/{gv}/priorityclasses" for gv in (
        "scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha1")),
        "/apis/policy/v1/poddisruptionbudgets", "/apis/policy/v1beta1/poddisruptionbudgets",
        "/apis/storage.k8s.io/v1/csinodes", "/api/v1/namespaces",
        *(f"/apis/resource.k8s.io/v1/{r}" for r in ("deviceclasses", "resourceslices", "resourceclaims",
                                                    "resourceclaimtemplates"))}


def test_unreachable_api_server_is_a_one_line_error(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {}}], "contexts": [{"name": "c", "context": {"cluster": "x", "user": "u"}}],
    }))
    result = CliRunner().invoke(main, ["simulate", "--from-cluster", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 2
    assert result.output.startswith("error: listing Nodes from http://127.0.0.1:9:")
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["simulate"], ["explain", "default/analytics-inmem"],
                                     ["compare", "DefaultProvider", "ClusterAutoscalerProvider"]])
def test_kubeconfig_alone_reads_the_live_cluster(api_server, command):
    """``--kubeconfig`` implies ``--from-cluster``, as kubectl reads it; a live cluster is not announced."""
    kubeconfig, requests = api_server
    implied = CliRunner().invoke(main, [*command, "--kubeconfig", str(kubeconfig), "-o", "json"])
    assert implied.exit_code == 0, implied.output
    assert "/api/v1/nodes" in requests
    explicit = CliRunner().invoke(main, [*command, "--from-cluster", "--kubeconfig", str(kubeconfig), "-o", "json"])
    assert implied.stdout == explicit.stdout
    assert not any(line.startswith("cluster:") for line in implied.stderr.splitlines()), implied.stderr
