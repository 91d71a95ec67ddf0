"""Upstream's modern kube-scheduler (``<envtest>/<line>/bin/kube-scheduler``) against an envtest server of
its own line: the reference for what a modern cluster does with the same pods. It schedules the pods whose
``spec.schedulerName`` is its profile's name; compare verdicts (bound or not, which reason), not
tie-broken hosts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from .envtest import EnvtestServer, assets_dir

REFERENCE_SCHEDULER = "reference-scheduler"


class ReferenceScheduler:
    def __init__(self, server: EnvtestServer, log_dir: Path, scheduler_name: str = REFERENCE_SCHEDULER,
                 feature_gates: str = "") -> None:
        self.binary = assets_dir() / server.version / "bin" / "kube-scheduler"
        self.config_path = log_dir / "reference-scheduler.json"
        self.log_path = log_dir / "reference-scheduler.log"
        self.config_path.write_text(json.dumps({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": server.kubeconfig}, "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": scheduler_name}],
        }))
        self.args = ["--config", str(self.config_path), "--secure-port=0", "-v=2",
                     *([f"--feature-gates={feature_gates}"] if feature_gates else [])]
        self.process: subprocess.Popen | None = None

    def start(self) -> ReferenceScheduler:
        assert self.binary.is_file(), f"no reference kube-scheduler at {self.binary}"
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen([str(self.binary), *self.args], stdout=self._log, stderr=subprocess.STDOUT,
                                        env=dict(os.environ))
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if getattr(self, "_log", None) is not None:
            self._log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
