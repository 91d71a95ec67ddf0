"""Running ``policy-scheduler run`` as a real subprocess against a real API server, and reading back
what it did through the API server itself."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from policy_scheduler.kube.client.rest import ApiError, RestClient

from .pki import SCRAPER, client_context, shared_pki
from .ports import free_port

SCHEDULER = "policy-scheduler"


def wait_until(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def _command() -> list[str]:
    exe = shutil.which("policy-scheduler")
    return [exe] if exe else [sys.executable, "-m", "policy_scheduler.cli"]


class LoggedProcess:
    """A subprocess whose output goes to ``log_path``; stopped with SIGTERM, killed if it lingers."""

    def __init__(self, log_path: Path, command: list[str]) -> None:
        self.log_path = log_path
        self.command = command
        self.process: subprocess.Popen | None = None

    def start(self) -> LoggedProcess:
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return self

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; the exit code."""
        assert self.process is not None
        self.signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if getattr(self, "_log", None) is not None:
            self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class DaemonProcess(LoggedProcess):
    """``policy-scheduler run`` with its log in a file; ``args`` are extra flags.

    It serves as deployed: HTTPS only, on 127.0.0.1:``port`` (no insecure port), delegated authentication and
    authorization through its own kubeconfig, and the test PKI's CA as its client CA (``--client-ca-file``).
    :meth:`healthz` asks anonymously; :meth:`metrics` presents the PKI's ``system:masters`` client certificate,
    which needs no review: reading it never depends on the API server. ``client_ca_file=False`` leaves the client
    CA to the cluster (looked up in ``kube-system/extension-apiserver-authentication``), as deployed.
    """

    def __init__(self, kubeconfig: str, log_dir: Path, *args: str, name: str = "daemon",
                 leader_elect: bool = False, client_ca_file: bool = True) -> None:
        self.port = free_port()
        self.pki = shared_pki()
        self.args = [
            "run", "--kubeconfig", kubeconfig, "--scheduler-name", SCHEDULER, "--bind-address", "127.0.0.1",
            "--secure-port", str(self.port), "--authentication-kubeconfig", kubeconfig,
            "--authorization-kubeconfig", kubeconfig,
            *(["--client-ca-file", str(self.pki.ca_path)] if client_ca_file else []),
            f"--leader-elect={'true' if leader_elect else 'false'}", "--v=2", *args,
        ]
        super().__init__(log_dir / f"{name}.log", _command() + self.args)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def start(self) -> DaemonProcess:
        super().start()
        return self

    def healthz(self) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url("/healthz?verbose"), timeout=2, context=client_context()) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)

    def metrics(self) -> str:
        context = client_context(self.pki.client_certificate(*SCRAPER))
        with urllib.request.urlopen(self.url("/metrics"), timeout=5, context=context) as r:
            return r.read().decode()

    def metric(self, series: str) -> float:
        """The value of one series of ``/metrics``, e.g. ``scheduler_binding_outcomes_total{outcome="success"}``."""
        for line in self.metrics().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
        raise AssertionError(f"no metric {series}")

    def wait_healthy(self, timeout: float = 30.0) -> None:
        wait_until(lambda: self.healthz()[0] == 200 or self.exited(), timeout, what=f"{self.log_path.name} healthy")
        assert not self.exited(), self.log()


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", labels: dict[str, str] | None = None,
         **extra: Any) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    obj = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity,
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }
    obj["spec"].update(extra)
    return obj


def pod(name: str, cpu: str = "1", memory: str = "100Mi", scheduler: str = SCHEDULER, node_name: str | None = None,
        labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "test"}},
        "spec": {"schedulerName": scheduler, "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.9",
             "resources": {"requests": {"cpu": cpu, "memory": memory}}}], **spec},
    }
    if node_name:
        obj["spec"]["nodeName"] = node_name
    return obj


class Cluster:
    """Objects in one namespace of a real API server, through the admin RestClient."""

    def __init__(self, rest: RestClient, namespace: str = "default") -> None:
        self.rest = rest
        self.namespace = namespace

    def create_namespace(self, name: str) -> None:
        self.rest.post("/api/v1/namespaces", {"metadata": {"name": name}})

    def add_node(self, obj: dict[str, Any]) -> None:
        self.rest.post("/api/v1/nodes", obj)

    def add_pod(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        return self.rest.post(f"/api/v1/namespaces/{namespace or self.namespace}/pods", obj)

    def delete_pod(self, name: str) -> None:
        self.rest.delete(f"/api/v1/namespaces/{self.namespace}/pods/{name}", {"gracePeriodSeconds": 0})

    def pods(self) -> dict[str, dict[str, Any]]:
        items = self.rest.get(f"/api/v1/namespaces/{self.namespace}/pods")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def placements(self) -> dict[str, str]:
        """pod name -> node name ("" when unbound)."""
        return {name: p["spec"].get("nodeName") or "" for name, p in self.pods().items()}

    def bound(self) -> dict[str, str]:
        return {k: v for k, v in self.placements().items() if v}

    def events(self, reason: str | None = None, kind: str = "Pod") -> list[dict[str, Any]]:
        items = self.rest.get(f"/api/v1/namespaces/{self.namespace}/events")["items"]
        return [e for e in items if (reason is None or e.get("reason") == reason)
                and e["involvedObject"].get("kind") == kind]

    def get_pod(self, name: str) -> dict[str, Any] | None:
        """The pod as the API server holds it now, or None when it is gone."""
        try:
            return self.rest.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        except ApiError as e:
            if e.not_found:
                return None
            raise

    def condition(self, name: str, type_: str = "PodScheduled") -> dict[str, Any] | None:
        try:
            p = self.rest.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        except ApiError:
            return None
        for c in p.get("status", {}).get("conditions") or ():
            if c["type"] == type_:
                return c
        return None

    def wait_condition(self, name: str, reason: str, timeout: float = 30.0, type_: str = "PodScheduled") -> dict[str, Any]:
        """The pod's condition once its reason is ``reason``: a scheduler writes the condition and records the
        event independently (both in the background), so seeing the event says nothing of the condition."""
        return wait_until(lambda: (c := self.condition(name, type_)) is not None and c.get("reason") == reason and c,
                          timeout, what=f"{name}'s {type_} condition with reason {reason}")

    def put_configmap(self, namespace: str, name: str, data: dict[str, str]) -> None:
        body = {"metadata": {"name": name, "namespace": namespace}, "data": data}
        try:
            current = self.rest.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        except ApiError as e:
            if not e.not_found:
                raise
            self.rest.post(f"/api/v1/namespaces/{namespace}/configmaps", body)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.rest.put(f"/api/v1/namespaces/{namespace}/configmaps/{name}", body)
