"""Policy validation with Kubernetes 1.9's rules and texts.

* :func:`validate_policy` is upstream's ``ValidatePolicy`` (``api/validation/validation.go``), run by
  ``CreateFromConfig`` before anything is registered: it collects every error, in upstream's order.
  :func:`aggregate_message` renders the list as upstream's aggregate error does.
* :func:`check_arguments` reports what upstream only finds while registering the policy's entries
  (and treats as fatal): argument objects without exactly one member, and invalid names of entries
  that carry an argument.
* :func:`check_hard_pod_affinity_weight` reports early what upstream checks when building the scheduler.
* :func:`unknown_names` resolves entry names against the registered ones, as registration does.
* :func:`check_policy` runs all checks that need no registry.

Each problem is a :class:`PolicyValidationError` with the field path (``priorities[2].weight``) and
upstream's message.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

from .names import algorithm_name_message, is_valid_algorithm_name
from .types import MAX_WEIGHT, Policy, PredicatePolicy, PriorityPolicy

__all__ = [
    "PolicyValidationError",
    "aggregate_message",
    "check_arguments",
    "check_hard_pod_affinity_weight",
    "check_policy",
    "unknown_names",
    "validate_policy",
]


@dataclass(frozen=True)
class PolicyValidationError:
    """One problem in a Policy: where (a JSON path such as ``extenders[0].weight``) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def validate_policy(policy: Policy) -> list[PolicyValidationError]:
    """Upstream ``ValidatePolicy``: priority weights, extender weights, at most one binding extender."""
    errors: list[PolicyValidationError] = []
    for index, priority in enumerate(policy.priorities or []):
        if priority.weight <= 0 or priority.weight >= MAX_WEIGHT:
            errors.append(PolicyValidationError(
                f"priorities[{index}].weight",
                f"Priority {priority.name} should have a positive weight applied to it or it has overflown",
            ))
    binders = 0
    for index, extender in enumerate(policy.extenders or []):
        if extender.prioritize_verb and extender.weight <= 0:
            errors.append(PolicyValidationError(
                f"extenders[{index}].weight",
                f"Priority for extender {extender.url_prefix} should have a positive weight applied to it",
            ))
        if extender.bind_verb:
            binders += 1
    if binders > 1:
        errors.append(PolicyValidationError("extenders", f"Only one extender can implement bind, found {binders}"))
    return errors


def aggregate_message(errors: Iterable[PolicyValidationError]) -> str:
    """Upstream's aggregate error text: ``""`` for none, the message for one, ``[m1, m2]`` for more."""
    messages = [error.message for error in errors]
    if len(messages) == 1:
        return messages[0]
    return f"[{', '.join(messages)}]" if messages else ""


def check_arguments(policy: Policy) -> list[PolicyValidationError]:
    """Registration-time checks of entries with an ``argument``, in document order.

    * not exactly one argument member set → ``Exactly 1 predicate argument is required, numArgs: <n>,
      Predicate: <name>`` (``Priority`` likewise), path ``...argument``;
    * invalid name → ``Algorithm name <name> does not match the name validation regexp "..."``, path
      ``...name``.

    Upstream stops at the first of these (they are fatal); this lists all of them.
    """
    errors: list[PolicyValidationError] = []
    for index, predicate in enumerate(policy.predicates or []):
        if predicate.argument is not None:
            errors += _argument_errors(f"predicates[{index}]", "predicate", "Predicate", predicate.name,
                                       predicate.argument.num_args())
    for index, priority in enumerate(policy.priorities or []):
        if priority.argument is not None:
            errors += _argument_errors(f"priorities[{index}]", "priority", "Priority", priority.name,
                                       priority.argument.num_args())
    return errors


def _argument_errors(path: str, noun: str, label: str, name: str, num_args: int) -> list[PolicyValidationError]:
    errors: list[PolicyValidationError] = []
    if num_args != 1:
        errors.append(PolicyValidationError(
            f"{path}.argument", f"Exactly 1 {noun} argument is required, numArgs: {num_args}, {label}: {name}"
        ))
    if not is_valid_algorithm_name(name):
        errors.append(PolicyValidationError(f"{path}.name", algorithm_name_message(name)))
    return errors


def check_hard_pod_affinity_weight(policy: Policy) -> list[PolicyValidationError]:
    """A non-zero ``hardPodAffinitySymmetricWeight`` must be in 1..100 (upstream checks it at build)."""
    weight = policy.hard_pod_affinity_symmetric_weight
    if weight == 0 or 1 <= weight <= 100:
        return []
    return [PolicyValidationError(
        "hardPodAffinitySymmetricWeight",
        f"invalid hardPodAffinitySymmetricWeight: {weight}, must be in the range 1-100",
    )]


def check_policy(policy: Policy) -> list[PolicyValidationError]:
    """:func:`validate_policy`, then :func:`check_arguments`, then :func:`check_hard_pod_affinity_weight`."""
    return validate_policy(policy) + check_arguments(policy) + check_hard_pod_affinity_weight(policy)


def unknown_names(
    policy: Policy, known_predicates: Set[str], known_priorities: Set[str]
) -> list[PolicyValidationError]:
    """Entries without an argument whose name is not registered, as registration finds them.

    Entries are taken in document order and an entry with an argument registers its name, so a later
    plain entry may refer to it (upstream: ``... already registered, reusing``) but an earlier one may
    not. Texts: ``Invalid configuration: Predicate type not found for <name>`` (``Priority`` likewise).
    """
    return _unknown("predicates", "Predicate", policy.predicates, known_predicates) + _unknown(
        "priorities", "Priority", policy.priorities, known_priorities
    )


def _unknown(
    section: str, noun: str, entries: list[PredicatePolicy] | list[PriorityPolicy] | None, known: Set[str]
) -> list[PolicyValidationError]:
    names = set(known)
    errors: list[PolicyValidationError] = []
    for index, entry in enumerate(entries or []):
        if entry.argument is not None:
            names.add(entry.name)
        elif entry.name not in names:
            errors.append(PolicyValidationError(
                f"{section}[{index}].name", f"Invalid configuration: {noun} type not found for {entry.name}"
            ))
    return errors
