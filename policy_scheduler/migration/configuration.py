"""The v1 ``KubeSchedulerConfiguration`` a migration builds: one profile with an explicit plugin list.

Every default plugin is switched off (``multiPoint.disabled: ['*']``) and the mapped plugins are enabled
through ``multiPoint``, which runs each at every extension point it implements in the target version; a
decision the Policy did not ask for (a filter plugin's score, a score plugin's filter) is then switched
off at its points. Weights go on the multiPoint entries (v1 reads them at Score only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .versions import DECISIONS, POINTS, SCORE, Target

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


def args_item(plugin: str, **values: Any) -> dict[str, Any]:
    """A mapping ``to`` item: the arguments one entry contributes to ``plugin`` (arguments several entries
    share are set once, when all have been seen)."""
    return {"pluginConfig": plugin, "args": values}


@dataclass
class ProfileBuilder:
    """The plugins, decisions, weights and plugin arguments the mapping entries ask for."""

    decisions: dict[str, set[str]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    args: dict[str, dict[str, Any]] = field(default_factory=dict)

    def enable(self, plugin: str, decision: str, weight: int | None = None) -> dict[str, Any]:
        """Run ``plugin`` for ``decision``; a score weight keeps the highest asked for (upstream's rule
        when two priorities map to one plugin). Returns the mapping's ``to`` item."""
        assert decision in DECISIONS[plugin], (plugin, decision)
        self.decisions.setdefault(plugin, set()).add(decision)
        item: dict[str, Any] = {"plugin": plugin, "extensionPoint": decision}
        if decision == SCORE:
            weight = weight or 1
            self.weights[plugin] = max(self.weights.get(plugin, 0), weight)
            item["weight"] = weight
        return item

    def set_args(self, plugin: str, **values: Any) -> dict[str, Any]:
        """Set top-level fields of ``plugin``'s arguments. Returns the mapping's ``to`` item."""
        self.args.setdefault(plugin, {}).update(values)
        return args_item(plugin, **values)

    def score_weight(self, plugin: str) -> int | None:
        return self.weights.get(plugin)

    def profile(self, scheduler_name: str, target: Target) -> dict[str, Any]:
        enabled = []
        off: dict[str, list[dict[str, str]]] = {}
        for plugin in DECISIONS:
            wanted = self.decisions.get(plugin)
            if not wanted or not target.has(plugin):
                continue
            implements = target.decisions(plugin)
            wanted = wanted & implements
            entry: dict[str, Any] = {"name": plugin}
            if SCORE in wanted:
                entry["weight"] = self.weights[plugin]
            enabled.append(entry)
            for decision in sorted(implements - wanted):
                for point in POINTS.get(decision, ()):
                    off.setdefault(point, []).append({"name": plugin})
        plugins: dict[str, Any] = {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}}
        for point in ("preFilter", "filter", "preScore", "score"):
            if point in off:
                plugins[point] = {"disabled": off[point]}
        profile: dict[str, Any] = {"schedulerName": scheduler_name, "plugins": plugins}
        config = [{"name": plugin, "args": dict(values)} for plugin, values in self.args.items()
                  if plugin in self.decisions and target.has(plugin)]
        if config:
            profile["pluginConfig"] = config
        return profile


def configuration(profile: dict[str, Any], extenders: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole document; ``clientConnection`` and ``leaderElection`` are the user's to fill in."""
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "percentageOfNodesToScore": 100,
        "profiles": [profile],
    }
    if extenders:
        out["extenders"] = extenders
    return out
