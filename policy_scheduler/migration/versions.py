"""What each target kube-scheduler (1.25 … 1.32, ``kubescheduler.config.k8s.io/v1``) knows: the plugins it
registers, at which extension points a plugin decides, and which names it refuses
(``migration.md`` §2; settled by running the shipped 1.26 and 1.32 kube-schedulers)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError

OLDEST, NEWEST = 25, 32
SUPPORTED = tuple(f"1.{minor}" for minor in range(OLDEST, NEWEST + 1))

#: The in-tree cloud volume-limit plugins: out of the default profile in 1.31 (#124500), removed in 1.32
#: (#124003; v1's ``invalidPluginsByVersion`` then refuses the names).
CLOUD_VOLUME_LIMITS = ("EBSLimits", "GCEPDLimits", "AzureDiskLimits")
CLOUD_LIMITS_LEAVE_DEFAULTS, CLOUD_LIMITS_REMOVED = 31, 32
#: ``SchedulingGates`` (PreEnqueue) is registered from 1.26 (gate PodSchedulingReadiness, beta and on in 1.27).
SCHEDULING_GATES_FROM = 26

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
    "DefaultPreemption": frozenset({"postFilter"}),
    "NodeResourcesBalancedAllocation": frozenset({SCORE}),
    "ImageLocality": frozenset({SCORE}),
    "DefaultBinder": frozenset({"bind"}),
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
        if plugin in CLOUD_VOLUME_LIMITS:
            return self.minor < CLOUD_LIMITS_REMOVED
        if plugin == "SchedulingGates":
            return self.minor >= SCHEDULING_GATES_FROM
        return plugin in DECISIONS

    def cloud_limits_default(self) -> bool:
        """Whether the cloud volume-limit plugins are still in the default profile."""
        return self.minor < CLOUD_LIMITS_LEAVE_DEFAULTS


def parse_target(text: str | None) -> Target:
    """``--to``: ``1.25`` … ``1.32`` (a leading ``v`` and a patch level are accepted); default the newest."""
    if text is None:
        return Target(NEWEST)
    parts = text.strip().removeprefix("v").split(".")
    if len(parts) in (2, 3) and parts[0] == "1" and parts[1].isdigit() and OLDEST <= int(parts[1]) <= NEWEST:
        return Target(int(parts[1]))
    raise UserError(f"--to {text}: unsupported kube-scheduler version; supported: {SUPPORTED[0]} to {SUPPORTED[-1]}")
