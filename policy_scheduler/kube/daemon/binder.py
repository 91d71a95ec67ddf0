"""Binding a pod to its node through the ``pods/binding`` subresource, judged by HTTP status alone; or,
when the policy has a binding extender interested in the pod, through that extender."""

from __future__ import annotations

import enum
import logging

from ...core.extender import SchedulerExtender
from ...model.pod import Pod
from ..client.rest import ApiError, RestClient

log = logging.getLogger(__name__)

BIND_TIMEOUT = 30.0


class BindOutcome(enum.Enum):
    SUCCESS = "success"          # 201: the API server set spec.nodeName and PodScheduled=True
    CONFLICT = "conflict"        # 409: the pod is already bound (by us on a lost reply, or by someone else)
    NOT_FOUND = "not_found"      # 404: the pod is gone
    UNKNOWN = "unknown"          # no reply, or 5xx: bound or not, only the server can say (settled later)
    UNBOUND = "unbound"          # an unknown outcome settled: the server says the pod is not bound
    ERROR = "error"              # anything else (403, 422, ...): not bound


class Binder:
    def __init__(self, rest: RestClient, timeout: float = BIND_TIMEOUT) -> None:
        self.rest = rest
        self.timeout = timeout

    def bind(self, pod: Pod, host: str) -> tuple[BindOutcome, ApiError | None]:
        log.debug("Attempting to bind %s to %s", pod.name, host)
        binding = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, **({"uid": pod.uid} if pod.uid else {})},
            "target": {"apiVersion": "v1", "kind": "Node", "name": host},
        }
        try:
            self.rest.post(f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding", binding,
                           timeout=(10.0, self.timeout))
            return BindOutcome.SUCCESS, None
        except ApiError as e:
            return classify(e), e

    def nominate(self, pod: Pod, host: str) -> None:
        """``status.nominatedNodeName`` set to ``host`` ("" clears it): what upstream's binding cycle writes from 1.35 (NominatedNodeNameForExpectation) before a PreBind that waits (late-bound volumes),
        to tell autoscalers where the pod is about to go; the API server clears it when it binds the pod
        (ClearingNominatedNodeNameAfterBinding). A failed write is logged and changes nothing else, as upstream."""
        try:
            self.rest.patch(f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
                            {"status": {"nominatedNodeName": host or None}})
        except ApiError as e:
            log.info("Failed to update the nominated node name in the binding cycle pod=%s nominatedNodeName=%s: %s",
                     pod.ref, host, e)

    def bound_node(self, pod: Pod) -> str | None:
        """Where the API server says the pod is bound ("" when unbound); None when the pod is gone (a new
        pod of the same name counts as gone). Raises ApiError when the server does not answer."""
        try:
            data = self.rest.get(f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}")
        except ApiError as e:
            if e.not_found:
                return None
            raise
        if pod.uid and (data.get("metadata") or {}).get("uid") != pod.uid:
            return None
        return (data.get("spec") or {}).get("nodeName") or ""


class ExtenderBinder:
    """Upstream 1.9: a binding extender replaces the API binder (``extender.md`` §5). It creates the Binding
    itself; any error (transport, status, decoding, its ``Error``) is a failed bind: forget, requeue,
    ``Binding rejected: <error>``."""

    def __init__(self, extender: SchedulerExtender) -> None:
        self.extender = extender

    def bind(self, pod: Pod, host: str) -> tuple[BindOutcome, Exception | None]:
        log.debug("Attempting to bind %s to %s through extender %s", pod.name, host, self.extender.name)
        try:
            self.extender.bind(pod, host)
        except Exception as e:
            return BindOutcome.ERROR, e
        return BindOutcome.SUCCESS, None


def classify(error: ApiError) -> BindOutcome:
    if error.indefinite:
        # The request may have reached the server (a reply lost with the connection, a server that stored
        # the binding and failed while answering, a proxy's 502): whether the pod is bound is unknown.
        return BindOutcome.UNKNOWN
    if error.status == 409:
        # Only "pod x is already assigned to node y" means bound; a 409 that refuses the binding itself
        # (a 1.26+ server's "pod x has non-empty .spec.schedulingGates", a uid precondition of a
        # re-created pod) leaves the pod unbound: the assumption must go, as for any refusal.
        return BindOutcome.CONFLICT if "is already assigned to node" in error.message else BindOutcome.ERROR
    if error.status == 404:
        return BindOutcome.NOT_FOUND
    return BindOutcome.ERROR
