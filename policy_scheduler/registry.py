"""The algorithm registry (upstream ``factory/plugins.go``).

Maps of fit-predicate factories (plus the mandatory predicate names), priority-config factories,
algorithm providers (named key sets) and the two metadata producers. :data:`REGISTRY` is the process
registry that :mod:`algorithmprovider.defaults` fills on import and that third-party plugins extend; the
module-level functions (``register_fit_predicate`` …) act on it (on a plugin's staging copy while that
plugin loads). :mod:`policy_scheduler.plugins` loads the plugins and records, on the registry, which
distribution registered each name and which plugins failed (:mod:`policy_scheduler.provenance`); an
unknown-name error names the latter. The registry does not import the loader: load plugins with
:func:`policy_scheduler.plugins.load_plugins`.

A name may be registered with the fast path's record of it (``forms=``: its vectorised form, reasons form,
the reduce that form includes and preemption's declaration, :class:`policy_scheduler.fastpath.forms.Forms`, or a
function making one from what the name's factory builds); the registry only keeps it beside the name, and a name
registered again without one has none. A name without a record is run the reference way only.

Building a scheduler from a Policy registers the Policy's custom predicates and priorities, which in
upstream mutates the global maps (changing, for instance, a built-in priority's default weight for the
rest of the process). :func:`policy_scheduler.factory.create_from_policy` does that on a
:meth:`Registry.copy`, so several schedulers built in one process do not leak into each other.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .algorithm import (
    FitPredicate,
    FitPredicateFactory,
    PluginFactoryArgs,
    PriorityConfig,
    PriorityConfigFactory,
    PriorityFunction,
    PriorityMapFunction,
    PriorityReduceFunction,
)
from .api.names import validate_algorithm_name
from .api.types import MAX_PRIORITY, MAX_TOTAL_PRIORITY
from .errors import ConfigurationError, UserError, did_you_mean

if TYPE_CHECKING:
    from .api.types import PredicatePolicy, PriorityPolicy
    from .provenance import PluginFailure, PluginSource

log = logging.getLogger(__name__)

DEFAULT_PROVIDER = "DefaultProvider"

PredicateMetadataProducerFactory = Callable[[PluginFactoryArgs, "Registry"], Callable]
PriorityMetadataProducerFactory = Callable[[PluginFactoryArgs], Callable]


class RegistryError(UserError):
    """A lookup or build error (upstream returns these as ordinary errors)."""


@dataclass(slots=True)
class AlgorithmProviderConfig:
    fit_predicate_keys: set[str]
    priority_function_keys: set[str]


class Registry:
    """One set of registries. All mutations take a single lock, as upstream's do."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.fit_predicates: dict[str, FitPredicateFactory] = {}
        self.mandatory_fit_predicates: set[str] = set()
        self.priorities: dict[str, PriorityConfigFactory] = {}
        self.providers: dict[str, AlgorithmProviderConfig] = {}
        self.predicate_metadata_producer: PredicateMetadataProducerFactory | None = None
        self.priority_metadata_producer: PriorityMetadataProducerFactory | None = None
        # ServiceAffinity precompute functions, by policy name; every entry runs for every pod.
        self.predicate_metadata_producers: dict[str, Callable[[Any], None]] = {}
        # Provenance of plugin entries, by kind ("predicate", "priority", "provider") and name: a name
        # without an entry is built in. :mod:`policy_scheduler.plugins` fills these.
        self.sources: dict[tuple[str, str], PluginSource] = {}
        self.provider_extensions: dict[str, list[PluginSource]] = {}
        self.plugin_failures: list[PluginFailure] = []
        # The fast path's record of each name that has one (opaque here), and of the predicates and priorities a
        # Policy builds from an argument, by the argument's kind ("labelsPresence", "labelPreference" …).
        self.predicate_forms: dict[str, Any] = {}
        self.priority_forms: dict[str, Any] = {}
        self.argument_forms: dict[str, Any] = {}

    def copy(self) -> Registry:
        """An independent registry with the same entries (provider key sets are copied too)."""
        return self.copy_into(Registry())

    def copy_into(self, other: Registry) -> Registry:
        """Replace ``other``'s entries with copies of this registry's; returns ``other``."""
        with self._lock:
            other.fit_predicates = dict(self.fit_predicates)
            other.mandatory_fit_predicates = set(self.mandatory_fit_predicates)
            other.priorities = {k: PriorityConfigFactory(v.weight, v.function, v.map_reduce) for k, v in self.priorities.items()}
            # DefaultProvider and ClusterAutoscalerProvider share one predicate set object upstream.
            copies: dict[int, set[str]] = {}
            for name, p in self.providers.items():
                preds = copies.setdefault(id(p.fit_predicate_keys), set(p.fit_predicate_keys))
                prios = copies.setdefault(id(p.priority_function_keys), set(p.priority_function_keys))
                other.providers[name] = AlgorithmProviderConfig(preds, prios)
            other.predicate_metadata_producer = self.predicate_metadata_producer
            other.priority_metadata_producer = self.priority_metadata_producer
            other.predicate_metadata_producers = dict(self.predicate_metadata_producers)
            other.sources = dict(self.sources)
            other.provider_extensions = {k: list(v) for k, v in self.provider_extensions.items()}
            other.plugin_failures = list(self.plugin_failures)
            other.predicate_forms = dict(self.predicate_forms)
            other.priority_forms = dict(self.priority_forms)
            other.argument_forms = dict(self.argument_forms)
            return other

    def _check_free(self, kind: str, name: str) -> None:
        """Called before ``name`` is registered; the plugin loader's staging registry refuses taken names."""

    def _unknown(self, message: str, name: str, known: Iterable[str]) -> str:
        """An unknown-name error text (upstream's words first), the closest registered names
        (:func:`~.errors.did_you_mean`), then the plugins that failed to load (they may have had it)."""
        return message + did_you_mean(name, known) + failed_plugins_context(self)

    # -- fit predicates ---------------------------------------------------------------------------
    def register_fit_predicate(self, name: str, predicate: FitPredicate, forms: Any = None) -> str:
        return self.register_fit_predicate_factory(name, lambda args: predicate, forms)

    def register_fit_predicate_factory(self, name: str, factory: FitPredicateFactory, forms: Any = None) -> str:
        with self._lock:
            validate_algorithm_name(name)
            self._check_free("predicate", name)
            self.fit_predicates[name] = factory
            _keep(self.predicate_forms, name, forms)
            return name

    def register_mandatory_fit_predicate(self, name: str, predicate: FitPredicate, forms: Any = None) -> str:
        with self._lock:
            validate_algorithm_name(name)
            self._check_free("predicate", name)
            self.fit_predicates[name] = lambda args: predicate
            _keep(self.predicate_forms, name, forms)
            self.mandatory_fit_predicates.add(name)
            return name

    def register_argument_forms(self, kind: str, forms: Any) -> None:
        """The fast path's record of every predicate or priority a Policy builds from an argument of ``kind``."""
        with self._lock:
            self.argument_forms[kind] = forms

    def make_fit_predicate_mandatory(self, name: str) -> None:
        """Add a registered predicate to every scheduler built from this registry, named or not."""
        with self._lock:
            if name in self.fit_predicates:
                self.mandatory_fit_predicates.add(name)

    def remove_fit_predicate(self, name: str) -> None:
        with self._lock:
            validate_algorithm_name(name)
            self.fit_predicates.pop(name, None)
            self.predicate_forms.pop(name, None)
            self.mandatory_fit_predicates.discard(name)

    def register_custom_fit_predicate(self, policy: PredicatePolicy) -> str:
        """A Policy predicate entry: build one from its argument, or reuse a registered name."""
        from .predicates import new_node_label_predicate, new_service_affinity_predicate

        name = policy.name
        arg = policy.argument
        if arg is not None:
            num_args = (arg.service_affinity is not None) + (arg.labels_presence is not None)
            if num_args != 1:
                raise ConfigurationError(f"Exactly 1 predicate argument is required, numArgs: {num_args}, Predicate: {name}")
            if arg.service_affinity is not None:
                labels = list(arg.service_affinity.labels)

                def service_affinity_factory(args: PluginFactoryArgs) -> FitPredicate:
                    predicate, precompute = new_service_affinity_predicate(args, labels)
                    with self._lock:
                        self.predicate_metadata_producers[name] = precompute
                    return predicate

                return self.register_fit_predicate_factory(name, service_affinity_factory,
                                                           self.argument_forms.get("serviceAffinity"))
            presence = arg.labels_presence
            assert presence is not None
            labels, present = list(presence.labels), presence.presence
            return self.register_fit_predicate_factory(name, lambda args: new_node_label_predicate(labels, present),
                                                       self.argument_forms.get("labelsPresence"))
        if name in self.fit_predicates:
            log.debug("Predicate type %s already registered, reusing.", name)
            return name
        raise ConfigurationError(self._unknown(f"Invalid configuration: Predicate type not found for {name}", name,
                                               self.fit_predicates))

    def is_fit_predicate_registered(self, name: str) -> bool:
        return name in self.fit_predicates

    def list_registered_fit_predicates(self) -> list[str]:
        return sorted(self.fit_predicates)

    # -- priorities -------------------------------------------------------------------------------
    def register_priority_function(self, name: str, function: PriorityFunction, weight: int, forms: Any = None) -> str:
        """Legacy whole-list priority function."""
        return self.register_priority_config_factory(
            name, PriorityConfigFactory(weight, function=lambda args: function), forms
        )

    def register_priority_function2(
        self, name: str, map_fn: PriorityMapFunction, reduce_fn: PriorityReduceFunction | None, weight: int,
        forms: Any = None,
    ) -> str:
        """Map/reduce priority function."""
        return self.register_priority_config_factory(
            name, PriorityConfigFactory(weight, map_reduce=lambda args: (map_fn, reduce_fn)), forms
        )

    def register_priority_config_factory(self, name: str, factory: PriorityConfigFactory, forms: Any = None) -> str:
        with self._lock:
            validate_algorithm_name(name)
            self._check_free("priority", name)
            self.priorities[name] = factory
            _keep(self.priority_forms, name, forms)
            return name

    def register_custom_priority_function(self, policy: PriorityPolicy) -> str:
        """A Policy priority entry: build one from its argument, or reuse a registered name's function."""
        from .priorities import new_node_label_priority, new_service_anti_affinity_priority

        name = policy.name
        arg = policy.argument
        weight = policy.weight
        factory: PriorityConfigFactory | None = None
        forms: Any = None
        if arg is not None:
            num_args = (arg.service_anti_affinity is not None) + (arg.label_preference is not None)
            if num_args != 1:
                raise ConfigurationError(f"Exactly 1 priority argument is required, numArgs: {num_args}, Priority: {name}")
            if arg.service_anti_affinity is not None:
                label = arg.service_anti_affinity.label
                factory = PriorityConfigFactory(weight, function=lambda args: new_service_anti_affinity_priority(args, label))
                forms = self.argument_forms.get("serviceAntiAffinity")
            else:
                pref = arg.label_preference
                assert pref is not None
                label, presence = pref.label, pref.presence
                factory = PriorityConfigFactory(
                    weight, map_reduce=lambda args: (new_node_label_priority(label, presence), None)
                )
                forms = self.argument_forms.get("labelPreference")
        elif name in self.priorities:
            log.debug("Priority type %s already registered, reusing.", name)
            existing = self.priorities[name]
            factory = PriorityConfigFactory(weight, existing.function, existing.map_reduce)
            forms = self.priority_forms.get(name)
        if factory is None:
            raise ConfigurationError(self._unknown(f"Invalid configuration: Priority type not found for {name}", name,
                                                   self.priorities))
        return self.register_priority_config_factory(name, factory, forms)

    def is_priority_function_registered(self, name: str) -> bool:
        return name in self.priorities

    def list_registered_priority_functions(self) -> list[str]:
        return sorted(self.priorities)

    # -- providers --------------------------------------------------------------------------------
    def register_algorithm_provider(self, name: str, predicate_keys: set[str], priority_keys: set[str]) -> str:
        with self._lock:
            validate_algorithm_name(name)
            self._check_free("provider", name)
            self.providers[name] = AlgorithmProviderConfig(predicate_keys, priority_keys)
            return name

    def get_algorithm_provider(self, name: str) -> AlgorithmProviderConfig:
        with self._lock:
            provider = self.providers.get(name)
            if provider is None:
                raise RegistryError(self._unknown(f'plugin "{name}" has not been registered', name, self.providers))
            return provider

    def list_algorithm_providers(self) -> str:
        return " | ".join(sorted(self.providers))

    def remove_predicate_key_from_algo_provider(self, provider_name: str, key: str) -> None:
        with self._lock:
            validate_algorithm_name(provider_name)
            provider = self.providers.get(provider_name)
            if provider is None:
                raise RegistryError(f"plugin {provider_name} has not been registered")
            provider.fit_predicate_keys.discard(key)

    def remove_predicate_key_from_algorithm_provider_map(self, key: str) -> None:
        with self._lock:
            for provider in self.providers.values():
                provider.fit_predicate_keys.discard(key)

    def insert_predicate_key_to_algo_provider(self, provider_name: str, key: str) -> None:
        with self._lock:
            validate_algorithm_name(provider_name)
            provider = self.providers.get(provider_name)
            if provider is None:
                raise RegistryError(f"plugin {provider_name} has not been registered")
            provider.fit_predicate_keys.add(key)

    def insert_predicate_key_to_algorithm_provider_map(self, key: str) -> None:
        with self._lock:
            for provider in self.providers.values():
                provider.fit_predicate_keys.add(key)

    # -- metadata producers -----------------------------------------------------------------------
    def register_predicate_metadata_producer_factory(self, factory: PredicateMetadataProducerFactory) -> None:
        with self._lock:
            self.predicate_metadata_producer = factory

    def register_priority_metadata_producer_factory(self, factory: PriorityMetadataProducerFactory) -> None:
        with self._lock:
            self.priority_metadata_producer = factory

    # -- building ---------------------------------------------------------------------------------
    def get_fit_predicate_functions(self, names: Iterable[str], args: PluginFactoryArgs) -> dict[str, FitPredicate]:
        """Resolve predicate keys (sorted), then add every mandatory predicate."""
        with self._lock:
            predicates: dict[str, FitPredicate] = {}
            for name in sorted(set(names)):
                factory = self.fit_predicates.get(name)
                if factory is None:
                    raise RegistryError(self._unknown(
                        f'Invalid predicate name "{name}" specified - no corresponding function found', name,
                        self.fit_predicates))
                predicates[name] = factory(args)
            for name in sorted(self.mandatory_fit_predicates):
                factory = self.fit_predicates.get(name)
                if factory is not None:
                    predicates[name] = factory(args)
            return predicates

    def get_priority_function_configs(self, names: Iterable[str], args: PluginFactoryArgs) -> list[PriorityConfig]:
        """Resolve priority keys in ascending name order, then check the total weight for overflow."""
        with self._lock:
            configs: list[PriorityConfig] = []
            for name in sorted(set(names)):
                factory = self.priorities.get(name)
                if factory is None:
                    raise RegistryError(self._unknown(
                        f"Invalid priority name {name} specified - no corresponding function found", name,
                        self.priorities))
                if factory.function is not None:
                    configs.append(PriorityConfig(name, factory.weight, function=factory.function(args)))
                else:
                    assert factory.map_reduce is not None
                    map_fn, reduce_fn = factory.map_reduce(args)
                    configs.append(PriorityConfig(name, factory.weight, map=map_fn, reduce=reduce_fn))
            total = 0
            for config in configs:
                if config.weight * MAX_PRIORITY > MAX_TOTAL_PRIORITY - total:
                    raise RegistryError("Total priority of priority functions has overflown")
                total += config.weight * MAX_PRIORITY
            return configs


def _keep(records: dict[str, Any], name: str, forms: Any) -> None:
    """``name``'s fast-path record is ``forms`` (None: it has none)."""
    if forms is None:
        records.pop(name, None)
    else:
        records[name] = forms


REGISTRY = Registry()

# The registry the module-level functions act on: REGISTRY, except while a plugin loads (see
# :mod:`policy_scheduler.plugins`), when it is that plugin's staging registry. So a plugin module that
# registers itself on import with ``policy_scheduler.registry.register_fit_predicate(...)`` is loaded
# like one whose entry point is a function receiving the registry.
ACTIVE_REGISTRY: ContextVar[Registry | None] = ContextVar("ACTIVE_REGISTRY", default=None)


def active_registry() -> Registry:
    """The registry the module-level ``register_*`` functions act on now."""
    return ACTIVE_REGISTRY.get() or REGISTRY


def _on_active(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(active_registry(), method.__name__)(*args, **kwargs)

    return call


register_fit_predicate = _on_active(Registry.register_fit_predicate)
register_fit_predicate_factory = _on_active(Registry.register_fit_predicate_factory)
register_mandatory_fit_predicate = _on_active(Registry.register_mandatory_fit_predicate)
remove_fit_predicate = _on_active(Registry.remove_fit_predicate)
register_custom_fit_predicate = _on_active(Registry.register_custom_fit_predicate)
is_fit_predicate_registered = _on_active(Registry.is_fit_predicate_registered)
list_registered_fit_predicates = _on_active(Registry.list_registered_fit_predicates)
register_priority_function = _on_active(Registry.register_priority_function)
register_priority_function2 = _on_active(Registry.register_priority_function2)
register_priority_config_factory = _on_active(Registry.register_priority_config_factory)
register_custom_priority_function = _on_active(Registry.register_custom_priority_function)
is_priority_function_registered = _on_active(Registry.is_priority_function_registered)
list_registered_priority_functions = _on_active(Registry.list_registered_priority_functions)
register_algorithm_provider = _on_active(Registry.register_algorithm_provider)
get_algorithm_provider = _on_active(Registry.get_algorithm_provider)
list_algorithm_providers = _on_active(Registry.list_algorithm_providers)
remove_predicate_key_from_algo_provider = _on_active(Registry.remove_predicate_key_from_algo_provider)
remove_predicate_key_from_algorithm_provider_map = _on_active(Registry.remove_predicate_key_from_algorithm_provider_map)
insert_predicate_key_to_algo_provider = _on_active(Registry.insert_predicate_key_to_algo_provider)
insert_predicate_key_to_algorithm_provider_map = _on_active(Registry.insert_predicate_key_to_algorithm_provider_map)
register_predicate_metadata_producer_factory = _on_active(Registry.register_predicate_metadata_producer_factory)
register_priority_metadata_producer_factory = _on_active(Registry.register_priority_metadata_producer_factory)


def failed_plugins_context(registry: Registry) -> str:
    """``"; plugin <ep> = <value> (<dist> <version>) failed to load: <error>"`` per failed plugin, or ``""``.

    Appended to the error a policy or provider raises when it needs a name that is not registered: the
    missing name may be one a failed plugin would have provided.
    """
    return "".join(f"; {failure}" for failure in registry.plugin_failures)
