"""Upstream's modern kube-scheduler (``<envtest>/<line>/bin/kube-scheduler``) against an envtest server of
its own line: the reference for what a modern cluster does with the same pods. It schedules the pods whose
``spec.schedulerName`` is its profile's name; compare verdicts (bound or not, which reason), not
tie-broken hosts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from benchmarks.harness.daemon import LoggedProcess
from benchmarks.harness.envtest import EnvtestServer, binary

REFERENCE_SCHEDULER = "reference-scheduler"


def reference_binary(version: str) -> Path:
    return binary(version, "kube-scheduler")


class ReferenceScheduler(LoggedProcess):
    """The modern kube-scheduler with a default profile named ``scheduler_name``, or with ``configuration``
    (a v1 KubeSchedulerConfiguration; its client connection and leader election are set here).

    It serves no port, unless ``secure_port`` is given: then HTTPS on 127.0.0.1:``secure_port`` with its defaults
    (a self-signed certificate made in memory, delegated authentication and authorization through the server's
    admin kubeconfig, the client CA looked up in the cluster). ``extra_args`` are more flags."""

    def __init__(self, server: EnvtestServer, log_dir: Path, scheduler_name: str = REFERENCE_SCHEDULER,
                 feature_gates: str = "", configuration: dict[str, Any] | None = None, secure_port: int = 0,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.binary = reference_binary(server.version)
        config = dict(configuration or {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                        "kind": "KubeSchedulerConfiguration",
                                        "profiles": [{"schedulerName": scheduler_name}]})
        config.update(clientConnection={"kubeconfig": server.kubeconfig}, leaderElection={"leaderElect": False})
        config_path = log_dir / "reference-scheduler.json"
        config_path.write_text(json.dumps(config))
        serving = [f"--secure-port={secure_port}"]
        if secure_port:
            serving += ["--bind-address=127.0.0.1", f"--authentication-kubeconfig={server.kubeconfig}",
                        f"--authorization-kubeconfig={server.kubeconfig}"]
        self.secure_port = secure_port
        super().__init__(log_dir / "reference-scheduler.log", [
            str(self.binary), "--config", str(config_path), *serving, *extra_args, "-v=2",
            *([f"--feature-gates={feature_gates}"] if feature_gates else [])])

    def start(self) -> ReferenceScheduler:
        assert self.binary.is_file(), f"no reference kube-scheduler at {self.binary}"
        super().start()
        return self


#: A kubeconfig naming an address nothing listens on: ``--write-config-to`` needs one but connects nowhere.
_OFFLINE_KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "c",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "unused"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
}


class ConfigurationRefused(AssertionError):
    """The modern kube-scheduler refused a configuration; the message is its error line."""


def write_config_to(version: str, configuration: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Run ``kube-scheduler --config F --write-config-to OUT`` (it decodes, defaults, validates and builds
    the profiles, then writes the effective configuration and exits); OUT as a dict."""
    kubeconfig = directory / "offline.kubeconfig"
    kubeconfig.write_text(json.dumps(_OFFLINE_KUBECONFIG))
    config_path, out_path = directory / f"config-{version}.json", directory / f"effective-{version}.yaml"
    config_path.write_text(json.dumps({**configuration, "clientConnection": {"kubeconfig": str(kubeconfig)}}))
    out_path.unlink(missing_ok=True)
    done = subprocess.run([str(reference_binary(version)), "--config", str(config_path),
                           "--write-config-to", str(out_path), "--secure-port=0"],  # no listener: runs in parallel
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or not out_path.exists():
        errors = [line for line in done.stderr.splitlines() if line.startswith("E")] or done.stderr.splitlines()[-1:]
        raise ConfigurationRefused(f"kube-scheduler {version} refused the configuration: {' '.join(errors)}")
    return yaml.safe_load(out_path.read_text())
