"""The manifests in ``examples/deploy/``: well formed, consistent with each other, and least privilege.

The RBAC check runs against a real kube-apiserver 1.26 (RBAC on; the 1.10 envtest authorizes
everything): the manifests are created with strict field validation, a token is issued for the
ServiceAccount through the TokenRequest API, and every request the daemon makes is sent with that
token and must not be refused (403), while a set of requests it must not be able to make must be.
The Prometheus example (``prometheus/scrape.yaml``) is held to what it promises: its ServiceAccount's token
reads the daemon's ``/metrics`` over HTTPS, and nothing else it serves.
"""

from __future__ import annotations

import json
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from benchmarks.harness.envtest import ROOT, EnvtestServer, start_server
from benchmarks.harness.ports import free_port
from policy_scheduler.api import lint_policy, load_policy_file, load_policy_from_configmap
from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.client.rest import MERGE_PATCH, ApiError, RestClient

DEPLOY = ROOT / "examples" / "deploy"
MANIFESTS = ("serviceaccount.yaml", "rbac.yaml", "policy-configmap.yaml", "deployment.yaml",
             "second-scheduler-pod.yaml")
PROMETHEUS = "prometheus/scrape.yaml"
CLIENT_CA_CM = "extension-apiserver-authentication"
PROMETHEUS_NS = "monitoring"
SECURE_PORT = 10259
NS = "kube-system"
WORKLOAD_NS = "team-a"


def documents(name: str) -> list[dict]:
    with open(DEPLOY / name) as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def one(kind: str, name: str | None = None) -> dict:
    found = [doc for file in MANIFESTS for doc in documents(file)
             if doc["kind"] == kind and (name is None or doc["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''} in examples/deploy, found {len(found)}"
    return found[0]


def flags(args: list[str]) -> dict[str, str]:
    out = {}
    for arg in args:
        match = re.fullmatch(r"--([a-z0-9-]+)(?:=(.*))?", arg)
        assert match, f"argument {arg!r} is not --flag=value"
        out[match.group(1)] = match.group(2) if match.group(2) is not None else "true"
    return out


def container() -> dict:
    (c,) = one("Deployment")["spec"]["template"]["spec"]["containers"]
    return c


# --------------------------------------------------------------------------------------------------
# Static checks


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_parses_with_type_and_object_meta(name):
    docs = documents(name)
    assert docs
    for doc in docs:
        assert isinstance(doc.get("apiVersion"), str) and doc["apiVersion"]
        assert isinstance(doc.get("kind"), str) and doc["kind"]
        assert isinstance(doc.get("metadata"), dict) and doc["metadata"].get("name")


def test_dockerfile_installs_the_repository():
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.M)
    assert "pip install" in text and "USER " in text
    for copied in re.findall(r"^COPY (?!--from)(.+?) \S+$", text, re.M):
        for path in copied.split():
            assert (ROOT / path).exists(), f"Dockerfile copies {path}, which is not in the repository"


def test_policy_configmap_is_the_default_provider_policy_and_valid():
    from policy_scheduler.cli import _registry, policy_problems

    configmap = one("ConfigMap", "scheduler-policy")
    assert configmap["metadata"]["namespace"] == NS
    policy = load_policy_from_configmap(configmap)
    assert policy_problems(policy) == []
    reg = _registry()
    assert lint_policy(policy, set(reg.fit_predicates), set(reg.priorities)) == []
    assert policy == load_policy_file(ROOT / "policies" / "default-provider.json")
    assert json.loads(configmap["data"]["policy.cfg"]) == json.loads(
        (ROOT / "policies" / "default-provider.json").read_text())


def test_manifests_agree_with_each_other():
    deployment = one("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    args = flags(container()["args"])
    account = one("ServiceAccount")["metadata"]
    role, cluster_role = one("Role"), one("ClusterRole")

    assert deployment["metadata"]["namespace"] == NS and deployment["spec"]["replicas"] == 2
    assert spec["serviceAccountName"] == account["name"] and account["namespace"] == NS
    assert "schedulerName" not in spec, "the scheduler's own pods are placed by the default scheduler"
    # Its own roles, and upstream's for delegated authentication and authorization of the HTTPS port.
    bindings = {
        ("ClusterRoleBinding", "policy-scheduler"): ("ClusterRole", cluster_role["metadata"]["name"]),
        ("RoleBinding", "policy-scheduler"): ("Role", role["metadata"]["name"]),
        ("ClusterRoleBinding", "policy-scheduler-auth-delegator"): ("ClusterRole", "system:auth-delegator"),
        ("RoleBinding", "policy-scheduler-authentication-reader"): ("Role", "extension-apiserver-authentication-reader"),
    }
    for (kind, name), (ref_kind, ref_name) in bindings.items():
        binding = one(kind, name)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref_name}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"], "namespace": NS}]
        assert binding["metadata"].get("namespace", NS) == NS
    assert role["metadata"]["namespace"] == NS

    # A second scheduler, with its own lock (sharing kube-scheduler's would stop one of the two).
    assert args["scheduler-name"] == "policy-scheduler"
    assert one("Pod")["spec"]["schedulerName"] == args["scheduler-name"]
    assert args["leader-elect"] == "true" and args["lock-object-namespace"] == NS
    assert args["lock-object-name"] != "kube-scheduler"
    assert args["policy-configmap"] == one("ConfigMap")["metadata"]["name"]
    assert args["policy-configmap-namespace"] == NS

    # The Role grants the lock and the ConfigMap by the names the daemon is given.
    lock = {"leases": "coordination.k8s.io", "endpoints": "", "configmaps": ""}[args["leader-elect-resource-lock"]]
    named = {(group, resource, verb): rule.get("resourceNames")
             for rule in role["rules"] for group in rule["apiGroups"] for resource in rule["resources"]
             for verb in rule["verbs"]}
    resource = args["leader-elect-resource-lock"]
    assert named[(lock, resource, "create")] is None
    assert named[(lock, resource, "get")] == named[(lock, resource, "update")] == [args["lock-object-name"]]
    for verb in ("get", "list", "watch"):
        assert named[("", "configmaps", verb)] == [args["policy-configmap"]]

    # Health and metrics over HTTPS on the secure port; no insecure port; no plain-HTTP scrape annotations
    # (Prometheus scrapes with a token: prometheus/scrape.yaml).
    assert int(args["secure-port"]) == SECURE_PORT and "port" not in args and "address" not in args
    c = container()
    assert c["ports"] == [{"name": "https", "containerPort": SECURE_PORT, "protocol": "TCP"}]
    for probe, path in (("startupProbe", "/readyz"), ("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        assert c[probe]["httpGet"] == {"path": path, "port": SECURE_PORT, "scheme": "HTTPS"}
    annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
    assert not any(key.startswith("prometheus.io/") for key in annotations)
    anti = spec["affinity"]["podAntiAffinity"]
    terms = [t.get("podAffinityTerm", t) for key in anti for t in anti[key]]
    assert any(t["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"] for t in terms)


def only_scheduler_documents() -> list[dict]:
    """``only-scheduler/kustomization.yaml`` rendered as ``kubectl apply -k`` would: its resources with its
    JSON 6902 patches (``test`` and ``replace`` only) applied to the targets."""
    kustomization = yaml.safe_load((DEPLOY / "only-scheduler" / "kustomization.yaml").read_text())
    docs = [doc for resource in kustomization["resources"]
            for doc in documents(str(Path("only-scheduler") / resource))]
    for patch in kustomization["patches"]:
        target = patch["target"]
        (doc,) = [d for d in docs if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]]
        for op in yaml.safe_load(patch["patch"]):
            *parents, last = [int(p) if p.isdigit() else p for p in op["path"].strip("/").split("/")]
            holder = doc
            for key in parents:
                holder = holder[key]
            assert op["op"] in ("test", "replace"), op
            if op["op"] == "test":
                assert holder[last] == op["value"], f"{op['path']}: the base manifest changed"
            else:
                holder[last] = op["value"]
    return docs


def test_only_scheduler_overlay_takes_every_pod_with_kube_schedulers_lock():
    docs = only_scheduler_documents()
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (role,) = [d for d in docs if d["kind"] == "Role"]
    args = flags(deployment["spec"]["template"]["spec"]["containers"][0]["args"])
    assert args["scheduler-name"] == "default-scheduler"
    assert (args["lock-object-namespace"], args["lock-object-name"]) == (NS, "kube-scheduler")
    granted = [r.get("resourceNames") for r in role["rules"] if r["resources"] == ["leases"] and "get" in r["verbs"]]
    assert granted == [["kube-scheduler"]]
    assert {d["kind"] for d in docs} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                         "RoleBinding", "ConfigMap", "Deployment"}


def test_deployment_arguments_are_accepted_by_the_run_command():
    from policy_scheduler import cli

    run = cli.main.commands["run"]
    c = container()
    assert c["command"] == ["policy-scheduler", "run"]
    run.make_context("run", list(c["args"]))


# --------------------------------------------------------------------------------------------------
# RBAC against a real API server


KINDS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Service": "/api/v1/namespaces/{ns}/services",
}


def create(admin: RestClient, docs: list[dict]) -> None:
    for doc in docs:
        path = KINDS[doc["kind"]].format(ns=doc["metadata"].get("namespace", ""))
        # Strict: an unknown or misspelt field in a manifest is an error, not silently dropped.
        admin.request("POST", path, body=doc, query={"fieldValidation": "Strict"})


def service_account_kubeconfig(server: EnvtestServer, admin: RestClient, account: str) -> Path:
    """A kubeconfig for the server with a token of ServiceAccount ``kube-system/account``."""
    token = admin.post(f"/api/v1/namespaces/{NS}/serviceaccounts/{account}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    })["status"]["token"]
    config = json.loads(Path(server.kubeconfig).read_text())
    config["users"] = [{"name": account, "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = account
    path = Path(server.dir) / f"{account}.kubeconfig"
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    """(admin, scheduler): RestClients for the envtest admin and for the policy-scheduler ServiceAccount."""
    server = start_server("1.26", tmp_path_factory.mktemp("envtest-deploy"))
    try:
        admin = server.rest()
        create(admin, [doc for name in MANIFESTS for doc in documents(name)])
        path = service_account_kubeconfig(server, admin, one("ServiceAccount")["metadata"]["name"])
        scheduler = RestClient(api_client(str(path)), qps=0, burst=1)
        assert scheduler.get("/apis/authentication.k8s.io/v1")  # the token works at all
        _seed(admin)
        yield admin, scheduler, path
    finally:
        server.stop()


def _seed(admin: RestClient) -> None:
    """Objects for the requests below to act on, created as admin."""
    admin.post("/api/v1/namespaces", {"metadata": {"name": WORKLOAD_NS}})
    admin.post("/api/v1/nodes", {"metadata": {"name": "n1"}})
    admin.post("/apis/storage.k8s.io/v1/csinodes", {"metadata": {"name": "n1"}, "spec": {"drivers": [
        {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}}]}})
    for pod in ("p1", "p2", "p3"):
        admin.post(f"/api/v1/namespaces/{WORKLOAD_NS}/pods", {
            "metadata": {"name": pod},
            "spec": {"schedulerName": "policy-scheduler", "containers": [{"name": "c", "image": "pause"}]},
        })
    admin.post(f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": "other-config"}, "data": {"a": "b"}})
    admin.post(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases", {"metadata": {"name": "kube-scheduler"}})


def _status(call) -> int:
    try:
        call()
    except ApiError as e:
        return e.status
    return 200


def _watch(client: RestClient, path: str, query: dict | None = None) -> None:
    client.watch(path, {"timeoutSeconds": 5, **(query or {})}, read_timeout=10).close()


def _event(ns: str, name: str, involved: dict) -> dict:
    now = "2024-01-01T00:00:00Z"
    return {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
        "involvedObject": involved, "reason": "Scheduled", "message": "test", "type": "Normal",
        "source": {"component": "policy-scheduler"}, "count": 1, "firstTimestamp": now, "lastTimestamp": now,
    }


def test_scheduler_service_account_may_make_every_request_the_daemon_makes(clients):
    admin, sa, _ = clients
    pod = {"kind": "Pod", "namespace": WORKLOAD_NS, "name": "p1"}
    lease = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
    lock = flags(container()["args"])["lock-object-name"]
    policy_cm = one("ConfigMap")["metadata"]["name"]
    by_name = {"fieldSelector": f"metadata.name={policy_cm}"}
    client_ca = {"fieldSelector": f"metadata.name={CLIENT_CA_CM}"}
    checks = []
    for path in ("/api/v1/nodes", "/api/v1/pods", "/api/v1/services", "/api/v1/replicationcontrollers",
                 "/apis/apps/v1/replicasets", "/apis/apps/v1/statefulsets", "/api/v1/persistentvolumes",
                 "/api/v1/persistentvolumeclaims", "/apis/storage.k8s.io/v1/storageclasses",
                 "/apis/storage.k8s.io/v1/csinodes", "/api/v1/namespaces"):
        checks += [(f"list {path}", lambda p=path: sa.get(p, {"limit": 1})),
                   (f"watch {path}", lambda p=path: _watch(sa, p))]
    checks += [
        ("get policy ConfigMap", lambda: sa.get(f"/api/v1/namespaces/{NS}/configmaps/{policy_cm}")),
        ("list policy ConfigMap by name", lambda: sa.get(f"/api/v1/namespaces/{NS}/configmaps", by_name)),
        ("watch policy ConfigMap by name", lambda: _watch(sa, f"/api/v1/namespaces/{NS}/configmaps", by_name)),
        ("create event on the ConfigMap", lambda: sa.post(f"/api/v1/namespaces/{NS}/events", _event(
            NS, "cm.1", {"kind": "ConfigMap", "namespace": NS, "name": policy_cm}))),
        ("get pod", lambda: sa.get(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p1")),
        ("create pods/binding", lambda: sa.post(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p1/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1", "namespace": WORKLOAD_NS},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})),
        ("create bindings", lambda: sa.post(f"/api/v1/namespaces/{WORKLOAD_NS}/bindings", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p2", "namespace": WORKLOAD_NS},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})),
        ("patch pods/status", lambda: sa.patch(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p3/status", {
            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                       "message": "0/1 nodes are available"}]}})),
        ("update pods/status", lambda: sa.put(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p3/status",
                                              sa.get(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p3"))),
        ("create event", lambda: sa.post(f"/api/v1/namespaces/{WORKLOAD_NS}/events",
                                         _event(WORKLOAD_NS, "p1.1", pod))),
        ("patch event", lambda: sa.patch(f"/api/v1/namespaces/{WORKLOAD_NS}/events/p1.1", {"count": 2})),
        ("create event in default", lambda: sa.post("/api/v1/namespaces/default/events", _event(
            "default", "x.1", {"kind": "Pod", "namespace": "default", "name": "x"}))),
        ("get lock (absent)", lambda: sa.get(f"{lease}/{lock}")),
        ("create lock", lambda: sa.post(lease, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                                "metadata": {"name": lock, "namespace": NS},
                                                "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})),
        ("update lock", lambda: sa.put(f"{lease}/{lock}", {**sa.get(f"{lease}/{lock}"),
                                                          "spec": {"holderIdentity": "b", "leaseDurationSeconds": 15}})),
        ("get lock", lambda: sa.get(f"{lease}/{lock}")),
        # The HTTPS port's delegated authentication (the client CA: get at start, then list and watch it by
        # name; TokenReview) and authorization (SubjectAccessReview).
        ("get the client CA ConfigMap", lambda: sa.get(f"/api/v1/namespaces/{NS}/configmaps/{CLIENT_CA_CM}")),
        ("list the client CA ConfigMap by name", lambda: sa.get(f"/api/v1/namespaces/{NS}/configmaps", client_ca)),
        ("watch the client CA ConfigMap by name",
         lambda: _watch(sa, f"/api/v1/namespaces/{NS}/configmaps", client_ca)),
        ("create tokenreviews", lambda: sa.post("/apis/authentication.k8s.io/v1/tokenreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "not-a-token"}})),
        ("create subjectaccessreviews", lambda: sa.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
                "user": "someone", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}})),
    ]
    checks += [(f"GET {path}", lambda p=path: sa.get(p))
               for path in ("/api", "/apis", "/apis/coordination.k8s.io", "/version", "/healthz", "/api/v1",
                            "/apis/apps/v1", "/apis/storage.k8s.io/v1", "/apis/policy/v1")]
    results = [(what, _status(call)) for what, call in checks]
    refused = [f"{what}: {status}" for what, status in results if status in (401, 403)]
    assert not refused, "refused: " + "; ".join(refused)
    # Not just "not refused": these really succeed against this server (which, started without a client CA, may
    # have no client CA ConfigMap).
    assert dict(results)["get lock (absent)"] == 404
    assert dict(results)["get the client CA ConfigMap"] in (200, 404)
    absent = ("get lock (absent)", "get the client CA ConfigMap")
    assert all(status == 200 for what, status in results if what not in absent), results
    assert admin.get(f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p1")["spec"]["nodeName"] == "n1"
    assert admin.get(f"{lease}/{lock}")["spec"]["holderIdentity"] == "b"


def test_scheduler_service_account_is_refused_everything_else(clients):
    admin, sa, _ = clients
    cms = f"/api/v1/namespaces/{NS}/configmaps"
    lease = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
    policy_cm = one("ConfigMap")["metadata"]["name"]
    p1 = f"/api/v1/namespaces/{WORKLOAD_NS}/pods/p1"
    checks = [
        ("delete node", lambda: sa.delete("/api/v1/nodes/n1")),
        ("patch node", lambda: sa.patch("/api/v1/nodes/n1", {"metadata": {"labels": {"a": "b"}}}, MERGE_PATCH)),
        ("get node", lambda: sa.get("/api/v1/nodes/n1")),
        ("get CSINode", lambda: sa.get("/apis/storage.k8s.io/v1/csinodes/n1")),
        ("get namespace", lambda: sa.get(f"/api/v1/namespaces/{WORKLOAD_NS}")),
        ("label namespace", lambda: sa.patch(f"/api/v1/namespaces/{WORKLOAD_NS}", {"metadata": {"labels": {"a": "b"}}},
                                             MERGE_PATCH)),
        ("create namespace", lambda: sa.post("/api/v1/namespaces", {"metadata": {"name": "new-ns"}})),
        ("update CSINode", lambda: sa.put("/apis/storage.k8s.io/v1/csinodes/n1",
                                          admin.get("/apis/storage.k8s.io/v1/csinodes/n1"))),
        ("create pod", lambda: sa.post(f"/api/v1/namespaces/{WORKLOAD_NS}/pods", {
            "metadata": {"name": "new"}, "spec": {"containers": [{"name": "c", "image": "pause"}]}})),
        ("update pod", lambda: sa.put(p1, admin.get(p1))),
        ("delete pod", lambda: sa.delete(p1)),
        ("list secrets", lambda: sa.get("/api/v1/secrets")),
        ("list secrets in kube-system", lambda: sa.get(f"/api/v1/namespaces/{NS}/secrets")),
        ("get a secret", lambda: sa.get(f"/api/v1/namespaces/{NS}/secrets/anything")),
        ("get another ConfigMap", lambda: sa.get(f"{cms}/other-config")),
        ("update another ConfigMap", lambda: sa.put(f"{cms}/other-config", admin.get(f"{cms}/other-config"))),
        ("update the policy ConfigMap", lambda: sa.put(f"{cms}/{policy_cm}", admin.get(f"{cms}/{policy_cm}"))),
        ("list all ConfigMaps in kube-system", lambda: sa.get(cms)),
        ("create ConfigMap", lambda: sa.post(cms, {"metadata": {"name": "new"}})),
        ("create Endpoints", lambda: sa.post(f"/api/v1/namespaces/{NS}/endpoints", {"metadata": {"name": "new"}})),
        ("get kube-scheduler's lease", lambda: sa.get(f"{lease}/kube-scheduler")),
        ("update kube-scheduler's lease", lambda: sa.put(f"{lease}/kube-scheduler",
                                                         admin.get(f"{lease}/kube-scheduler"))),
        ("create lease elsewhere", lambda: sa.post(f"/apis/coordination.k8s.io/v1/namespaces/{WORKLOAD_NS}/leases",
                                                   {"metadata": {"name": "x"}})),
        ("delete event", lambda: sa.delete(f"/api/v1/namespaces/{WORKLOAD_NS}/events/anything")),
        ("create ClusterRoleBinding", lambda: sa.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "metadata": {"name": "x"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                   "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "policy-scheduler", "namespace": NS}]})),
    ]
    allowed = [f"{what}: {status}" for what, status in ((w, _status(c)) for w, c in checks) if status != 403]
    assert not allowed, "not refused: " + "; ".join(allowed)


def prometheus_token(admin: RestClient) -> str:
    """``prometheus/scrape.yaml`` created on the server (its namespace first), and a token of its
    ServiceAccount."""
    if _status(lambda: admin.get(f"/api/v1/namespaces/{PROMETHEUS_NS}")) == 404:
        admin.post("/api/v1/namespaces", {"metadata": {"name": PROMETHEUS_NS}})
    docs = documents(PROMETHEUS)
    for doc in docs:
        path = KINDS[doc["kind"]].format(ns=doc["metadata"].get("namespace", ""))
        if _status(lambda p=path, d=doc: admin.get(f"{p}/{d['metadata']['name']}")) == 404:
            admin.request("POST", path, body=doc, query={"fieldValidation": "Strict"})
    (account,) = [d for d in docs if d["kind"] == "ServiceAccount"]
    return admin.post(f"/api/v1/namespaces/{PROMETHEUS_NS}/serviceaccounts/{account['metadata']['name']}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600},
    })["status"]["token"]


def https_get(port: int, path: str, token: str | None = None) -> int:
    """The status of a GET on a scheduler's secure port (its self-signed certificate not verified)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers=headers),
                                    timeout=10, context=context) as reply:
            return reply.status
    except urllib.error.HTTPError as e:
        return e.code


def test_the_daemon_runs_with_the_deployments_arguments_and_this_rbac(clients, tmp_path):
    """`policy-scheduler run` with the Deployment's arguments and the ServiceAccount's token: it takes the
    Lease, binds the example pod, marks an unschedulable pod, rejects a bad policy with an event, serves
    /readyz to anyone and /metrics to Prometheus' token (prometheus/scrape.yaml) but not /configz, and on SIGTERM
    releases the Lease and exits 0, without one refused request."""
    admin, _, kubeconfig = clients
    lock = flags(container()["args"])["lock-object-name"]
    lease = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{lock}"
    if _status(lambda: admin.get(lease)) == 200:
        admin.delete(lease)  # left by the request test with a live-looking holder
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    admin.post("/api/v1/nodes", {"metadata": {"name": "worker", "labels": {"kubernetes.io/hostname": "worker"}},
                                 "status": {"capacity": resources, "allocatable": resources,
                                            "conditions": [{"type": "Ready", "status": "True"}]}})
    port = free_port()
    # (In a pod the client and delegated authentication and authorization all use the in-cluster token.)
    args = [a for a in container()["args"] if not a.startswith("--secure-port=")]
    args += [f"--secure-port={port}", "--bind-address=127.0.0.1", f"--kubeconfig={kubeconfig}",
             f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}"]
    token = prometheus_token(admin)  # (its RBAC reaches the API server's authorizer while the daemon starts)
    log_path = tmp_path / "daemon.log"
    with open(log_path, "w") as log:
        daemon = subprocess.Popen([sys.executable, "-m", "policy_scheduler.cli", "run", *args],
                                  stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        pod = one("Pod")  # created, unbound, by the fixture
        too_big = {"metadata": {"name": "too-big"}, "spec": {
            "schedulerName": pod["spec"]["schedulerName"],
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "64"}}}]}}
        admin.post("/api/v1/namespaces/default/pods", too_big)

        def until(what, check, timeout=20.0):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if daemon.poll() is not None:
                    pytest.fail(f"the daemon exited ({daemon.returncode}) before {what}:\n{log_path.read_text()[-3000:]}")
                value = check()
                if value:
                    return value
                time.sleep(0.1)
            pytest.fail(f"timed out waiting for {what}:\n{log_path.read_text()[-3000:]}")

        path = f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}"
        until("the example pod to be bound", lambda: admin.get(path)["spec"].get("nodeName") == "worker")
        until("PodScheduled=False on the unschedulable pod", lambda: any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in admin.get("/api/v1/namespaces/default/pods/too-big")["status"].get("conditions") or ()))
        assert https_get(port, "/readyz") == 200 and https_get(port, "/metrics") == 403
        assert https_get(port, "/metrics", token) == 200
        assert https_get(port, "/configz", token) == 403
        assert admin.get(lease)["spec"]["holderIdentity"]

        name = one("ConfigMap")["metadata"]["name"]
        configmap = admin.get(f"/api/v1/namespaces/{NS}/configmaps/{name}")
        configmap["data"]["policy.cfg"] = '{"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "NoSuchPredicate"}]}'
        admin.put(f"/api/v1/namespaces/{NS}/configmaps/{name}", configmap)
        until("a Warning event on the rejected policy", lambda: any(
            e["type"] == "Warning" and e["involvedObject"].get("name") == name
            for e in admin.get(f"/api/v1/namespaces/{NS}/events")["items"]))

        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=20) == 0, log_path.read_text()[-3000:]
        assert not admin.get(lease)["spec"].get("holderIdentity"), "the Lease was not released"
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    text = log_path.read_text()
    # A refused request: urllib3's status in its request lines, or the daemon's "403 Forbidden: ..." (a bare
    # "403" also appears in random ports and millisecond stamps).
    assert 'HTTP/1.1" 403 ' not in text and "Forbidden" not in text and "forbidden" not in text, text[-3000:]


def test_preemption_rbac_grants_exactly_what_preemption_adds(clients):
    """rbac-preemption.yaml: with it the ServiceAccount may delete pods and watch PDBs; without it not."""
    admin, sa, _ = clients
    pdbs = "/apis/policy/v1/poddisruptionbudgets"
    pod = f"/api/v1/namespaces/{WORKLOAD_NS}/pods/victim"
    admin.post(f"/api/v1/namespaces/{WORKLOAD_NS}/pods", {
        "metadata": {"name": "victim"}, "spec": {"containers": [{"name": "c", "image": "pause"}]}})
    assert _status(lambda: sa.get(pdbs)) == 403
    assert _status(lambda: sa.delete(pod)) == 403
    extra = documents("rbac-preemption.yaml")
    for doc in extra:
        admin.request("POST", KINDS[doc["kind"]].format(ns=""), body=doc, query={"fieldValidation": "Strict"})
    try:
        deadline = time.monotonic() + 10  # RBAC changes reach the authorizer through its informers
        while _status(lambda: sa.get(pdbs)) != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _status(lambda: sa.get(pdbs)) == 200
        assert _status(lambda: _watch(sa, pdbs)) == 200
        assert _status(lambda: sa.delete(pod)) == 200
        assert _status(lambda: sa.delete("/api/v1/nodes/n1")) == 403  # nothing else
    finally:
        for doc in extra:
            admin.delete(KINDS[doc["kind"]].format(ns="") + "/" + doc["metadata"]["name"])


# --------------------------------------------------------------------------------------------------
# migrated/kube-scheduler.yaml: upstream's kube-scheduler 1.32 with what `policy-scheduler migrate` prints

MIGRATED = "migrated/kube-scheduler.yaml"
MIGRATED_NAME = "policy-scheduler-migrated"
MIGRATE_ARGS = ("migrate", "--algorithm-provider", "ClusterAutoscalerProvider", "--to", "1.32",
                "--scheduler-name", MIGRATED_NAME)
CONFIG_DIR = "/etc/kubernetes/scheduler"


def migrated(kind: str, name: str | None = None) -> dict:
    found = [doc for doc in documents(MIGRATED) if doc["kind"] == kind and (name is None or doc["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''} in {MIGRATED}, found {len(found)}"
    return found[0]


def migrated_config() -> dict:
    return yaml.safe_load(migrated("ConfigMap")["data"]["config.yaml"])


def test_migrated_manifest_parses_with_type_and_object_meta():
    test_manifest_parses_with_type_and_object_meta(MIGRATED)


def test_prometheus_example_grants_get_on_metrics_only_and_scrapes_the_https_ports():
    test_manifest_parses_with_type_and_object_meta(PROMETHEUS)
    docs = {doc["kind"]: doc for doc in documents(PROMETHEUS)}
    account = docs["ServiceAccount"]["metadata"]
    assert docs["ClusterRole"]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = docs["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == docs["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"],
                                    "namespace": account["namespace"]}]
    assert docs["Service"]["spec"]["selector"] == one("Deployment")["spec"]["selector"]["matchLabels"]
    assert [p["port"] for p in docs["Service"]["spec"]["ports"]] == [SECURE_PORT]
    (job,) = yaml.safe_load(docs["ConfigMap"]["data"]["scrape-config.yaml"])
    assert job["scheme"] == "https" and job["metrics_path"] == "/metrics"
    assert job["authorization"]["credentials_file"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    names = next(r["regex"] for r in job["relabel_configs"] if r["action"] == "keep"
                 and r["source_labels"] == ["__meta_kubernetes_pod_label_app_kubernetes_io_name"]).split("|")
    assert set(names) == {one("Deployment")["metadata"]["name"], MIGRATED_NAME}


def test_migrated_configuration_is_what_migrate_prints():
    from click.testing import CliRunner

    from policy_scheduler.cli import main

    result = CliRunner().invoke(main, [*MIGRATE_ARGS, "-o", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    config = migrated_config()
    assert config.pop("leaderElection") == {"leaderElect": True, "resourceLock": "leases", "resourceNamespace": NS,
                                            "resourceName": MIGRATED_NAME}
    assert "clientConnection" not in config, "in-cluster: the ServiceAccount's token, no kubeconfig"
    assert config == json.loads(result.stdout)["configuration"], (
        f"{MIGRATED}'s config.yaml is not what `policy-scheduler {' '.join(MIGRATE_ARGS)}` prints: paste its output "
        "above leaderElection")


def test_migrated_manifests_agree_with_each_other():
    account = migrated("ServiceAccount")["metadata"]
    assert account == {**account, "name": MIGRATED_NAME, "namespace": NS}
    subject = [{"kind": "ServiceAccount", "name": MIGRATED_NAME, "namespace": NS}]
    refs = {(b["kind"], b["roleRef"]["kind"], b["roleRef"]["name"])
            for b in documents(MIGRATED) if b["kind"] in ("ClusterRoleBinding", "RoleBinding")}
    assert refs == {("ClusterRoleBinding", "ClusterRole", "system:kube-scheduler"),
                    ("ClusterRoleBinding", "ClusterRole", "system:volume-scheduler"),
                    ("ClusterRoleBinding", "ClusterRole", "system:auth-delegator"),
                    ("RoleBinding", "Role", "extension-apiserver-authentication-reader"),
                    ("RoleBinding", "Role", migrated("Role")["metadata"]["name"])}
    for b in documents(MIGRATED):
        if b["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            assert b["subjects"] == subject and b["metadata"].get("namespace", NS) == NS
    # the lock the configuration names, and only it, beyond create
    lock = migrated_config()["leaderElection"]["resourceName"]
    assert lock not in ("kube-scheduler", "policy-scheduler")
    assert [r.get("resourceNames") for r in migrated("Role")["rules"]] == [None, [lock]]

    deployment = migrated("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    assert deployment["metadata"]["namespace"] == NS and spec["serviceAccountName"] == MIGRATED_NAME
    assert "schedulerName" not in spec, "the scheduler's own pods are placed by the default scheduler"
    (c,) = spec["containers"]
    assert c["image"] == "registry.k8s.io/kube-scheduler:v1.32.0"
    assert c["command"][:2] == ["kube-scheduler", f"--config={CONFIG_DIR}/config.yaml"]
    (mount,) = c["volumeMounts"]
    (volume,) = spec["volumes"]
    assert mount["mountPath"] == CONFIG_DIR and mount["name"] == volume["name"]
    assert volume["configMap"]["name"] == migrated("ConfigMap")["metadata"]["name"]
    assert [p["schedulerName"] for p in migrated_config()["profiles"]] == [MIGRATED_NAME]
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"] == {"path": "/healthz", "port": 10259, "scheme": "HTTPS"}


def test_kube_scheduler_1_32_runs_the_migrated_configuration_with_this_rbac(tmp_path_factory):
    """The manifests created on a real 1.32 API server; upstream's kube-scheduler 1.32 run with the ConfigMap's
    configuration and the ServiceAccount's token (a kubeconfig in place of in-cluster): it takes its own Lease,
    binds a pod that names it, leaves the others alone, and is refused nothing."""
    from benchmarks.harness.daemon import LoggedProcess, node, pod, wait_until
    from benchmarks.harness.envtest import assets_dir

    binary = assets_dir() / "1.32" / "bin" / "kube-scheduler"
    directory = tmp_path_factory.mktemp("envtest-migrated")
    server = start_server("1.32", directory)
    scheduler = None
    try:
        admin = server.rest()
        create(admin, documents(MIGRATED))
        token = prometheus_token(admin)
        # In a pod, the client and delegated authentication/authorization all use the in-cluster token.
        kubeconfig = service_account_kubeconfig(server, admin, MIGRATED_NAME)
        config_path = directory / "config.yaml"
        config_path.write_text(yaml.safe_dump({**migrated_config(), "clientConnection": {"kubeconfig": str(kubeconfig)}}))
        port = free_port()
        assert binary.is_file(), f"no kube-scheduler at {binary}"
        scheduler = LoggedProcess(directory / "kube-scheduler.log", [
            str(binary), f"--config={config_path}", f"--secure-port={port}", "--bind-address=127.0.0.1",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}", "--v=2"])
        scheduler.start()
        admin.post("/api/v1/nodes", node("worker"))
        admin.post("/api/v1/namespaces/default/pods", pod("opted-in", cpu="100m", scheduler=MIGRATED_NAME))
        admin.post("/api/v1/namespaces/default/pods", pod("not-ours", cpu="100m", scheduler="default-scheduler"))

        def bound(name: str) -> str | None:
            assert not scheduler.exited(), scheduler.log()[-3000:]
            return admin.get(f"/api/v1/namespaces/default/pods/{name}")["spec"].get("nodeName")

        assert wait_until(lambda: bound("opted-in"), 60, what="the opted-in pod to be bound") == "worker"
        lease = admin.get(f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{MIGRATED_NAME}")
        assert lease["spec"]["holderIdentity"]
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # its self-signed serving certificate
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=5, context=context) as reply:
            assert reply.read() == b"ok"
        # Prometheus' token (prometheus/scrape.yaml) reads its /metrics, and nothing else.
        assert https_get(port, "/metrics", token) == 200 and https_get(port, "/configz", token) == 403
        assert bound("not-ours") is None
        assert scheduler.stop() == 0, scheduler.log()[-3000:]
    finally:
        if scheduler is not None:
            scheduler.kill()
        server.stop()
    text = scheduler.log()
    assert "forbidden" not in text.lower(), text[-3000:]
