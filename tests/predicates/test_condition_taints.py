"""Cordoned, NotReady and pressured nodes as a modern cluster decides them, offline: under ``--rules cluster`` a
pod that tolerates the taint a condition stands for (the node lifecycle controller's
``nodeConditionToTaintKeyStatusMap``, and NodeUnschedulable's ``node.kubernetes.io/unschedulable``) is not
refused by 1.9's condition predicates for that condition; every other pod, and every pod under
``--rules 1.9``, gets 1.9's decision."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.features import Rules

from ..manifests import DAEMONSET_TOLERATIONS
from .test_volume_rules import outcomes

EVERYTHING = [{"operator": "Exists"}]  # what a CNI agent's DaemonSet tolerates


def node(name: str, ready: str = "True", unschedulable: bool = False, taints: tuple[str, ...] = (),
         **conditions: str) -> dict[str, Any]:
    """A node with its Ready condition, other conditions (``MemoryPressure="True"``), and the taints the node
    lifecycle controller would have set for them (``NoSchedule``)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"unschedulable": unschedulable, "taints": [{"key": t, "effect": "NoSchedule"} for t in taints]},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready},
                                      *({"type": t, "status": s} for t, s in conditions.items())]}}


def pod(name: str, on: str, tolerations: list[dict[str, str]] | None = None, best_effort: bool = False) -> dict[str, Any]:
    resources = {} if best_effort else {"requests": {"cpu": "100m"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": resources}],
                     "nodeSelector": {"kubernetes.io/hostname": on}, "tolerations": tolerations or []},
            "status": {"phase": "Pending"}}


CORDONED = node("n", unschedulable=True, taints=("node.kubernetes.io/unschedulable",))
NOT_READY = node("n", ready="False", taints=("node.kubernetes.io/not-ready",))
UNREACHABLE = node("n", ready="Unknown", taints=("node.kubernetes.io/unreachable",))
MEMORY = node("n", MemoryPressure="True", taints=("node.kubernetes.io/memory-pressure",))
DISK = node("n", DiskPressure="True", taints=("node.kubernetes.io/disk-pressure",))
NETWORK = node("n", NetworkUnavailable="True", taints=("node.kubernetes.io/network-unavailable",))


UNTOLERATED = "{}, PodToleratesNodeTaints"  # the condition's reason, and the taint the pod does not tolerate


@pytest.mark.parametrize(("cluster_node", "tolerations", "best_effort", "cluster", "legacy"), [
    # a DaemonSet pod on a cordoned node: NodeUnschedulable lets it in; 1.9 never did
    (CORDONED, DAEMONSET_TOLERATIONS, False, "n", "NodeUnschedulable"),
    (CORDONED, [], False, UNTOLERATED.format("NodeUnschedulable"), UNTOLERATED.format("NodeUnschedulable")),
    # NotReady: the DaemonSet controller's not-ready toleration is NoExecute, which does not tolerate the
    # NoSchedule taint; a CNI agent's tolerates everything
    (NOT_READY, DAEMONSET_TOLERATIONS, False, UNTOLERATED.format("NodeNotReady"), UNTOLERATED.format("NodeNotReady")),
    (NOT_READY, EVERYTHING, False, "n", "NodeNotReady"),
    (UNREACHABLE, EVERYTHING, False, "n", "NodeNotReady"),
    (UNREACHABLE, [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}], False,
     UNTOLERATED.format("NodeNotReady"), UNTOLERATED.format("NodeNotReady")),
    # pressure: a BestEffort pod tolerating memory-pressure; every pod tolerating disk-pressure
    (MEMORY, DAEMONSET_TOLERATIONS, True, "n", "NodeUnderMemoryPressure"),
    (MEMORY, [], True, UNTOLERATED.format("NodeUnderMemoryPressure"), UNTOLERATED.format("NodeUnderMemoryPressure")),
    (DISK, DAEMONSET_TOLERATIONS, False, "n", "NodeUnderDiskPressure"),
    (NETWORK, EVERYTHING, False, "n", "NodeNetworkUnavailable"),
    (NETWORK, DAEMONSET_TOLERATIONS, False, UNTOLERATED.format("NodeNetworkUnavailable"),
     UNTOLERATED.format("NodeNetworkUnavailable")),
], ids=["cordoned-daemonset", "cordoned-plain", "not-ready-daemonset", "not-ready-cni", "unreachable-cni",
        "unreachable-not-ready-toleration", "memory-daemonset", "memory-plain", "disk-daemonset", "network-cni",
        "network-daemonset"])
def test_a_pod_tolerating_the_condition_taint_is_not_refused_for_that_condition(
        cluster_node, tolerations, best_effort, cluster, legacy):
    objects = [cluster_node, pod("p", "n", tolerations, best_effort)]
    expected = {rules: want if want == "n" else f"error: 0/1 nodes are available: {_histogram(want)}."
                for rules, want in ((Rules.CLUSTER, cluster), (Rules.V1_9, legacy))}
    for rules in (Rules.CLUSTER, Rules.V1_9):
        assert outcomes(objects, rules, TaintNodesByCondition=False) == {"p": expected[rules]}, rules


def _histogram(reasons: str) -> str:
    return ", ".join(f"1 {r}" for r in sorted(reasons.split(", ")))


def test_out_of_disk_has_no_taint_and_stays_1_9():
    objects = [node("n", OutOfDisk="True"), pod("p", "n", EVERYTHING)]
    assert outcomes(objects) == {"p": "error: 0/1 nodes are available: 1 NodeOutOfDisk."}


def test_a_plain_pod_never_lands_on_a_cordoned_or_not_ready_node():
    objects = [CORDONED, {**NOT_READY, "metadata": {"name": "m", "labels": {"kubernetes.io/hostname": "m"}}},
               node("ok"), *(pod(f"p-{n}", n) for n in ("n", "m", "ok"))]
    histogram = ("error: 0/3 nodes are available: 1 NodeNotReady, 1 NodeUnschedulable, 2 MatchNodeSelector, "
                 "2 PodToleratesNodeTaints.")
    assert outcomes(objects) == {"p-n": histogram, "p-m": histogram, "p-ok": "ok"}
