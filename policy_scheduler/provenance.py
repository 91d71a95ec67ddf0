"""Where a registry entry comes from, and which plugins failed (:mod:`policy_scheduler.plugins` records them
on the registry): in a module of their own, so that :mod:`policy_scheduler.registry`, which holds them,
and the plugin loader, which fills them, both import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint


@dataclass(frozen=True)
class PluginSource:
    """Where a plugin entry comes from: its distribution and the entry point that registered it."""

    distribution: str
    version: str
    entry_point: str  # "<group>:<name>"
    value: str  # "<module>:<attribute>", as written in entry_points.txt

    @classmethod
    def of(cls, ep: EntryPoint) -> PluginSource:
        dist = ep.dist
        name = (dist.metadata["Name"] if dist is not None else None) or "unknown distribution"
        version = (dist.version if dist is not None else None) or "?"
        return cls(name, version, f"{ep.group}:{ep.name}", ep.value)

    def as_dict(self) -> dict[str, str]:
        return {"distribution": self.distribution, "version": self.version, "entry_point": self.entry_point,
                "value": self.value}

    def __str__(self) -> str:
        return f"{self.entry_point} = {self.value} ({self.distribution} {self.version})"


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that was skipped, and why (one line)."""

    source: PluginSource
    error: str

    def __str__(self) -> str:
        return f"plugin {self.source} failed to load: {self.error}"
