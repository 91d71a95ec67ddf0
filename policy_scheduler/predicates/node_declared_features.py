"""NodeDeclaredFeatures: a pod lands only on a node that declares every feature the pod needs (upstream's
``pkg/scheduler/framework/plugins/nodedeclaredfeatures``, 1.36 beta and in the default profile).

1.9 never knew ``status.declaredFeatures``, so this applies under the cluster's rules to every pod that
requires a feature, whatever the Policy names (:func:`policy_scheduler.factory.pod_scoped_algorithms`); a
Policy may name it too. What a pod requires is :func:`~..model.node_features.required_features`
(``InferForPodScheduling`` at the scheduler's version 1.36.3): a container with a ``RestartAllContainers``
restart rule needs ``RestartAllContainersOnContainerExits``, ``hostNetwork`` with ``hostUsers: false`` needs
``UserNamespacesHostNetworkSupport``. A pod that requires nothing fits every node (upstream's PreFilter
skips the plugin). A node lacking a required feature fails with upstream's reason, which is
``UnschedulableAndUnresolvable`` there: preemption never helps on it (``core/preemption.py``).

The verdict reads the node and the pod only, so preemption's arithmetic asks it once per node and the
vectorised form (:func:`policy_scheduler.fastpath.predicates.node_declared_features`) is a set test per node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..model.node_features import required_features
from .metadata import require_node

if TYPE_CHECKING:
    from ..algorithm import FitPredicate, PluginFactoryArgs
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

NAME = "NodeDeclaredFeatures"
#: ``nodedeclaredfeatures.errReasonUnsatisfiedRequirements``.
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"


class NodeDeclaredFeaturesChecker:
    """The filter; the pod's requirements (``infer``, upstream's PreFilter) are inferred once per pod (the last
    pod asked is remembered, as the scheduler asks about one pod on every node in turn)."""

    def __init__(self, infer: Callable[[Pod], frozenset[str]] = required_features) -> None:
        self.infer = infer
        self._last: tuple[Any, Any, frozenset[str]] = (None, None, frozenset())

    def requirements(self, pod: Pod) -> frozenset[str]:
        last_pod, last_raw, reqs = self._last
        if last_pod is pod and last_raw is pod.raw:
            return reqs
        reqs = self.infer(pod)
        self._last = (pod, pod.raw, reqs)
        return reqs

    def applies(self, pod: Pod) -> bool:
        return bool(self.requirements(pod))

    def __call__(self, pod: Pod, meta: Any, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
        reqs = self.requirements(pod)
        if not reqs:
            return True, []
        if reqs <= require_node(node_info).declared_features:
            return True, []
        return False, [ERR_REASON_UNSATISFIED_REQUIREMENTS]


def new_node_declared_features_predicate(args: PluginFactoryArgs) -> FitPredicate:
    return NodeDeclaredFeaturesChecker()
