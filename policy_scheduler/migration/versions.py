"""What each target kube-scheduler (1.25 … 1.36, ``kubescheduler.config.k8s.io/v1``) knows: the plugins it
registers, at which extension points a plugin decides, which names it refuses, and which feature gates
its default profile has on (``migration.md`` §2; settled by running the shipped 1.26, 1.32 and 1.36
kube-schedulers, and for 1.33 – 1.35 by reading their ``plugins/registry.go``, ``apis/config/v1/
default_plugins.go`` and ``pkg/features/kube_features.go``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError

OLDEST, NEWEST = 25, 36
SUPPORTED = tuple(f"1.{minor}" for minor in range(OLDEST, NEWEST + 1))

#: The in-tree cloud volume-limit plugins: out of the default profile in 1.31 (#124500), removed in 1.32
#: (#124003; v1's ``invalidPluginsByVersion`` then refuses the names).
CLOUD_VOLUME_LIMITS = ("EBSLimits", "GCEPDLimits", "AzureDiskLimits")
CLOUD_LIMITS_LEAVE_DEFAULTS, CLOUD_LIMITS_REMOVED = 31, 32
#: ``SchedulingGates`` (PreEnqueue) is registered from 1.26 (gate PodSchedulingReadiness, beta and on in 1.27).
SCHEDULING_GATES_FROM = 26
#: The plugins not every target registers: name -> (first minor that registers it, first that no longer does).
#: A configuration naming a plugin its kube-scheduler does not register fails to start.
REGISTERED: dict[str, tuple[int, int | None]] = {
    **{name: (OLDEST, CLOUD_LIMITS_REMOVED) for name in CLOUD_VOLUME_LIMITS},
    "SchedulingGates": (SCHEDULING_GATES_FROM, None),
    "NodeDeclaredFeatures": (35, None),  # gate NodeDeclaredFeatures: alpha (off) in 1.35, beta and on in 1.36
    "GangScheduling": (35, None),  # alpha gates GangScheduling / GenericWorkload, off
    "TopologyPlacementGenerator": (36, None),  # alpha gate TopologyAwareWorkloadScheduling, off
    "PodGroupPodsCount": (36, None),
}
#: The feature gate a plugin does nothing without, and the first minor whose default turns it on. Enabled
#: before that, the plugin is registered but inert (its ``New`` sees the gate off) and the API server drops
#: the fields it reads.
GATE_ON_FROM: dict[str, tuple[str, int]] = {
    "SchedulingGates": ("PodSchedulingReadiness", 27),
    "DynamicResources": ("DynamicResourceAllocation", 34),  # beta off in 1.32 and 1.33, GA and on from 1.34
    "NodeDeclaredFeatures": ("NodeDeclaredFeatures", 36),
}
#: Decisions a plugin takes only from some minor on: (plugin, decision) -> that minor.
DECISION_FROM: dict[tuple[str, str], int] = {
    ("DynamicResources", "score"): 35,  # DynamicResources implements Score from 1.35 (weight 2 by default)
}

#: The decisions a plugin takes part in. ``filter`` stands for PreFilter+Filter, ``score`` for
#: PreScore+Score: a multiPoint entry runs a plugin at every point it implements, so the configuration
#: only needs to switch off the decisions the Policy did not ask for.
FILTER, SCORE = "filter", "score"
DECISIONS: dict[str, frozenset[str]] = {  # in the order of v1's default profile (filters run in this order)
    "PrioritySort": frozenset({"queueSort"}),
    "SchedulingGates": frozenset({"preEnqueue"}),
    "NodeUnschedulable": frozenset({FILTER}),
    "NodeName": frozenset({FILTER}),
    "TaintToleration": frozenset({FILTER, SCORE}),
    "NodeAffinity": frozenset({FILTER, SCORE}),
    "NodePorts": frozenset({FILTER}),
    "NodeResourcesFit": frozenset({FILTER, SCORE}),
    "VolumeRestrictions": frozenset({FILTER}),
    "EBSLimits": frozenset({FILTER}),
    "GCEPDLimits": frozenset({FILTER}),
    "NodeVolumeLimits": frozenset({FILTER}),
    "AzureDiskLimits": frozenset({FILTER}),
    "VolumeBinding": frozenset({FILTER, SCORE}),
    "VolumeZone": frozenset({FILTER}),
    "PodTopologySpread": frozenset({FILTER, SCORE}),
    "InterPodAffinity": frozenset({FILTER, SCORE}),
    # ``filter`` stands for all its allocation points (PreEnqueue, PreFilter, Filter, Reserve, PreBind);
    # ``postFilter`` deallocates a claim that blocks the pod; ``score`` from 1.35 (DECISION_FROM)
    "DynamicResources": frozenset({FILTER, "postFilter", SCORE}),
    "DefaultPreemption": frozenset({"postFilter"}),
    "NodeResourcesBalancedAllocation": frozenset({SCORE}),
    "ImageLocality": frozenset({SCORE}),
    "DefaultBinder": frozenset({"bind"}),
    "NodeDeclaredFeatures": frozenset({FILTER}),  # appended after DefaultBinder in 1.36's default profile
}
#: Extension points a decision covers, to switch it off for a plugin enabled through multiPoint.
POINTS = {FILTER: ("preFilter", "filter"), SCORE: ("preScore", "score")}


@dataclass(frozen=True)
class Target:
    """One kube-scheduler minor version of the 1.x line."""

    minor: int

    @property
    def version(self) -> str:
        return f"1.{self.minor}"

    def has(self, plugin: str) -> bool:
        """Whether this kube-scheduler registers ``plugin`` (a configuration naming another fails to start)."""
        if plugin in REGISTERED:
            since, until = REGISTERED[plugin]
            return since <= self.minor and (until is None or self.minor < until)
        return plugin in DECISIONS

    def decisions(self, plugin: str) -> frozenset[str]:
        """The decisions ``plugin`` takes in this kube-scheduler when enabled through multiPoint."""
        return frozenset(d for d in DECISIONS[plugin] if self.minor >= DECISION_FROM.get((plugin, d), OLDEST))

    def gate_on(self, plugin: str) -> bool:
        """Whether the feature gate ``plugin`` needs is on by default in this kube-scheduler (and API server)."""
        gate = GATE_ON_FROM.get(plugin)
        return gate is None or self.minor >= gate[1]

    def cloud_limits_default(self) -> bool:
        """Whether the cloud volume-limit plugins are still in the default profile."""
        return self.minor < CLOUD_LIMITS_LEAVE_DEFAULTS


def parse_target(text: str | None) -> Target:
    """``--to``: ``1.25`` … ``1.36`` (a leading ``v`` and a patch level are accepted); default the newest."""
    if text is None:
        return Target(NEWEST)
    parts = text.strip().removeprefix("v").split(".")
    if len(parts) in (2, 3) and parts[0] == "1" and parts[1].isdigit() and OLDEST <= int(parts[1]) <= NEWEST:
        return Target(int(parts[1]))
    raise UserError(f"--to {text}: unsupported kube-scheduler version; supported: {SUPPORTED[0]} to {SUPPORTED[-1]}")
