"""Preemption's victims by arithmetic, for preemptors whose predicates only add up requests.

``selectVictimsOnNode`` asks each node the same question many times: does the preemptor fit with every
lower-priority pod removed, then with each re-added in turn? The reference answers by running every
predicate on a copy of the NodeInfo each time. For most preemptors the answer needs far less: every
predicate either ignores the pods on the node (node selector, taints, conditions; volume predicates for a
pod without volumes; inter-pod affinity when neither the pod nor any existing pod has a term that
concerns it) or reads only their summed requests and their number (PodFitsResources). The first kind
gives the same verdict whatever pods are on the node, so it is asked once; the second is arithmetic.

Each predicate declares which kind it is for a given pod (the ``preemption`` of its name's record,
:class:`.forms.Forms`, registered with the built-ins). A predicate without a declaration, or one whose
declaration says "it depends" for this pod (host ports, volumes, affinity terms, topology spread,
ServiceAffinity, any plugin), leaves the whole attempt to the reference. So does a node where the arithmetic cannot be sure (nominated pods with
affinity terms, a check that fails there). Where the preemptor does not fit even with its victims gone, every
other check passed, so the reference's reasons are the resources' (once per predicate that adds them up).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.nominated import nominated_elsewhere
from ..core.victims import Victims, VictimSelection, lower_priority_pods, reprieve, victims_key
from ..errors import PredicateError
from ..predicates.host import pod_fits_host
from ..predicates.node_selector import pod_match_node_selector
from ..predicates.resources import insufficient_resources, pod_request, resources_fit
from .predicates import pod_fits_host as pod_fits_host_form
from .predicates import pod_match_node_selector as pod_match_node_selector_form

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.disruption import PodDisruptionBudget
    from ..model.node import Node
    from ..model.pod import Pod
    from .columns import NodeColumns
    from .forms import Declaration, Forms

#: A check whose verdict no pod on the node changes: the predicate (or a part of it), and its vectorised form
#: (None: asked node by node).
Check = tuple[Callable[..., Any], Callable[..., Any] | None]


@dataclass(frozen=True, slots=True)
class Dependence:
    """How a predicate's verdict for one pod depends on the pods on the node: ``resources`` when it
    includes PodFitsResources, and ``checks``, the predicates (itself, or its parts) whose verdict no pod
    on the node changes, each with its vectorised form."""

    resources: bool = False
    checks: tuple[Check, ...] = ()


def dependence(forms: Forms | None, pod: Pod, meta: Any) -> Dependence | None:
    """What the predicate of ``forms`` (its bound record; None: it has none) declares for ``pod``."""
    if forms is None or forms.preemption is None:
        return None
    return forms.preemption(forms, pod, meta)


# -- declarations ----------------------------------------------------------------------------------
def ignores_pods(forms: Forms, pod: Pod, meta: Any) -> Dependence:
    """The verdict reads the node (and the pod) only."""
    return Dependence(checks=((forms.reference, forms.vectorized),))


def adds_up_requests(forms: Forms, pod: Pod, meta: Any) -> Dependence:
    """PodFitsResources."""
    return Dependence(resources=True)


def ignores_pods_unless(depends: Callable[[Pod, Any], bool]) -> Declaration:
    """The verdict reads the node only, unless ``depends(pod, meta)``."""
    def declaration(forms: Forms, pod: Pod, meta: Any) -> Dependence | None:
        return None if depends(pod, meta) else Dependence(checks=((forms.reference, forms.vectorized),))

    return declaration


def has_volumes(pod: Pod, meta: Any) -> bool:
    return bool(pod.volumes)


def has_host_ports(pod: Pod, meta: Any) -> bool:
    return bool(pod.host_ports)


def has_topology_spread(pod: Pod, meta: Any) -> bool:
    return bool(pod.topology_spread)


def has_affinity_terms(pod: Pod, meta: Any) -> bool:
    """The pod has inter-pod (anti-)affinity terms, or an existing pod's anti-affinity term matches it
    (removing or re-adding that pod would change the verdict); without metadata, assume so."""
    return pod.has_pod_affinity_constraints or meta is None or bool(meta.matching_anti_affinity_terms)


def general_predicates(forms: Forms, pod: Pod, meta: Any) -> Dependence | None:
    """GeneralPredicates: PodFitsResources, and host name and node selector (host ports depend on pods)."""
    if has_host_ports(pod, meta):
        return None
    return Dependence(resources=True, checks=((pod_fits_host, pod_fits_host_form),
                                              (pod_match_node_selector, pod_match_node_selector_form)))


def declarations(predicates: Iterable[tuple[Any, Forms | None]], pod: Pod, meta: Any) -> tuple[int, list[Check]] | None:
    """For ``pod``: how many of ``predicates`` (each with its bound record) add up requests, and the checks that
    ignore the pods (None when a predicate is undeclared or depends on the pods in another way)."""
    resources = 0
    checks: list[Check] = []
    for _, forms in predicates:
        dep = dependence(forms, pod, meta)
        if dep is None:
            return None
        resources += dep.resources
        checks.extend(dep.checks)
    return resources, checks


# -- the arithmetic --------------------------------------------------------------------------------
class VictimArithmetic:
    """``selectVictimsOnNode`` for one preemptor by arithmetic: built by :meth:`plan` (None when a
    predicate's verdict may depend on the pods in another way), asked per node by :meth:`select`."""

    def __init__(self, scheduler: Any, columns: NodeColumns, pod: Pod, meta: Any, resources: int,
                 checks: Sequence[Check]) -> None:
        self.pod = pod
        self.meta = meta
        self.resources = resources  # how many predicates add up requests (each gives the resources' reasons)
        self.request = pod_request(pod, meta)
        self.nominated = scheduler.nominated_pods
        self.columns = columns
        # Checks with a vectorised form are asked for every node at once (ANDed into one mask); the others
        # node by node.
        self.mask: np.ndarray | None = None
        self.per_node = []
        columns.refresh()
        for check, form in dict(checks).items():  # a check named twice (GeneralPredicates, HostName) is asked once
            mask = form(pod, meta, columns) if form is not None else None
            if mask is None:
                self.per_node.append(check)
            else:
                self.mask = mask if self.mask is None else self.mask & mask

    @classmethod
    def plan(cls, scheduler: Any, columns: NodeColumns, predicates: Iterable[tuple[Any, Forms | None]], pod: Pod,
             meta: Any) -> VictimArithmetic | None:
        """For ``pod`` and the scheduler's ``predicates`` (each with its bound record)."""
        declared = declarations(predicates, pod, meta)
        return None if declared is None else cls(scheduler, columns, pod, meta, *declared)

    def _checks_pass(self, info: NodeInfo) -> bool:
        """Every pod-independent check passes on the node; False also when unsure (a check errs, or the
        columns do not describe the node): the reference then decides."""
        if self.mask is not None:
            row = self.columns.index.get(info.name)
            if row is None or self.columns.infos[row] is not info or not self.mask[row]:
                return False
        return all(self._run(check, info) for check in self.per_node)

    def _run(self, check: Callable[..., Any], info: NodeInfo) -> bool:
        try:
            return check(self.pod, self.meta, info)[0]
        except PredicateError:
            return False

    def select(self, info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> VictimSelection | None:
        """The node's victims (or why none make room), or None to let the reference decide."""
        if info.node is None:
            return None
        if not self._checks_pass(info):
            return None
        return self._by_requests(info, pdbs, nominated=True)

    def _by_requests(self, info: NodeInfo, pdbs: Sequence[PodDisruptionBudget], nominated: bool) -> VictimSelection | None:
        """The arithmetic itself, the checks taken as passed; with ``nominated``, the node's nominated pods of
        the preemptor's priority or higher count (``addNominatedPods``' first pass)."""
        pod = self.pod
        potential = lower_priority_pods(info.pods, pod.priority)
        if not self.resources:
            return VictimSelection(True, reprieve(potential, pdbs, lambda p: True, info.name), removed=len(potential))
        requested = info.requested.clone()
        for p in potential:
            requested.sub(p.container_request)
        count = len(info.pods) - len(potential)
        if nominated and self.nominated is not None:
            # addNominatedPods' first pass; the second (without them) cannot fail where the first fits.
            for p in nominated_elsewhere(self.nominated, pod, info.name):
                if p.priority >= pod.priority:
                    if p.has_pod_affinity_constraints:
                        return None
                    requested.add(p.container_request)
                    count += 1
        allocatable, request = info.allocatable, self.request
        if not resources_fit(request, requested, count, allocatable):
            # Every other check passes: the reference's reasons are the resources', once per such predicate.
            reasons = [str(r) for r in insufficient_resources(request, requested, count, allocatable)]
            return VictimSelection(False, reasons=reasons * self.resources, removed=len(potential))
        kept = count

        def keep(p: Pod) -> bool:
            nonlocal kept
            requested.add(p.container_request)
            if resources_fit(request, requested, kept + 1, allocatable):
                kept += 1
                return True
            requested.sub(p.container_request)
            return False

        return VictimSelection(True, reprieve(potential, pdbs, keep, info.name), removed=len(potential))

    def victim_keys(self, pdbs: Sequence[PodDisruptionBudget]) -> np.ndarray:
        """For every row of the columns, :data:`KEY_COLUMNS` of :meth:`_by_requests` without nominated pods:
        kept per class of preemptors (priority, request, budgets) and brought up to date on the rows whose pods
        changed, so a preemption costs the nodes that changed since the last one, not every node."""
        key = ("Victims", self.pod.priority, self.request.request_key(), self.resources, budgets_key(pdbs))
        infos = self.columns.infos

        def compute(rows: slice | np.ndarray) -> np.ndarray:
            selected = infos[rows] if isinstance(rows, slice) else [infos[i] for i in rows.tolist()]
            out = np.zeros((len(selected), len(KEY_COLUMNS)), dtype=np.int64)
            for k, info in enumerate(selected):
                out[k] = encode(self._by_requests(info, pdbs, nominated=False) if info.node is not None else None)
            return out

        return self.columns.per_preemptor_class(key, compute)


# -- one preemption's candidates, picked from the victim table -------------------------------------
#: A victim table's columns: FITS (1 fits, 0 does not, UNSURE: the node is left to a node-by-node answer), then
#: what ``pickOneNodeForPreemption`` compares, in its order, the victims' count last.
KEY_COLUMNS = ("fits", "pdb_violations", "top_priority", "priority_sum", "victims")
FITS, PDB_VIOLATIONS, TOP_PRIORITY, PRIORITY_SUM, COUNT = range(len(KEY_COLUMNS))
UNSURE = 2


def encode(selection: VictimSelection | None) -> tuple[int, int, int, int, int]:
    """One node's row of a victim table: FITS, then its ``victims_key`` when it fits."""
    if selection is None:
        return (UNSURE, 0, 0, 0, 0)
    if not selection.fits:
        return (0, 0, 0, 0, 0)
    assert selection.victims is not None
    return (1, *victims_key(selection.victims))


def budgets_key(pdbs: Sequence[PodDisruptionBudget]) -> tuple[tuple[str, str, int, str], ...]:
    """What the reprieve reads of the budgets, in order (a budget updated or re-ordered is another class)."""
    return tuple((b.namespace, b.name, b.disruptions_allowed, repr((b.raw.get("spec") or {}).get("selector")))
                 for b in pdbs)


class VictimTable:
    """The candidates of one preemption on the vectorised path: every potential node's victim keys, from the
    class's table where the node holds no nominated pod and passes the preemptor's pod-independent checks, node
    by node (the arithmetic, else ``reference``) elsewhere. :meth:`pick` is ``pickOneNodeForPreemption`` over
    them; :meth:`victims` builds the chosen node's ``Victims`` only."""

    def __init__(self, arithmetic: VictimArithmetic, potential: Sequence[Node], pdbs: Sequence[PodDisruptionBudget],
                 infos: Mapping[str, NodeInfo], reference: Callable[[NodeInfo | None], VictimSelection]) -> None:
        cols = arithmetic.columns
        self.arithmetic, self.pdbs, self.infos = arithmetic, pdbs, infos
        self.names = [n.name for n in potential]
        index = cols.index
        if len(potential) == len(cols.nodes) and all(map(operator.is_, potential, cols.nodes)):
            rows = np.arange(len(potential), dtype=np.int64)  # every node, as the columns hold them
        else:
            rows = np.fromiter((index.get(name, -1) for name in self.names), dtype=np.int64, count=len(self.names))
        keys = np.zeros((len(rows), len(KEY_COLUMNS)), dtype=np.int64)
        known = rows >= 0
        keys[known] = arithmetic.victim_keys(pdbs)[rows[known]]
        by_node = ~known | (keys[:, FITS] == UNSURE)
        if arithmetic.per_node:
            by_node[:] = True
        elif arithmetic.mask is not None:
            by_node[known] |= ~arithmetic.mask[rows[known]]
        if arithmetic.nominated is not None:
            position = np.full(len(cols.names), -1, dtype=np.int64)
            position[rows[known]] = np.flatnonzero(known)
            for name in arithmetic.nominated.nominated_nodes():
                row = index.get(name)
                if row is not None and position[row] >= 0 and nominated_elsewhere(arithmetic.nominated, arithmetic.pod, name):
                    by_node[position[row]] = True
        self.selections: dict[int, VictimSelection] = {}
        for k in np.flatnonzero(by_node).tolist():
            info = infos.get(self.names[k])
            selection = arithmetic.select(info, pdbs) if info is not None else None
            if selection is None:
                selection = reference(info)
            self.selections[k] = selection
            keys[k] = encode(selection)
        self.keys = keys
        self.candidates = np.flatnonzero(keys[:, FITS] == 1)

    def pick(self) -> str | None:
        """``pickOneNodeForPreemption``: a node needing no eviction at once, else the fewest PDB violations, the
        lowest first victim's priority, the smallest sum, the fewest victims; ties to the first in node order."""
        candidates = self.candidates
        if not candidates.size:
            return None
        keys = self.keys[candidates]
        free = np.flatnonzero(keys[:, COUNT] == 0)
        if free.size:
            return self.names[int(candidates[free[0]])]
        left = np.arange(candidates.size)
        for column in (PDB_VIOLATIONS, TOP_PRIORITY, PRIORITY_SUM, COUNT):
            values = keys[left, column]
            left = left[values == values.min()]
            if left.size == 1:
                break
        return self.names[int(candidates[left[0]])]

    def victims(self, name: str) -> Victims:
        k = self.names.index(name)
        selection = self.selections.get(k)
        if selection is None:
            selection = self.arithmetic.select(self.infos[name], self.pdbs)  # a table row: the same arithmetic
        assert selection is not None and selection.fits and selection.victims is not None
        return selection.victims

    def drop(self, name: str) -> None:
        k = self.names.index(name)
        self.candidates = self.candidates[self.candidates != k]


def nominated_first_pass(predicates: Iterable[tuple[Any, Forms | None]], pod: Pod,
                         meta: Any) -> Callable[[NodeInfo, Sequence[Pod]], bool | None] | None:
    """``addNominatedPods``' first pass by arithmetic (the node's verdict with the nominated pods of the pod's
    priority or higher added): for a pod whose predicates all ignore the pods on a node or add up their
    requests, only PodFitsResources can change, so the pass fails where the vectorised verdict did or where
    the nominated pods' requests leave no room. The function answers for a node and its nominated pods; None
    when one of them has inter-pod terms (the reference decides). None when a predicate is undeclared.
    ``predicates``: the pod's, each with its bound record."""
    declared = declarations(predicates, pod, meta)
    if declared is None:
        return None
    resources = declared[0]
    request = pod_request(pod, meta)

    def fits(info: NodeInfo, nominated: Sequence[Pod]) -> bool | None:
        added = [p for p in nominated if p.priority >= pod.priority]
        if any(p.has_pod_affinity_constraints for p in added):
            return None
        if not resources or not added:
            return True
        requested = info.requested.clone()
        for p in added:
            requested.add(p.container_request)
        return resources_fit(request, requested, len(info.pods) + len(added), info.allocatable)

    return fits
