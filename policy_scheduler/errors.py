"""Typed errors.

Errors a user can cause (a bad policy file, a malformed manifest, an unknown provider) are subclasses of
:class:`UserError`; the CLI prints their message on one line and exits 2. Their messages name the source
file, the object and the field path where one is known.
"""

from __future__ import annotations


class UserError(Exception):
    """An error caused by user input; rendered on one line, never as a traceback."""


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
