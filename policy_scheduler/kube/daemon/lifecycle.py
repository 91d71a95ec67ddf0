"""``policy-scheduler run``: the start-up sequence, leader election and shutdown around the loop.

Start-up follows kube-scheduler 1.9 (``scheduler_loop.md`` §1): build the algorithm from its source
(a policy that cannot be loaded stops the start before anything is watched), the leader-election lock,
the HTTP endpoint, then the informers; scheduling starts once they are synced and, with leader
election, only while this process leads. SIGTERM / SIGINT (:mod:`.signals`) at any moment stop popping at
once, let the binds on the wire finish (binds not yet sent are not sent), release the lock and exit 0, all
within :data:`~.signals.EXIT_WITHIN` seconds of the signal; a leader that cannot renew stops scheduling at once
and exits 1.

An API server that cannot be reached or fails is retried with client-go's back-off (:mod:`..client.backoff`),
each failed attempt logged with its error and the next retry (discovery at start-up, then each informer's list
and watch), and ``/readyz`` and ``/healthz`` say why the informers have not synced.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ... import __version__
from ...algorithm_source import AlgorithmSource, from_policy_file, from_provider
from ...api import load_policy_from_configmap
from ...cache.scheduler_cache import CLEANUP_PERIOD, SchedulerCache
from ...core.generic_scheduler import GenericScheduler
from ...core.http_extender import HTTPExtenderFactory
from ...core.modern_pods import SCHEDULING_GATED, SCHEDULING_GATED_MESSAGE
from ...errors import UserError
from ...features import FeatureGates
from ...model.disruption import PodDisruptionBudget
from ...model.pod import Pod
from ...predicates.volume_binder import DEFAULT_BIND_TIMEOUT
from ...queue import (
    FIFO,
    NominatingQueue,
    PodBackoff,
    SchedulingQueue,
    ThreeQueuePriorityQueue,
    new_scheduling_queue,
    pod_key,
)
from ...queue.three_queue import UNSCHEDULABLE_Q_TIME_INTERVAL
from ...runtime import freeze_long_lived
from ..client.backoff import Backoff
from ..client.informer import Reflector, Resource, served_resources
from ..client.kubeconfig import api_client
from ..client.policy_configmap import get_policy_configmap
from ..client.reachability import Reachability
from ..client.rest import ApiError, RestClient
from ..client.version import server_line
from ..config.options import SchedulerConfiguration
from ..config.serving_options import ServingOptions
from ..metrics import SchedulerMetrics
from ..serving import Endpoints, HealthChecks
from . import leaderelection, signals
from .binder import Binder
from .claimbinding import ClaimBinder
from .eventhandlers import DraHandler, ListerHandler, NodeHandler, PodHandler, claims_pre_enqueue
from .events import WARNING, BackgroundWriter, EventRecorder, PodConditionUpdater, object_reference
from .preemption import PDBStore, Preemptor
from .requeuer import Requeuer
from .scheduler import BIND_WORKERS, SchedulingLoop
from .volumebinding import VolumeBindingManager

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_ERROR = 1
# The shutdown's bounds, in seconds after the signal (after the shutdown's start when no signal caused it): binds on
# the wire (and preemptions) finish by the first, the lock is released by the second, the rest is stopped by the
# third; the signals thread ends a process still alive at signals.HARD_EXIT, within signals.EXIT_WITHIN.
SHUTDOWN_BIND_GRACE = 1.3
SHUTDOWN_RELEASE_BY = 1.55
SHUTDOWN_DONE_BY = 1.7

RESOURCES = (
    Resource("Node", "nodes", ("v1",), namespaced=False),
    Resource("Pod", "pods", ("v1",)),
    Resource("Service", "services", ("v1",)),
    Resource("ReplicationController", "replicationcontrollers", ("v1",)),
    Resource("ReplicaSet", "replicasets", ("apps/v1", "apps/v1beta2", "extensions/v1beta1")),
    Resource("StatefulSet", "statefulsets", ("apps/v1", "apps/v1beta2", "apps/v1beta1")),
    Resource("PersistentVolume", "persistentvolumes", ("v1",), namespaced=False),
    Resource("PersistentVolumeClaim", "persistentvolumeclaims", ("v1",)),
    Resource("StorageClass", "storageclasses", ("storage.k8s.io/v1", "storage.k8s.io/v1beta1"), namespaced=False),
    # The CSI drivers' attach limits per node (GA in 1.17; older servers serve none: not watched).
    Resource("CSINode", "csinodes", ("storage.k8s.io/v1",), namespaced=False),
    # Their labels: what pod (anti-)affinity terms' namespaceSelector selects (upstream's namespace informer).
    Resource("Namespace", "namespaces", ("v1",), namespaced=False),
)
#: Dynamic resource allocation, under the cluster's rules only (``resource.k8s.io/v1``, served from 1.34): what
#: upstream's DynamicResources plugin reads. Not the ResourceClaimTemplates: the scheduler reads the claims the
#: resourceclaim controller made from them, as upstream's does (its role grants nothing on templates).
DRA_RESOURCES = (
    Resource("DeviceClass", "deviceclasses", ("resource.k8s.io/v1",), namespaced=False),
    Resource("ResourceSlice", "resourceslices", ("resource.k8s.io/v1",), namespaced=False),
    Resource("ResourceClaim", "resourceclaims", ("resource.k8s.io/v1",)),
)
# Gate PodPriority only: the budgets preemption weighs (1.9 reads policy/v1beta1; v1beta1 is gone in 1.25).
PDB_RESOURCE = Resource("PodDisruptionBudget", "poddisruptionbudgets", ("policy/v1", "policy/v1beta1"))
NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


def queue_order(raw: dict[str, Any]) -> tuple[bool, str, str, str]:
    """The listed pods' order: the assigned pods first (the cache needs them all before any decision), then the
    backlog by creation time, then namespace/name (the order ``simulate`` uses)."""
    meta = raw.get("metadata") or {}
    return (unassigned(raw), meta.get("creationTimestamp") or "", meta.get("namespace") or "", meta.get("name") or "")


def unassigned(raw: dict[str, Any]) -> bool:
    return not (raw.get("spec") or {}).get("nodeName")


class Daemon:
    def __init__(self, config: SchedulerConfiguration, feature_gates: FeatureGates, *,
                 bind_workers: int = BIND_WORKERS, volume_bind_timeout: float = DEFAULT_BIND_TIMEOUT,
                 max_unschedulable: float = UNSCHEDULABLE_Q_TIME_INTERVAL, serving: ServingOptions | None = None,
                 stop_event: threading.Event | None = None) -> None:
        self.config = config
        self.serving = serving  # None: no HTTPS (only the insecure port the configuration asks for)
        self.feature_gates = feature_gates
        self.metrics = SchedulerMetrics()
        # The policy's HTTP extenders: one connection pool each, kept across policy reloads.
        self.extender_factory = HTTPExtenderFactory(observer=self.metrics.observe_extender_error)
        self.cache = SchedulerCache()
        self.pod_priority = feature_gates.enabled("PodPriority")
        # 1.9's queue by the gate (FIFO, or the PriorityQueue), or 1.20's three-queue form whatever the gate.
        if config.scheduling_queue == "three-queue":
            self.queue: SchedulingQueue = ThreeQueuePriorityQueue(unschedulable_timeout=max_unschedulable)
        else:
            self.queue = new_scheduling_queue(self.pod_priority)
        # Upstream's queue reads the namespace lister for a waiting pod's namespaceSelector.
        self.queue.namespace_labels = self.cache.cluster.namespace_labels
        self.bind_workers = bind_workers
        # Set by SIGTERM / SIGINT (``run`` passes signals.STOP), a fatal error, or the shutdown itself.
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.reflectors: list[Reflector] = []
        self._discovery_error: str | None = None
        self._algorithm: GenericScheduler | None = None
        self._policy_text: str | None = None
        self._leading = threading.Event()
        self._lost = threading.Event()
        self._loop_stop = threading.Event()
        self._loop_thread: threading.Thread | None = None
        self._fatal: str | None = None
        self.preemptor: Preemptor | None = None
        self.pdb_store: PDBStore | None = None
        self.volume_bind_timeout = volume_bind_timeout
        self.volume_binding: VolumeBindingManager | None = None
        self.claim_binder: ClaimBinder | None = None

    # -- start-up ----------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Everything that can fail because of the configuration; raises UserError (exit 1)."""
        cfg = self.config
        log.info("Version: %s", __version__)
        if self.feature_gates.enabled("VolumeScheduling") and not self.feature_gates.cluster_rules:
            raise UserError("--feature-gates VolumeScheduling=true: run does not implement 1.9's alpha volume binder "
                            "under --rules 1.9 (the cluster's rules bind volumes as 1.26 does); see docs/deviations.md")
        # The listeners first: certificate files, TLS settings and kubeconfigs are checked before anything runs.
        self.endpoints = Endpoints(cfg, self.serving, metrics=self.metrics, checks=self.health_checks())
        self.endpoints.prepare()
        conn = cfg.client_connection
        kubeconfig = conn.kubeconfig or None
        if not kubeconfig and not cfg.master:
            log.warning("Neither --kubeconfig nor --master was specified. Using default API client. This might not work.")
        pool = self.bind_workers * 2 + len(RESOURCES) + len(DRA_RESOURCES) + 10
        self.rest = RestClient(api_client(kubeconfig, None, cfg.master or None, pool_size=pool),
                               qps=conn.qps, burst=conn.burst, user_agent=f"policy-scheduler/{__version__} scheduler")
        # Failed requests make the daemon probe the server; while it is unreachable scheduling pauses and the
        # assumed pods' expiry clock stands still (their confirming watch cannot run).
        self.reachability = Reachability(self.rest, self.metrics)
        self.rest.on_unavailable = self.reachability.suspect
        self.cache.clock = self.reachability.clock
        self.election_rest = RestClient(api_client(kubeconfig, None, cfg.master or None),
                                        qps=conn.qps, burst=conn.burst,
                                        user_agent=f"policy-scheduler/{__version__} leader-election")
        # Events have a client (and a rate limiter) of their own, as upstream's eventClient: a burst of events
        # never holds up a bind.
        self.event_rest = RestClient(api_client(kubeconfig, None, cfg.master or None), qps=conn.qps, burst=conn.burst,
                                     user_agent=f"policy-scheduler/{__version__} events")
        self.event_rest.on_unavailable = self.reachability.suspect
        for client in self._clients():  # rest_client_requests_total, ..._latency_seconds
            client.observer = self.metrics.observe_request
        self.source = self._algorithm_source()
        self._algorithm = self._build(self.source)
        le = cfg.leader_election
        self.elector: leaderelection.LeaderElector | None = None
        if le.leader_elect:
            election = leaderelection.LeaderElectionConfig(
                lock_type=le.resource_lock, namespace=le.lock_object_namespace, name=le.lock_object_name,
                identity=leaderelection.default_identity(), lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline, retry_period=le.retry_period,
            )
            leaderelection.validate(election)
            self.elector = leaderelection.LeaderElector(
                self.election_rest, election, on_started_leading=self._started_leading,
                on_stopped_leading=self._stopped_leading, on_new_leader=self._new_leader,
            )
        # Events and PodScheduled conditions are written in the background, each through its own client and
        # queue: a full event queue never costs a pod its condition.
        self.event_writer = BackgroundWriter("events", workers=2)
        self.condition_writer = BackgroundWriter("pod conditions", workers=2)
        self.recorder = EventRecorder(self.event_rest, cfg.scheduler_name, self.event_writer,
                                      observe=self.metrics.observe_event)
        self.conditions = PodConditionUpdater(self.rest, self.condition_writer,
                                              still_pending=lambda pod: self.pending_pod(pod_key(pod)) is not None,
                                              line=lambda: self.cache.cluster.kubernetes_line)
        # The FIFO's pods wait out 1.9's back-off in the requeuer; the priority queues take them back at once
        # (the three-queue form backs them off itself).
        backoff = None if isinstance(self.queue, NominatingQueue) else PodBackoff()
        self.requeuer = Requeuer(self.queue, self.pending_pod, backoff)
        if self.pod_priority and isinstance(self.queue, NominatingQueue):
            self.preemptor = Preemptor(
                self.rest, cache=self.cache, queue=self.queue, requeuer=self.requeuer, recorder=self.recorder,
                metrics=self.metrics, lookup=self.pending_pod, pdbs=self._pdbs, reachability=self.reachability,
            )
        if self.feature_gates.cluster_rules:  # late-bound volumes: assume, write, wait, then bind the pod
            self.volume_binding = VolumeBindingManager(self.rest, self.cache, timeout=self.volume_bind_timeout,
                                                       pod_exists=self._pod_exists)
            # ResourceClaims: the allocation and the pod's reservation written before the pod's Binding
            self.claim_binder = ClaimBinder(self.rest, self.cache, reachability=self.reachability)
        self.loop = SchedulingLoop(
            cache=self.cache, queue=self.queue, algorithm=self.algorithm, binder=Binder(self.rest),
            recorder=self.recorder, conditions=self.conditions, requeuer=self.requeuer, metrics=self.metrics,
            bind_workers=self.bind_workers, preemptor=self.preemptor, volumes=self.volume_binding,
            reachability=self.reachability, claims=self.claim_binder, stopping=self.stop_event,
        )

    def _clients(self) -> tuple[RestClient, ...]:
        return self.rest, self.election_rest, self.event_rest

    def _algorithm_source(self) -> AlgorithmSource:
        src = self.config.algorithm_source
        if src.policy_file:
            return from_policy_file(src.policy_file)
        if src.policy_configmap_name:
            raw = self._get_policy_configmap()
            self._policy_text = (raw.get("data") or {}).get("policy.cfg")
            return AlgorithmSource(label=self._configmap_label(), policy=load_policy_from_configmap(raw))
        return from_provider(src.provider or "DefaultProvider")

    def _configmap_label(self) -> str:
        src = self.config.algorithm_source
        return f"ConfigMap {src.policy_configmap_namespace}/{src.policy_configmap_name}"

    def _get_policy_configmap(self) -> dict[str, Any]:
        src = self.config.algorithm_source
        return get_policy_configmap(self.rest, src.policy_configmap_namespace, src.policy_configmap_name)

    def _build(self, source: AlgorithmSource) -> GenericScheduler:
        scheduler = source.build(self.cache.cluster, feature_gates=self.feature_gates,
                                 hard_pod_affinity_symmetric_weight=self.config.hard_pod_affinity_symmetric_weight,
                                 extender_factory=self.extender_factory)
        if self.pod_priority and isinstance(self.queue, NominatingQueue):  # the queue's nominations count
            scheduler.nominated_pods = self.queue
        return scheduler

    def _pdbs(self) -> list[PodDisruptionBudget]:
        return self.pdb_store.list() if self.pdb_store is not None else []

    def algorithm(self) -> GenericScheduler:
        assert self._algorithm is not None
        return self._algorithm

    # -- informers -------------------------------------------------------------------------------
    def _start_informers(self) -> None:
        served = self._discover()
        if served is None:  # stopped before the server answered: nothing to watch, nothing to warn about
            return
        self._read_kubernetes_line()
        name = self.config.scheduler_name
        # Pods wait for their claims (PreEnqueue) only where the claims are watched: elsewhere (a server without
        # resource.k8s.io/v1) the cycle says the claim is not found, rather than the pod waiting in silence.
        claims_watched = self.feature_gates.cluster_rules and any(
            r.kind == "ResourceClaim" and r.served_version(served) is not None for r in DRA_RESOURCES)
        for resource in self._resources():
            version = resource.served_version(served)
            if version is None:
                log.warning("the API server serves no %s version this scheduler reads (%s); not watching them",
                            resource.kind, ", ".join(resource.group_versions))
                continue
            if resource.kind == "Pod":
                handler: Any = PodHandler(
                    self.cache, self.queue, name, self._corrupted, self.feature_gates.rules, on_gated=self._gated,
                    pre_enqueue=claims_pre_enqueue(self.cache) if claims_watched else None)
                self.pod_handler = handler
                if claims_watched:
                    self.loop.hold_back = handler.hold_back
                if self.feature_gates.cluster_rules:
                    self.loop.skip_assumed = True
            elif resource.kind == "Node":
                handler = NodeHandler(self.cache, self.queue)
            elif resource.kind in DraHandler.KINDS:
                handler = DraHandler(self.cache, self.queue, resource.kind, on_claim=self.pod_handler.claims_changed)
            else:
                on_change = None
                if self.volume_binding is not None and resource.kind in ("PersistentVolume", "PersistentVolumeClaim"):
                    on_change = self.volume_binding.notify
                handler = ListerHandler(self.cache, self.queue, resource.kind, on_change=on_change)
            reflector = Reflector(
                self.rest, resource.path(version), handler, name=resource.plural,
                field_selector=NON_TERMINAL if resource.kind == "Pod" else None,
                list_order=queue_order if resource.kind == "Pod" else None, reachability=self.reachability,
                synced_from=unassigned if resource.kind == "Pod" and self._backlog_streams() else None,
            )
            if resource.kind == "Pod":
                self.pod_reflector = reflector
            self.reflectors.append(reflector)
        if self.pod_priority:
            version = PDB_RESOURCE.served_version(served)
            if version is None:
                log.warning("the API server serves no PodDisruptionBudget version this scheduler reads (%s); "
                            "preemption will not weigh budgets", ", ".join(PDB_RESOURCE.group_versions))
            else:
                self.pdb_store = PDBStore(version)
                self.reflectors.append(Reflector(self.rest, PDB_RESOURCE.path(version), self.pdb_store,
                                                 name=PDB_RESOURCE.plural, reachability=self.reachability))
        src = self.config.algorithm_source
        if src.policy_configmap_name:
            self.reflectors.append(Reflector(
                self.rest, Resource("ConfigMap", "configmaps", ("v1",)).path("v1", src.policy_configmap_namespace),
                _PolicyConfigMapHandler(self), name="policy-configmap",
                field_selector=f"metadata.name={src.policy_configmap_name}", reachability=self.reachability,
            ))
        for reflector in self.reflectors:
            reflector.start()

    def _backlog_streams(self) -> bool:
        """Whether decisions may start while the listed backlog still enters the queue: with 1.9's FIFO it is
        popped in the order it is added, so the first pods are decided exactly as after the whole list (the
        priority queues could pop a pod before a higher-priority one of the list arrives, so they wait)."""
        return isinstance(self.queue, FIFO)

    def _resources(self) -> tuple[Resource, ...]:
        return RESOURCES + (DRA_RESOURCES if self.feature_gates.cluster_rules else ())

    def _read_kubernetes_line(self) -> None:
        """The server's line, once, before the informers fill the cache (so before any decision): the
        wording of the cluster's rules where upstream's releases differ. The newest line if unreadable."""
        if self.stop_event.is_set():
            return
        line = server_line(self.rest)
        if line is not None:
            self.cache.cluster.kubernetes_line = line
        log.info("Kubernetes line of %s: %d.%d", self.rest.host, *self.cache.cluster.kubernetes_line)

    def _discover(self) -> set[tuple[str, str]] | None:
        """The (group version, resource) pairs the server serves among those the informers may watch; None when
        stopped first. Each failure is logged with the next attempt, after client-go's back-off."""
        wanted = [gv for resource in (*self._resources(), PDB_RESOURCE) for gv in resource.group_versions]
        backoff = Backoff()
        while not self.stop_event.is_set():
            try:
                served = served_resources(self.rest, wanted)
            except ApiError as e:
                delay = backoff.next()
                self._discovery_error = str(e)
                log.warning("API discovery at %s failed: %s; retrying in %.1fs", self.rest.host, e, delay)
                self.reachability.wait_retry(delay, self.stop_event)
                continue
            self._discovery_error = None
            return served
        return None

    def synced(self) -> bool:
        return bool(self.reflectors) and all(r.synced.is_set() for r in self.reflectors)

    def pending_pod(self, key: str) -> Pod | None:
        """The informer's latest copy of an unassigned pod of ours that still needs scheduling."""
        raw = self.pod_reflector.store.get(key)
        if raw is None:
            return None
        pod = self.pod_handler.pod(raw)
        if pod is None or pod.node_name or not self.pod_handler.responsible_for(pod) or self.cache.is_assumed(pod.key):
            return None
        return pod

    def _pod_exists(self, pod: Pod) -> bool:
        """The pod is still in the informer's store (the same object: its uid)."""
        raw = self.pod_reflector.store.get(pod_key(pod))
        if raw is None:
            return False
        return not pod.uid or (raw.get("metadata") or {}).get("uid") == pod.uid

    def _gated(self, pod: Pod) -> None:
        """A gated pod: no event (upstream emits none), the condition the API server gives it at creation
        (written only where it is missing or differs)."""
        self.conditions.update(pod, "False", SCHEDULING_GATED, SCHEDULING_GATED_MESSAGE, observed=False)

    def _corrupted(self, message: str) -> None:
        log.critical("%s", message)
        self._fatal = message
        self.stop_event.set()

    # -- policy hot reload -----------------------------------------------------------------------
    def reload_policy(self, raw: dict[str, Any]) -> None:
        text = (raw.get("data") or {}).get("policy.cfg")
        if text == self._policy_text:
            return
        label = self._configmap_label()
        try:
            source = AlgorithmSource(label=label, policy=load_policy_from_configmap(raw))
            with self.cache.lock:
                new = self._build(source)
                old, self._algorithm = self._algorithm, new
            if old is not None:
                old.close()
        except UserError as e:
            self._policy_text = text
            log.error("rejected the new policy in %s, keeping the one in force: %s", label, e)
            self.metrics.policy_reloads.labels(result="rejected").inc()
            self.recorder.event(object_reference(raw, "ConfigMap"), WARNING, "PolicyRejected",
                                f"invalid scheduler policy, the previous one stays in force: {e}")
            return
        self._policy_text = text
        self.metrics.policy_reloads.labels(result="applied").inc()
        log.info("policy reloaded from %s", label)

    # -- leadership ------------------------------------------------------------------------------
    def _started_leading(self) -> None:
        if self._loop_stop.is_set() or self.stop_event.is_set():
            # The elector runs this in a thread of its own: the lease may have ended, or the shutdown begun, first.
            log.info("started leading while shutting down: not scheduling")
            return
        log.info("started leading: scheduling")
        self.metrics.leader.set(1)
        self._leading.set()
        self._start_loop()

    def _stopped_leading(self) -> None:
        self.metrics.leader.set(0)
        self._loop_stop.set()
        if self._leading.is_set() and not self.stop_event.is_set():
            self._lost.set()
            log.error("lost master")

    def _new_leader(self, identity: str) -> None:
        log.info("new leader elected: %s", identity)

    def _start_loop(self) -> None:
        """The scheduling loop's thread, once per process (``_loop_stop`` is never cleared: a loop stopped, by the
        lease's loss or the shutdown, stays stopped)."""
        if self._loop_stop.is_set() or self.stop_event.is_set():
            return
        self._loop_thread = threading.Thread(target=self._schedule_when_synced, name="scheduler", daemon=True)
        self._loop_thread.start()

    def _schedule_when_synced(self) -> None:
        for reflector in self.reflectors:
            while not reflector.synced.wait(0.05):
                if self._loop_stop.is_set() or self.stop_event.is_set():
                    return
        freeze_long_lived()
        self.loop.run(self._loop_stop)

    # -- housekeeping ----------------------------------------------------------------------------
    def _housekeeping(self) -> None:
        """Every second: expire assumed pods never confirmed (re-queueing them), publish queue depth."""
        while not self.stop_event.wait(CLEANUP_PERIOD):
            for pod in self.cache.cleanup_expired():
                pending = self.pending_pod(pod_key(pod))
                if pending is not None:
                    self.queue.add_unschedulable_if_not_present(pending, False)
            for name, n in self.queue.depth().items():
                self.metrics.pending_pods.labels(queue=name).set(n)

    def healthz_checks(self) -> dict[str, Callable[[], str | None]]:
        return {
            "informer-sync": self.not_synced_reason,
            "leader-election": lambda: "leadership lost" if self._lost.is_set() else None,
        }

    def not_synced_reason(self) -> str | None:
        """None once every informer has synced, else why not: the server unreachable, discovery or a list failing
        (with the error), or which informers are still listing."""
        if self.synced():
            return None
        reason = "informers have not synced"
        if not self.reachability.reachable:
            return f"{reason}: the API server at {self.rest.host} is unreachable: {self.reachability.detail}"
        if self._discovery_error is not None:
            return f"{reason}: API discovery at {self.rest.host} failed: {self._discovery_error}"
        waiting = [r for r in self.reflectors if not r.synced.is_set()]
        failing = [f"{r.name}: {r.last_error}" for r in waiting if r.last_error]
        if failing:
            more = f" (and {len(failing) - 3} more)" if len(failing) > 3 else ""
            return f"{reason}: " + "; ".join(failing[:3]) + more
        if waiting:
            return f"{reason}: listing {', '.join(r.name for r in waiting)}"
        return f"{reason}: discovering the API at {self.rest.host}"

    def health_checks(self) -> HealthChecks:
        """/healthz: 1.9's (synced, leadership not lost); /livez: leadership not lost; /readyz, as upstream:
        synced, leadership not lost (a standby replica is ready), not shutting down."""
        healthz = self.healthz_checks()
        return HealthChecks(
            healthz=healthz,
            livez={"leader-election": healthz["leader-election"]},
            readyz={**healthz, "shutdown": lambda: "shutting down" if self.stop_event.is_set() else None},
        )

    # -- run -------------------------------------------------------------------------------------
    def run(self) -> int:
        """Start everything, schedule until the stop event (or the lease's loss), shut down; the exit code. A
        stop at any step skips the steps after it."""
        self.endpoints.start()
        for writer in (self.event_writer, self.condition_writer):
            writer.start()
        self.requeuer.start()
        if isinstance(self.queue, ThreeQueuePriorityQueue):
            self.queue.run()  # upstream Run: podBackoffQ flushed every 1 s, unschedulableQ leftovers every 30 s
        log.info("scheduling queue: %s (%s)", self.config.scheduling_queue, type(self.queue).__name__)
        if self.volume_binding is not None:
            self.volume_binding.start()
        self._start_informers()
        elector_stop = threading.Event()
        elector_thread = None
        if not self.stop_event.is_set():
            threading.Thread(target=self._housekeeping, name="housekeeping", daemon=True).start()
            if self.elector is not None:
                elector_thread = threading.Thread(target=self.elector.run, args=(elector_stop,),
                                                  name="leader-election", daemon=True)
                elector_thread.start()
            else:
                self._start_loop()
        while not self.stop_event.is_set() and not self._lost.is_set():
            if elector_thread is not None and not elector_thread.is_alive():
                break
            self.stop_event.wait(0.2)
        return self._shutdown(elector_stop, elector_thread)

    def _shutdown(self, elector_stop: threading.Event, elector_thread: threading.Thread | None) -> int:
        """Stop popping, let the binds on the wire finish, release the lock, stop the rest: each step within its
        bound (SHUTDOWN_*), counted from the signal when one caused it."""
        lost = self._lost.is_set() or (elector_thread is not None and not elector_thread.is_alive())
        cause = signals.received() if self.stop_event is signals.STOP else None
        self._loop_stop.set()
        self.loop.drain()
        log.info("shutting down: %s", "lost lease" if lost else self._fatal or cause or "signal")
        binds_by, release_by, done_by = (signals.deadline(s) if cause else time.monotonic() + s
                                         for s in (SHUTDOWN_BIND_GRACE, SHUTDOWN_RELEASE_BY, SHUTDOWN_DONE_BY))

        def left(deadline: float) -> float:
            return max(0.0, deadline - time.monotonic())

        if self._loop_thread is not None:
            self._loop_thread.join(timeout=left(binds_by))
        started = time.monotonic()
        if not self.loop.wait_for_binds(left(binds_by)):
            log.warning("in-flight binds did not finish within the shutdown's bound")
        log.info("in-flight binds settled in %.2fs", time.monotonic() - started)
        if self.loop.abandoned:
            log.info("%d decided pod(s) not sent for binding: left pending for the next scheduler", self.loop.abandoned)
        if self.preemptor is not None and not self.preemptor.wait(left(binds_by)):
            log.warning("in-flight preemptions did not finish within the shutdown's bound")
        if self.elector is not None:
            self.elector.release_by = release_by
        elector_stop.set()
        if elector_thread is not None:
            elector_thread.join(timeout=left(release_by))
        self.stop_event.set()
        self.queue.close()
        for reflector in self.reflectors:  # every stop first: none waits for another
            reflector.stop(timeout=0)
        if self.volume_binding is not None:
            self.volume_binding.stop(timeout=left(done_by))
        self.requeuer.stop(timeout=left(done_by))
        for writer in (self.event_writer, self.condition_writer):
            writer.stop(timeout=left(done_by))
        self.loop.shutdown()
        if self.preemptor is not None:
            self.preemptor.shutdown()
        self.reachability.stop(timeout=left(done_by))
        self.endpoints.stop(grace=left(done_by))
        for client in self._clients():
            client.close()
        if lost:
            log.error("lost lease")
            return EXIT_ERROR
        return EXIT_ERROR if self._fatal else EXIT_OK


class _PolicyConfigMapHandler:
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def on_add(self, raw: dict[str, Any]) -> None:
        self.daemon.reload_policy(raw)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.daemon.reload_policy(new)

    def on_delete(self, raw: dict[str, Any]) -> None:
        log.warning("the policy %s was deleted; the policy in force stays", self.daemon._configmap_label())
