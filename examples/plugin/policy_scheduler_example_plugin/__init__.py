"""An example policy-scheduler plugin: racks named by a node label and asked for by a pod annotation.

* predicate ``PodAnnotationMatchesNodeLabel``: a pod annotated ``example.com/rack: <rack>`` fits only
  nodes labelled ``example.com/rack: <rack>`` (pods without the annotation fit everywhere);
* priority ``PreferLabelledRack`` (map + reduce, default weight 1): nodes in the pod's rack score 10,
  nodes in another labelled rack 5, unlabelled nodes 0;
* provider ``ExampleProvider``: DefaultProvider's predicates and priorities plus these two.

Each ``register_*`` function is an entry point (see ``setup.cfg``): policy-scheduler calls it with its
registry at start-up, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .predicates import ERR_RACK_MISMATCH, RACK_KEY, AnnotationMatchesLabel, RackMismatch
from .priorities import prefer_labelled_rack_map, prefer_labelled_rack_reduce

if TYPE_CHECKING:
    from policy_scheduler.registry import Registry

__version__ = "0.1.0"

PREDICATE = "PodAnnotationMatchesNodeLabel"
PRIORITY = "PreferLabelledRack"
PROVIDER = "ExampleProvider"

__all__ = [
    "ERR_RACK_MISMATCH",
    "PREDICATE",
    "PRIORITY",
    "PROVIDER",
    "RACK_KEY",
    "AnnotationMatchesLabel",
    "RackMismatch",
    "prefer_labelled_rack_map",
    "prefer_labelled_rack_reduce",
    "register_predicates",
    "register_priorities",
    "register_provider",
]


def register_predicates(registry: Registry) -> None:
    """Entry point ``policy_scheduler.predicates:rack-annotation``."""
    registry.register_fit_predicate(PREDICATE, AnnotationMatchesLabel(RACK_KEY))


def register_priorities(registry: Registry) -> None:
    """Entry point ``policy_scheduler.priorities:labelled-rack`` (default weight 1; a policy sets its own)."""
    registry.register_priority_function2(PRIORITY, prefer_labelled_rack_map, prefer_labelled_rack_reduce, 1)


def register_provider(registry: Registry) -> None:
    """Entry point ``policy_scheduler.providers:example-provider``: DefaultProvider's keys plus ours.

    The providers group loads after the predicates and priorities groups, so our names exist by now
    (if their plugin failed to load, building ExampleProvider fails and names that plugin).
    """
    default = registry.get_algorithm_provider("DefaultProvider")
    registry.register_algorithm_provider(
        PROVIDER, default.fit_predicate_keys | {PREDICATE}, default.priority_function_keys | {PRIORITY}
    )
