"""The API half of the volume binder (upstream 1.26 ``binder.go`` ``BindPodVolumes``: ``bindAPIUpdate`` then
``checkBindings`` until every claim is bound, within ``bindTimeoutSeconds``).

After the loop has assumed a pod and its volumes (:func:`~policy_scheduler.predicates.volume_binder.assume_pod_volumes`),
a bind worker writes the pre-bound PVs (``PUT`` with ``claimRef``) and the claims to provision (``PUT`` with
``volume.kubernetes.io/selected-node``), then hands the pod to one waiter thread, which re-checks every
waiting pod when a PV or claim event arrives and at least once a second, against the informers' API
objects. When all its claims are bound the pod's own bind is submitted; when binding fails (a claimRef
reset, the provisioner removing the annotation, the pod deleted) or the timeout passes, the caller undoes
the assumption. Nothing written is rolled back: upstream does not either (the provisioner clears the
annotation when it gives up; a PV pre-bound stays so for the PV controller).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...cache.scheduler_cache import SchedulerCache
from ...model.pod import Pod
from ...model.volumes import PersistentVolume, PersistentVolumeClaim
from ...predicates.volume_binder import DEFAULT_BIND_TIMEOUT, PodVolumes, VolumeBindingError, check_bindings
from ..client.rest import ApiError, RestClient

log = logging.getLogger(__name__)

POLL_PERIOD = 1.0  # upstream's wait.Poll interval; events wake the waiter sooner
TIMED_OUT = "timed out waiting for the condition"

Done = Callable[[VolumeBindingError | None], None]


@dataclass
class _Waiting:
    pod: Pod
    volumes: PodVolumes
    deadline: float
    done: Done


class VolumeBindingManager:
    def __init__(self, rest: RestClient, cache: SchedulerCache, *, timeout: float = DEFAULT_BIND_TIMEOUT,
                 pod_exists: Callable[[Pod], bool], clock: Callable[[], float] = time.monotonic) -> None:
        self.rest = rest
        self.cache = cache
        self.timeout = timeout
        self.pod_exists = pod_exists
        self.clock = clock
        self._waiting: dict[str, _Waiting] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="volume-binding", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop waiting (the pods waiting are abandoned); wait up to ``timeout`` seconds for the waiter thread."""
        with self._cond:
            self._stopped = True
            abandoned = len(self._waiting)
            self._waiting.clear()
            self._cond.notify_all()
        if abandoned:
            log.info("stopped waiting for the volumes of %d pod(s); their claims keep what was written", abandoned)
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)

    def notify(self) -> None:
        """A PV or claim changed: re-check the waiting pods now."""
        with self._cond:
            if self._waiting:
                self._cond.notify()

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def _put(self, path: str, kind: str, raw: dict[str, Any]) -> dict[str, Any]:
        """PUT ``raw`` (with its apiVersion and kind) back; a refusal is the volume binding's error."""
        try:
            return self.rest.put(path, {**raw, "apiVersion": "v1", "kind": kind})
        except ApiError as e:
            raise VolumeBindingError(e.message) from None

    # -- bindAPIUpdate (a bind worker) ------------------------------------------------------------------
    def bind_api_update(self, pod: Pod, volumes: PodVolumes) -> PodVolumes:
        """Write the pre-bound PVs and the annotated claims; the objects the API server returned."""
        written = PodVolumes(volumes.node)
        for pvc, pv in volumes.static_bindings:
            log.info("Claim %s/%s bound to volume %s for pod %s", pvc.namespace, pvc.name, pv.name, pod.ref)
            reply = self._put(f"/api/v1/persistentvolumes/{pv.name}", "PersistentVolume", pv.raw)
            written.static_bindings.append((pvc, PersistentVolume.from_dict(reply)))
        for pvc in volumes.dynamic_provisions:
            log.info("Claim %s/%s to be provisioned on node %s for pod %s", pvc.namespace, pvc.name, volumes.node, pod.ref)
            reply = self._put(f"/api/v1/namespaces/{pvc.namespace}/persistentvolumeclaims/{pvc.name}",
                              "PersistentVolumeClaim", pvc.raw)
            written.dynamic_provisions.append(PersistentVolumeClaim.from_dict(reply))
        return written

    # -- the wait --------------------------------------------------------------------------------------
    def wait(self, pod: Pod, volumes: PodVolumes, done: Done) -> None:
        """Call ``done(None)`` once every claim is bound, ``done(error)`` when binding failed or timed out
        (from the waiter thread)."""
        with self._cond:
            if self._stopped:
                return
            self._waiting[pod.key] = _Waiting(pod, volumes, self.clock() + self.timeout, done)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                pending = list(self._waiting.values())
            finished: list[tuple[_Waiting, VolumeBindingError | None]] = []
            now = self.clock()
            for w in pending:
                outcome = self._check(w, now)
                if outcome is not False:
                    finished.append((w, None if outcome is True else outcome))
            with self._cond:
                for w, _ in finished:
                    if self._waiting.get(w.pod.key) is w:
                        del self._waiting[w.pod.key]
            for w, error in finished:
                try:
                    w.done(error)
                except Exception:
                    log.exception("finishing the volume binding of %s failed", w.pod.ref)
            with self._cond:
                if self._stopped:
                    return
                if not finished:
                    self._cond.wait(POLL_PERIOD)

    def _check(self, w: _Waiting, now: float) -> bool | VolumeBindingError:
        """True: bound; False: keep waiting; an error: give up."""
        if not self.pod_exists(w.pod):
            return VolumeBindingError(f'binding volumes: pod does not exist any more: pod "{w.pod.name}" not found')
        try:
            with self.cache.lock:
                if check_bindings(self.cache.cluster, w.volumes.node, w.volumes):
                    log.debug("All PVCs for pod %s are bound", w.pod.ref)
                    return True
        except VolumeBindingError as e:
            return VolumeBindingError(f"binding volumes: {e}")
        if now >= w.deadline:
            return VolumeBindingError(f"binding volumes: {TIMED_OUT}")
        return False
