"""Typed errors.

Errors a user can cause (a bad policy file, a malformed manifest, an unknown provider) are subclasses of
:class:`UserError`; the CLI prints their message on one line and exits 2. Their messages name the source
file, the object and the field path where one is known.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# A list of valid names this short is given whole with an unknown one (providers, scenario kinds, gates).
LIST_ALL_UP_TO = 8
# difflib's similarity from which a known name is suggested: click's 0.6 suggested DynamicResources for
# StrictResources and MatchInterPodAffinity for NodeAffinity; a typo or a missing suffix scores 0.75 and up.
CLOSE_ENOUGH = 0.75


class UserError(Exception):
    """An error caused by user input; rendered on one line, never as a traceback."""


def did_you_mean(name: str, known: Iterable[str], list_all_up_to: int = LIST_ALL_UP_TO) -> str:
    """The hint appended to an unknown-name error: ``; did you mean "X"?`` with the closest known names
    (difflib's similarity, as click suggests options, of at least :data:`CLOSE_ENOUGH`; at most three, within
    0.05 of the best;
    a name differing only in case alone), then `` (valid: A, B)`` when there are at most ``list_all_up_to``
    known names. Empty when neither helps."""
    names = sorted(set(known))
    by_lower: dict[str, str] = {}
    for known_name in names:
        by_lower.setdefault(known_name.lower(), known_name)
    wanted = name.lower()
    if wanted in by_lower:
        close = [by_lower[wanted]]
    else:  # the best matches only: a clear first one is not followed by the merely similar
        scored = sorted(((difflib.SequenceMatcher(None, wanted, lower).ratio(), lower) for lower in by_lower),
                        key=lambda pair: -pair[0])
        best = scored[0][0] if scored else 0.0
        close = [by_lower[lower] for ratio, lower in scored[:3] if ratio >= max(CLOSE_ENOUGH, best - 0.05)]
    hint = ""
    if close and close != [name]:
        hint = "; did you mean " + " or ".join(f'"{c}"' for c in close) + "?"
    if names and len(names) <= list_all_up_to:
        hint += " (valid: " + ", ".join(names) + ")"
    return hint


class ObjectError(UserError):
    """A Kubernetes object (pod, node, ...) has an invalid field.

    ``obj`` is ``Kind namespace/name`` (or ``Kind name``), ``field`` the JSON path inside it.
    """

    def __init__(self, obj: str, field: str, message: str, source: str | None = None) -> None:
        self.obj = obj
        self.field = field
        self.detail = message
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{obj}: {field}: {message}")

    def with_source(self, source: str) -> ObjectError:
        return ObjectError(self.obj, self.field, self.detail, source)


class PolicyError(UserError):
    """A scheduler Policy cannot be decoded, is invalid, or names something unknown."""


class ConfigurationError(UserError):
    """A registry configuration error.

    Upstream 1.9 treats these as fatal (glog.Fatalf, exit 255) during start-up: invalid algorithm
    names, unknown predicate/priority types in a Policy, wrong argument counts.
    """


class SnapshotError(UserError):
    """A cluster snapshot (manifests) cannot be loaded."""


class SchedulingError(Exception):
    """A scheduling attempt failed with an error that is not a FitError (upstream: a plain ``error``).

    Raised by predicates and priorities (``node not found``, unbound PVCs, bad selectors), aggregated
    by the generic scheduler.
    """


class RefusedPodError(SchedulingError):
    """The pod needs something this scheduler refuses to decide (a field it does not implement, a DRA feature
    its devices would need): unschedulable here, whatever the nodes, until that changes."""


class PredicateError(SchedulingError):
    """A fit predicate could not decide (upstream: the predicate returned a non-nil error).

    Some upstream predicates return failure reasons together with the error (MatchInterPodAffinity's
    empty topologyKey); ``reasons`` keeps them. The error still aborts the scheduling attempt.
    """

    def __init__(self, message: str, reasons: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = list(reasons)


class PriorityError(SchedulingError):
    """A priority function failed (upstream: a map/reduce/function error)."""
