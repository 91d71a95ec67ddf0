"""A 1.9 algorithm (Policy or provider) becomes one v1 profile, with a mapping entry per Policy entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..algorithm_source import AlgorithmSource
from ..api.types import ExtenderConfig, Policy, PredicatePolicy, PriorityPolicy
from ..features import FeatureGates
from ..registry import Registry
from .configuration import ProfileBuilder, args_item, configuration
from .extenders import v1_extender
from .rules import (
    APPROXIMATE,
    ASYNC_PREEMPTION_FROM,
    CLOUD_LIMITS,
    CLUSTER_RULES_PREDICATES,
    DROPPED,
    EXACT,
    GATE_OFF_NOTE,
    IMPLICIT,
    PREDICATES,
    PRIORITIES,
    SCORING_STRATEGIES,
    VERSIONED_NOTES,
    Rule,
)
from .versions import FILTER, GATE_ON_FROM, REGISTERED, SCORE, Target

AFFINITY_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
AFFINITY_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
#: A preferred node-affinity term's weight must lie in 1..100 (v1 validation).
MAX_TERM_WEIGHT = 100
#: The ``kind`` of ``migrate -o json`` (like the offline commands' ``SimulateResult``, ...).
MIGRATE_KIND = "MigrateResult"
#: PodTopologySpread's ``System`` defaults, written out when they join ``List`` constraints.
SYSTEM_SPREAD = ({"maxSkew": 3, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"},
                 {"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"})
#: The ``from`` of the entries for what 1.9 did that no Policy entry names.
SCORES_ALL_NODES = "(1.9 scores every feasible node)"
CLUSTER_SPREAD = "(cluster rules: topologySpreadConstraints)"
CLUSTER_GATES = "(cluster rules: schedulingGates)"
CLUSTER_FEATURES = "(cluster rules: node declared features)"
CLAIMS = "(spec.resourceClaims: dynamic resource allocation)"
QUEUE = "(scheduling queue)"
PREEMPTION = "(feature gate PodPriority: preemption)"
#: ``--hard-pod-affinity-symmetric-weight``'s default, and v1's ``hardPodAffinityWeight``'s.
DEFAULT_HARD_WEIGHT = 1
#: The weight the engine gives PodTopologySpread's score for pods with their own soft constraints.
CLUSTER_SPREAD_WEIGHT = 2
#: DynamicResources' weight in the default profile of 1.35 and later (``applyDynamicResources``).
CLAIMS_SCORE_WEIGHT = 2


@dataclass
class MappingEntry:
    """What one Policy entry (or one thing 1.9 did unasked) becomes."""

    source: str
    kind: str
    status: str
    to: list[dict[str, Any]]
    note: str
    argument: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.source, "kind": self.kind}
        if self.argument:
            out["argument"] = self.argument
        out.update(status=self.status, to=self.to, note=self.note)
        return out

    def describe(self) -> str:
        """The stderr line for an entry that is not exact."""
        kind = "" if self.kind == "implicit" else f"{self.kind} "
        return f"{self.status}: {kind}{self.source}: {self.note}"


@dataclass
class Migration:
    source: str
    target: Target
    configuration: dict[str, Any]
    mapping: list[MappingEntry] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": MIGRATE_KIND, "source": self.source, "target": self.target.version,
                "configuration": self.configuration, "mapping": [e.as_dict() for e in self.mapping]}

    def inexact(self) -> list[MappingEntry]:
        """The entries ``--strict`` refuses."""
        return [e for e in self.mapping if refused_by_strict(e.status, e.kind)]


def refused_by_strict(status: str, kind: str) -> bool:
    """``--strict`` refuses what the Policy (or provider) names that does not carry over exactly. What 1.9
    did unasked (kind ``implicit``: mandatory predicates, the queue, preemption, the cluster rules) is
    reported but no edit of the Policy changes it, so it does not count."""
    return status in (APPROXIMATE, DROPPED) and kind != "implicit"


@dataclass(frozen=True)
class Algorithm:
    """A provider's keys or a Policy's entries, in one shape."""

    predicates: list[PredicatePolicy]
    priorities: list[PriorityPolicy]
    mandatory: list[str]
    extenders: list[ExtenderConfig]
    hard_weight: int = 0
    policy: Policy | None = None


def algorithm_of(source: AlgorithmSource, registry: Registry) -> Algorithm:
    """What ``source`` schedules with, ``registry`` prepared with the feature gates."""
    if source.policy is not None:
        policy = source.policy
        predicates, priorities = list(policy.predicates or ()), list(policy.priorities or ())
        extenders, hard_weight = list(policy.extenders or ()), policy.hard_pod_affinity_symmetric_weight
    else:
        policy, extenders, hard_weight = None, [], 0
        provider = registry.get_algorithm_provider(source.provider or "DefaultProvider")
        predicates = [PredicatePolicy(name) for name in sorted(provider.fit_predicate_keys)]
        priorities = [PriorityPolicy(name, registry.priorities[name].weight)
                      for name in sorted(provider.priority_function_keys) if name in registry.priorities]
    named = {p.name for p in predicates}
    mandatory = [name for name in sorted(registry.mandatory_fit_predicates) if name not in named]
    return Algorithm(predicates, priorities, mandatory, extenders, hard_weight, policy)


class Migrator:
    """Builds the profile and the mapping, entry by entry."""

    def __init__(self, target: Target, gates: FeatureGates, registry: Registry) -> None:
        self.target, self.gates, self.registry = target, gates, registry
        self.profile = ProfileBuilder()
        self.mapping: list[MappingEntry] = []
        self.spread_constraints: list[dict[str, Any]] = []
        self.spread_system = False
        self.required_expressions: list[dict[str, Any]] = []
        self.preferred_terms: list[dict[str, Any]] = []
        #: NodeAffinity's score weight for the labelPreference entries: their weights summed.
        self.label_preference_weight = 0

    def add(self, source: str, kind: str, status: str, to: list[dict[str, Any]], note: str,
            argument: str | None = None) -> MappingEntry:
        entry = MappingEntry(source, kind, status, to, note, argument)
        self.mapping.append(entry)
        return entry

    def uses(self, uses: tuple[tuple[str, str], ...], weight: int | None = None) -> list[dict[str, Any]]:
        return [self.profile.enable(plugin, decision, weight) for plugin, decision in uses]

    # -- predicates ---------------------------------------------------------------------------------
    def predicate(self, entry: PredicatePolicy, mandatory: bool = False) -> None:
        arg = entry.argument
        if arg is not None and arg.labels_presence is not None:
            self.labels_presence(entry)
        elif arg is not None and arg.service_affinity is not None:
            self.add(entry.name, "predicate", DROPPED, [],
                     f"serviceAffinity (labels {', '.join(arg.service_affinity.labels)}) has no v1 equivalent: give "
                     "the Service's pods a required podAffinity on those topology keys instead", "serviceAffinity")
        elif entry.name in CLOUD_LIMITS:
            self.cloud_limits(entry.name)
        elif entry.name in PREDICATES:
            rule = PREDICATES[entry.name]
            if self.gates.cluster_rules:
                rule = CLUSTER_RULES_PREDICATES.get(entry.name, rule)
            kind = "implicit" if mandatory else "predicate"
            missing = self.missing_plugin(rule)
            if missing:
                self.add(entry.name, kind, DROPPED, [], missing)
                return
            note = f"(mandatory: runs whatever the Policy names) {rule.note}" if mandatory else rule.note
            self.add(entry.name, kind, rule.status, self.uses(rule.uses), note + self.gate_note(rule))
        else:
            self.add(entry.name, "predicate", DROPPED, [], self.unknown("predicate", entry.name, "Filter"))

    def missing_plugin(self, rule: Rule) -> str:
        """Why ``rule`` cannot be kept on this target ("" when it can): a plugin it uses is not registered."""
        for plugin, _ in rule.uses:
            if not self.target.has(plugin):
                since, _until = REGISTERED[plugin]
                return (f"no {plugin} plugin before kube-scheduler 1.{since}: migrate --to a version that has it, "
                        f"or serve the rule from an HTTP extender")
        return ""

    def gate_note(self, rule: Rule) -> str:
        """What to add to ``rule``'s note where a plugin it uses is registered but its gate is off by default."""
        for plugin, _ in rule.uses:
            if self.target.has(plugin) and not self.target.gate_on(plugin):
                return GATE_OFF_NOTE.format(minor=self.target.minor, plugin=plugin, gate=GATE_ON_FROM[plugin][0])
        return ""

    def unknown(self, kind: str, name: str, point: str) -> str:
        from ..plugins import source_json

        source = source_json(self.registry, kind, name)
        where = (f"registered by {source['distribution']} {source['version']} ({source['entry_point']})"
                 if isinstance(source, dict) else "not a 1.9 algorithm")
        return (f"{where} with no v1 plugin: write it as a scheduling-framework {point} plugin, "
                f"or serve it from an HTTP extender")

    def cloud_limits(self, name: str) -> None:
        plugin = CLOUD_LIMITS[name]
        csi = ("NodeVolumeLimits counts CSI volumes (and in-tree volumes once migrated to their CSI driver, GA for "
               "EBS, GCE PD and Azure Disk) against the limit the driver reports in the node's CSINode, as this "
               "engine does under --rules cluster whatever the Policy names")
        if self.target.has(plugin):
            to = self.uses(((plugin, FILTER), ("NodeVolumeLimits", FILTER)))
            note = (f"{plugin} counts in-tree volumes against the same per-node default as 1.9 but defers to "
                    f"NodeVolumeLimits on nodes that have a CSINode (the plugin's migration is always on), as "
                    f"this engine's {name} does under --rules cluster; {csi}")
            if not self.target.cloud_limits_default():
                note += f"; {plugin} is deprecated and out of the default profile since 1.31, and gone in 1.32"
        else:
            to = self.uses((("NodeVolumeLimits", FILTER),))
            note = f"{plugin} was removed in 1.32: {csi}"
        self.add(name, "predicate", APPROXIMATE, to, note)

    def labels_presence(self, entry: PredicatePolicy) -> None:
        args = entry.argument.labels_presence  # type: ignore[union-attr]
        operator = "Exists" if args.presence else "DoesNotExist"
        expressions = [{"key": label, "operator": operator} for label in args.labels]
        self.required_expressions.extend(expressions)
        to = self.uses((("NodeAffinity", FILTER),))
        to.append(args_item("NodeAffinity", addedAffinity={AFFINITY_REQUIRED: {
            "nodeSelectorTerms": [{"matchExpressions": expressions}]}}))
        self.add(entry.name, "predicate", APPROXIMATE, to,
                 f"NodeAffinityArgs.addedAffinity requires node labels {', '.join(args.labels)} "
                 f"{'present' if args.presence else 'absent'} for every pod of the profile, as 1.9 did; but "
                 "NodeAffinity's filter also enforces the pods' own nodeSelector and required node affinity",
                 "labelsPresence")

    # -- priorities ---------------------------------------------------------------------------------
    def priority(self, entry: PriorityPolicy, strategy_winner: str | None) -> None:
        arg = entry.argument
        if arg is not None and arg.service_anti_affinity is not None:
            self.service_anti_affinity(entry)
        elif arg is not None and arg.label_preference is not None:
            self.label_preference(entry)
        elif entry.name in SCORING_STRATEGIES:
            self.scoring_strategy(entry, strategy_winner)
        elif entry.name in PRIORITIES:
            rule = PRIORITIES[entry.name]
            to = self.uses(rule.uses, entry.weight)
            if entry.name in ("SelectorSpreadPriority", "ServiceSpreadingPriority"):
                self.spread_system = True
                to.append(args_item("PodTopologySpread", defaultingType="System"))
            versioned = VERSIONED_NOTES.get(entry.name)
            self.add(entry.name, "priority", rule.status, to,
                     versioned(self.target.minor) if versioned else rule.note)
        else:
            self.add(entry.name, "priority", DROPPED, [], self.unknown("priority", entry.name, "Score"))

    def scoring_strategy(self, entry: PriorityPolicy, winner: str | None) -> None:
        rule = PRIORITIES[entry.name]
        if winner != entry.name:
            self.add(entry.name, "priority", DROPPED, [],
                     f"conflict: NodeResourcesFit has one scoringStrategy and {winner} (the highest weight) has it; "
                     f"1.9 added both scores")
            return
        strategy = {"type": SCORING_STRATEGIES[entry.name],
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}
        to = self.uses(rule.uses, entry.weight)
        to.append(self.profile.set_args("NodeResourcesFit", scoringStrategy=strategy))
        self.add(entry.name, "priority", rule.status, to, rule.note)

    def service_anti_affinity(self, entry: PriorityPolicy) -> None:
        label = entry.argument.service_anti_affinity.label  # type: ignore[union-attr]
        constraint = {"maxSkew": 1, "topologyKey": label, "whenUnsatisfiable": "ScheduleAnyway"}
        self.spread_constraints.append(constraint)
        to = self.uses((("PodTopologySpread", SCORE),), entry.weight)
        to.append(args_item("PodTopologySpread", defaultingType="List", defaultConstraints=[constraint]))
        self.add(entry.name, "priority", APPROXIMATE, to,
                 f"PodTopologySpread's List default constraint on {label} (maxSkew 1, ScheduleAnyway): it spreads the "
                 "pods of Services, ReplicationControllers, ReplicaSets and StatefulSets (1.9: Services only), "
                 "scores by skew, and is not applied to pods with their own topologySpreadConstraints",
                 "serviceAntiAffinity")

    def label_preference(self, entry: PriorityPolicy) -> None:
        args = entry.argument.label_preference  # type: ignore[union-attr]
        operator = "Exists" if args.presence else "DoesNotExist"
        term = {"weight": min(entry.weight, MAX_TERM_WEIGHT),
                "preference": {"matchExpressions": [{"key": args.label, "operator": operator}]}}
        self.preferred_terms.append(term)
        to = self.uses((("NodeAffinity", SCORE),), self.label_preference_weight)
        to.append(args_item("NodeAffinity", addedAffinity={AFFINITY_PREFERRED: [term]}))
        note = (f"a preferred term ({args.label} {operator}, weight {term['weight']}) in NodeAffinityArgs."
                "addedAffinity: NodeAffinity's score sums it with the pod's own preferred terms and normalises the "
                "sum to the best node, where 1.9 gave a fixed 0 or 10 per label; NodeAffinity weighs "
                f"{self.label_preference_weight}, the Policy's labelPreference weights summed, so a node with all "
                "the preferred labels scores as in 1.9")
        if entry.weight > MAX_TERM_WEIGHT:
            note += f"; a term's weight is at most {MAX_TERM_WEIGHT} (the Policy's is {entry.weight})"
        self.add(entry.name, "priority", APPROXIMATE, to, note, "labelPreference")

    # -- what the entries share ---------------------------------------------------------------------
    def finish_args(self) -> None:
        """Arguments several entries contribute to, set once all have been seen."""
        if self.required_expressions or self.preferred_terms:
            added: dict[str, Any] = {}
            if self.required_expressions:
                added[AFFINITY_REQUIRED] = {"nodeSelectorTerms": [{"matchExpressions": self.required_expressions}]}
            if self.preferred_terms:
                added[AFFINITY_PREFERRED] = self.preferred_terms
            self.profile.set_args("NodeAffinity", addedAffinity=added)
        if "PodTopologySpread" in self.profile.decisions:
            if self.spread_constraints:
                constraints = [*(SYSTEM_SPREAD if self.spread_system else ()), *self.spread_constraints]
                self.profile.set_args("PodTopologySpread", defaultingType="List", defaultConstraints=constraints)
            else:
                self.profile.set_args("PodTopologySpread", defaultingType="System" if self.spread_system else "List")


def _strategy_winner(priorities: list[PriorityPolicy]) -> str | None:
    """Of the resource strategies named, the one with the highest weight (the first on a tie)."""
    named = [p for p in priorities if p.argument is None and p.name in SCORING_STRATEGIES]
    return max(named, key=lambda p: p.weight).name if named else None


def _effective_priorities(priorities: list[PriorityPolicy]) -> tuple[list[PriorityPolicy], list[PriorityPolicy]]:
    """1.9 keeps the last entry of a name: (effective entries in order, overridden ones)."""
    last = {p.name: i for i, p in enumerate(priorities)}
    kept = [p for i, p in enumerate(priorities) if last[p.name] == i]
    return kept, [p for i, p in enumerate(priorities) if last[p.name] != i]


def migrate(source: AlgorithmSource, *, target: Target, feature_gates: FeatureGates,
            scheduler_name: str = "default-scheduler", hard_pod_affinity_symmetric_weight: int = DEFAULT_HARD_WEIGHT,
            registry: Registry | None = None) -> Migration:
    """The configuration and mapping for ``source`` on ``target``; ``source`` must already build (the
    caller checks it as every command does, for the same one-line errors)."""
    from ..factory import prepared_registry

    reg = prepared_registry(registry, feature_gates)
    algo = algorithm_of(source, reg)
    m = Migrator(target, feature_gates, reg)
    for entry in algo.predicates:
        m.predicate(entry)
    for name in algo.mandatory:
        m.predicate(PredicatePolicy(name), mandatory=True)
    kept, overridden = _effective_priorities(algo.priorities)
    winner = _strategy_winner(kept)
    m.label_preference_weight = sum(p.weight for p in kept if p.argument is not None and p.argument.label_preference)
    for entry in overridden:
        m.add(entry.name, "priority", IMPLICIT, [], "a later entry of the same name replaces it, in 1.9 as here")
    for entry in kept:
        m.priority(entry, winner)
    _lists(m, algo)
    _fields(m, algo, hard_pod_affinity_symmetric_weight)
    _cluster_rules(m, algo)
    _claims(m)
    _queue(m, feature_gates)
    m.finish_args()
    extenders = []
    for config in algo.extenders:
        extender, notes = v1_extender(config)
        extenders.append(extender)
        m.add(config.url_prefix, "extender", EXACT, [{"extender": config.url_prefix}],
              "; ".join(["the same calls and weights (v1 multiplies extender scores by 10, as every score)", *notes]))
    profile = m.profile.profile(scheduler_name, target)
    return Migration(source.label, target, configuration(profile, extenders), m.mapping)


def _lists(m: Migrator, algo: Algorithm) -> None:
    """An absent or empty Policy list means none in 1.9 (``policy validate`` warns about absent ones)."""
    policy = algo.policy
    if policy is None:
        return
    if not policy.predicates:
        m.add("predicates", "field", IMPLICIT, [],
              f"{'absent' if policy.predicates is None else 'empty'}: no predicates beyond the mandatory ones in "
              "1.9 (1.10 and later read an absent list as the DefaultProvider's), so no other filter plugin")
    if not policy.priorities and not algo.extenders:
        m.add("priorities", "field", IMPLICIT, [],
              f"{'absent' if policy.priorities is None else 'empty'}: 1.9 scored every feasible node 1 and took "
              "them round-robin; with no Score plugin v1 picks one of them at random")


def _fields(m: Migrator, algo: Algorithm, flag_weight: int) -> None:
    """The Policy's top-level fields; ``flag_weight`` is ``--hard-pod-affinity-symmetric-weight`` (1.9 uses it
    when the Policy leaves the field 0)."""
    name, weight = "hardPodAffinitySymmetricWeight", algo.hard_weight
    if not weight and flag_weight != DEFAULT_HARD_WEIGHT:
        name, weight = "--hard-pod-affinity-symmetric-weight", flag_weight
    if weight:
        kind = "field" if name == "hardPodAffinitySymmetricWeight" else "flag"
        if "InterPodAffinity" in m.profile.weights:
            to = [m.profile.set_args("InterPodAffinity", hardPodAffinityWeight=weight)]
            m.add(name, kind, EXACT, to,
                  "InterPodAffinityArgs.hardPodAffinityWeight: existing pods' required affinity terms count as "
                  "preferred terms of this weight")
        else:
            m.add(name, kind, IMPLICIT, [],
                  "only InterPodAffinityPriority reads it, and this Policy does not name it (no effect in 1.9 either)")
    for path in algo.policy.ignored_keys if algo.policy is not None else ():
        if path == "alwaysCheckAllPredicates":
            m.add(path, "field", DROPPED, [],
                  "1.9 ignores it (1.10 added it) and v1 has no such field: filters stop at the first one a node "
                  "fails, and the failure message gives that plugin's reason")
    m.add(SCORES_ALL_NODES, "implicit", IMPLICIT,
          [{"field": "percentageOfNodesToScore", "value": 100}],
          "v1 samples nodes on large clusters by default; 100 scores them all")


def _cluster_rules(m: Migrator, algo: Algorithm) -> None:
    """What the engine applies under the cluster rules whatever the algorithm names."""
    if not m.gates.cluster_rules:
        return
    named_predicates = {p.name for p in algo.predicates}
    named_priorities = {p.name for p in algo.priorities}
    to = []
    if "PodTopologySpread" not in named_predicates:
        to += m.uses((("PodTopologySpread", FILTER),))
    note = ("the pods' own spread constraints, DoNotSchedule filtered and ScheduleAnyway scored (weight 2), as this "
            "scheduler applies them under --rules cluster")
    status = IMPLICIT
    if "PodTopologySpread" not in named_priorities:
        weight = m.profile.score_weight("PodTopologySpread")
        if weight is not None and weight != CLUSTER_SPREAD_WEIGHT:
            status = APPROXIMATE
            note += f"; v1 has one weight per plugin: here {weight}, that of the spreading priority above"
        to += m.uses((("PodTopologySpread", SCORE),), weight or CLUSTER_SPREAD_WEIGHT)
    if to:
        m.add(CLUSTER_SPREAD, "implicit", status, to, note)
    if m.target.has("SchedulingGates"):
        note = "pods with spec.schedulingGates wait, as under --rules cluster"
        if m.target.minor == 26:
            note += "; in 1.26 only with the scheduler's and API server's gate PodSchedulingReadiness"
        m.add(CLUSTER_GATES, "implicit", IMPLICIT,
              [m.profile.enable("SchedulingGates", "preEnqueue")], note)
    features = PREDICATES["NodeDeclaredFeatures"]
    if m.target.has("NodeDeclaredFeatures") and "NodeDeclaredFeatures" not in named_predicates:
        m.add(CLUSTER_FEATURES, "implicit", IMPLICIT, m.uses(features.uses),
              "pods whose spec requires node features (a RestartAllContainers restart rule, hostNetwork with "
              "hostUsers false) fit only the nodes whose status.declaredFeatures list them all, as this scheduler "
              "decides under --rules cluster" + m.gate_note(features))


def _claims(m: Migrator) -> None:
    """``spec.resourceClaims``: wherever the target's API server keeps the field (DynamicResourceAllocation on
    by default, 1.34+), DynamicResources stays on, so that no pod is bound where its devices are not
    allocated. Nothing else in the kube-scheduler reads the claims: a profile without the plugin binds such a
    pod as if it had none (``pkg/scheduler``: only ``plugins/dynamicresources`` reads ``spec.resourceClaims``)."""
    if not (m.target.has("DynamicResources") and m.target.gate_on("DynamicResources")):
        return
    to = m.uses((("DynamicResources", FILTER), ("DynamicResources", "postFilter")))
    scores = SCORE in m.target.decisions("DynamicResources")
    if scores:
        to += m.uses((("DynamicResources", SCORE),), CLAIMS_SCORE_WEIGHT)
    if m.gates.cluster_rules:
        ours = ("this scheduler allocates a pod's spec.resourceClaims as v1's DynamicResources does (refusing by "
                "name the few allocations it does not implement: devices with binding conditions, "
                "DRA-backed extended resources)")
    else:
        ours = ("under --rules 1.9 this engine ignores spec.resourceClaims as 1.9 did and binds such a pod where "
                "its devices may not be allocated; v1 allocates its claims")
    m.add(CLAIMS, "implicit", APPROXIMATE, to,
          f"{ours}: DynamicResources stays on, so v1 binds such a pod only to a node where every claim is "
          "allocated and reserved for it (or keeps it pending), and deallocates a claim that blocks it (PostFilter)"
          + (f"; it also scores the nodes by the devices a claim's prioritized list gets there (weight "
             f"{CLAIMS_SCORE_WEIGHT}, its default)" if scores else "")
          + ". Switched off, v1 would bind the pod as if it had no claims, to a node where the kubelet cannot start "
          "it. Pods without claims are not affected (its PreFilter skips them), but their 'no node fits' message "
          "ends with its PostFilter's 'no new claims to deallocate'")


def _queue(m: Migrator, gates: FeatureGates) -> None:
    to = [m.profile.enable("PrioritySort", "queueSort"), m.profile.enable("DefaultBinder", "bind")]
    if gates.enabled("PodPriority"):
        m.add(QUEUE, "implicit", IMPLICIT, to, "pods in priority order, then arrival, as 1.9's "
              "priority queue with PodPriority")
        to = [m.profile.enable("DefaultPreemption", "postFilter"),
              m.profile.set_args("DefaultPreemption", minCandidateNodesPercentage=100, minCandidateNodesAbsolute=0)]
        note = ("DefaultPreemption with every node a candidate, as 1.9: it also refuses to preempt for pods with "
                "preemptionPolicy Never and picks among nodes by its own later criteria (PDB violations, then the "
                "victims' priorities and start times)")
        if m.target.minor >= ASYNC_PREEMPTION_FROM:
            note += ("; since 1.33 (SchedulerAsyncPreemption, on by default) the victims are deleted in the "
                     "background once the preemptor is nominated, where 1.9 deleted them within the scheduling cycle")
        m.add(PREEMPTION, "implicit", APPROXIMATE, to, note)
    else:
        m.add(QUEUE, "implicit", APPROXIMATE, to,
              "v1 always orders the queue by pod priority, then arrival; 1.9 without PodPriority took pods in "
              "arrival order (the same while pods share one priority). DefaultPreemption stays off: 1.9 "
              "preempted only with PodPriority")
