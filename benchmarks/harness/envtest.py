"""Real kube-apiserver + etcd for the daemon's tests and the benchmarks, started through
``../shared/envtest/envtest.py``.

``POLICY_SCHEDULER_ENVTEST`` names the assets' directory (default: ``../shared/envtest`` beside the
repository). Without the assets the tests skip, saying how to provide them, unless
``POLICY_SCHEDULER_REQUIRE_ENVTEST=1`` (set by ``.ci/run``) turns the skip into a failure.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.kube.client.kubeconfig import api_client
from policy_scheduler.kube.client.rest import RestClient

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("1.10", "1.26")
# Extra apiserver flags for pod priority (PriorityClasses served, spec.priority set by the Priority admission
# plugin): 1.26 has them by default; 1.10 needs the alpha API, the gate and the plugin (the assets' README,
# "Pod priority on 1.10").
POD_PRIORITY_ARGS: dict[str, tuple[str, ...]] = {
    "1.10": (
        "--apiserver-arg=--runtime-config=scheduling.k8s.io/v1alpha1=true",
        "--apiserver-arg=--feature-gates=PodPriority=true",
        "--apiserver-arg=--enable-admission-plugins=NamespaceLifecycle,DefaultTolerationSeconds,Priority",
    ),
    "1.26": (),
}


def assets_dir() -> Path:
    return Path(os.environ.get("POLICY_SCHEDULER_ENVTEST") or ROOT.parent / "shared" / "envtest")


def require_assets(version: str) -> Path:
    """The launcher script, or skip (fail under POLICY_SCHEDULER_REQUIRE_ENVTEST=1) when it is missing."""
    root = assets_dir()
    script = root / "envtest.py"
    binary = root / version / "bin" / "kube-apiserver"
    if not script.is_file() or not (binary.is_file() or binary.with_name(binary.name + ".xz").is_file()):
        message = (
            f"envtest assets for {version} not found under {root}: set POLICY_SCHEDULER_ENVTEST to the directory "
            "holding envtest.py and <version>/bin/{kube-apiserver,etcd}"
        )
        if os.environ.get("POLICY_SCHEDULER_REQUIRE_ENVTEST") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return script


@dataclass
class EnvtestServer:
    version: str
    dir: Path
    script: Path
    kubeconfig: str = ""
    server: str = ""
    etcd: str = ""

    def _run(self, *args: str) -> dict:
        result = subprocess.run(
            [sys.executable, str(self.script), *args, "--dir", str(self.dir)],
            capture_output=True, text=True, timeout=180,
        )
        if result.returncode != 0:
            raise RuntimeError(f"envtest {' '.join(args)} failed: {result.stdout}{result.stderr}")
        return json.loads(result.stdout.strip().splitlines()[-1])

    def start(self, *extra: str, reuse: bool = False) -> EnvtestServer:
        info = self._run("start", "--version", self.version, *(("--reuse",) if reuse else ()), *extra)
        self.kubeconfig, self.server, self.etcd = info["kubeconfig"], info["server"], info["etcd"]
        return self

    def stop(self, keep_data: bool = False) -> None:
        self._run("stop", *(("--keep-data",) if keep_data else ()))

    def alive(self) -> bool:
        """Whether both processes recorded for this server still run."""
        return subprocess.run([sys.executable, str(self.script), "status", "--dir", str(self.dir)],
                              capture_output=True, timeout=30).returncode == 0

    def etcd_request(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to etcd's JSON gateway (``/v3alpha`` on 1.10's etcd 3.2.13, ``/v3`` on 3.4)."""
        prefix = "/v3alpha" if self.version == "1.10" else "/v3"
        request = urllib.request.Request(f"{self.etcd}{prefix}{path}", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as r:
            return json.loads(r.read())

    def rest(self, **kw) -> RestClient:
        return RestClient(api_client(self.kubeconfig), **{"qps": 0, "burst": 1, **kw})


@functools.cache
def binary(version: str, name: str) -> Path:
    """The path of the shipped binary ``name`` (``kube-scheduler``, ``kube-controller-manager``, ...) of
    ``version``, through the launcher's ``path`` command: the 1.36 line ships its binaries xz-packed, and the
    launcher unpacks each once per machine into its cache (checked against SHA256SUMS)."""
    script = require_assets(version)
    done = subprocess.run([sys.executable, str(script), "path", "--version", version, name],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"envtest path --version {version} {name} failed: {done.stdout}{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


def start_server(version: str, directory: Path, *extra: str) -> EnvtestServer:
    return EnvtestServer(version, directory, require_assets(version)).start(*extra)
