"""The error of a pod no node fits (upstream ``core/generic_scheduler.go`` ``FitError``) and the error
text of a cluster without nodes.

Its own module so that the scheduler, which raises it, and preemption, which reads it, both import it
from here and neither imports the other for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING

from ..errors import SchedulingError
from .modern_pods import with_post_filter_message

if TYPE_CHECKING:
    from ..model.pod import Pod

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class FitError(SchedulingError):
    """No node fits the pod; the message is 1.9's ``0/N nodes are available: <histogram>.``"""

    def __init__(self, pod: Pod, num_all_nodes: int, failed_predicates: dict[str, list[str]]) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.failed_predicates = failed_predicates
        self.post_filter_message = ""
        super().__init__(fit_error_message(num_all_nodes, failed_predicates))

    def add_post_filter_message(self, message: str) -> None:
        """Upstream's ``Diagnosis.PostFilterMsg`` (cluster rules: only ``preemptionPolicy: Never``'s, 1.9
        appends none): the message becomes ``<histogram>. <message>.`` as ``FitError.Error()`` prints it."""
        self.post_filter_message = message
        self.args = (with_post_filter_message(fit_error_message(self.num_all_nodes, self.failed_predicates), message),)


def fit_error_message(num_all_nodes: int, failed_predicates: Mapping[str, Sequence[str]]) -> str:
    counts = Counter(map(str, chain.from_iterable(failed_predicates.values())))
    histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(histogram)}."
