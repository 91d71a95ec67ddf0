"""The mapping's ``exact`` claims (``policy_scheduler/migration/rules.py``), proved on the real modern
kube-schedulers 1.26, 1.32 and 1.36 (whose migrated profiles also keep DynamicResources, and under
``--rules cluster`` NodeDeclaredFeatures: neither decides anything for these pods, DynamicResources only adds
its PostFilter's ``no new claims to deallocate`` to a 'no node fits' message, which the reason families
ignore).

For each predicate ``rules.py`` calls exact, a scenario with a Policy naming only that predicate: some of its
pods the predicate must refuse on every node, some bind. For each exact priority (and
``hardPodAffinitySymmetricWeight``), a Policy with PodFitsResources and only that priority, and a scenario
where one node is clearly best for every pod (no tie at 1.9's 0-10 nor at v1's 0-100; ours checks the 1.9
scores through ``--explain``). Ours: ``simulate --rules 1.9`` offline. Modern: an envtest API server of that
version (one per version for the module), the real kube-scheduler started with ``migrate --to <version>``'s
configuration, and the pods created one at a time in the same order, each bound or reported unschedulable
before the next. Both must agree on the pods left pending (and on the reason family) or on every host.
PodTopologySpread (not a 1.9 name) runs ``--rules cluster`` for both ``simulate`` and ``migrate``.

Two exceptions, each marked in its scenario and in the table: HostName cannot refuse a pod that reaches a
scheduler (the scenario only shows both agree nothing is refused), and ``inter-pod-affinity-first-pod`` is
a disagreement found here (1.9's "first pod of a group" exception to required pod affinity is wider than
v1's), which is why the mapping calls MatchInterPodAffinity approximate: that test asserts what each side
does, and that the mapping says approximate, instead of their agreement.

The agreement table is printed at the end of the module, and written as markdown to
``$POLICY_SCHEDULER_ARTIFACTS/migration-agreement.md`` when that is set (every worker's rows, in a parallel run).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.migration.rules import CLUSTER_RULES_PREDICATES, EXACT, PREDICATES, PRIORITIES

from .agreement import (
    BETA_ZONE,
    HOSTNAME,
    Outcome,
    Row,
    Scenario,
    bound_pod,
    markdown,
    migrated,
    modern,
    ours,
    pending_pod,
    policy,
    ready_node,
    unique_best,
    write_table,
)

VERSIONS = ("1.26", "1.32", "1.36")
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"


# -- pod spec pieces ------------------------------------------------------------------------------------
def host_port(p: dict[str, Any], port: int, protocol: str = "TCP", host_ip: str | None = None) -> dict[str, Any]:
    entry = {"containerPort": port, "hostPort": port, "protocol": protocol}
    if host_ip:
        entry["hostIP"] = host_ip
    p["spec"]["containers"][0]["ports"] = [entry]
    return p


GPU = "example.com/gpu"


def extended(p: dict[str, Any], count: int) -> dict[str, Any]:
    """Request (and limit: extended resources are not overcommitted) ``count`` of GPU."""
    resources = p["spec"]["containers"][0]["resources"]
    resources["requests"][GPU] = str(count)
    resources["limits"] = {GPU: str(count)}
    return p


def expressions(key: str, operator: str, values: list[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": values}]}


def required_node_affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def preferred_node_affinity(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": term} for w, term in weighted]}}


def pod_term(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def preferred_terms(*weighted: tuple[int, str]) -> list[dict[str, Any]]:
    return [{"weight": w, "podAffinityTerm": pod_term(app)} for w, app in weighted]


def gce_pd(name: str, read_only: bool = False) -> list[dict[str, Any]]:
    return [{"name": "data", "gcePersistentDisk": {"pdName": name, "fsType": "ext4", "readOnly": read_only}}]


def ebs(volume_id: str, name: str = "data") -> list[dict[str, Any]]:
    return [{"name": name, "awsElasticBlockStore": {"volumeID": volume_id, "fsType": "ext4"}}]


def iscsi(iqn: str) -> list[dict[str, Any]]:
    return [{"name": "data", "iscsi": {"targetPortal": "10.0.0.9:3260", "iqn": iqn, "lun": 0, "fsType": "ext4"}}]


def claims(*names: str) -> list[dict[str, Any]]:
    return [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(names)]


def zonal_volume(zone: str, name: str | None = None, label: str = BETA_ZONE) -> list[dict[str, Any]]:
    """A PV labelled with ``zone`` (the beta label, or ``label``) and a PVC bound to it (``claim-<name>``),
    both Bound."""
    name = name or zone
    pv, claim = f"pv-{name}", f"claim-{name}"
    return [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv, "labels": {label: zone}},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                  "hostPath": {"path": f"/mnt/{name}"},
                  "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "default",
                               "name": claim}},
         "status": {"phase": "Bound"}},
        # bound as the PV controller binds (bind-completed: v1's VolumeBinding, which --rules cluster maps, checks it)
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": claim, "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": pv,
                  "resources": {"requests": {"storage": "1Gi"}}},
         "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}},
    ]


def spread(key: str, app: str, when: str = "DoNotSchedule") -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": {"matchLabels": {"app": app}}}


def taint(key: str, effect: str, value: str = "true") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


# -- predicate scenarios --------------------------------------------------------------------------------
def two_nodes(**kw: Any) -> list[dict[str, Any]]:
    return [ready_node("n1", **kw), ready_node("n2", **kw)]


def resources() -> Scenario:
    """cpu, memory, ephemeral storage, an init container larger than the containers, the pod count (4 a node)
    and an extended resource only n1 has."""
    nodes = two_nodes(cpu="2", memory="4Gi")
    for n in nodes:
        for key in ("capacity", "allocatable"):
            n["status"][key].update({"pods": "4", "ephemeral-storage": "10Gi"})
    for key in ("capacity", "allocatable"):
        nodes[0]["status"][key][GPU] = "1"

    def storage(name: str) -> dict[str, Any]:
        p = pending_pod(name, cpu="10m")
        p["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "6Gi"
        return p

    init = {"name": "init", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": "3"}}}
    return Scenario(
        "resources", "PodFitsResources", "predicate", policy(["PodFitsResources"]), nodes,
        [pending_pod("huge", cpu="3"), pending_pod("init-heavy", cpu="10m", initContainers=[init]),
         pending_pod("a", cpu="1500m"), pending_pod("b", cpu="1500m"), pending_pod("c", cpu="1"),
         pending_pod("mem-hog", memory="5Gi"), storage("storage-a"), storage("storage-b"), storage("storage-c"),
         pending_pod("small", cpu="400m"),
         extended(pending_pod("gpu-0", cpu="10m"), 1), extended(pending_pod("gpu-1", cpu="10m"), 1),
         *(pending_pod(f"tiny-{i}", cpu="10m", memory="1Mi") for i in range(4))],
        pending={name: "resources" for name in ("huge", "init-heavy", "c", "mem-hog", "storage-c", "gpu-1",
                                                "tiny-2", "tiny-3")})


def ports(name: str) -> Scenario:
    """Host ports on two nodes: a third TCP 8080 conflicts; UDP 8080 does not; a TCP 8080 on one hostIP
    conflicts with 0.0.0.0:8080; 9090 on two different hostIPs does not conflict."""
    return Scenario(
        f"ports-{name}", name, "predicate", policy([name]), two_nodes(),
        [host_port(pending_pod("web-a"), 8080), host_port(pending_pod("web-b"), 8080),
         host_port(pending_pod("web-c"), 8080), host_port(pending_pod("dns-udp"), 8080, "UDP"),
         host_port(pending_pod("ip-8080"), 8080, host_ip="10.0.0.5"),
         host_port(pending_pod("ip-9090-a"), 9090, host_ip="10.0.0.5"),
         host_port(pending_pod("ip-9090-b"), 9090, host_ip="10.0.0.6")],
        pending={"web-c": "ports", "ip-8080": "ports"})


def hostname() -> Scenario:
    return Scenario(
        "hostname", "HostName", "predicate", policy(["HostName"]),
        [*two_nodes(), bound_pod("pinned", "n1")],
        [pending_pod("a"), pending_pod("b"), pending_pod("c")],
        note="vacuous: HostName refuses a node only for a pod whose spec.nodeName names another node, and a pod "
             "with spec.nodeName set never reaches a scheduler (1.9 and v1 both watch only pods with an empty "
             "nodeName); both agree that nothing is refused")


GENERATION = "example.com/generation"


def node_selector() -> Scenario:
    disk = "example.com/disk"
    return Scenario(
        "node-selector", "MatchNodeSelector", "predicate", policy(["MatchNodeSelector"]),
        [ready_node("n1", labels={disk: "ssd", GENERATION: "3"}), ready_node("n2", labels={disk: "hdd", GENERATION: "5"})],
        [pending_pod("ssd", nodeSelector={disk: "ssd"}),
         pending_pod("nvme", nodeSelector={disk: "nvme"}),
         pending_pod("affinity-hdd", affinity=required_node_affinity(expressions(disk, "In", ["hdd"]))),
         pending_pod("affinity-neither", affinity=required_node_affinity(expressions(disk, "NotIn", ["ssd", "hdd"]))),
         pending_pod("terms-ored", affinity=required_node_affinity(expressions(disk, "In", ["nvme"]),
                                                                   expressions(disk, "In", ["hdd"]))),
         pending_pod("selector-and-affinity", nodeSelector={disk: "ssd"},
                     affinity=required_node_affinity(expressions(disk, "In", ["hdd"]))),
         pending_pod("newer-than-4", affinity=required_node_affinity(expressions(GENERATION, "Gt", ["4"]))),
         pending_pod("newer-than-5", affinity=required_node_affinity(expressions(GENERATION, "Gt", ["5"]))),
         pending_pod("plain")],
        pending={"nvme": "node-selector", "affinity-neither": "node-selector", "newer-than-5": "node-selector",
                 "selector-and-affinity": "node-selector"})


def general() -> Scenario:
    disk = "example.com/disk"
    return Scenario(
        "general", "GeneralPredicates", "predicate", policy(["GeneralPredicates"]),
        [ready_node("n1", cpu="2", labels={disk: "ssd"}), ready_node("n2", cpu="2", labels={disk: "hdd"})],
        [pending_pod("big", cpu="3"), host_port(pending_pod("port-a"), 80), host_port(pending_pod("port-b"), 80),
         host_port(pending_pod("port-c"), 80), pending_pod("nvme", nodeSelector={disk: "nvme"}),
         pending_pod("ssd", cpu="500m", nodeSelector={disk: "ssd"}), pending_pod("plain")],
        pending={"big": "resources", "port-c": "ports", "nvme": "node-selector"})


def disk_conflict() -> Scenario:
    return Scenario(
        "disk-conflict", "NoDiskConflict", "predicate", policy(["NoDiskConflict"]), two_nodes(),
        [pending_pod("gce-a", volumes=gce_pd("pd-1")), pending_pod("gce-b", volumes=gce_pd("pd-1")),
         pending_pod("gce-c", volumes=gce_pd("pd-1")),
         # read-only mounts share a PD; the first two also share an EBS volume, which puts them on both nodes
         *(pending_pod(f"gce-ro-{i}", volumes=[*gce_pd("pd-ro", read_only=True), *ebs("vol-2", "ebs")])
           for i in "ab"),
         pending_pod("gce-ro-c", volumes=gce_pd("pd-ro", read_only=True)),
         pending_pod("ebs-a", volumes=ebs("vol-1")), pending_pod("ebs-b", volumes=ebs("vol-1")),
         pending_pod("ebs-c", volumes=ebs("vol-1")),
         pending_pod("gce-rw-on-ro", volumes=gce_pd("pd-ro")),  # read-write against read-only mounts
         pending_pod("iscsi-a", volumes=iscsi("iqn.2001-04.com.example:a")),
         pending_pod("iscsi-b", volumes=iscsi("iqn.2001-04.com.example:a")),
         pending_pod("iscsi-c", volumes=iscsi("iqn.2001-04.com.example:a"))],
        pending={"gce-c": "disk", "ebs-c": "disk", "gce-rw-on-ro": "disk", "iscsi-c": "disk"})


def volume_zone() -> Scenario:
    return Scenario(
        "volume-zone", "NoVolumeZoneConflict", "predicate", policy(["NoVolumeZoneConflict"]),
        [ready_node("n1", labels={BETA_ZONE: "z1"}), ready_node("n2", labels={BETA_ZONE: "z2"}),
         *zonal_volume("z1"), *zonal_volume("z2"), *zonal_volume("z3"), *zonal_volume("z2__z3", "z2-z3"),
         {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "unbound"},
          "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "resources": {"requests": {"storage": "1Gi"}}}}],
        [pending_pod("in-z1", volumes=claims("claim-z1")), pending_pod("in-z3", volumes=claims("claim-z3")),
         pending_pod("in-z2", volumes=claims("claim-z2")), pending_pod("plain"),
         pending_pod("z1-and-z2", volumes=claims("claim-z1", "claim-z2")),
         pending_pod("in-z2-or-z3", volumes=claims("claim-z2-z3")),  # a multi-zone PV: "z2__z3"
         # 1.9 fails these with an error (no predicate reason); v1 says "had no pv name" / "not found"
         pending_pod("unbound-claim", volumes=claims("unbound")), pending_pod("missing-claim", volumes=claims("missing"))],
        pending={"in-z3": "volume-zone", "z1-and-z2": "volume-zone", "unbound-claim": "", "missing-claim": ""})


def volume_zone_ga_labels() -> Scenario:
    """PVs labelled only with the GA zone label (as provisioners label them since 1.17), nodes with both (as
    kubelets label them): under ``--rules cluster`` the engine reads the GA label as v1's VolumeZone does."""
    def labels(zone: str) -> dict[str, str]:
        return {BETA_ZONE: zone, ZONE: zone}

    return Scenario(
        "volume-zone-ga", "NoVolumeZoneConflict", "predicate", policy(["NoVolumeZoneConflict"]),
        [ready_node("n1", labels=labels("z1")), ready_node("n2", labels=labels("z2")),
         *zonal_volume("z1", label=ZONE), *zonal_volume("z2", label=ZONE), *zonal_volume("z3", label=ZONE)],
        [pending_pod("in-z1", volumes=claims("claim-z1")), pending_pod("in-z3", volumes=claims("claim-z3")),
         pending_pod("in-z2", volumes=claims("claim-z2")), pending_pod("z1-and-z2", volumes=claims("claim-z1", "claim-z2"))],
        pending={"in-z3": "volume-zone", "z1-and-z2": "volume-zone"}, rules="cluster")


def inter_pod_affinity() -> Scenario:
    def anti_web(name: str) -> dict[str, Any]:
        return pending_pod(name, labels={"app": "web"}, affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [pod_term("web")]}})

    def affine(name: str, app: str) -> dict[str, Any]:
        return pending_pod(name, affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [pod_term(app)]}})

    return Scenario(
        "inter-pod-affinity", "MatchInterPodAffinity", "predicate", policy(["MatchInterPodAffinity"]),
        [ready_node("n1"), ready_node("n2"), ready_node("n3")],
        [anti_web("web-0"), anti_web("web-1"), anti_web("web-2"), anti_web("web-3"),
         pending_pod("intruder", labels={"app": "web"}),  # refused by the web pods' anti-affinity (symmetry)
         affine("follower", "cache"),  # no cache pod anywhere
         affine("sidecar", "web"),
         pending_pod("self-affine", labels={"app": "db"}, affinity={"podAffinity": {
             "requiredDuringSchedulingIgnoredDuringExecution": [pod_term("db")]}}),  # the first of its kind fits
         affine("db-client", "db")],
        pending={"web-3": "inter-pod-affinity", "intruder": "inter-pod-affinity",
                 "follower": "inter-pod-affinity"})


def inter_pod_affinity_first_pod() -> Scenario:
    """KNOWN DISAGREEMENT: the "first pod of a group" exception to required pod affinity.

    1.9 (``satisfiesPodsAffinityAntiAffinity``, per term): a term that no pod anywhere matches is disregarded
    when the pod matches it itself, whatever the other terms do and whether or not the node carries the
    term's topology key. v1 (``InterPodAffinity`` ``satisfyPodAffinity``, the same in 1.26, 1.32 and 1.36): a node
    must carry every term's topology key, and the exception holds only when no pod matches *any* of the
    pod's terms and the pod matches all of them. So ``two-terms`` (affinity to the db pod on n1 and to
    itself) fits n1 under 1.9 and nowhere in v1, and ``self-zone`` (affinity to itself on a key no node
    has) fits every node under 1.9 and none in v1."""
    def affine(name: str, *apps_keys: tuple[str, str]) -> dict[str, Any]:
        return pending_pod(name, labels={"app": name}, affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [pod_term(app, key) for app, key in apps_keys]}})

    return Scenario(
        "inter-pod-affinity-first-pod", "MatchInterPodAffinity", "predicate", policy(["MatchInterPodAffinity"]),
        [ready_node("n1"), ready_node("n2"), bound_pod("db", "n1", labels={"app": "db"})],
        [affine("two-terms", ("db", HOSTNAME), ("two-terms", HOSTNAME)),
         affine("self-zone", ("self-zone", "example.com/zone")),
         affine("db-client", ("db", HOSTNAME))],
        pending={},
        modern_pending={"two-terms": "inter-pod-affinity", "self-zone": "inter-pod-affinity"},
        disagreement="1.9 disregards a required affinity term no pod matches when the pod matches it itself, term "
                     "by term and on nodes without the term's topology key; v1 only when no pod matches any of "
                     "the pod's terms, and never on a node missing a term's topology key")


def taints() -> Scenario:
    gpu = taint("dedicated", "NoSchedule", "gpu")
    maintenance = taint("maintenance", "NoExecute")
    return Scenario(
        "taints", "PodToleratesNodeTaints", "predicate", policy(["PodToleratesNodeTaints"]),
        [ready_node("n1", taints=[gpu]), ready_node("n2", taints=[maintenance])],
        [pending_pod("plain"),
         pending_pod("gpu", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                          "effect": "NoSchedule"}]),
         pending_pod("maintenance", tolerations=[{"key": "maintenance", "operator": "Exists"}]),
         pending_pod("gpu-wrong-effect", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                                       "effect": "NoExecute"}]),
         pending_pod("everything", tolerations=[{"operator": "Exists"}])],
        pending={"plain": "taints", "gpu-wrong-effect": "taints"})


def topology_spread() -> Scenario:
    """PodTopologySpread is not a 1.9 name: under ``--rules 1.9`` the engine ignores the pods' constraints
    (``predicates/topology_spread.py`` ``filter_form``), so this one scenario runs ``--rules cluster`` for
    both ``simulate`` and ``migrate``."""
    nodes = [ready_node("n1", labels={ZONE: "a", RACK: "r1"}), ready_node("n2", labels={ZONE: "b", RACK: "r2"})]
    existing = [bound_pod("x-0", "n1", labels={"app": "x"}), bound_pod("x-1", "n1", labels={"app": "x"}),
                bound_pod("y-0", "n2", labels={"app": "y"}), bound_pod("y-1", "n2", labels={"app": "y"})]
    return Scenario(
        "topology-spread", "PodTopologySpread", "predicate", policy(["PodTopologySpread"]), [*nodes, *existing],
        [pending_pod("zone-of-x", topologySpreadConstraints=[spread(ZONE, "x")]),  # zone a has 2 x: n2
         pending_pod("crossed", topologySpreadConstraints=[spread(ZONE, "x"), spread(RACK, "y")]),
         pending_pod("no-row-label", topologySpreadConstraints=[spread("example.com/row", "x")]),
         pending_pod("soft", topologySpreadConstraints=[spread(ZONE, "x", "ScheduleAnyway")])],
        pending={"crossed": "topology-spread", "no-row-label": "topology-spread"}, rules="cluster")


RESTART_ALL = "RestartAllContainersOnContainerExits"


def node_declared_features() -> Scenario:
    """NodeDeclaredFeatures (1.36 beta and on; not a 1.9 name, so ``--rules cluster`` as for PodTopologySpread):
    a pod whose container restarts them all on an exit code needs ``RestartAllContainersOnContainerExits``;
    neither node declares it (n1 declares another feature), so it fits none, and a plain pod binds. Only 1.36's
    API server keeps ``restartPolicyRules`` and ``status.declaredFeatures``."""
    nodes = two_nodes()
    nodes[0]["status"]["declaredFeatures"] = ["InPlacePodLevelResourcesVerticalScaling"]  # not RESTART_ALL
    restarter = pending_pod("restarter")
    restarter["spec"]["containers"][0].update(restartPolicy="Never", restartPolicyRules=[
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}])
    return Scenario(
        "node-declared-features", "NodeDeclaredFeatures", "predicate", policy(["NodeDeclaredFeatures"]), nodes,
        [restarter, pending_pod("plain")], pending={"restarter": "node-features"}, rules="cluster", since="1.36")


# -- priority scenarios ---------------------------------------------------------------------------------
def priority_policy(name: str, **fields: Any) -> dict[str, Any]:
    return policy(["PodFitsResources"], [{"name": name, "weight": 1}], **fields)


def loaded_nodes() -> list[dict[str, Any]]:
    """Three nodes of 10 cpu / 10Gi, already running 1, 4 and 7 cpu (and Gi)."""
    nodes = [ready_node(f"n{i}", cpu="10", memory="10Gi") for i in (1, 2, 3)]
    loads = [bound_pod(f"load-{i}", f"n{i}", cpu=str(used), memory=f"{used}Gi")
             for i, used in ((1, 1), (2, 4), (3, 7))]
    return [*nodes, *loads]


def least_requested() -> Scenario:
    # free after each pod (cpu = memory): 1.9 scores 7/4/1, 5/4/1, 3/4/1, 3/2/1 (v1: the same times ten)
    return Scenario(
        "least-requested", "LeastRequestedPriority", "priority", priority_policy("LeastRequestedPriority"),
        loaded_nodes(), [pending_pod(f"p{i}", cpu="2", memory="2Gi") for i in (1, 2, 3, 4)],
        hosts={"p1": "n1", "p2": "n1", "p3": "n2", "p4": "n1"})


def most_requested() -> Scenario:
    # requested after each pod: 1.9 scores 3/6/9, 3/6/- (n3 full), 3/8, 3/10, then only n1 fits
    return Scenario(
        "most-requested", "MostRequestedPriority", "priority", priority_policy("MostRequestedPriority"),
        loaded_nodes(), [pending_pod(f"p{i}", cpu="2", memory="2Gi") for i in (1, 2, 3, 4, 5)],
        hosts={"p1": "n3", "p2": "n2", "p3": "n2", "p4": "n2", "p5": "n1"})


def inter_pod_affinity_priority() -> Scenario:
    client = {"app": "client"}
    return Scenario(
        "inter-pod-affinity-priority", "InterPodAffinityPriority", "priority",
        priority_policy("InterPodAffinityPriority"),
        [ready_node("n1"), ready_node("n2"), ready_node("n3"), bound_pod("db", "n1"), bound_pod("cache", "n2")],
        [pending_pod("p1", labels=client, affinity={"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": preferred_terms((10, "db"))}}),
         pending_pod("p2", labels=client, affinity={
             "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred_terms((10, "db"))},
             "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred_terms((5, "cache"))}}),
         pending_pod("p3", labels=client, affinity={"podAntiAffinity": {
             "preferredDuringSchedulingIgnoredDuringExecution": preferred_terms((5, "cache"), (3, "db"))}})],
        hosts={"p1": "n1", "p2": "n2", "p3": "n3"})


HARD_WEIGHT = 10


def hard_pod_affinity_weight() -> Scenario:
    """``front`` on n2 requires affinity to app=web: with the weight 10 that outweighs the incoming web pod's
    own preference (5) for db's node n1; with the default weight 1 it would not (checked on ours)."""
    front = bound_pod("front", "n2", affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [pod_term("web")]}})
    return Scenario(
        "hard-pod-affinity-weight", "hardPodAffinitySymmetricWeight", "priority",
        priority_policy("InterPodAffinityPriority", hardPodAffinitySymmetricWeight=HARD_WEIGHT),
        [ready_node("n1"), ready_node("n2"), bound_pod("db", "n1"), front],
        [pending_pod("web", labels={"app": "web"}, affinity={"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": preferred_terms((5, "db"))}})],
        hosts={"web": "n2"})


def node_affinity_priority() -> Scenario:
    color = "example.com/color"
    return Scenario(
        "node-affinity-priority", "NodeAffinityPriority", "priority", priority_policy("NodeAffinityPriority"),
        [ready_node("n1", labels={color: "red"}), ready_node("n2", labels={color: "blue"}),
         ready_node("n3", labels={color: "green"})],
        [pending_pod("p1", affinity=preferred_node_affinity((10, expressions(color, "In", ["red"])))),
         pending_pod("p2", affinity=preferred_node_affinity((3, expressions(color, "In", ["blue"])),
                                                            (7, expressions(color, "In", ["green"])))),
         pending_pod("p3", affinity=preferred_node_affinity((2, expressions(color, "In", ["blue", "green"])),
                                                            (5, expressions(color, "In", ["blue"]))))],
        hosts={"p1": "n1", "p2": "n3", "p3": "n2"})


def topology_spread_priority() -> Scenario:
    """PodTopologySpread's score (the pods' ScheduleAnyway constraints); ``--rules cluster`` for the same
    reason as the filter's scenario."""
    nodes = [ready_node("n1", labels={ZONE: "a"}), ready_node("n2", labels={ZONE: "a"}),
             ready_node("n3", labels={ZONE: "b"})]
    existing = [bound_pod("x-0", "n1", labels={"app": "x"}), bound_pod("x-1", "n2", labels={"app": "x"})]
    soft = [spread(ZONE, "x", "ScheduleAnyway")]
    return Scenario(
        "topology-spread-priority", "PodTopologySpread", "priority", priority_policy("PodTopologySpread"),
        [*nodes, *existing],
        [pending_pod(f"x-{i}", labels={"app": "x"}, topologySpreadConstraints=soft) for i in (2, 3)],
        hosts={"x-2": "n3", "x-3": "n3"}, rules="cluster")


def taint_toleration_priority() -> Scenario:
    def tolerating(name: str, *keys: str) -> dict[str, Any]:
        return pending_pod(name, tolerations=[{"key": k, "operator": "Exists", "effect": "PreferNoSchedule"}
                                              for k in keys])

    def tainted(name: str, *keys: str) -> dict[str, Any]:
        return ready_node(name, taints=[taint(k, "PreferNoSchedule") for k in keys])

    return Scenario(
        "taint-toleration-priority", "TaintTolerationPriority", "priority", priority_policy("TaintTolerationPriority"),
        [tainted("n1", "a", "b"), tainted("n2", "a", "c"), tainted("n3", "b", "c")],
        [tolerating("p1", "a", "b"), tolerating("p2", "a", "c"), tolerating("p3", "b", "c")],
        hosts={"p1": "n1", "p2": "n2", "p3": "n3"})


SCENARIOS = [
    resources(), ports("PodFitsHostPorts"), ports("PodFitsPorts"), hostname(), node_selector(), general(),
    disk_conflict(), volume_zone(), volume_zone_ga_labels(), inter_pod_affinity(), inter_pod_affinity_first_pod(), taints(), topology_spread(),
    node_declared_features(),
    least_requested(), most_requested(), inter_pod_affinity_priority(), hard_pod_affinity_weight(),
    node_affinity_priority(), taint_toleration_priority(), topology_spread_priority(),
]
BY_ID = {s.id: s for s in SCENARIOS}
#: Scenarios whose predicate cannot refuse a pod that reaches a scheduler (see the scenario's note).
VACUOUS = {"hostname"}

#: The agreement table: one row per scenario and version, filled in as the tests run.
RESULTS: list[Row] = []


def test_every_exact_entry_has_a_scenario():
    exact = {name for name, rule in [*PREDICATES.items(), *PRIORITIES.items()] if rule.status == EXACT}
    assert exact <= {s.entry for s in SCENARIOS}


# -- fixtures -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"k8s-{v}")
def server(request, envtest_pool):
    with envtest_pool.leased(request.param) as s:
        yield s


_OURS: dict[str, tuple[Outcome, dict[str, Any]]] = {}


@pytest.fixture
def our_outcome(tmp_path_factory):
    """Ours does not depend on the modern version: simulate once per scenario."""
    def get(scenario: Scenario) -> tuple[Outcome, dict[str, Any]]:
        if scenario.id not in _OURS:
            _OURS[scenario.id] = ours(scenario, tmp_path_factory.mktemp(f"ours-{scenario.id}"))
        return _OURS[scenario.id]
    return get


@pytest.fixture(scope="module", autouse=True)
def agreement_table(request):
    yield RESULTS
    if not RESULTS:
        return
    table = markdown(RESULTS)
    title = "Migration agreement: ours (simulate --rules 1.9) and the modern kube-scheduler running migrate's configuration"
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print(f"\n{title}\n{table}", flush=True)
    root = os.environ.get("POLICY_SCHEDULER_ARTIFACTS")
    if root:
        write_table(Path(root), title, RESULTS)


# -- the test -------------------------------------------------------------------------------------------
def _line(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@pytest.mark.parametrize("scenario_id", [i for i, s in BY_ID.items() if not s.since])
def test_agreement(server, scenario_id, our_outcome, tmp_path):
    agreement(server, BY_ID[scenario_id], our_outcome, tmp_path)


#: Scenarios whose fields only newer API servers keep (``since``), on those lines only (an older server drops them).
NEWER = [(version, i) for i, s in BY_ID.items() if s.since for version in VERSIONS if _line(version) >= _line(s.since)]


@pytest.mark.parametrize("version, scenario_id", NEWER, ids=[f"k8s-{v}-{i}" for v, i in NEWER])
def test_agreement_on_newer_lines(version, scenario_id, envtest_pool, our_outcome, tmp_path):
    with envtest_pool.leased(version) as server:
        agreement(server, BY_ID[scenario_id], our_outcome, tmp_path)


def agreement(server, scenario: Scenario, our_outcome, tmp_path) -> None:
    mine, result = our_outcome(scenario)
    document = migrated(scenario, server.version, tmp_path)
    status = {e["from"]: e for e in document["mapping"]}[scenario.entry]["status"]
    rule = PREDICATES.get(scenario.entry) or PRIORITIES.get(scenario.entry)
    if scenario.rules == "cluster":
        rule = CLUSTER_RULES_PREDICATES.get(scenario.entry, rule)
    # the mapping says what rules.py says (hardPodAffinitySymmetricWeight, a field, is exact in migrate.py)
    assert status == (rule.status if rule is not None else EXACT), status
    theirs = modern(server, scenario, document["configuration"], tmp_path)
    if scenario.kind == "predicate":
        agree = mine.pending == theirs.pending and mine.families() == theirs.families()
    else:
        agree = mine.hosts == theirs.hosts
    label = scenario.id + (f" (--rules {scenario.rules})" if scenario.rules != "1.9" else "") \
        + (" (vacuous, see note)" if scenario.id in VACUOUS else "") \
        + (" (disagreement: why it is approximate)" if scenario.disagreement else "")
    RESULTS.append(Row(label, f"{scenario.entry} ({status})", server.version, mine.describe(scenario.kind),
                       theirs.describe(scenario.kind), agree))

    # the scenario does what it is meant to (on ours) ...
    if scenario.kind == "predicate":
        assert set(mine.pending) == set(scenario.pending), (mine.hosts, mine.messages)
        assert families_of(scenario.pending) == mine.families(), mine.messages
        assert mine.bound, "no pod binds"
        assert scenario.pending or scenario.modern_pending or scenario.id in VACUOUS, "no pod is refused"
    else:
        assert mine.hosts == scenario.hosts
        ties = {name: nodes for name, nodes in unique_best(result).items() if len(nodes) > 1}
        assert not ties, f"1.9 scores tie: {ties}"
    if scenario.disagreement:
        # a known disagreement (reported): what the modern kube-scheduler does instead, asserted as observed
        assert scenario.modern_pending is not None
        assert set(theirs.pending) == set(scenario.modern_pending), (theirs.hosts, theirs.messages)
        assert families_of(scenario.modern_pending) == theirs.families(), theirs.messages
        assert not agree
        assert status == "approximate", "a disagreement the mapping calls exact: fix the mapping or its note"
        return
    # ... and the modern kube-scheduler agrees
    assert theirs.pending == mine.pending, (theirs.hosts, theirs.messages)
    assert theirs.families() == mine.families(), (theirs.messages, mine.messages)
    if scenario.kind == "priority":
        assert theirs.hosts == mine.hosts


def families_of(expected: dict[str, str]) -> dict[str, frozenset[str]]:
    return {name: frozenset({family} if family else ()) for name, family in expected.items()}


def test_hard_pod_affinity_weight_is_decisive(tmp_path):
    """Without hardPodAffinitySymmetricWeight (default 1) the web pod goes to db's node instead."""
    scenario = hard_pod_affinity_weight()
    scenario.policy = priority_policy("InterPodAffinityPriority")
    scenario.id = "hard-pod-affinity-default"
    mine, _ = ours(scenario, tmp_path)
    assert mine.hosts == {"web": "n1"}
