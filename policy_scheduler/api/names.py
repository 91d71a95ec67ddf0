"""Algorithm name validation (upstream ``factory/plugins.go`` ``validateAlgorithmNameOrDie``).

Every registered predicate, priority and provider name must fully match :data:`ALGORITHM_NAME_REGEXP`:
ASCII letters, digits and ``-``, starting and ending with a letter or digit, at least two characters
(the parenthesised group is not optional, so ``"A"`` is rejected). Upstream treats a mismatch as fatal;
here it raises :class:`~policy_scheduler.errors.ConfigurationError`.
"""

from __future__ import annotations

import re

from policy_scheduler.errors import ConfigurationError

ALGORITHM_NAME_REGEXP = "^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])$"

# fullmatch: Python's "$" would also match before a trailing newline; Go's does not.
_ALGORITHM_NAME = re.compile(ALGORITHM_NAME_REGEXP)


def is_valid_algorithm_name(name: str) -> bool:
    """Whether ``name`` fully matches :data:`ALGORITHM_NAME_REGEXP`."""
    return _ALGORITHM_NAME.fullmatch(name) is not None


def algorithm_name_message(name: str) -> str:
    """Upstream's text for an invalid name."""
    return f'Algorithm name {name} does not match the name validation regexp "{ALGORITHM_NAME_REGEXP}".'


def validate_algorithm_name(name: str) -> str:
    """Return ``name`` if valid, else raise :class:`ConfigurationError` with upstream's text."""
    if not is_valid_algorithm_name(name):
        raise ConfigurationError(algorithm_name_message(name))
    return name
