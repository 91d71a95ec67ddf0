"""What each informer event does to the scheduler cache and the queue (upstream ``factory.go``).

Pods: every non-terminal pod is watched (the 1.9 bug fixed by kubernetes#63003: pods bound by other
schedulers count against their nodes); assigned pods go to the cache, unassigned pods whose
``spec.schedulerName`` is ours go to the queue. A pod bound by the API server moves from the queue to
the cache. Nodes go to the cache unless an update only changes heartbeat fields. The lister kinds
(services, controllers, volumes, CSINodes, namespaces) replace their objects in the cache's listers.

Dynamic resource allocation (the cluster's rules; ``resource.k8s.io/v1``): DeviceClasses, ResourceSlices and
ResourceClaims go to the cluster state; waiting pods move as upstream's DynamicResources ``EventsToRegister`` has
it: a class or a slice added or updated, a claim added, deallocated or whose status changed (not one whose
update only touched its metadata, such as a finalizer), and a pod whose generated claims appear in its status.
Deletions move nothing (a claim is deallocated, an update, before it goes).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from ...cache.scheduler_cache import CacheCorrupted, CacheError, SchedulerCache
from ...core.modern_pods import is_gated
from ...dra.claims import PodClaimError, pod_claims
from ...errors import ObjectError
from ...features import Rules
from ...model.dra import DeviceClass, ResourceClaim, ResourceSlice
from ...model.fields import resource_version
from ...model.namespace import Namespace
from ...model.node import Node
from ...model.pod import Pod
from ...model.volumes import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from ...model.workloads import LabelSelectedController, ReplicationController, Service
from ...queue import SchedulingQueue

log = logging.getLogger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")


def _parse(parser: Callable[[dict[str, Any]], Any], raw: dict[str, Any], what: str) -> Any:
    try:
        return parser(raw)
    except ObjectError as e:
        log.warning("ignoring %s the API server sent: %s", what, e)
        return None


class PodHandler:
    """Cluster rules: a pod of ours with scheduling gates is kept out of the queue (``on_gated`` is told
    the first time it is seen gated) and enters it when an update removes its last gate."""

    def __init__(self, cache: SchedulerCache, queue: SchedulingQueue, scheduler_name: str,
                 on_corrupted: Callable[[str], None], rules: Rules = Rules.CLUSTER,
                 on_gated: Callable[[Pod], None] | None = None,
                 pre_enqueue: Callable[[Pod], str | None] | None = None) -> None:
        self.parse_pod = functools.partial(Pod, rules=rules)
        self.rules = rules
        self.cache = cache
        self.queue = queue
        self.scheduler_name = scheduler_name
        self.on_corrupted = on_corrupted
        self.on_gated = on_gated
        self._gated: set[str] = set()  # keys of the gated pods already reported to on_gated
        # Upstream's DynamicResources PreEnqueue: a pod whose ResourceClaims cannot be found yet (not created, being
        # deleted, not the pod's) stays out of the queue, without an event, until a claim or the pod changes.
        self.pre_enqueue = pre_enqueue
        self._held: dict[str, Pod] = {}
        self._held_lock = threading.Lock()  # the pod watch and the claim watch both look at the held pods
        # The last pod parsed per namespace/name (its ``raw`` is the object it was parsed from).
        self._parsed: dict[str, Pod] = {}

    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name == self.scheduler_name and pod.phase not in TERMINAL_PHASES

    def pod(self, raw: dict[str, Any]) -> Pod | None:
        """The pod of ``raw``, parsed once per object the informer delivered (None, logged, if it cannot be
        parsed): an update's old object, and the stored object a lookup reads, are the very dicts parsed
        before."""
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        key = f"{meta.get('namespace')}/{meta.get('name')}" if isinstance(meta, dict) else ""
        last = self._parsed.get(key)
        if last is not None and last.raw is raw:
            return last
        pod = _parse(self.parse_pod, raw, "pod")
        if pod is not None and key:
            self._parsed[key] = pod
        return pod

    def on_add(self, raw: dict[str, Any]) -> None:
        pod = self.pod(raw)
        if pod is None:
            return
        if pod.node_name:
            self._cache(self.cache.add_pod, pod)
            self.queue.assigned_pod_added(pod)
        elif self.responsible_for(pod):
            if is_gated(pod):
                self._keep_gated(pod)
                return
            if self.hold_back(pod):
                return
            self.queue.add(pod)

    def on_update(self, old_raw: dict[str, Any], new_raw: dict[str, Any]) -> None:
        old, new = self.pod(old_raw), self.pod(new_raw)
        if old is None or new is None:
            return
        if old.uid and new.uid and old.uid != new.uid:
            # A delete and a re-create under the same name, merged into one update by a re-list (after a
            # 410): the old pod is gone, the new one is another pod (upstream updatePodInCache does this).
            self.on_delete(old_raw)
            self.on_add(new_raw)
            return
        if old.node_name and new.node_name:
            self._cache(self.cache.update_pod, old, new)
            if self.rules is Rules.CLUSTER and scaled_down(old, new):
                # An in-place resize freed room on the node (upstream's UpdatePodScaleDown, which NodeResourcesFit
                # registers): a cluster event like an assigned pod's deletion, so every unschedulable pod moves.
                log.info("requests scaled down pod=%s node=%s cpu=%dm->%dm memory=%d->%d", new.ref, new.node_name,
                         old.request.milli_cpu, new.request.milli_cpu, old.request.memory, new.request.memory)
                self.queue.move_all_to_active()
            else:
                self.queue.assigned_pod_updated(new)
        elif new.node_name:  # bound: leaves the queue, enters the cache (confirming an assumed pod)
            self.queue.delete(old)
            self._cache(self.cache.add_pod, new)
            self.queue.assigned_pod_added(new)
        elif self.responsible_for(new):
            if (self.pre_enqueue is not None and new.resource_claims and self.cache.is_assumed(new.key)
                    and not (new.deletion_timestamp and not old.deletion_timestamp)):
                # 1.36's updatePodInSchedulingQueue: an assumed pod's update is not queued (its nomination, written
                # before PreBind, would have it scheduled a second time while its claims are being written). Only
                # for pods with claims: the others keep 1.9's skipPodUpdate.
                log.debug("Skipping assumed pod %s update", new.ref)
                return
            if is_gated(new):
                self._keep_gated(new)
                return
            was_held = new.key in self._held
            if self.hold_back(new):
                return
            if new.key in self._gated or is_gated(old):  # its last gate was removed: now it is queued
                self._gated.discard(new.key)
                log.info("gates removed pod=%s queued=true", new.ref)
                self.queue.add(new)
                return
            if was_held:
                self.queue.add(new)
                return
            if self.pre_enqueue is not None and old.resource_claim_statuses != new.resource_claim_statuses:
                # UpdatePodGeneratedResourceClaim: the claims made from its templates are named now; it moves.
                log.info("generated claims recorded pod=%s", new.ref)
                self.queue.delete(old)
                self.queue.add(new)
                return
            if self.skip_pod_update(new):
                log.debug("Skipping pod %s update", new.ref)
                return
            self.queue.update(old, new)

    def on_delete(self, raw: dict[str, Any]) -> None:
        pod = self.pod(raw)
        if pod is None:
            return
        self._parsed.pop(f"{pod.namespace}/{pod.name}", None)
        if pod.node_name:
            self._cache(self.cache.remove_pod, pod)
            self.queue.move_all_to_active()
        else:
            self._gated.discard(pod.key)
            with self._held_lock:
                self._held.pop(pod.key, None)
            self.queue.delete(pod)

    def hold_back(self, pod: Pod) -> bool:
        """PreEnqueue for the pod's ResourceClaims: True (and out of the queue) while they cannot be used. Also asked
        when the pod is popped (upstream runs PreEnqueue whenever a pod is about to become active)."""
        if self.pre_enqueue is None or not pod.resource_claims:
            with self._held_lock:
                self._held.pop(pod.key, None)
            return False
        with self._held_lock:
            reason = self.pre_enqueue(pod)
            if reason is None:
                if self._held.pop(pod.key, None) is not None:
                    log.info("claims found pod=%s queued=true", pod.ref)
                return False
            self.queue.delete(pod)
            if pod.key not in self._held:
                log.info("pod=%s waits for its claims: %s", pod.ref, reason)
            self._held[pod.key] = pod
            return True

    def claims_changed(self) -> None:
        """A ResourceClaim was added, updated or deleted: the pods held back for their claims are looked at again."""
        if self.pre_enqueue is None:
            return
        with self._held_lock:
            for key, pod in list(self._held.items()):
                if self.pre_enqueue(pod) is None:
                    del self._held[key]
                    log.info("claims found pod=%s queued=true", pod.ref)
                    self.queue.add(pod)

    def _keep_gated(self, pod: Pod) -> None:
        """Out of the queue (upstream's SchedulingGates PreEnqueue); reported once, not on every resync."""
        self.queue.delete(pod)
        if pod.key in self._gated:
            return
        self._gated.add(pod.key)
        log.info("gated pod=%s gates=%s", pod.ref, ",".join(pod.scheduling_gates))
        if self.on_gated is not None:
            self.on_gated(pod)

    def skip_pod_update(self, pod: Pod) -> bool:
        """``skipPodUpdate``: the pod is assumed and differs from the assumed copy only in
        resourceVersion, spec.nodeName and annotations."""
        assumed = self.cache.assumed_pod(pod.key)
        if assumed is None:
            return False
        return _without_volatile(assumed.raw) == _without_volatile(pod.raw)

    def _cache(self, fn: Callable[..., None], *pods: Pod) -> None:
        try:
            fn(*pods)
        except CacheCorrupted as e:
            self.on_corrupted(str(e))
        except CacheError as e:
            log.error("scheduler cache %s failed: %s", fn.__name__, e)


def scaled_down(old: Pod, new: Pod) -> bool:
    """``extractPodScaleDown``: some resource the pod holds on its node is lower than before (an in-place resize
    the kubelet carried out, or found infeasible)."""
    a, b = old.request, new.request
    if (b.milli_cpu < a.milli_cpu or b.memory < a.memory or b.ephemeral_storage < a.ephemeral_storage
            or b.nvidia_gpu < a.nvidia_gpu):
        return True
    return any(b.scalar.get(name, 0) < v for name, v in a.scalar.items())


def _labels(raw: Any) -> Any:
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    return (meta.get("labels") if isinstance(meta, dict) else None) or {}


def _without_volatile(raw: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k not in ("resourceVersion", "annotations")}
    spec = {k: v for k, v in (raw.get("spec") or {}).items() if k != "nodeName"}
    return {**raw, "metadata": meta, "spec": spec}


class NodeHandler:
    def __init__(self, cache: SchedulerCache, queue: SchedulingQueue) -> None:
        self.cache = cache
        self.queue = queue
        self.heartbeats_skipped = 0

    def on_add(self, raw: dict[str, Any]) -> None:
        node = _parse(Node, raw, "node")
        if node is not None:
            self.cache.add_node(raw, node)
            self.queue.move_all_to_active()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not self.cache.node_changed(new):
            self.heartbeats_skipped += 1
            return
        self.on_add(new)

    def on_delete(self, raw: dict[str, Any]) -> None:
        self.cache.remove_node((raw.get("metadata") or {}).get("name") or "")


class ListerHandler:
    """Services, ReplicationControllers, ReplicaSets, StatefulSets, PVs, PVCs, StorageClasses, CSINodes,
    Namespaces."""

    # kind -> (parse, events that may make unschedulable pods schedulable)
    KINDS: dict[str, tuple[Callable[[dict[str, Any]], Any], bool]] = {
        "Service": (Service.from_dict, True),
        "ReplicationController": (ReplicationController.from_dict, False),
        "ReplicaSet": (lambda raw: LabelSelectedController.from_dict("ReplicaSet", raw), False),
        "StatefulSet": (lambda raw: LabelSelectedController.from_dict("StatefulSet", raw), False),
        "PersistentVolume": (PersistentVolume.from_dict, False),
        "PersistentVolumeClaim": (PersistentVolumeClaim.from_dict, True),
        "StorageClass": (StorageClass.from_dict, False),
        # A new CSINode or a raised attach limit may make room (upstream's queue moves on CSINode add/update).
        "CSINode": (CSINode.from_dict, True),
        # What pod (anti-)affinity namespaceSelectors select: a namespace added, relabelled or deleted
        # re-evaluates the pods waiting (an update that keeps the labels moves nothing).
        "Namespace": (Namespace.from_dict, True),
    }

    def __init__(self, cache: SchedulerCache, queue: SchedulingQueue, kind: str,
                 on_change: Callable[[], None] | None = None) -> None:
        self.cache = cache
        self.queue = queue
        self.kind = kind
        self.parse, self.moves_pods = self.KINDS[kind]
        self.on_change = on_change  # the volume binder's waiter (PVs and claims)

    def on_add(self, raw: dict[str, Any], *, moves: bool = True) -> None:
        obj = _parse(self.parse, raw, self.kind)
        if obj is None:
            return
        cluster = self.cache.cluster
        with self.cache.lock:
            if self.kind == "Namespace":
                cluster.put_namespace(obj.name, obj.labels)
            elif self.kind == "PersistentVolume":
                cluster.add_persistent_volume(obj)
            elif self.kind == "PersistentVolumeClaim":
                cluster.add_persistent_volume_claim(obj)
            elif self.kind == "StorageClass":
                cluster.add_storage_class(obj)
            elif self.kind == "CSINode":
                cluster.put_csi_node(obj)
            else:
                cluster.put_namespaced(self.kind, obj)
        if self.on_change is not None:  # the cluster's rules: a new or changed PV may fit a late-bound claim
            self.on_change()
            self.queue.move_all_to_active()
        elif self.moves_pods and moves:
            self.queue.move_all_to_active()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # A namespace whose labels change re-evaluates the pods waiting on it; its other changes decide nothing.
        self.on_add(new, moves=self.kind != "Namespace" or _labels(old) != _labels(new))

    def on_delete(self, raw: dict[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        name, namespace = meta.get("name") or "", meta.get("namespace") or ""
        cluster = self.cache.cluster
        with self.cache.lock:
            if self.kind == "Namespace":
                cluster.remove_namespace(name)
            elif self.kind == "PersistentVolume":
                cluster.remove_persistent_volume(name)
            elif self.kind == "PersistentVolumeClaim":
                cluster.remove_persistent_volume_claim(namespace, name)
            elif self.kind == "StorageClass":
                cluster.remove_storage_class(name)
            elif self.kind == "CSINode":
                cluster.remove_csi_node(name)
            else:
                cluster.remove_namespaced(self.kind, namespace, name)
        if self.on_change is not None:  # the cluster's rules: a new or changed PV may fit a late-bound claim
            self.on_change()
            self.queue.move_all_to_active()
        elif self.moves_pods:
            self.queue.move_all_to_active()


def claims_pre_enqueue(cache: SchedulerCache) -> Callable[[Pod], str | None]:
    """Upstream's DynamicResources PreEnqueue on ``cache``: why the pod's ResourceClaims cannot be used yet (not
    created, not found, being deleted, not the pod's), in upstream's words, or None."""
    def check(pod: Pod) -> str | None:
        if any(c.resource_claim_name is None and c.resource_claim_template_name is None for c in pod.resource_claims):
            return None  # 1.26's classic form: the cycle refuses it, with its message
        with cache.lock:
            try:
                pod_claims(cache.cluster, pod)
            except PodClaimError as e:
                return e.message
        return None
    return check


def claim_change_moves_pods(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """Whether a claim event may make a waiting pod schedulable (upstream's ``isSchedulableAfterClaimChange``, for
    any pod): the claim is new, it was deallocated, or its status changed (an update of metadata alone, such as
    a finalizer added, changes nothing a pod waits for)."""
    if old is None:
        return True
    before, after = old.get("status") or {}, new.get("status") or {}
    if before.get("allocation") and not after.get("allocation"):
        return True
    return before != after


class DraHandler:
    """DeviceClasses, ResourceSlices and ResourceClaims (``resource.k8s.io/v1``) into the cluster state."""

    KINDS: dict[str, Callable[[dict[str, Any]], Any]] = {
        "DeviceClass": DeviceClass.from_dict,
        "ResourceSlice": ResourceSlice.from_dict,
        "ResourceClaim": ResourceClaim.from_dict,
    }

    def __init__(self, cache: SchedulerCache, queue: SchedulingQueue, kind: str,
                 on_claim: Callable[[], None] | None = None) -> None:
        self.cache = cache
        self.queue = queue
        self.kind = kind
        self.parse = self.KINDS[kind]
        self.on_claim = on_claim  # a claim changed: pods held back for their claims are looked at again

    def on_add(self, raw: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        obj = _parse(self.parse, raw, self.kind)
        if obj is None:
            return
        cluster = self.cache.cluster
        with self.cache.lock:
            if self.kind == "DeviceClass":
                cluster.add_device_class(obj)
            elif self.kind == "ResourceSlice":
                cluster.add_resource_slice(obj)
            else:
                current = cluster.api_resource_claim(obj.namespace, obj.name)
                if current is not None and resource_version(raw) < resource_version(current.raw):
                    # Older than the reply to this scheduler's own write, already in the cache (claimbinding).
                    return
                cluster.add_resource_claim(obj)
        if self.kind != "ResourceClaim":
            self.queue.move_all_to_active()
            return
        if self.on_claim is not None:
            self.on_claim()
        if claim_change_moves_pods(old, raw):
            self.queue.move_all_to_active()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.on_add(new, old)

    def on_delete(self, raw: dict[str, Any]) -> None:
        meta = raw.get("metadata") or {}
        name, namespace = meta.get("name") or "", meta.get("namespace") or ""
        cluster = self.cache.cluster
        with self.cache.lock:
            if self.kind == "DeviceClass":
                cluster.remove_device_class(name)
            elif self.kind == "ResourceSlice":
                cluster.remove_resource_slice(name)
            else:
                cluster.remove_resource_claim(namespace, name)
        if self.kind == "ResourceClaim" and self.on_claim is not None:
            self.on_claim()
