"""Third-party predicates, priorities and providers, loaded through entry points.

A distribution advertises entry points in the groups of :data:`ENTRY_POINT_GROUPS`; each names a
callable that receives the registry and registers what it provides, with 1.9's registration API
(``register_fit_predicate``, ``register_priority_function2``, ``register_algorithm_provider``,
``insert_predicate_key_to_algo_provider`` …), or a module that does so on import through the
module-level functions of :mod:`policy_scheduler.registry`. This is upstream's ``init()`` registration
(``registry.md`` §9) without recompiling the scheduler.

Each plugin runs against a staging copy of the registry, merged only when it succeeds, so a plugin is
all in or all out:

* every name a plugin registers is recorded with its distribution, version and entry point
  (:class:`PluginSource`), for the ``predicates`` / ``priorities`` / ``providers`` listings;
* a plugin whose import fails, whose callable raises, or that registers a predicate, priority or
  provider name already taken (built in or by an earlier plugin: upstream would silently overwrite it)
  is skipped with a warning naming its entry point and distribution (:class:`PluginFailure`). The
  command goes on; it stops only if the policy or provider in use needs a name that is not registered,
  and that error then names the plugins that failed (:func:`failed_plugins_context`).

Plugins load in a fixed order: by group (predicates, priorities, providers), then distribution name,
then entry-point name.
"""

from __future__ import annotations

import logging
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from .provenance import PluginFailure, PluginSource
from .registry import ACTIVE_REGISTRY, REGISTRY, Registry, RegistryError

# failed_plugins_context lives with the registry, which appends it to its errors; re-exported for its importers.
from .registry import failed_plugins_context as failed_plugins_context

log = logging.getLogger(__name__)

ENTRY_POINT_GROUPS = ("policy_scheduler.predicates", "policy_scheduler.priorities", "policy_scheduler.providers")
BUILT_IN = "built-in"
KINDS = ("predicate", "priority", "provider")

_process_registry_loaded = False


class _StagingRegistry(Registry):
    """A copy of the target registry for one plugin; registering a name taken before it ran is an error."""

    def __init__(self, target: Registry) -> None:
        super().__init__()
        target.copy_into(self)
        self._taken = {
            "predicate": set(self.fit_predicates),
            "priority": set(self.priorities),
            "provider": set(self.providers),
        }

    def _check_free(self, kind: str, name: str) -> None:
        if name in self._taken[kind]:
            owner = self.sources.get((kind, name))
            by = f"by plugin {owner}" if owner is not None else BUILT_IN
            raise RegistryError(f'{kind} "{name}" is already registered ({by}); a plugin cannot replace it')


def load_plugins(registry: Registry | None = None) -> list[str]:
    """Load every plugin of the entry-point groups into ``registry``; returns the entry points loaded.

    The process registry (the default) is loaded once: later calls return ``[]``. Failures are logged
    as warnings and kept in ``registry.plugin_failures``.
    """
    global _process_registry_loaded
    if registry is None:
        if _process_registry_loaded:
            return []
        _process_registry_loaded = True
        registry = REGISTRY
    loaded: list[str] = []
    for ep in _entry_points():
        source = PluginSource.of(ep)
        error = _load_one(ep, source, registry)
        if error is None:
            loaded.append(source.entry_point)
            continue
        failure = PluginFailure(source, error)
        registry.plugin_failures.append(failure)
        log.warning("%s; continuing without it", failure)
    return loaded


def _entry_points() -> list[EntryPoint]:
    eps: list[EntryPoint] = []
    for group in ENTRY_POINT_GROUPS:
        eps += sorted(entry_points(group=group), key=lambda ep: (PluginSource.of(ep).distribution, ep.name))
    return eps


def _load_one(ep: EntryPoint, source: PluginSource, target: Registry) -> str | None:
    """Run one plugin on a staging copy of ``target`` and merge it; the error text if it failed."""
    staging = _StagingRegistry(target)
    token = ACTIVE_REGISTRY.set(staging)
    try:
        obj = ep.load()
        if callable(obj):
            obj(staging)
    except Exception as e:  # any failure of third-party code: skip the plugin, keep the command going
        return _one_line(e)
    finally:
        ACTIVE_REGISTRY.reset(token)
    _merge(staging, target, source)
    return None


def _merge(staging: Registry, target: Registry, source: PluginSource) -> None:
    added = {
        "predicate": staging.fit_predicates.keys() - target.fit_predicates.keys(),
        "priority": staging.priorities.keys() - target.priorities.keys(),
        "provider": staging.providers.keys() - target.providers.keys(),
    }
    extended = [
        name for name, provider in target.providers.items()
        if name in staging.providers and (
            staging.providers[name].fit_predicate_keys != provider.fit_predicate_keys
            or staging.providers[name].priority_function_keys != provider.priority_function_keys
        )
    ]
    staging.copy_into(target)
    for kind, names in added.items():
        for name in names:
            target.sources[(kind, name)] = source
    for name in extended:
        target.provider_extensions.setdefault(name, []).append(source)
    log.debug("plugin %s registered %s", source, {k: sorted(v) for k, v in added.items() if v})


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def source_of(registry: Registry, kind: str, name: str) -> PluginSource | None:
    """The plugin that registered ``name`` (a ``kind`` of :data:`KINDS`), or None for a built-in."""
    return registry.sources.get((kind, name))


def source_json(registry: Registry, kind: str, name: str) -> Any:
    """``"built-in"`` or the plugin's ``{"distribution", "version", "entry_point", "value"}``."""
    source = source_of(registry, kind, name)
    return source.as_dict() if source is not None else BUILT_IN
