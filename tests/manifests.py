"""Fields of Kubernetes objects as the real controllers make them, shared by the tests."""

from __future__ import annotations

#: The tolerations the DaemonSet controller adds to every DaemonSet pod without hostNetwork
#: (``AddOrUpdateDaemonPodTolerations``, ``pkg/controller/daemon/util``, 1.26), in its order.
DAEMONSET_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
