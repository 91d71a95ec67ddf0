"""The victims on one node (upstream 1.9 ``selectVictimsOnNode``'s second half), whoever checks the fit.

Once the preemptor fits with every lower-priority pod removed, those pods are re-added one at a time,
highest priority first, the ones a PodDisruptionBudget protects before the others; each is kept if the
preemptor still fits and is otherwise a victim. How "still fits" is decided is the caller's: the
reference runs every predicate on a copy of the NodeInfo (:mod:`policy_scheduler.core.preemption`), the
arithmetic form adds up requests (:mod:`policy_scheduler.fastpath.preemption`). The order and the
bookkeeping live here, once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..model.disruption import PodDisruptionBudget
from ..model.pod import Pod

log = logging.getLogger(__name__)

#: Added to each victim's priority before summing, so that every term is positive (``math.MaxInt32 + 1``).
PRIORITY_OFFSET = 2**31


@dataclass(slots=True)
class Victims:
    """``Victims``: the pods to evict on one node, highest priority first, and how many of them a
    PodDisruptionBudget protects; ``pdbs`` maps each such victim's key to the budget it violates."""

    pods: list[Pod]
    num_pdb_violations: int = 0
    pdbs: dict[str, PodDisruptionBudget] = field(default_factory=dict)


@dataclass(slots=True)
class VictimSelection:
    """One node's ``selectVictimsOnNode``: whether the preemptor fits once evictions are done, the
    victims, the failure reasons when it does not fit, and how many lower-priority pods were removed."""

    fits: bool
    victims: Victims | None = None
    reasons: list[str] = field(default_factory=list)
    removed: int = 0


def victims_key(victims: Victims) -> tuple[int, int, int, int]:
    """What ``pickOneNodeForPreemption`` compares, in its order: PDB violations, the first victim's priority,
    the sum of (priority + 2^31) over the victims, their number."""
    pods = victims.pods
    return (victims.num_pdb_violations, pods[0].priority if pods else 0,
            sum(p.priority + PRIORITY_OFFSET for p in pods), len(pods))


def pdb_blocking(pod: Pod, pdbs: Iterable[PodDisruptionBudget]) -> PodDisruptionBudget | None:
    """The first budget covering ``pod`` that allows no more disruptions (``filterPodsWithPDBViolation``)."""
    for pdb in pdbs:
        if pdb.selects(pod) and pdb.disruptions_allowed <= 0:
            return pdb
    return None


def lower_priority_pods(pods: Iterable[Pod], priority: int) -> list[Pod]:
    """The pods below ``priority``, in NodeInfo order (the ones removed before the first fit check)."""
    return [p for p in pods if p.priority < priority]


def reprieve(potential: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget], keep: Callable[[Pod], bool],
             node_name: str) -> Victims:
    """Re-add ``potential`` (the removed lower-priority pods) highest priority first, PDB-protected ones
    first; ``keep(p)`` adds ``p`` back and says whether the preemptor still fits (if not, it must take
    ``p`` out again). Those not kept are the victims."""
    # util.HigherPriorityPod through sort.Sort; stable here (equal priorities keep NodeInfo order).
    ordered = sorted(potential, key=lambda p: -p.priority)
    victims = Victims([])
    violating: list[tuple[Pod, PodDisruptionBudget]] = []
    non_violating: list[Pod] = []
    for p in ordered:
        pdb = pdb_blocking(p, pdbs) if pdbs else None
        if pdb is not None:
            violating.append((p, pdb))
        else:
            non_violating.append(p)
    for p, pdb in violating:
        if not keep(p):
            _evict(victims, p, node_name)
            victims.num_pdb_violations += 1
            victims.pdbs[p.key] = pdb
    for p in non_violating:
        if not keep(p):
            _evict(victims, p, node_name)
    return victims


def _evict(victims: Victims, p: Pod, node_name: str) -> None:
    victims.pods.append(p)
    if log.isEnabledFor(logging.DEBUG):
        log.debug("Pod %s is a potential preemption victim on node %s.", p.ref, node_name)
