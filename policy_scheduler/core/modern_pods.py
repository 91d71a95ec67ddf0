"""Three promises a modern pod carries, kept under :attr:`~..features.Rules.CLUSTER` (pure; no I/O).

1. **Scheduling gates** (``spec.schedulingGates``, 1.26 alpha ``PodSchedulingReadiness``, kept by 1.27+):
   a gated pod is never queued, decided or assumed; it enters the queue once its last gate is removed.
   Upstream's ``SchedulingGates`` PreEnqueue plugin keeps it out of activeQ with
   ``waiting for scheduling gates: [a b]`` and emits no event; the API server itself gives it the
   ``PodScheduled=False`` condition, reason ``SchedulingGated`` (``applySchedulingGatedCondition`` in
   ``pkg/registry/core/pod/strategy.go``).
2. **``preemptionPolicy: Never``** (from the PriorityClass): the pod is ordered by its priority but never
   preempts. Upstream's ``DefaultPreemption.PodEligibleToPreemptOthers`` answers
   ``not eligible due to preemptionPolicy=Never.``, and ``FitError.Error()`` appends the PostFilter's
   ``preemption: <msg>``: with the separator ``" %v."`` up to 1.28 (hence the double full stop 1.26 prints),
   ``" %v"`` from 1.29; from 1.34 the default profile's DynamicResources PostFilter speaks first
   (``no new claims to deallocate``), its reasons and preemption's joined with ``", "``.
3. **Nothing silently ignored**: a pod carrying a field that changes where it may run and that this
   engine does not implement is refused (:data:`MODERN_FIELDS`: one table, field -> decision and message,
   that drives the behaviour and ``docs/modern-clusters.md`` alike).

Under ``Rules.V1_9`` none of this applies: 1.9 knew none of these fields and ignored them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import RefusedPodError, SchedulingError
from ..features import NEWEST_LINE, KubernetesLine, Rules
from ..model.pod import PREEMPT_NEVER, Pod

# -- 1. scheduling gates ------------------------------------------------------------------------------
#: ``v1.PodReasonSchedulingGated``.
SCHEDULING_GATED = "SchedulingGated"
#: The condition message the API server writes on a gated pod at creation (1.26 ``strategy.go``).
SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def is_gated(pod: Pod) -> bool:
    """The pod still has scheduling gates, and the cluster's rules apply to it."""
    return pod.rules is Rules.CLUSTER and bool(pod.scheduling_gates)


def gates_message(gates: Sequence[str]) -> str:
    """The SchedulingGates PreEnqueue status: ``waiting for scheduling gates: [a b]`` (Go's ``%v``)."""
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class PodGatedError(SchedulingError):
    """The engine was asked to decide for a gated pod: it never does (the message names the gates)."""

    def __init__(self, pod: Pod) -> None:
        self.gates = pod.scheduling_gates
        super().__init__(gates_message(pod.scheduling_gates))


# -- 2. preemptionPolicy: Never -------------------------------------------------------------------------
#: ``PodEligibleToPreemptOthers``'s message for ``preemptionPolicy: Never`` (1.26 defaultpreemption).
NOT_ELIGIBLE_PREEMPTION_NEVER = f"not eligible due to preemptionPolicy={PREEMPT_NEVER}."


def never_preempts(pod: Pod) -> bool:
    """``preemptionPolicy: Never`` under the cluster's rules."""
    return pod.rules is Rules.CLUSTER and pod.preemption_policy == PREEMPT_NEVER


#: The first line whose ``FitError.Error()`` appends the PostFilter message without a full stop of its own.
POST_FILTER_PLAIN_FROM: KubernetesLine = (1, 29)
#: The first line whose default profile runs DynamicResources' PostFilter (DRA GA and on): before preemption's, it
#: answers every pod without claims to deallocate so.
DRA_POST_FILTER_FROM: KubernetesLine = (1, 34)
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"


def never_post_filter_message(line: KubernetesLine, dra_message: str = NO_CLAIMS_TO_DEALLOCATE) -> str:
    """The PostFilter plugins' message for a ``preemptionPolicy: Never`` pod on the cluster's ``line``
    (``Status.Message()`` joins the plugins' reasons with ``", "``); ``dra_message``: DynamicResources' own
    (``still not schedulable`` for a pod whose claims PreFilter found)."""
    preemption = f"preemption: {NOT_ELIGIBLE_PREEMPTION_NEVER}"
    return f"{dra_message}, {preemption}" if line >= DRA_POST_FILTER_FROM else preemption


def with_post_filter_message(fit_message: str, post_filter_message: str, line: KubernetesLine = NEWEST_LINE) -> str:
    """``FitError.Error()`` on the cluster's ``line``: the filter histogram, then the PostFilter message with the
    separator ``" %v."`` (up to 1.28) or ``" %v"``."""
    if not post_filter_message:
        return fit_message
    end = "" if line >= POST_FILTER_PLAIN_FROM else "."
    return f"{fit_message} {post_filter_message}{end}"


# -- 3. fields the engine does not implement --------------------------------------------------------------
Spec = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ModernField:
    """A field a 1.26 / 1.32 / 1.36 API server keeps, that changes where a pod (or an object it uses) may run
    upstream, and what this scheduler does with it. ``refused``: a pod carrying it (``present``) is never bound; its
    FailedScheduling event and PodScheduled condition say ``message``. Not refused: ``why`` says why
    ignoring it places the pod as the modern kube-scheduler does (or what is left to the operator)."""

    field: str
    what: str
    refused: bool
    why: str
    present: Callable[[Spec, Pod], bool] | None = None
    message: str = ""


def _objects(raw: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(raw, list):
        yield from (x for x in raw if isinstance(x, Mapping))


def _pod_affinity_terms(spec: Spec) -> Iterator[Mapping[str, Any]]:
    """Every PodAffinityTerm of podAffinity and podAntiAffinity, required and preferred."""
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return
    for kind in ("podAffinity", "podAntiAffinity"):
        block = affinity.get(kind)
        if not isinstance(block, Mapping):
            continue
        yield from _objects(block.get("requiredDuringSchedulingIgnoredDuringExecution"))
        for weighted in _objects(block.get("preferredDuringSchedulingIgnoredDuringExecution")):
            term = weighted.get("podAffinityTerm")
            if isinstance(term, Mapping):
                yield term


def _has_classic_resource_claims(spec: Spec, pod: Pod) -> bool:
    """1.26's ``spec.resourceClaims[].source`` (classic DRA, which this engine does not implement)."""
    return any("source" in c for c in _objects(spec.get("resourceClaims")))


def _label_keys_not_merged(spec: Spec, pod: Pod) -> bool:
    """matchLabelKeys / mismatchLabelKeys of a pod affinity term that the API server has not merged into
    its labelSelector (1.31+ merges them at creation, ``mutatePodAffinity``; a pod read back from such a
    server carries both, and its selector already says everything)."""
    for term in _pod_affinity_terms(spec):
        selector = term.get("labelSelector")
        if not isinstance(selector, Mapping):
            continue  # a nil selector matches nothing either way; the server merges nothing into it
        expressions = [e for e in _objects(selector.get("matchExpressions"))]
        for field_name, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
            for key in term.get(field_name) or ():
                if key not in pod.labels:
                    continue  # the server merges only the keys the pod has
                merged = {"key": key, "operator": operator, "values": [pod.labels[key]]}
                if not any({k: e.get(k) for k in merged} == merged for e in expressions):
                    return True
    return False


def _never(spec: Spec, pod: Pod) -> bool:
    return False


MODERN_FIELDS: tuple[ModernField, ...] = (
    ModernField(
        "spec.resourceClaims", "dynamic resource allocation (1.26: `source.resourceClaimName` / "
        "`source.resourceClaimTemplateName`, classic DRA)",
        True, "Refused in 1.26's form only (`source`: classic DRA, resource.k8s.io/v1alpha1, which a driver's "
        "controller allocated). The form of 1.32+ is allocated (the last row).",
        _has_classic_resource_claims,
        "spec.resourceClaims[].source (classic dynamic resource allocation, resource.k8s.io/v1alpha1) is not "
        "supported by this scheduler: the pod's ResourceClaims cannot be allocated",
    ),
    ModernField(
        "spec.affinity.podAffinity / podAntiAffinity terms' `namespaceSelector`",
        "pod (anti-)affinity across the namespaces a label selector picks (1.21+, GA 1.24)",
        False, "Not refused: under the cluster's rules a term applies to the union of its `namespaces` and the "
        "namespaces whose Namespace object's labels the selector matches (`{}`: every namespace), as upstream's "
        "InterPodAffinity plugin reads it: the incoming pod's terms resolved against the cluster's Namespace "
        "objects once per decision, required in MatchInterPodAffinity and preferred in InterPodAffinityPriority; "
        "existing pods' terms (required anti-affinity, the symmetric priority terms) matched against the labels "
        "of the incoming pod's namespace (a namespace without a Namespace object has none). `run` watches "
        "namespaces (one added, relabelled or deleted re-evaluates the waiting pods); snapshots read `Namespace` "
        "objects. Pods without the selector keep 1.9's evaluation; `--rules 1.9` ignores it, as 1.9 did.",
        _never,
    ),
    ModernField(
        "spec.affinity.nodeAffinity terms' `matchFields`",
        "node selector requirements on node fields (`metadata.name`), 1.11+; every DaemonSet pod "
        "carries one since 1.12",
        False, "Not refused: under the cluster's rules a term is its `matchExpressions` AND its `matchFields` "
        "(`metadata.name` `In`/`NotIn` one value), as upstream's NodeAffinity plugin reads it: required terms in "
        "MatchNodeSelector (and GeneralPredicates) ORed, a term that cannot be parsed matching nothing and the "
        "next one tried; preferred terms in NodeAffinityPriority, where a term counts its weight on the node "
        "its fields name. A DaemonSet pod lands on its own node only. Pods without `matchFields` keep 1.9's "
        "evaluation; `--rules 1.9` ignores the fields, as 1.9 did.",
        _never,
    ),
    ModernField(
        "spec.affinity.podAffinity / podAntiAffinity terms' `matchLabelKeys`, `mismatchLabelKeys`",
        "selector keys taken from the pod's own labels (1.29 alpha, 1.31 beta)",
        True, "Refused only when not yet merged into the term's `labelSelector`: a 1.31+ API server merges "
        "them at creation (a pod read back from it is scheduled by its selector, as upstream does); a "
        "manifest that was never created through such a server is refused.",
        _label_keys_not_merged,
        "spec.affinity pod (anti-)affinity matchLabelKeys / mismatchLabelKeys not merged into the labelSelector "
        "are not supported by this scheduler",
    ),
    ModernField(
        "spec.os.name", "the pod's operating system (GA 1.25)",
        False, "Not a scheduling constraint upstream: no kube-scheduler plugin reads it; the kubelet rejects "
        "a pod whose OS is not the node's. Select the OS with a `kubernetes.io/os` node selector, which "
        "1.9 honours.", _never,
    ),
    ModernField(
        "spec.hostUsers", "user namespaces (1.25 alpha)",
        False, "No scheduler plugin reads it; the kubelet decides whether the node supports it.", _never,
    ),
    ModernField(
        "spec.volumes[].ephemeral",
        "generic ephemeral volumes (GA 1.23): a PersistentVolumeClaim made from a template per pod",
        False, "Not refused: the volume is its claim `<pod>-<volume>`; the pod waits for the ephemeral-volume "
        "controller to create it (`waiting for ephemeral volume controller to create the persistentvolumeclaim "
        "\"<pod>-<volume>\"`), a claim of that name it does not own is refused as upstream refuses it, and then "
        "it is a claim like any other (bound, or late-bound through CheckVolumeBinding).", _never,
    ),
    ModernField(
        "PersistentVolumeClaim `spec.accessModes: [ReadWriteOncePod]`",
        "a claim one pod of the whole cluster may use (1.22 alpha, GA 1.29)",
        False, "Not refused: enforced by `ReadWriteOncePod` (upstream's VolumeRestrictions): a pod whose claim "
        "another pod already uses fits no node, with the reason of the cluster's line: `node has pod using "
        "PersistentVolumeClaim with the same name and ReadWriteOncePod access mode` up to 1.33, `node(s) "
        "unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another "
        "pod` from 1.34.", _never,
    ),
    ModernField(
        "spec.containers[].restartPolicyRules `RestartAllContainers`, `hostNetwork` with `hostUsers: false`",
        "features a node must declare in `status.declaredFeatures` (NodeDeclaredFeatures, 1.36 beta)",
        False, "Not refused: enforced by `NodeDeclaredFeatures`: the pod fits only nodes whose "
        "`status.declaredFeatures` lists `RestartAllContainersOnContainerExits` / "
        "`UserNamespacesHostNetworkSupport` (`node(s) didn't match Pod's required features`). `--rules 1.9` "
        "ignores them, as 1.9 did.", _never,
    ),
    ModernField(
        "`status.containerStatuses[].resources` / `allocatedResources`, `status.resources`, "
        "`status.allocatedResources`, condition `PodResizePending`",
        "in-place pod resize (GA 1.35; pod-level resize beta in 1.36): what a running pod's containers were "
        "admitted with and run with",
        False, "Not refused: a bound pod holds, per resource, the largest of its spec, what it runs with and what "
        "the kubelet admitted (the spec no longer counts once the resize is `Infeasible`), as upstream's "
        "`PodRequests` with status resources; `run` re-accounts the node on such a status update and retries "
        "waiting pods when a pod scales down.", _never,
    ),
    ModernField(
        "PersistentVolumeClaim / PersistentVolume `spec.volumeAttributesClassName`",
        "volume attributes classes (GA 1.34, locked on in 1.36)",
        False, "Not refused: a claim binds only to a PV of its class (none: only PVs of none), as upstream's "
        "`FindMatchingVolume` with the gate on, in `CheckVolumeBinding`.", _never,
    ),
    ModernField(
        "CSI volumes (`spec.volumes[].csi`, claims bound to `spec.csi` PersistentVolumes) and `CSINode` "
        "attach limits",
        "the modern NodeVolumeLimits plugin counts CSI volumes per driver against "
        "`CSINode.spec.drivers[].allocatable.count`",
        False, "Not refused: enforced by `NodeVolumeLimits` (CSI PVs, in-tree EBS / GCE PD / Azure Disk / "
        "Cinder volumes on nodes with a CSINode, unbound claims by their class's provisioner); 1.9's "
        "MaxEBSVolumeCount / MaxGCEPDVolumeCount / MaxAzureDiskVolumeCount leave nodes with a CSINode to it.",
        _never,
    ),
    ModernField(
        "spec.resourceClaims (`resourceClaimName` / `resourceClaimTemplateName`), "
        "`status.resourceClaimStatuses`",
        "dynamic resource allocation with structured parameters (resource.k8s.io/v1: GA 1.34): the scheduler "
        "allocates devices from ResourceSlices to the pod's ResourceClaims",
        False, "Not refused: `DynamicResources` (policy_scheduler/dra/) allocates each unallocated claim as 1.36's "
        "structured allocator does (newest complete pool generation, DeviceClass and request CEL selectors, "
        "`exactly` with `count` / `allocationMode: All`, `firstAvailable`, `matchAttribute`, admin access, device "
        "taints and tolerations, shared counters, consumable capacity) and reserves it for the pod; a pod fits only "
        "where that succeeds (`cannot allocate all claims`) and where its allocated claims are available "
        "(`resourceclaim not available on the node`); missing claims and classes keep it pending with upstream's "
        "messages. Refused with a one-line message naming the feature: an allocation that would need a device "
        "with binding conditions, and extended resources backed by a DeviceClass. `--rules 1.9` ignores the claims, as 1.9 did.", _never,
    ),
)

REFUSED_FIELDS: tuple[ModernField, ...] = tuple(f for f in MODERN_FIELDS if f.refused)


def refused_fields(pod: Pod) -> list[ModernField]:
    """The refused fields ``pod`` carries (none under ``Rules.V1_9``)."""
    if pod.rules is not Rules.CLUSTER:
        return []
    spec = pod.raw.get("spec")
    if not isinstance(spec, Mapping):
        return []
    return [f for f in REFUSED_FIELDS if f.present is not None and f.present(spec, pod)]


def refusal_message(pod: Pod) -> str | None:
    """The message a refused pod's FailedScheduling event and PodScheduled condition carry, or None."""
    fields = refused_fields(pod)
    if not fields:
        return None
    return "; ".join(f.message for f in fields)


class UnsupportedFieldError(RefusedPodError):
    """The pod carries a field this scheduler refuses (:data:`REFUSED_FIELDS`); it is unschedulable here
    until the field is gone, whatever the nodes."""

    def __init__(self, pod: Pod, fields: Sequence[ModernField]) -> None:
        self.fields = tuple(fields)
        super().__init__("; ".join(f.message for f in fields))


def check_schedulable(pod: Pod) -> None:
    """Raise :class:`PodGatedError` or :class:`UnsupportedFieldError` for a pod the engine must not decide."""
    if is_gated(pod):
        raise PodGatedError(pod)
    fields = refused_fields(pod)
    if fields:
        raise UnsupportedFieldError(pod, fields)


def fields_table() -> str:
    """The Markdown table of :data:`MODERN_FIELDS` that ``docs/modern-clusters.md`` carries verbatim."""
    rows = ["| field | what it does | refused | message / why |", "|---|---|---|---|"]
    for f in MODERN_FIELDS:
        text = f"`{f.message}`. {f.why}" if f.refused else f.why
        field_name = f.field if "`" in f.field else f"`{f.field}`"
        rows.append(f"| {field_name} | {f.what} | {'yes' if f.refused else 'no'} | {text} |")
    return "\n".join(rows)
