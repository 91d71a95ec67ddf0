"""Upstream's modern kube-scheduler (``<envtest>/<line>/bin/kube-scheduler``) against an envtest server of
its own line: the reference for what a modern cluster does with the same pods. It schedules the pods whose
``spec.schedulerName`` is its profile's name; compare verdicts (bound or not, which reason), not
tie-broken hosts."""

from __future__ import annotations

import json
from pathlib import Path

from .daemon import LoggedProcess
from .envtest import EnvtestServer, assets_dir

REFERENCE_SCHEDULER = "reference-scheduler"


class ReferenceScheduler(LoggedProcess):
    def __init__(self, server: EnvtestServer, log_dir: Path, scheduler_name: str = REFERENCE_SCHEDULER,
                 feature_gates: str = "") -> None:
        self.binary = assets_dir() / server.version / "bin" / "kube-scheduler"
        config_path = log_dir / "reference-scheduler.json"
        config_path.write_text(json.dumps({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": server.kubeconfig}, "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": scheduler_name}],
        }))
        super().__init__(log_dir / "reference-scheduler.log", [
            str(self.binary), "--config", str(config_path), "--secure-port=0", "-v=2",
            *([f"--feature-gates={feature_gates}"] if feature_gates else [])])

    def start(self) -> ReferenceScheduler:
        assert self.binary.is_file(), f"no reference kube-scheduler at {self.binary}"
        super().start()
        return self
