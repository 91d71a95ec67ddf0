"""Upstream's scheduler_perf workloads as Kubernetes objects: one definition for the live benchmarks
(``scheduler_perf.py``, ``faults.py``) and the offline tests that pin the engine's decisions on them.

Written from upstream's ``test/integration/scheduler_perf/config/performance-config.yaml`` and its pod and
node templates (copies of about v1.24 to v1.31; ``../shared/benchmarks/README.md`` summarises them):

* nodes (``node-default.yaml``): capacity = allocatable cpu 4, memory 32Gi, pods 110, ``Ready``, a unique
  ``kubernetes.io/hostname``; ``labelNodePrepareStrategy`` adds ``topology.kubernetes.io/zone``: ``zone1`` on
  every node, or one of ``moon-1/2/3`` per node drawn at random (here SplitMix64 from ``--seed``, so that runs
  are repeatable);
* pods: one ``pause`` container with a port, requests = limits cpu 100m, memory 500Mi (``pod-default``),
  except the low-priority (900m, grace 0), high-priority (3000m, priority 10) and large-cpu (cpu 9,
  requests only) templates; the affinity templates carry ``color`` labels and terms on them.

One correction: upstream's affinity templates name the namespaces ``sched-test`` and ``sched-setup`` in their
terms (left from an older harness), while the workloads create the pods in ``sched-0`` (init) and ``sched-1``
(measured). Taken literally no pod could ever match a term, not even its own, so the required-affinity
pods would never schedule (in any scheduler) and the anti-affinity ones would not constrain each other. The
terms here name ``sched-0`` and ``sched-1``: the workloads' evident intent (SchedulingPodAntiAffinity's 100
init + 400 measured pods fill its 500 nodes one per node exactly).

SchedulingCSIVolumes is upstream's SchedulingCSIPVs (``VOLUME_WORKLOADS``): nodes whose
``nodeAllocatableStrategy`` gives each a ``CSINode`` allowing :data:`CSI_VOLUME_LIMIT` (39) volumes of the
driver ``ebs.csi.aws.com`` (and the same count as the node's ``attachable-volumes-csi-ebs.csi.aws.com``
allocatable), and pods of ``pod-default`` each with one claim (``pvc.yaml``: ReadOnlyMany, 1Gi,
``bind-completed``) bound to a PV of its own (``pv-csi.yaml``: that driver, reclaim policy Retain). Upstream's
volume factory gives the init and the measured pods' PVs the same handles (``vol-<index>`` in both
namespaces); here every PV has a handle of its own (``vol-<pod name>``), so that each pod counts one volume.
Upstream's harness runs a fake PV controller that completes the bindings; here each PV is created
pre-bound to its claim and each claim names its PV, carries ``bind-completed`` and is given the ``Bound``
phase (what that controller would have written), all before any pod of the run exists.

Three workloads whose pods carry fields 1.9 never had (``MODERN_FIELD_WORKLOADS``):

* SchedulingDaemonSets: :data:`DAEMONSETS` (5 ``apps/v1`` DaemonSets) and one pod of each per node, made as the
  1.26 DaemonSet controller makes them (its template's labels with ``controller-revision-hash`` and
  ``pod-template-generation``, an ``ownerReference`` to the DaemonSet with its uid and ``controller: true``,
  required node affinity ``matchFields`` ``metadata.name In [<node>]`` and the 6 tolerations
  :data:`DAEMON_TOLERATIONS`), on nodes that already hold plain ``pod-default`` init pods (one per node at 500
  nodes). Upstream's SchedulingDaemonset (later than 1.26, ``misc/performance-config.yaml``) is a narrower
  shape: pods of ``daemonset-pod.yaml`` (no requests, no owner, no tolerations) that all name one node among
  15,000.
* SchedulingNamespaceSelectorAffinity and SchedulingPreferredNamespaceSelectorAffinity: upstream's
  SchedulingRequiredPodAffinityWithNSSelector and SchedulingPreferredAffinityWithNSSelector, i.e. namespaces
  ``init-ns-<j>`` and ``measure-ns-0`` labelled ``team: devops`` (``namespace-with-labels.yaml``), init pods in
  blocks over the init namespaces (``createPodSets``), measured pods in ``measure-ns-0``, with
  ``pod-affinity-ns-selector.yaml`` (required, ``color: blue``, zone, every node in ``zone1``) or
  ``pod-preferred-affinity-ns-selector.yaml`` (preferred, weight 1, ``color: red``, hostname): terms with a
  ``namespaceSelector`` ``team: devops`` and no ``namespaces``.

``spec.priority`` of ``pod-high-priority.yaml`` is a literal field; a 1.26 API server sets it only from a
PriorityClass (a literal one is refused), so live pods name the class :data:`HIGH_PRIORITY_CLASS` (value 10)
and offline pods carry the priority itself, as admission would have set it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.generator import SplitMix64

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
NODE_CPU, NODE_MEMORY, NODE_PODS = "4", "32Gi", 110
HIGH_PRIORITY_CLASS = "scheduler-perf-high"
HIGH_PRIORITY = 10
INIT_NAMESPACE, MEASURED_NAMESPACE = "sched-0", "sched-1"
AFFINITY_NAMESPACES = [INIT_NAMESPACE, MEASURED_NAMESPACE]
CSI_DRIVER = "ebs.csi.aws.com"  # nodeAllocatableStrategy's csiNodeAllocatable driver and pv-csi.yaml's
CSI_VOLUME_LIMIT = 39  # its count (and the node's attachable-volumes-csi-ebs.csi.aws.com allocatable)
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
NODE_NAME_FIELD = "metadata.name"  # the one field a nodeSelectorTerm's matchFields may name
DAEMONSET_NAMESPACE = "kube-system"
#: What the DaemonSet controller adds to every pod it makes (``AddOrUpdateDaemonPodTolerations``, 1.26; the
#: seventh, network-unavailable, only for host-network pods).
DAEMON_TOLERATIONS: tuple[dict[str, str], ...] = tuple(
    {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": effect} for key, effect in (
        ("not-ready", "NoExecute"), ("unreachable", "NoExecute"), ("disk-pressure", "NoSchedule"),
        ("memory-pressure", "NoSchedule"), ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule")))
NS_SELECTOR_LABELS = (("team", "devops"),)  # namespace-with-labels.yaml, and the terms' namespaceSelector
DRA_DRIVER = "test-driver.cdi.k8s.io"  # createResourceDriver's driverName
DRA_CLASS = "test-class"  # deviceclass.yaml
DRA_TEMPLATE = "test-claim-template"  # resourceclaimtemplate.yaml
DRA_POD_CLAIM = "resource"  # the pod templates' spec.resourceClaims[0].name
DRA_NODE_LABELS = (("node-with-dra", "true"),)  # node-with-dra-test-driver.yaml


@dataclass(frozen=True)
class PodTemplate:
    """One of upstream's pod templates (the file is ``name``)."""

    name: str
    cpu: str = "100m"
    memory: str = "500Mi"
    limits: bool = True
    labels: tuple[tuple[str, str], ...] = ()
    affinity: dict[str, Any] | None = None
    topology_spread: tuple[dict[str, Any], ...] = ()
    priority_class: str | None = None
    priority: int | None = None
    grace: int | None = None
    requests: bool = True  # False: no requests, no limits, no port (the DRA templates' bare pause container)

    def pod(self, name: str, namespace: str, scheduler_name: str, *, node_name: str | None = None,
            literal_priority: bool = False, claim: str | None = None,
            resource_claim: dict[str, str] | None = None) -> dict[str, Any]:
        """The Pod object; ``literal_priority`` sets ``spec.priority`` as admission would (offline snapshots);
        ``claim``: one volume ``vol`` of that claim (upstream's ``CreatePodWithPersistentVolume``);
        ``resource_claim``: one ``spec.resourceClaims`` entry ``resource`` (its ``resourceClaimName`` or
        ``resourceClaimTemplateName``) that the container uses."""
        resources = {"cpu": self.cpu, "memory": self.memory}
        container: dict[str, Any] = {"name": "pause", "image": "registry.k8s.io/pause:3.9"}
        if self.requests:
            container["ports"] = [{"containerPort": 80}]
            container["resources"] = {"requests": dict(resources), **({"limits": dict(resources)} if self.limits else {})}
        spec: dict[str, Any] = {"schedulerName": scheduler_name, "containers": [container]}
        if resource_claim:
            container.setdefault("resources", {})["claims"] = [{"name": DRA_POD_CLAIM}]
            spec["resourceClaims"] = [{"name": DRA_POD_CLAIM, **resource_claim}]
        if self.affinity is not None:
            spec["affinity"] = self.affinity
        if self.topology_spread:
            spec["topologySpreadConstraints"] = [dict(c) for c in self.topology_spread]
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        if literal_priority and self.priority is not None:
            spec["priority"] = self.priority
        if self.grace is not None:
            spec["terminationGracePeriodSeconds"] = self.grace
        if node_name:
            spec["nodeName"] = node_name
        if claim:
            spec["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _term(color: str, topology_key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": topology_key,
            "namespaces": list(AFFINITY_NAMESPACES)}


def _spread(when: str) -> tuple[dict[str, Any], ...]:
    return ({"maxSkew": 5, "topologyKey": ZONE_KEY, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": {"color": "blue"}}},)


POD_DEFAULT = PodTemplate("pod-default.yaml")
POD_LOW_PRIORITY = PodTemplate("pod-low-priority.yaml", cpu="900m", grace=0)
POD_HIGH_PRIORITY = PodTemplate("pod-high-priority.yaml", cpu="3000m", priority_class=HIGH_PRIORITY_CLASS,
                                priority=HIGH_PRIORITY)
POD_LARGE_CPU = PodTemplate("pod-large-cpu.yaml", cpu="9", limits=False)
POD_WITH_POD_AFFINITY = PodTemplate("pod-with-pod-affinity.yaml", labels=(("color", "blue"),), affinity={
    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("blue", ZONE_KEY)]}})
POD_WITH_POD_ANTI_AFFINITY = PodTemplate("pod-with-pod-anti-affinity.yaml", labels=(("color", "green"),), affinity={
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("green", HOSTNAME_KEY)]}})
POD_WITH_PREFERRED_POD_AFFINITY = PodTemplate(
    "pod-with-preferred-pod-affinity.yaml", labels=(("color", "red"),), affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": _term("red", HOSTNAME_KEY)}]}})
POD_WITH_PREFERRED_POD_ANTI_AFFINITY = PodTemplate(
    "pod-with-preferred-pod-anti-affinity.yaml", labels=(("color", "yellow"),), affinity={"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": _term("yellow", HOSTNAME_KEY)}]}})
POD_WITH_NODE_AFFINITY = PodTemplate("pod-with-node-affinity.yaml", affinity={"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE_KEY, "operator": "In", "values": ["zone1", "zone2"]}]}]}}})
def _ns_selector_term(color: str, topology_key: str) -> dict[str, Any]:
    """A term of upstream's ``*-ns-selector.yaml`` templates: a ``namespaceSelector``, no ``namespaces``."""
    return {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": topology_key,
            "namespaceSelector": {"matchLabels": dict(NS_SELECTOR_LABELS)}}


POD_AFFINITY_NS_SELECTOR = PodTemplate("pod-affinity-ns-selector.yaml", labels=(("color", "blue"),), affinity={
    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_ns_selector_term("blue", ZONE_KEY)]}})
POD_PREFERRED_AFFINITY_NS_SELECTOR = PodTemplate(
    "pod-preferred-affinity-ns-selector.yaml", labels=(("color", "red"),), affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": _ns_selector_term("red", HOSTNAME_KEY)}]}})
POD_WITH_TOPOLOGY_SPREADING = PodTemplate("pod-with-topology-spreading.yaml", labels=(("color", "blue"),),
                                          topology_spread=_spread("DoNotSchedule"))
POD_WITH_PREFERRED_TOPOLOGY_SPREADING = PodTemplate("pod-with-preferred-topology-spreading.yaml",
                                                    labels=(("color", "blue"),), topology_spread=_spread("ScheduleAnyway"))


def node_object(name: str, *, pods: int = NODE_PODS, labels: dict[str, str] | None = None,
                allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    """``node-default.yaml``: capacity = allocatable cpu 4, memory 32Gi, ``pods`` pods, Ready; ``allocatable``
    added to the allocatable only (as ``nodeAllocatableStrategy`` patches it)."""
    capacity = {"cpu": NODE_CPU, "memory": NODE_MEMORY, "pods": str(pods)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_KEY: name, **(labels or {})}},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": {**capacity, **(allocatable or {})}, "phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def attach_limit_key(driver: str) -> str:
    """``GetCSIAttachLimitKey`` for a driver name of fewer than 40 characters."""
    assert len(driver) < 40, driver
    return f"attachable-volumes-csi-{driver}"


@dataclass(frozen=True)
class CSIVolumes:
    """Upstream's SchedulingCSIPVs volumes: a ``CSINode`` per node allowing ``limit`` volumes of ``driver``, and
    per pod a claim bound to a CSI PV of its own (``pv-csi.yaml`` + ``pvc.yaml``, bound as upstream's fake PV
    controller binds them)."""

    driver: str = CSI_DRIVER
    limit: int = CSI_VOLUME_LIMIT

    def node_allocatable(self, limit: int | None = None) -> dict[str, str]:
        return {attach_limit_key(self.driver): str(self.limit if limit is None else limit)}

    def csinode(self, node_name: str, limit: int | None = None) -> dict[str, Any]:
        """What ``nodeAllocatableStrategy`` creates (no migrated plugins: an empty annotation)."""
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": node_name, "annotations": {MIGRATED_PLUGINS_ANNOTATION: ""}},
                "spec": {"drivers": [{"name": self.driver, "nodeID": node_name,
                                      "allocatable": {"count": self.limit if limit is None else limit}}]}}

    @staticmethod
    def claim_name(pod_name: str) -> str:
        return f"pvc-{pod_name}"

    @staticmethod
    def pv_name(namespace: str, pod_name: str) -> str:
        """Upstream's ``<namespace>-vol-<index>``, the pod's name for the index."""
        return f"{namespace}-vol-{pod_name}"

    @staticmethod
    def volume_handle(pod_name: str) -> str:
        return f"vol-{pod_name}"

    def persistent_volume(self, namespace: str, pod_name: str) -> dict[str, Any]:
        """``pv-csi.yaml`` with the pod's handle, pre-bound to the pod's claim (``spec.claimRef``)."""
        return {"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": self.pv_name(namespace, pod_name)},
                "spec": {"accessModes": ["ReadOnlyMany"], "capacity": {"storage": "1Gi"},
                         "persistentVolumeReclaimPolicy": "Retain",
                         "csi": {"driver": self.driver, "volumeHandle": self.volume_handle(pod_name)},
                         "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace,
                                      "name": self.claim_name(pod_name)}}}

    def claim(self, namespace: str, pod_name: str) -> dict[str, Any]:
        """``pvc.yaml`` naming its PV (``spec.volumeName``, as the PV controller's binding leaves it)."""
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": self.claim_name(pod_name), "namespace": namespace,
                             "annotations": {BIND_COMPLETED_ANNOTATION: "yes"}},
                "spec": {"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "1Gi"}},
                         "volumeName": self.pv_name(namespace, pod_name)}}

    @staticmethod
    def pv_status() -> dict[str, Any]:
        return {"phase": "Bound"}

    @staticmethod
    def claim_status() -> dict[str, Any]:
        return {"phase": "Bound", "accessModes": ["ReadOnlyMany"], "capacity": {"storage": "1Gi"}}


@dataclass(frozen=True)
class DRADevices:
    """Upstream's DRA workloads (``dra/performance-config.yaml``): ``createResourceDriver`` gives every node a
    ResourceSlice of ``per_node`` devices of :data:`DRA_DRIVER` (dra.go ``resourceSlice``: one pool per node, named
    after it, one slice; devices ``instance-<i>`` with the attributes ``model`` A100, ``family`` GPU,
    ``driverVersion`` 1.2.3, ``dra.example.com/numa`` i and the capacity ``memory`` 1Gi); the class
    :data:`DRA_CLASS` selects the driver in CEL; every pod takes one device, through :data:`DRA_TEMPLATE` in its
    namespace (the resourceclaim controller makes a claim per pod) or, with ``pods_per_claim``, through the claim
    ``test-claim-<i // pods_per_claim>`` (``resourceclaim.yaml``, created beforehand) that that many pods share."""

    per_node: int = 10
    pods_per_claim: int = 0  # 0: the template, a claim per pod

    @staticmethod
    def device_class() -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRA_CLASS},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]}}

    def resource_slice(self, node_name: str) -> dict[str, Any]:
        devices = [{"name": f"instance-{i}",
                    "attributes": {"model": {"string": "A100"}, "family": {"string": "GPU"},
                                   "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": i}},
                    "capacity": {"memory": {"value": "1Gi"}}} for i in range(self.per_node)]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": node_name},
                "spec": {"driver": DRA_DRIVER, "nodeName": node_name,
                         "pool": {"name": node_name, "generation": 0, "resourceSliceCount": 1}, "devices": devices}}

    @staticmethod
    def _claim_spec() -> dict[str, Any]:
        return {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": DRA_CLASS}}]}}

    def claim_template(self, namespace: str) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": DRA_TEMPLATE, "namespace": namespace}, "spec": {"spec": self._claim_spec()}}

    @staticmethod
    def claim_name(index: int, pods_per_claim: int) -> str:
        return f"test-claim-{index // pods_per_claim}"

    def claim(self, namespace: str, name: str) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": namespace}, "spec": self._claim_spec()}

    def pod_claim(self, index: int) -> dict[str, str]:
        """The pod's ``spec.resourceClaims`` source for the pod of ``index``."""
        if self.pods_per_claim:
            return {"resourceClaimName": self.claim_name(index, self.pods_per_claim)}
        return {"resourceClaimTemplateName": DRA_TEMPLATE}

    def objects(self, node_names: Sequence[str], pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The class, every node's slice, and per namespace of ``pods`` the template or the claims they name."""
        out = [self.device_class(), *(self.resource_slice(n) for n in node_names)]
        claims: dict[tuple[str, str], None] = {}
        for pod in pods:
            namespace = pod["metadata"]["namespace"]
            for entry in pod["spec"].get("resourceClaims") or ():
                claims[namespace, entry.get("resourceClaimName") or ""] = None
        for namespace, name in claims:
            out.append(self.claim(namespace, name) if name else self.claim_template(namespace))
        return out


@dataclass(frozen=True)
class DaemonSet:
    """One DaemonSet of SchedulingDaemonSets: its object, and its pod for a node as the 1.26 DaemonSet controller
    makes it from the template (``controller.CreatePodWithControllerRef`` after ``util.CreatePodTemplate``)."""

    name: str
    cpu: str
    memory: str
    namespace: str = DAEMONSET_NAMESPACE

    @property
    def template(self) -> PodTemplate:
        """The template's pod: requests only (Burstable), as most node agents."""
        return PodTemplate(f"{self.name} template", cpu=self.cpu, memory=self.memory, limits=False,
                           labels=(("app", self.name),))

    def object(self, scheduler_name: str) -> dict[str, Any]:
        """The ``apps/v1`` DaemonSet (its template names the scheduler under test)."""
        pod = self.template.pod("template", self.namespace, scheduler_name)
        return {"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {"selector": {"matchLabels": {"app": self.name}},
                         "template": {"metadata": {"labels": dict(pod["metadata"]["labels"])}, "spec": pod["spec"]}}}

    def pod(self, name: str, node: str, uid: str, scheduler_name: str, **kw: Any) -> dict[str, Any]:
        """The controller's pod for ``node``: the template's labels plus the revision's, an owner reference to
        the DaemonSet (``uid``), required node affinity on the node's name (``matchFields``, which replaces any
        of the template's required terms) and the daemon tolerations."""
        pod = self.template.pod(name, self.namespace, scheduler_name, **kw)
        meta = pod["metadata"]
        meta["labels"].update({"controller-revision-hash": f"{self.name}-rev1", "pod-template-generation": "1"})
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": self.name, "uid": uid,
                                    "controller": True, "blockOwnerDeletion": True}]
        pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}]}]}}}
        pod["spec"]["tolerations"] = [dict(t) for t in DAEMON_TOLERATIONS]
        return pod


#: SchedulingDaemonSets' DaemonSets: three node agents of 10m / 20Mi and two larger ones, 1.53 cpu and 3.06Gi
#: per node in all, beside the init pods (nodes of 4 cpu, 32Gi).
DAEMONSETS = (DaemonSet("daemonset-0", "10m", "20Mi"), DaemonSet("daemonset-1", "10m", "20Mi"),
              DaemonSet("daemonset-2", "10m", "20Mi"), DaemonSet("daemonset-3", "500m", "1Gi"),
              DaemonSet("daemonset-4", "1", "2Gi"))


def offline_uid(name: str) -> str:
    """A stand-in for the API server's uid of a DaemonSet (offline objects)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"scheduler-perf/daemonset/{name}"))


@dataclass(frozen=True)
class Workload:
    """One of performance-config.yaml's workloads: its templates, namespaces and sizes per node scale."""

    name: str
    init: PodTemplate
    measured: PodTemplate
    sizes: dict[int, tuple[int, int, int]]  # node scale -> (nodes, init pods, measured pods)
    zones: tuple[str, ...] = ()  # labelNodePrepareStrategy's values (one at random per node when several)
    namespaces: tuple[str, str] = ("default", "default")  # (init pods', measured pods')
    wait_init: bool = True  # False: upstream's skipWaitToCompletion (the init pods never fit)
    feature_gates: str = ""  # what ours needs for the workload's fields
    priority_classes: tuple[tuple[str, int], ...] = field(default=())
    csi: CSIVolumes | None = None  # SchedulingCSIPVs' CSINodes, and a bound CSI claim per pod
    dra: DRADevices | None = None  # the DRA workloads' slices, class, and a claim (or template) per pod
    #: The measured pods are these DaemonSets' pods, one per (DaemonSet, node), DaemonSet by DaemonSet.
    daemonsets: tuple[DaemonSet, ...] = ()
    #: createPodSets: node scale -> namespaces ``<namespaces[0]>-<j>`` the init pods fill in blocks (none: all of
    #: them in ``namespaces[0]``).
    init_namespace_counts: dict[int, int] = field(default_factory=dict)
    namespace_labels: tuple[tuple[str, str], ...] = ()  # of every namespace of the workload but "default"

    def node_names(self, count: int) -> list[str]:
        return [f"node-{i:05d}" for i in range(count)]

    def nodes(self, count: int, seed: int = 1, csi_limit: int | None = None) -> list[dict[str, Any]]:
        rng = SplitMix64(seed)
        allocatable = self.csi.node_allocatable(csi_limit) if self.csi else None
        out = []
        for name in self.node_names(count):
            labels = dict(DRA_NODE_LABELS) if self.dra else {}
            if self.zones:
                labels[ZONE_KEY] = self.zones[rng.intn(len(self.zones))] if len(self.zones) > 1 else self.zones[0]
            out.append(node_object(name, labels=labels, allocatable=allocatable))
        return out

    def csinodes(self, count: int, csi_limit: int | None = None) -> list[dict[str, Any]]:
        """One CSINode per node (none without ``csi``); ``csi_limit`` overrides upstream's count."""
        return [self.csi.csinode(name, csi_limit) for name in self.node_names(count)] if self.csi else []

    def _claim(self, name: str, index: int) -> dict[str, Any]:
        if self.dra:
            return {"resource_claim": self.dra.pod_claim(index)}
        return {"claim": CSIVolumes.claim_name(name)} if self.csi else {}

    def init_namespaces(self, scale: int = 500) -> tuple[str, ...]:
        """Where the init pods go at a node scale: createPodSets' namespaces, or ``namespaces[0]``."""
        count = self.init_namespace_counts.get(scale)
        return tuple(f"{self.namespaces[0]}-{j}" for j in range(count)) if count else (self.namespaces[0],)

    def namespace_objects(self, scale: int = 500) -> list[dict[str, Any]]:
        """The workload's namespaces (but ``default``) as createNamespaces makes them, labelled."""
        names = [*self.init_namespaces(scale), self.namespaces[1], *(d.namespace for d in self.daemonsets)]
        out = []
        for name in dict.fromkeys(n for n in names if n != "default"):
            metadata: dict[str, Any] = {"name": name}
            if self.namespace_labels:
                metadata["labels"] = dict(self.namespace_labels)
            out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
        return out

    def init_pods(self, count: int, scheduler_name: str, *, namespaces: Sequence[str] = (),
                  **kw: Any) -> list[dict[str, Any]]:
        """``namespaces``: filled in blocks, the first ``count / len`` pods in the first (createPodSets);
        default: ``namespaces[0]``."""
        spread = tuple(namespaces) or (self.namespaces[0],)
        return [self.init.pod(name, spread[i * len(spread) // count], scheduler_name, **self._claim(name, i), **kw)
                for i, name in ((i, f"init-{i:06d}") for i in range(count))]

    def measured_pods(self, count: int, scheduler_name: str, *, nodes: int | None = None,
                      owners: Mapping[str, str] | None = None, **kw: Any) -> list[dict[str, Any]]:
        """With ``daemonsets``: pod ``i`` is DaemonSet ``i // nodes``'s pod for node ``i % nodes`` (``nodes``
        needed), owned by the uid ``owners`` gives its DaemonSet (default: :func:`offline_uid`)."""
        if self.daemonsets:
            if nodes is None or count > nodes * len(self.daemonsets):
                raise ValueError(f"{self.name}: {count} pods need nodes (at most {len(self.daemonsets)} per node)")
            names = self.node_names(nodes)
            out = []
            for i in range(count):
                ds = self.daemonsets[i // nodes]
                uid = (owners or {}).get(ds.name) or offline_uid(ds.name)
                out.append(ds.pod(f"pod-{i:06d}", names[i % nodes], uid, scheduler_name, **kw))
            return out
        return [self.measured.pod(name, self.namespaces[1], scheduler_name, **self._claim(name, i), **kw)
                for i, name in ((i, f"pod-{i:06d}") for i in range(count))]

    def daemonset_objects(self, scheduler_name: str, *, uids: bool = False) -> list[dict[str, Any]]:
        """The DaemonSets (``uids``: with :func:`offline_uid`, as offline objects)."""
        out = [d.object(scheduler_name) for d in self.daemonsets]
        if uids:
            for obj in out:
                obj["metadata"]["uid"] = offline_uid(obj["metadata"]["name"])
        return out

    def volume_objects(self, pods: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(PV, claim) of each pod (none without ``csi``), before their binding's statuses."""
        if not self.csi:
            return []
        keys = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]
        return [(self.csi.persistent_volume(ns, name), self.csi.claim(ns, name)) for ns, name in keys]

    def snapshot_objects(self, nodes: int, init: int, measured: int, scheduler_name: str,
                         seed: int = 1, csi_limit: int | None = None, scale: int = 500) -> list[dict[str, Any]]:
        """Every object of one run for the offline engine: the labelled namespaces (when the workload labels
        them), the DaemonSets, nodes (and CSINodes), the pods' volumes (bound), then the init and the measured
        pods, all pending in that order (priorities set as admission would)."""
        init_pods = self.init_pods(init, scheduler_name, namespaces=self.init_namespaces(scale), literal_priority=True)
        measured_pods = self.measured_pods(measured, scheduler_name, nodes=nodes, literal_priority=True)
        volumes: list[dict[str, Any]] = []
        if self.csi:
            for pv, claim in self.volume_objects(init_pods + measured_pods):
                volumes += [{**pv, "status": self.csi.pv_status()}, {**claim, "status": self.csi.claim_status()}]
        namespaces = self.namespace_objects(scale) if self.namespace_labels else []
        return (namespaces + self.daemonset_objects(scheduler_name, uids=True) + self.nodes(nodes, seed, csi_limit)
                + self.csinodes(nodes, csi_limit) + volumes + init_pods + measured_pods)


_SCHED = (INIT_NAMESPACE, MEASURED_NAMESPACE)
_HIGH = ((HIGH_PRIORITY_CLASS, HIGH_PRIORITY),)

WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("SchedulingBasic", POD_DEFAULT, POD_DEFAULT, {500: (500, 500, 1000), 5000: (5000, 1000, 1000)}),
    Workload("SchedulingPodAntiAffinity", POD_WITH_POD_ANTI_AFFINITY, POD_WITH_POD_ANTI_AFFINITY,
             {500: (500, 100, 400), 5000: (5000, 1000, 1000)}, namespaces=_SCHED),
    Workload("SchedulingNodeAffinity", POD_WITH_NODE_AFFINITY, POD_WITH_NODE_AFFINITY,
             {500: (500, 500, 1000), 5000: (5000, 5000, 1000)}, zones=("zone1",)),
    Workload("SchedulingPodAffinity", POD_WITH_POD_AFFINITY, POD_WITH_POD_AFFINITY,
             {500: (500, 500, 1000), 5000: (5000, 5000, 1000)}, zones=("zone1",), namespaces=_SCHED),
    Workload("SchedulingPreferredPodAffinity", POD_WITH_PREFERRED_POD_AFFINITY, POD_WITH_PREFERRED_POD_AFFINITY,
             {500: (500, 500, 1000), 5000: (5000, 5000, 1000)}, namespaces=_SCHED),
    # Upstream's file gives this workload the preferred-*affinity* template (a slip: it then repeats the one
    # above); here it runs the template its name says, pod-with-preferred-pod-anti-affinity.yaml.
    Workload("SchedulingPreferredPodAntiAffinity", POD_WITH_PREFERRED_POD_ANTI_AFFINITY,
             POD_WITH_PREFERRED_POD_ANTI_AFFINITY,
             {500: (500, 500, 1000), 5000: (5000, 5000, 1000)}, namespaces=_SCHED),
    Workload("TopologySpreading", POD_DEFAULT, POD_WITH_TOPOLOGY_SPREADING,
             {500: (500, 1000, 1000), 5000: (5000, 5000, 2000)}, zones=("moon-1", "moon-2", "moon-3")),
    Workload("PreferredTopologySpreading", POD_DEFAULT, POD_WITH_PREFERRED_TOPOLOGY_SPREADING,
             {500: (500, 1000, 1000), 5000: (5000, 5000, 2000)}, zones=("moon-1", "moon-2", "moon-3")),
    # Upstream comments out its 5000-node variant (too slow); 20000 / 5000 pods is what it names.
    Workload("PreemptionBasic", POD_LOW_PRIORITY, POD_HIGH_PRIORITY, {500: (500, 2000, 500), 5000: (5000, 20000, 5000)},
             feature_gates="PodPriority=true", priority_classes=_HIGH),
    Workload("Unschedulable", POD_LARGE_CPU, POD_DEFAULT, {500: (500, 200, 1000), 5000: (5000, 200, 5000)},
             wait_init=False),
)}

#: Workloads with volumes (upstream's SchedulingCSIPVs, under a name of its own: its PV handles are unique),
#: apart from :data:`WORKLOADS` (whose offline decisions ``tests/core/test_perf_workload_decisions.py`` pins).
VOLUME_WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("SchedulingCSIVolumes", POD_DEFAULT, POD_DEFAULT, {500: (500, 500, 1000), 5000: (5000, 5000, 1000)},
             csi=CSIVolumes()),
)}

#: Upstream's DRA workloads (``dra/performance-config.yaml``, their ``5000pods_500nodes`` sizes; at 5,000 nodes the
#: same pods over ten times the nodes): pods of ``pod-with-claim-template.yaml`` / ``pod-with-claim-ref.yaml``
#: (a bare pause container using the claim), init pods in ``init``, measured ones in ``test``.
POD_WITH_RESOURCE_CLAIM = PodTemplate("pod-with-claim-template.yaml", requests=False)
DRA_WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("SchedulingWithResourceClaimTemplate", POD_WITH_RESOURCE_CLAIM, POD_WITH_RESOURCE_CLAIM,
             {500: (500, 2500, 2500), 5000: (5000, 2500, 2500)}, namespaces=("init", "test"),
             dra=DRADevices(per_node=10)),
    Workload("SchedulingWithResourceClaim", POD_WITH_RESOURCE_CLAIM, POD_WITH_RESOURCE_CLAIM,
             {500: (500, 2500, 2500), 5000: (5000, 2500, 2500)}, namespaces=("init", "test"),
             dra=DRADevices(per_node=2, pods_per_claim=5)),
)}

#: Workloads whose pods carry fields 1.9 never had (``matchFields``, ``namespaceSelector``), apart from
#: :data:`WORKLOADS` too. Upstream's ns-selector workloads at 500 nodes: 10 namespaces x 4 init pods, 100
#: measured pods; at 5,000: 100 x 50, 1,000.
MODERN_FIELD_WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("SchedulingDaemonSets", POD_DEFAULT, DAEMONSETS[0].template,
             {500: (500, 500, 500 * len(DAEMONSETS)), 5000: (5000, 1000, 5000 * len(DAEMONSETS))},
             namespaces=("default", DAEMONSET_NAMESPACE), daemonsets=DAEMONSETS),
    Workload("SchedulingNamespaceSelectorAffinity", POD_AFFINITY_NS_SELECTOR, POD_AFFINITY_NS_SELECTOR,
             {500: (500, 40, 100), 5000: (5000, 5000, 1000)}, zones=("zone1",),
             namespaces=("init-ns", "measure-ns-0"), init_namespace_counts={500: 10, 5000: 100},
             namespace_labels=NS_SELECTOR_LABELS),
    Workload("SchedulingPreferredNamespaceSelectorAffinity", POD_PREFERRED_AFFINITY_NS_SELECTOR,
             POD_PREFERRED_AFFINITY_NS_SELECTOR, {500: (500, 40, 100), 5000: (5000, 5000, 1000)},
             namespaces=("init-ns", "measure-ns-0"), init_namespace_counts={500: 10, 5000: 100},
             namespace_labels=NS_SELECTOR_LABELS),
)}
