"""Where a scheduler's algorithm comes from: a named provider or a Policy (file, ConfigMap or text).

Flag precedence follows kube-scheduler with the 1.10 fix of the 1.9 regression (``policy.md`` §6.1):
``--use-legacy-policy-config`` or a ``--policy-config-file`` without ``--policy-configmap`` selects
the file; else ``--policy-configmap``; else ``--algorithm-provider``; else ``DefaultProvider``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .api import load_policy_file
from .api.types import Policy
from .cache.cluster import ClusterState
from .core.generic_scheduler import GenericScheduler
from .errors import PolicyError, UserError
from .factory import ExtenderFactory, create_from_policy, create_from_provider
from .features import DEFAULT_FEATURE_GATES, FeatureGates
from .registry import DEFAULT_PROVIDER, Registry, RegistryError


@dataclass(frozen=True)
class AlgorithmSource:
    """Exactly one of ``provider`` / ``policy``; ``label`` names it in reports."""

    label: str
    provider: str | None = None
    policy: Policy | None = None

    def build(
        self,
        cluster: ClusterState,
        *,
        feature_gates: FeatureGates = DEFAULT_FEATURE_GATES,
        hard_pod_affinity_symmetric_weight: int = 1,
        extender_factory: ExtenderFactory | None = None,
        vectorized: bool = True,
    ) -> GenericScheduler:
        """Build a scheduler over ``cluster``; errors carry kube-scheduler's start-up wording."""
        if self.provider is not None:
            try:
                return create_from_provider(
                    self.provider,
                    cluster=cluster,
                    feature_gates=feature_gates,
                    hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight,
                    vectorized=vectorized,
                )
            except UserError as e:
                raise RegistryError(f'couldn\'t create scheduler using provider "{self.provider}": {e}') from None
        assert self.policy is not None
        try:
            return create_from_policy(
                self.policy,
                cluster=cluster,
                feature_gates=feature_gates,
                hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight,
                extender_factory=extender_factory,
                vectorized=vectorized,
            )
        except UserError as e:
            raise PolicyError(f"{self.label}: couldn't create scheduler from policy: {e}") from None


def from_provider(name: str) -> AlgorithmSource:
    return AlgorithmSource(label=name, provider=name)


def from_policy_file(path: str) -> AlgorithmSource:
    return AlgorithmSource(label=path, policy=load_policy_file(path))


def from_flags(
    policy_config_file: str | None = None,
    algorithm_provider: str | None = None,
    policy_configmap: str | None = None,
    use_legacy_policy_config: bool = False,
) -> AlgorithmSource:
    """The offline commands' choice (a ConfigMap source needs an API server: the daemon resolves it)."""
    if use_legacy_policy_config or (policy_config_file and not policy_configmap):
        if not policy_config_file:
            raise PolicyError("missing policy config file ")
        return from_policy_file(policy_config_file)
    if policy_configmap:
        raise PolicyError("--policy-configmap needs an API server; use `policy-scheduler run`")
    return from_provider(algorithm_provider or DEFAULT_PROVIDER)


def from_argument(text: str) -> AlgorithmSource:
    """A file path if one exists there, else a provider name (the ``compare`` command's arguments)."""
    if Path(text).is_file():
        return from_policy_file(text)
    if "/" in text or text.endswith((".json", ".yaml", ".yml")):
        raise PolicyError(f"missing policy config file {text}: no such file")
    return from_provider(text)


def process_registry() -> Registry:
    """The process registry: the built-ins, then the plugins (loaded once; a broken plugin is a warning).
    Every command, and every sweep worker, reaches the registry this way."""
    from algorithmprovider import defaults  # noqa: F401  (registers the built-ins)

    from .plugins import load_plugins
    from .registry import REGISTRY

    load_plugins()
    return REGISTRY


def scheduler_builder(source: AlgorithmSource, gates: FeatureGates,
                      hard_pod_affinity_symmetric_weight: int = 1) -> Callable[[ClusterState], GenericScheduler]:
    """A :data:`~.offline.results.SchedulerBuilder` for ``source``: one scheduler per cluster it is given.

    The algorithm is built once here, over an empty cluster, so that one that cannot be built fails before
    any work (building an extender calls nothing). A Policy's HTTP extenders are called for real, one
    connection pool each, shared by every scheduler built."""
    from .core.http_extender import HTTPExtenderFactory

    process_registry()
    extenders = HTTPExtenderFactory()
    source.build(ClusterState(), feature_gates=gates,
                 hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight, extender_factory=extenders)
    return lambda cluster: source.build(cluster, feature_gates=gates,
                                        hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight,
                                        extender_factory=extenders)
