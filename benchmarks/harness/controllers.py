"""Upstream's kube-controller-manager (``<envtest>/<line>/bin/kube-controller-manager``; the 1.32 and 1.36 lines
ship one) against an envtest server of its own line, with the controllers a test needs: the real DaemonSet,
Deployment, Job, PV binder, ... controllers making the objects a scheduler then places.

How it runs (the envtest assets' README, "The reference kube-controller-manager (1.32)"): every controller with
the kubeconfig's admin token (``--use-service-account-credentials=false``), no port served, no leader election,
and, on 1.32, ``WatchListClient`` off (that API server's etcd 3.4 cannot serve watch-list streams; the informers
would fall back to list and watch after an error line; 1.36's etcd 3.6 serves them). Controllers that need what envtest lacks are left out by naming
the ones wanted: no node-lifecycle controller (no kubelet renews the Nodes' heartbeats: it would mark every Node
``Ready=Unknown`` and taint it after 50 s), no service-account token controller (it needs the signing key).
"""

from __future__ import annotations

from pathlib import Path

from .daemon import LoggedProcess
from .envtest import EnvtestServer, binary

#: The flags every run takes, besides the kubeconfig and the controllers (see the module's docstring).
FLAGS = ("--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false", "-v=2")
#: Flags of one line only (see the module's docstring).
LINE_FLAGS: dict[str, tuple[str, ...]] = {"1.32": ("--feature-gates=WatchListClient=false",)}


def controller_manager_binary(version: str) -> Path:
    return binary(version, "kube-controller-manager")


class ControllerManager(LoggedProcess):
    """Upstream's kube-controller-manager of the server's line with only ``controllers`` (names as its
    ``--controllers`` flag takes them, e.g. ``daemonset``, ``ephemeral-volume-controller``); its log in
    ``log_dir/<name>.log``; ``args`` are extra flags. Stopped with SIGTERM (it has no handler: exit 143)."""

    def __init__(self, server: EnvtestServer, log_dir: Path, controllers: tuple[str, ...], *args: str,
                 name: str = "kube-controller-manager") -> None:
        self.binary = controller_manager_binary(server.version)
        super().__init__(log_dir / f"{name}.log", [
            str(self.binary), f"--kubeconfig={server.kubeconfig}", f"--controllers={','.join(controllers)}",
            *FLAGS, *LINE_FLAGS.get(server.version, ()), *args])

    def start(self) -> ControllerManager:
        assert self.binary.is_file(), f"no kube-controller-manager at {self.binary}"
        super().start()
        return self
