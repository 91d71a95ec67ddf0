"""ClusterState: the scheduler cache (NodeInfo per node, assigned + assumed pods) and the listers.

The daemon feeds it from watches, the offline commands from manifests; both schedule through the same
engine over it. Lister methods keep upstream 1.9's selection rules and error texts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from ..features import NEWEST_LINE, KubernetesLine
from ..model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from ..model.labels import SelectorError
from ..model.node import Node
from ..model.pod import Pod, pod_claim_names
from ..model.topology import NO_LABELS, required_anti_affinity_error
from ..model.volumes import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from ..model.workloads import LabelSelectedController, ReplicationController, Service
from .node_info import NodeInfo


class ListerError(LookupError):
    """A lister lookup failed (not found, or upstream's lister error)."""


#: Pool version bumps logged before the verdicts kept across pods are dropped (and the log with them).
DRA_POOL_LOG_LIMIT = 1 << 16


@dataclass(frozen=True)
class AllocatedState:
    """``AllocatedState``: devices held for one claim each (``dedicated``), devices with shares (``shared``), and
    the capacity the shares consume per device (``consumed``)."""

    dedicated: frozenset[tuple[str, str, str]] = frozenset()
    shared: frozenset[tuple[str, str, str]] = frozenset()
    consumed: Mapping[tuple[str, str, str], Mapping[str, Fraction]] = field(default_factory=dict)


class ClusterObserver(Protocol):
    """Derived views (e.g. columnar node arrays) that must stay in step with the cache."""

    def pod_added(self, pod: Pod) -> None: ...

    def pod_removed(self, pod: Pod) -> None: ...

    def nodes_changed(self) -> None: ...


class ClusterState:
    def __init__(self) -> None:
        self.node_infos: dict[str, NodeInfo] = {}
        self.pods: dict[str, Pod] = {}
        self.services: dict[str, list[Service]] = defaultdict(list)
        self.replication_controllers: dict[str, list[ReplicationController]] = defaultdict(list)
        self.replica_sets: dict[str, list[LabelSelectedController]] = defaultdict(list)
        self.stateful_sets: dict[str, list[LabelSelectedController]] = defaultdict(list)
        self.persistent_volumes: dict[str, PersistentVolume] = {}
        self.persistent_volume_claims: dict[tuple[str, str], PersistentVolumeClaim] = {}
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        # Namespace objects: name -> labels (what pod (anti-)affinity terms' namespaceSelector selects on).
        self.namespaces: dict[str, dict[str, str]] = {}
        # Bumped by every change of a PV, claim, StorageClass or CSINode (assumptions included): what is
        # derived from them may be cached until it changes.
        self.volume_generation = 0
        # Bumped by every change of a Service, RC, ReplicaSet or StatefulSet: the selectors matching a set of
        # labels may be cached until it changes.
        self.workload_generation = 0
        # What makes the predicates' metadata unavailable whatever the incoming pod (``getMatchingAntiAffinityTerms``
        # failing): NodeInfos without a node (pods on a node the cache does not have), and cached pods with a
        # required anti-affinity term that cannot be evaluated. Kept as they change, so that the check over
        # every NodeInfo runs only when one of them is there.
        self._nodeless: set[str] = set()
        self._unusable_anti_affinity: set[str] = set()  # pod keys
        self._required_anti_affinity: set[str] = set()  # cached pods with a required anti-affinity term (keys)
        # How many cached pods use each claim (upstream's NodeInfo.PVCRefCounts, summed over the nodes).
        self.claim_users: Counter[tuple[str, str]] = Counter()
        # The volume binder's assumptions (upstream's PV/PVC assume caches): a PV pre-bound or a claim
        # annotated for the chosen node, in memory, until the API object catches up or it is restored.
        self.assumed_volumes: dict[str, PersistentVolume] = {}
        self.assumed_claims: dict[tuple[str, str], PersistentVolumeClaim] = {}
        self._nodes: dict[str, Node] = {}
        self._node_list: list[Node] | None = None
        self.observers: list[ClusterObserver] = []
        # The cluster's Kubernetes line (its API server's /version; offline: the snapshot's server, else the
        # newest): which upstream release's wording the cluster's rules use where releases differ.
        self.kubernetes_line: KubernetesLine = NEWEST_LINE
        # Dynamic resource allocation (resource.k8s.io/v1): classes and slices by name, claims and templates
        # by (namespace, name); the claims this scheduler allocated in memory and not yet written (assumed);
        # ``dra_generation`` bumped on every change, so that what is derived (the allocated devices) may be
        # kept until it changes.
        self.device_classes: dict[str, DeviceClass] = {}
        self.resource_slices: dict[str, ResourceSlice] = {}
        self.resource_claims: dict[tuple[str, str], ResourceClaim] = {}
        self.resource_claim_templates: dict[tuple[str, str], ResourceClaimTemplate] = {}
        self.assumed_resource_claims: dict[tuple[str, str], ResourceClaim] = {}
        self.dra_generation = 0
        # What DRA derives from the slices alone (each node's pools), kept until a slice changes; opaque here.
        self.dra_slice_cache: dict[str, Any] = {}
        # Each pool's version, bumped whenever a claim (as decisions see it) gains or loses an allocation result
        # in it: a node's devices in use change only with the versions of its pools. Never reset.
        self.dra_pool_versions: dict[tuple[str, str], int] = {}
        # Each bump of a pool's version, in order, since dra_verdicts was last cleared (it is cleared with them).
        self.dra_pool_log: list[tuple[str, str]] = []
        # The allocator's verdicts per node (``policy_scheduler.dra.verdicts``), valid while the slices and the
        # classes are unchanged (then cleared) and the node's pools keep their versions; opaque here.
        self.dra_verdicts: dict[str, Any] = {}
        self.dra_keep_verdicts = True  # False: every node decided afresh for every pod (the tests' reference)
        self._allocated_state: tuple[int, AllocatedState] = (-1, AllocatedState())
        # What allocated_state gathers, counted claim by claim (device -> results; device -> capacity -> (shares
        # consuming it, their sum)).
        self._dra_dedicated: dict[tuple[str, str, str], int] = {}
        self._dra_shared: dict[tuple[str, str, str], int] = {}
        self._dra_consumed: dict[tuple[str, str, str], dict[str, tuple[int, Fraction]]] = {}
        self._slice_list: list[ResourceSlice] | None = None

    # -- nodes -----------------------------------------------------------------------------------
    def add_node(self, node: Node) -> None:
        self._nodes[node.name] = node
        info = self.node_infos.get(node.name)
        if info is None:
            self.node_infos[node.name] = NodeInfo(node)
        else:
            info.set_node(node)
        self._node_list = None
        self._nodeless.discard(node.name)
        for observer in self.observers:
            observer.nodes_changed()

    update_node = add_node

    def remove_node(self, name: str) -> None:
        self._nodes.pop(name, None)
        info = self.node_infos.get(name)
        if info is not None:
            info.node = None
            if info.pods:
                self._nodeless.add(name)
            else:
                del self.node_infos[name]
        self._node_list = None
        for observer in self.observers:
            observer.nodes_changed()

    @property
    def may_fail_anti_affinity_terms(self) -> bool:
        """Whether a NodeInfo lacks its node or a cached pod has a required anti-affinity term that cannot be
        evaluated: only then can the metadata's walk over every NodeInfo find a failure."""
        return bool(self._nodeless or self._unusable_anti_affinity)

    @property
    def has_required_anti_affinity(self) -> bool:
        """Whether a cached pod has a required anti-affinity term (else no term can match an incoming pod)."""
        return bool(self._required_anti_affinity)

    def node_list(self) -> list[Node]:
        """``NodeLister.List()``: every node, in name order (upstream's order is unspecified)."""
        if self._node_list is None:
            self._node_list = [self._nodes[n] for n in sorted(self._nodes)]
        return self._node_list

    def get_node(self, name: str) -> Node:
        node = self._nodes.get(name)
        if node is None:
            raise ListerError(f'node "{name}" not found')
        return node

    # -- pods ------------------------------------------------------------------------------------
    def add_pod(self, pod: Pod) -> None:
        """Account a pod bound (or assumed) to ``pod.node_name``."""
        if not pod.node_name:
            raise ValueError(f"pod {pod.ref} has no node name")
        if pod.key in self.pods:
            raise ValueError(f"pod {pod.ref} is already in the cache")
        self.pods[pod.key] = pod
        for claim in pod_claim_names(pod):
            self.claim_users[(pod.namespace, claim)] += 1
        info = self.node_infos.get(pod.node_name)
        if info is None:
            info = self.node_infos[pod.node_name] = NodeInfo()
            self._nodeless.add(pod.node_name)
        info.add_pod(pod)
        if pod.has_pod_affinity_constraints:
            if required_anti_affinity_error(pod) is not None:
                self._unusable_anti_affinity.add(pod.key)
            anti_affinity = pod.affinity.pod_anti_affinity if pod.affinity is not None else None
            if anti_affinity is not None and anti_affinity.required:
                self._required_anti_affinity.add(pod.key)
        for observer in self.observers:
            observer.pod_added(pod)

    def remove_pod(self, pod: Pod) -> None:
        cached = self.pods.pop(pod.key)
        for claim in pod_claim_names(cached):
            key = (cached.namespace, claim)
            self.claim_users[key] -= 1
            if not self.claim_users[key]:
                del self.claim_users[key]
        info = self.node_infos[cached.node_name]
        info.remove_pod(cached)
        if info.node is None and not info.pods:
            del self.node_infos[cached.node_name]
            self._nodeless.discard(cached.node_name)
        self._unusable_anti_affinity.discard(cached.key)
        self._required_anti_affinity.discard(cached.key)
        for observer in self.observers:
            observer.pod_removed(cached)

    def assume(self, pod: Pod, node_name: str) -> Pod:
        """Assume ``pod`` onto ``node_name``; returns the bound copy that is now cached."""
        bound = pod.with_node_name(node_name)
        self.add_pod(bound)
        return bound

    def list_pods(self) -> Iterable[Pod]:
        """All assigned and assumed pods, in the order they entered the cache."""
        return self.pods.values()

    # -- workload listers ------------------------------------------------------------------------
    def add_service(self, svc: Service) -> None:
        self.workload_generation += 1
        self.services[svc.namespace].append(svc)

    def add_replication_controller(self, rc: ReplicationController) -> None:
        self.workload_generation += 1
        self.replication_controllers[rc.namespace].append(rc)

    def add_replica_set(self, rs: LabelSelectedController) -> None:
        self.workload_generation += 1
        self.replica_sets[rs.namespace].append(rs)

    def add_stateful_set(self, ss: LabelSelectedController) -> None:
        self.workload_generation += 1
        self.stateful_sets[ss.namespace].append(ss)

    def _namespaced(self, kind: str) -> dict[str, list]:
        return {
            "Service": self.services, "ReplicationController": self.replication_controllers,
            "ReplicaSet": self.replica_sets, "StatefulSet": self.stateful_sets,
        }[kind]

    def put_namespaced(self, kind: str, obj: Service | ReplicationController | LabelSelectedController) -> None:
        """Add or replace (same namespace and name, keeping its place) a Service, RC, ReplicaSet or StatefulSet."""
        self.workload_generation += 1
        bucket = self._namespaced(kind)[obj.namespace]
        for i, existing in enumerate(bucket):
            if existing.name == obj.name:
                bucket[i] = obj
                return
        bucket.append(obj)

    def remove_namespaced(self, kind: str, namespace: str, name: str) -> None:
        self.workload_generation += 1
        bucket = self._namespaced(kind).get(namespace)
        if bucket:
            bucket[:] = [o for o in bucket if o.name != name]

    def get_pod_services(self, pod: Pod) -> list[Service]:
        """Services in the pod's namespace with a non-nil selector matching the pod's labels."""
        out = []
        for svc in self.services.get(pod.namespace, ()):
            if svc.selector is None:
                continue
            if all(pod.labels.get(k) == v for k, v in svc.selector.items()):
                out.append(svc)
        return out

    def get_pod_controllers(self, pod: Pod) -> list[ReplicationController]:
        if not pod.labels:
            raise ListerError(f"no controllers found for pod {pod.name} because it has no labels")
        out = []
        for rc in self.replication_controllers.get(pod.namespace, ()):
            if not rc.selector:
                continue
            if all(pod.labels.get(k) == v for k, v in rc.selector.items()):
                out.append(rc)
        if not out:
            raise ListerError(f"could not find controller for pod {pod.name} in namespace {pod.namespace} with labels: {pod.labels}")
        return out

    def _label_selected(self, pod: Pod, items: dict[str, list[LabelSelectedController]], what: str) -> list:
        if not pod.labels:
            raise ListerError(f"no {what} found for pod {pod.name} because it has no labels")
        out = []
        for c in items.get(pod.namespace, ()):
            try:
                selector = c.selector.get()
            except SelectorError as e:
                raise ListerError(f"invalid selector: {e}") from None
            if selector.empty or not selector.matches(pod.labels):
                continue
            out.append(c)
        if not out:
            raise ListerError(f"could not find {what} for pod {pod.name} in namespace {pod.namespace} with labels: {pod.labels}")
        return out

    def get_pod_replica_sets(self, pod: Pod) -> list[LabelSelectedController]:
        return self._label_selected(pod, self.replica_sets, "ReplicaSet")

    def get_pod_stateful_sets(self, pod: Pod) -> list[LabelSelectedController]:
        return self._label_selected(pod, self.stateful_sets, "StatefulSet")

    # -- volume listers ------------------------------------------------------------------------
    def add_persistent_volume(self, pv: PersistentVolume) -> None:
        """Add or update the API object; a newer one than an assumed copy replaces the assumption."""
        self.volume_generation += 1
        self.persistent_volumes[pv.name] = pv
        _drop_older_assumption(self.assumed_volumes, pv.name, pv)

    def add_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> None:
        self.volume_generation += 1
        self.persistent_volume_claims[pvc.key] = pvc
        _drop_older_assumption(self.assumed_claims, pvc.key, pvc)

    def assume_persistent_volume(self, pv: PersistentVolume) -> None:
        """``pvCache.Assume``: decisions see ``pv`` until the API object is newer or it is restored."""
        self.volume_generation += 1
        _assume(self.assumed_volumes, self.persistent_volumes, pv.name, pv,
                f'persistentvolume "{pv.name}"', f'PersistentVolume "{pv.name}"')

    def assume_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> None:
        self.volume_generation += 1
        _assume(self.assumed_claims, self.persistent_volume_claims, pvc.key, pvc,
                f'persistentvolumeclaim "{pvc.name}"', f'PersistentVolumeClaim "{pvc.namespace}/{pvc.name}"')

    def restore_persistent_volume(self, name: str) -> None:
        """``pvCache.Restore``: drop the assumption; decisions see the API object again."""
        self.volume_generation += 1
        self.assumed_volumes.pop(name, None)

    def restore_persistent_volume_claim(self, namespace: str, name: str) -> None:
        self.volume_generation += 1
        self.assumed_claims.pop((namespace, name), None)

    def list_persistent_volumes(self) -> list[PersistentVolume]:
        """Every PV as decisions see it (assumed copies over API objects), in name order."""
        return [self.assumed_volumes.get(n) or self.persistent_volumes[n] for n in sorted(self.persistent_volumes)]

    def api_pv(self, name: str) -> PersistentVolume | None:
        """The PV as the API server last reported it (never an assumed copy)."""
        return self.persistent_volumes.get(name)

    def api_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.persistent_volume_claims.get((namespace, name))

    def add_storage_class(self, sc: StorageClass) -> None:
        self.volume_generation += 1
        self.storage_classes[sc.name] = sc

    def remove_persistent_volume(self, name: str) -> None:
        self.volume_generation += 1
        self.persistent_volumes.pop(name, None)
        self.assumed_volumes.pop(name, None)

    def remove_persistent_volume_claim(self, namespace: str, name: str) -> None:
        self.volume_generation += 1
        self.persistent_volume_claims.pop((namespace, name), None)
        self.assumed_claims.pop((namespace, name), None)

    def remove_storage_class(self, name: str) -> None:
        self.volume_generation += 1
        self.storage_classes.pop(name, None)

    def get_pv(self, name: str) -> PersistentVolume:
        pv = self.assumed_volumes.get(name) or self.persistent_volumes.get(name)
        if pv is None:
            raise ListerError(f'persistentvolume "{name}" not found')
        return pv

    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim:
        pvc = self.assumed_claims.get((namespace, name)) or self.persistent_volume_claims.get((namespace, name))
        if pvc is None:
            raise ListerError(f'persistentvolumeclaim "{name}" not found')
        return pvc

    def put_csi_node(self, csi_node: CSINode) -> None:
        self.volume_generation += 1
        self.csi_nodes[csi_node.name] = csi_node

    def remove_csi_node(self, name: str) -> None:
        self.volume_generation += 1
        self.csi_nodes.pop(name, None)

    def get_csi_node(self, name: str) -> CSINode | None:
        """The node's CSINode, or None (a node whose kubelet registered no CSI driver has none)."""
        return self.csi_nodes.get(name)

    # -- namespaces ------------------------------------------------------------------------------
    def put_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """Add or replace a Namespace object (its labels)."""
        self.namespaces[name] = dict(labels)

    def remove_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        """``GetNamespaceLabelsSnapshot``: the namespace's labels; none when it has no Namespace object."""
        return self.namespaces.get(name, NO_LABELS)

    # -- dynamic resource allocation ---------------------------------------------------------------
    def _dra_changed(self) -> None:
        self.dra_generation += 1

    def _claim_changing(self, key: tuple[str, str]) -> ResourceClaim | None:
        """Before a change to the claim of ``key``: the claim as decisions see it (see :meth:`_claim_changed`)."""
        self._dra_changed()
        return self.assumed_resource_claims.get(key) or self.resource_claims.get(key)

    def _claim_changed(self, key: tuple[str, str], before: ResourceClaim | None) -> None:
        """After the change: every pool the claim's results were in, or are in now, gets a new version."""
        after = self.assumed_resource_claims.get(key) or self.resource_claims.get(key)
        if after is before:
            return
        if before is not None:
            self._account_claim(before, -1)
        if after is not None:
            self._account_claim(after, 1)
        versions = self.dra_pool_versions
        for claim in (before, after):
            if claim is not None:
                for r in claim.results:
                    pool = (r.driver, r.pool)
                    versions[pool] = versions.get(pool, 0) + 1
                    self.dra_pool_log.append(pool)
        if len(self.dra_pool_log) > DRA_POOL_LOG_LIMIT:  # what reads the log is kept with the verdicts: both go
            self.dra_pool_log.clear()
            self.dra_verdicts.clear()

    def add_device_class(self, device_class: DeviceClass) -> None:
        """Add or replace a DeviceClass."""
        self._dra_changed()
        self.device_classes[device_class.name] = device_class
        self.dra_verdicts.clear()
        self.dra_pool_log.clear()

    def remove_device_class(self, name: str) -> None:
        self._dra_changed()
        self.device_classes.pop(name, None)
        self.dra_verdicts.clear()
        self.dra_pool_log.clear()

    def add_resource_slice(self, resource_slice: ResourceSlice) -> None:
        """Add or replace a ResourceSlice."""
        self._dra_changed()
        self.resource_slices[resource_slice.name] = resource_slice
        self._slice_list = None
        self.dra_slice_cache.clear()
        self.dra_verdicts.clear()
        self.dra_pool_log.clear()

    def remove_resource_slice(self, name: str) -> None:
        self._dra_changed()
        self.resource_slices.pop(name, None)
        self._slice_list = None
        self.dra_slice_cache.clear()
        self.dra_verdicts.clear()
        self.dra_pool_log.clear()

    def slice_list(self) -> list[ResourceSlice]:
        """Every ResourceSlice, in name order."""
        if self._slice_list is None:
            self._slice_list = [self.resource_slices[n] for n in sorted(self.resource_slices)]
        return self._slice_list

    def add_resource_claim(self, claim: ResourceClaim) -> None:
        """Add or replace the API object; once it carries an allocation, an assumed copy of it is dropped
        (the scheduler's write has arrived, or someone else's: either way the API object now says)."""
        before = self._claim_changing(claim.key)
        self.resource_claims[claim.key] = claim
        if claim.allocated or claim.deleting:
            self.assumed_resource_claims.pop(claim.key, None)
        self._claim_changed(claim.key, before)

    def remove_resource_claim(self, namespace: str, name: str) -> None:
        before = self._claim_changing((namespace, name))
        self.resource_claims.pop((namespace, name), None)
        self.assumed_resource_claims.pop((namespace, name), None)
        self._claim_changed((namespace, name), before)

    def add_resource_claim_template(self, template: ResourceClaimTemplate) -> None:
        self._dra_changed()
        self.resource_claim_templates[template.key] = template

    def remove_resource_claim_template(self, namespace: str, name: str) -> None:
        self._dra_changed()
        self.resource_claim_templates.pop((namespace, name), None)

    def assume_resource_claim(self, claim: ResourceClaim) -> None:
        """Decisions see ``claim`` (allocated and reserved in memory) until the API object carries an
        allocation, it is deleted, or the assumption is restored."""
        before = self._claim_changing(claim.key)
        self.assumed_resource_claims[claim.key] = claim
        self._claim_changed(claim.key, before)

    def restore_resource_claim(self, namespace: str, name: str) -> None:
        before = self._claim_changing((namespace, name))
        self.assumed_resource_claims.pop((namespace, name), None)
        self._claim_changed((namespace, name), before)

    def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim as decisions see it (an assumed copy over the API object), or None."""
        key = (namespace, name)
        return self.assumed_resource_claims.get(key) or self.resource_claims.get(key)

    def api_resource_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim as the API server last reported it (never an assumed copy)."""
        return self.resource_claims.get((namespace, name))

    def iter_resource_claims(self) -> Iterable[ResourceClaim]:
        """Every claim as decisions see it."""
        for key, claim in self.resource_claims.items():
            yield self.assumed_resource_claims.get(key) or claim
        for key, claim in self.assumed_resource_claims.items():
            if key not in self.resource_claims:
                yield claim

    def allocated_devices(self) -> frozenset[tuple[str, str, str]]:
        """``ListAllAllocatedDevices``: (driver, pool, device) of every device some claim's allocation holds for
        itself, assumed allocations included; results with admin access do not count, nor shares of a device
        that allows multiple allocations (upstream's tracker keeps those apart: :meth:`allocated_state`)."""
        return self.allocated_state().dedicated

    def allocated_state(self) -> AllocatedState:
        """``GatherAllocatedState``: the dedicated devices, the devices with shares (a ``shareID``), and the
        capacity those shares consume per device, over every claim as decisions see it (kept up to date claim
        by claim: :meth:`_account_claim`)."""
        generation, state = self._allocated_state
        if generation != self.dra_generation:
            consumed = {device: {name: total for name, (count, total) in names.items() if count}
                        for device, names in self._dra_consumed.items()}
            state = AllocatedState(frozenset(self._dra_dedicated), frozenset(self._dra_shared), consumed)
            self._allocated_state = (self.dra_generation, state)
        return state

    def _account_claim(self, claim: ResourceClaim, sign: int) -> None:
        """Count the claim's results in (``sign`` 1) or out (-1) of what :meth:`allocated_state` gathers: per
        device, the results holding it, the shares of it, and per capacity the shares consuming it and their sum."""
        for r in claim.results:
            if r.admin_access:
                continue
            device = r.device_id
            counts = self._dra_shared if r.share_id else self._dra_dedicated
            left = counts.get(device, 0) + sign
            if left:
                counts[device] = left
            else:
                del counts[device]
            if r.share_id and r.consumed_capacity:
                names = self._dra_consumed.setdefault(device, {})
                for name, value in r.consumed_capacity.items():
                    count, total = names.get(name, (0, Fraction(0)))
                    names[name] = (count + sign, total + sign * value)
                    if not names[name][0]:
                        del names[name]
                if not names:
                    del self._dra_consumed[device]

    def get_storage_class(self, name: str) -> StorageClass:
        sc = self.storage_classes.get(name)
        if sc is None:
            raise ListerError(f'storageclass.storage.k8s.io "{name}" not found')
        return sc


def _drop_older_assumption(assumed: dict[Any, Any], key: Any, api_object: Any) -> None:
    """A newer API object than an assumed copy replaces the assumption (upstream's assume cache)."""
    current = assumed.get(key)
    if current is not None and api_object.resource_version > current.resource_version:
        del assumed[key]


def _assume(assumed: dict[Any, Any], api: dict[Any, Any], key: Any, obj: Any, lister_name: str, display: str) -> None:
    """``assumeCache.Assume``: ``obj`` must exist and be no older than what decisions see now."""
    stored = assumed.get(key) or api.get(key)
    if stored is None:
        raise ListerError(f"{lister_name} not found")
    if obj.resource_version < stored.resource_version:
        raise ListerError(f"{display} is out of sync (stored: {stored.resource_version}, assume: {obj.resource_version})")
    assumed[key] = obj
