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

import re
from collections.abc import Iterable, Set
from dataclasses import dataclass

from ..errors import did_you_mean
from ..model.resources import is_extended_resource_name
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
    """Upstream ``ValidatePolicy``: priority weights, extender weights, at most one binding extender.

    Extenders' ``managedResources`` (not in 1.9) are checked as 1.10 does: each name a qualified name and
    an extended resource name, no name managed twice (across all extenders).
    """
    errors: list[PolicyValidationError] = []
    for index, priority in enumerate(policy.priorities or []):
        if priority.weight <= 0 or priority.weight >= MAX_WEIGHT:
            errors.append(PolicyValidationError(
                f"priorities[{index}].weight",
                f"Priority {priority.name} should have a positive weight applied to it or it has overflown",
            ))
    binders = 0
    managed: set[str] = set()
    for index, extender in enumerate(policy.extenders or []):
        if extender.prioritize_verb and extender.weight <= 0:
            errors.append(PolicyValidationError(
                f"extenders[{index}].weight",
                f"Priority for extender {extender.url_prefix} should have a positive weight applied to it",
            ))
        if extender.bind_verb:
            binders += 1
        for j, resource in enumerate(extender.managed_resources or ()):
            path = f"extenders[{index}].managedResources[{j}].name"
            errors += [PolicyValidationError(path, m) for m in extended_resource_name_errors(resource.name)]
            if resource.name in managed:
                errors.append(PolicyValidationError(
                    path, f"Duplicate extender managed resource name {resource.name}"
                ))
            managed.add(resource.name)
    if binders > 1:
        errors.append(PolicyValidationError("extenders", f"Only one extender can implement bind, found {binders}"))
    return errors


_QNAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(f"^{_QNAME}$")
_DNS1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_RE = re.compile(f"^{_DNS1123}$")
_QNAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_QNAME}')"
)


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery's ``IsQualifiedName`` messages (1.10 texts)."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return [f"a qualified name {_QNAME_MESSAGE} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not _DNS1123_RE.match(prefix):
                errors.append(
                    "prefix part a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                    f"for validation is '{_DNS1123}')"
                )
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QNAME_RE.match(name):
        errors.append(f"name part {_QNAME_MESSAGE}")
    return errors


def extended_resource_name_errors(name: str) -> list[str]:
    """1.10 ``validateExtendedResourceName``: a qualified name, and an extended resource name."""
    errors = qualified_name_errors(name)
    if errors:
        return errors
    if not is_extended_resource_name(name) or qualified_name_errors(f"requests.{name}"):
        return [f"{name} is an invalid extended resource name"]
    return []


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
    not. Texts: ``Invalid configuration: Predicate type not found for <name>`` (``Priority`` likewise), then
    the closest registered names (``; did you mean "<name>"?``).
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
                f"{section}[{index}].name",
                f"Invalid configuration: {noun} type not found for {entry.name}" + did_you_mean(entry.name, names),
            ))
    return errors
