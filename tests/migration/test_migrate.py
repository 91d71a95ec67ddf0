"""``policy-scheduler migrate`` without a scheduler: what each Policy entry becomes, the statuses and notes,
the version rules, the conflicts, the extenders' fields, and the command's errors and exit codes. The real
kube-schedulers check the same configurations in ``test_modern_accepts.py`` and ``test_agreement.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.api import load_policy_file
from policy_scheduler.cli import main
from policy_scheduler.kube.config.gosyntax import parse_go_duration

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str):
    return CliRunner().invoke(main, ["migrate", *args], catch_exceptions=False)


def migrated(tmp_path: Path, policy: dict[str, Any] | None = None, *args: str) -> dict[str, Any]:
    if policy is not None:
        path = tmp_path / "policy.json"
        path.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1", **policy}))
        args = ("--policy-config-file", str(path), *args)
    result = run(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def entry(data: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [e for e in data["mapping"] if e["from"] == name]
    return found


def plugins(data: dict[str, Any]) -> dict[str, Any]:
    return data["configuration"]["profiles"][0]["plugins"]


def enabled(data: dict[str, Any]) -> dict[str, int | None]:
    return {p["name"]: p.get("weight") for p in plugins(data)["multiPoint"]["enabled"]}


def disabled(data: dict[str, Any], point: str) -> list[str]:
    return [p["name"] for p in plugins(data).get(point, {}).get("disabled", [])]


def args_of(data: dict[str, Any], plugin: str) -> dict[str, Any]:
    (found,) = [c["args"] for c in data["configuration"]["profiles"][0].get("pluginConfig", []) if c["name"] == plugin]
    return found


def test_defaults_are_switched_off_and_the_mapped_plugins_enabled(tmp_path):
    data = migrated(tmp_path, {"predicates": [{"name": "MatchNodeSelector"}],
                               "priorities": [{"name": "ImageLocalityPriority", "weight": 4}]}, "--rules", "1.9")
    assert plugins(data)["multiPoint"]["disabled"] == [{"name": "*"}]
    # the default target is the newest (1.36): DynamicResources stays on whatever the rules (see its own test)
    assert data["target"] == "1.36"
    assert enabled(data) == {"PrioritySort": None, "NodeUnschedulable": None, "TaintToleration": None,
                             "NodeAffinity": None, "DynamicResources": 2, "ImageLocality": 4, "DefaultBinder": None}
    # NodeAffinity and TaintToleration filter only: the Policy names neither priority
    assert disabled(data, "score") == disabled(data, "preScore") == ["TaintToleration", "NodeAffinity"]
    assert data["configuration"]["percentageOfNodesToScore"] == 100
    assert entry(data, "MatchNodeSelector")["status"] == "exact"
    assert entry(data, "ImageLocalityPriority")["status"] == "approximate"
    assert entry(data, "CheckNodeCondition")["to"] == [
        {"plugin": "NodeUnschedulable", "extensionPoint": "filter"},
        {"plugin": "TaintToleration", "extensionPoint": "filter"}]


def test_a_score_only_entry_switches_the_plugins_filter_off(tmp_path):
    data = migrated(tmp_path, {"predicates": [], "priorities": [{"name": "NodeAffinityPriority", "weight": 3},
                                                                {"name": "LeastRequestedPriority", "weight": 1}]},
                    "--rules", "1.9")
    assert enabled(data)["NodeAffinity"] == 3
    assert disabled(data, "filter") == disabled(data, "preFilter") == ["NodeAffinity", "NodeResourcesFit"]
    assert entry(data, "predicates")["status"] == "implicit"  # an empty list: nothing but the mandatory ones


def test_weights_carry_over_and_one_plugin_keeps_the_highest(tmp_path):
    data = migrated(tmp_path, {"priorities": [
        {"name": "SelectorSpreadPriority", "weight": 2},
        {"name": "RackSpread", "weight": 5, "argument": {"serviceAntiAffinity": {"label": "rack"}}}]}, "--rules", "1.9")
    assert enabled(data)["PodTopologySpread"] == 5
    assert args_of(data, "PodTopologySpread") == {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 3, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway"}]}
    assert entry(data, "RackSpread")["argument"] == "serviceAntiAffinity"
    assert entry(data, "SelectorSpreadPriority")["status"] == "approximate"


def test_two_resource_strategies_conflict_and_the_heavier_wins(tmp_path):
    result = run("--policy-config-file", str(_write(tmp_path, {"priorities": [
        {"name": "LeastRequestedPriority", "weight": 1}, {"name": "MostRequestedPriority", "weight": 3}]})),
        "-o", "json")
    data = json.loads(result.stdout)
    assert args_of(data, "NodeResourcesFit")["scoringStrategy"]["type"] == "MostAllocated"
    assert enabled(data)["NodeResourcesFit"] == 3
    least = entry(data, "LeastRequestedPriority")
    assert least["status"] == "dropped" and "conflict" in least["note"] and "MostRequestedPriority" in least["note"]
    assert "dropped: priority LeastRequestedPriority: conflict" in result.stderr


def test_label_arguments_become_added_node_affinity(tmp_path):
    data = migrated(tmp_path, {
        "predicates": [{"name": "Zoned", "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}}},
                       {"name": "NotRetiring", "argument": {"labelsPresence": {"labels": ["retiring"]}}}],
        "priorities": [{"name": "SSD", "weight": 3, "argument": {"labelPreference": {"label": "ssd", "presence": True}}},
                       {"name": "NoGPU", "weight": 2, "argument": {"labelPreference": {"label": "gpu"}}}]},
        "--rules", "1.9")
    added = args_of(data, "NodeAffinity")["addedAffinity"]
    assert added["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "Exists"}, {"key": "retiring", "operator": "DoesNotExist"}]}]}
    assert added["preferredDuringSchedulingIgnoredDuringExecution"] == [
        {"weight": 3, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
        {"weight": 2, "preference": {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}}]
    assert enabled(data)["NodeAffinity"] == 5  # 1.9's 10 x 3 + 10 x 2 at best: the summed term weights
    for name in ("Zoned", "NotRetiring", "SSD", "NoGPU"):
        assert entry(data, name)["status"] == "approximate"


def test_what_has_no_v1_equivalent_is_dropped_with_advice(tmp_path):
    data = migrated(tmp_path, {
        "predicates": [{"name": "Region", "argument": {"serviceAffinity": {"labels": ["region"]}}},
                       {"name": "CheckNodeMemoryPressure"}],
        "priorities": [{"name": "NodePreferAvoidPodsPriority", "weight": 10000}, {"name": "EqualPriority", "weight": 1}],
        "alwaysCheckAllPredicates": True}, "--rules", "1.9")
    assert entry(data, "Region")["status"] == "dropped" and "podAffinity" in entry(data, "Region")["note"]
    assert "memory-pressure" in entry(data, "CheckNodeMemoryPressure")["note"]
    assert "taint" in entry(data, "NodePreferAvoidPodsPriority")["note"]
    assert entry(data, "EqualPriority")["status"] == "implicit"
    assert entry(data, "alwaysCheckAllPredicates")["status"] == "dropped"
    assert "ImageLocality" not in enabled(data) and "NodePreferAvoidPods" not in enabled(data)


@pytest.mark.parametrize(("to", "limits"), [("1.30", {"EBSLimits", "NodeVolumeLimits"}),
                                             ("1.31", {"EBSLimits", "NodeVolumeLimits"}),
                                             ("1.32", {"NodeVolumeLimits"})])
def test_cloud_volume_limits_follow_the_target_version(tmp_path, to, limits):
    data = migrated(tmp_path, {"predicates": [{"name": "MaxEBSVolumeCount"}]}, "--to", to, "--rules", "1.9")
    assert {"EBSLimits", "NodeVolumeLimits"} & set(enabled(data)) == limits
    ebs = entry(data, "MaxEBSVolumeCount")
    assert ebs["status"] == "approximate"
    assert ("removed in 1.32" in ebs["note"]) == (to == "1.32")
    assert ("out of the default profile since 1.31" in ebs["note"]) == (to == "1.31")
    assert data["target"] == to


def test_hard_pod_affinity_weight_goes_to_the_plugin_args_when_the_priority_reads_it(tmp_path):
    data = migrated(tmp_path, {"priorities": [{"name": "InterPodAffinityPriority", "weight": 2}],
                               "hardPodAffinitySymmetricWeight": 7})
    assert args_of(data, "InterPodAffinity") == {"hardPodAffinityWeight": 7}
    assert entry(data, "hardPodAffinitySymmetricWeight")["status"] == "exact"
    data = migrated(tmp_path, {"priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
                               "hardPodAffinitySymmetricWeight": 7})
    assert entry(data, "hardPodAffinitySymmetricWeight")["status"] == "implicit"
    assert "InterPodAffinity" not in enabled(data)


def test_the_hard_weight_flag_is_used_where_the_policy_leaves_the_field_unset(tmp_path):
    data = migrated(tmp_path, None, "--algorithm-provider", "DefaultProvider", "--hard-pod-affinity-symmetric-weight", "5")
    assert args_of(data, "InterPodAffinity") == {"hardPodAffinityWeight": 5}
    assert entry(data, "--hard-pod-affinity-symmetric-weight")["kind"] == "flag"
    data = migrated(tmp_path, {"priorities": [{"name": "InterPodAffinityPriority", "weight": 1}],
                               "hardPodAffinitySymmetricWeight": 7}, "--hard-pod-affinity-symmetric-weight", "5")
    assert args_of(data, "InterPodAffinity") == {"hardPodAffinityWeight": 7}  # the Policy's field wins, as in 1.9
    result = run("--hard-pod-affinity-symmetric-weight", "500")
    assert result.exit_code == 2 and "must be in the range 1-100" in result.stderr


def test_absent_priorities_mean_none_and_preemption_follows_pod_priority(tmp_path):
    data = migrated(tmp_path, {"predicates": [{"name": "PodFitsResources"}]}, "--rules", "1.9")
    assert entry(data, "priorities")["status"] == "implicit" and "absent" in entry(data, "priorities")["note"]
    # no Score plugin but DynamicResources', which scores only pods with claims (1.35+, weight 2)
    assert {name: w for name, w in enabled(data).items() if w} == {"DynamicResources": 2}
    pure = migrated(tmp_path, {"predicates": [{"name": "PodFitsResources"}]}, "--rules", "1.9", "--to", "1.34")
    assert not [w for w in enabled(pure).values() if w] and "DynamicResources" in enabled(pure)
    assert "DefaultPreemption" not in enabled(data)
    data = migrated(tmp_path, {"predicates": [{"name": "PodFitsResources"}]}, "--feature-gates", "PodPriority=true")
    assert "DefaultPreemption" in enabled(data)
    assert args_of(data, "DefaultPreemption") == {"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 0}


def test_cluster_rules_add_what_the_engine_applies_to_modern_pods(tmp_path):
    policy = {"predicates": [{"name": "PodFitsResources"}], "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}
    pure = enabled(migrated(tmp_path, policy, "--rules", "1.9", "--to", "1.32"))
    cluster_data = migrated(tmp_path, policy, "--to", "1.32")
    cluster = enabled(cluster_data)
    assert set(cluster) - set(pure) == {"PodTopologySpread", "VolumeBinding", "SchedulingGates"}
    assert cluster["PodTopologySpread"] == 2
    assert args_of(cluster_data, "PodTopologySpread") == {"defaultingType": "List"}  # the pods' own constraints only
    assert "SchedulingGates" not in enabled(migrated(tmp_path, policy, "--to", "1.25"))


def test_extenders_map_field_by_field(tmp_path):
    data = migrated(tmp_path, {"extenders": [{
        "urlPrefix": "https://127.0.0.1:8888/ext", "filterVerb": "filter", "prioritizeVerb": "prioritize",
        "bindVerb": "bind", "weight": 3, "enableHttps": True, "httpTimeout": 1500000000, "nodeCacheCapable": True,
        "tlsConfig": {"Insecure": True, "ServerName": "ext"},
        "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}], "ignorable": True}]})
    assert data["configuration"]["extenders"] == [{
        "urlPrefix": "https://127.0.0.1:8888/ext", "filterVerb": "filter", "prioritizeVerb": "prioritize",
        "bindVerb": "bind", "weight": 3, "enableHTTPS": True, "tlsConfig": {"insecure": True, "serverName": "ext"},
        "httpTimeout": "1.5s", "nodeCacheCapable": True,
        "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}], "ignorable": True}]
    ext = entry(data, "https://127.0.0.1:8888/ext")
    assert ext["status"] == "exact" and "enableHTTPS" in ext["note"] and "1.5s" in ext["note"]


@pytest.mark.parametrize(("ns", "text"), [(3_000_000_000, "3s"), (1_500_000_000, "1.5s"), (90 * 10**9, "1m30s"),
                                          (7_200 * 10**9, "2h0m0s"), (250_000, "250µs"), (7, "7ns")])
def test_http_timeout_is_the_duration_go_writes(tmp_path, ns, text):
    """Go's Duration.String, as kube-scheduler writes the field back, and exactly the Policy's nanoseconds."""
    data = migrated(tmp_path, {"extenders": [{"urlPrefix": "http://127.0.0.1:9/x", "filterVerb": "f", "weight": 1,
                                              "httpTimeout": ns}]})
    timeout = data["configuration"]["extenders"][0]["httpTimeout"]
    assert timeout == text and round(parse_go_duration(timeout) * 10**9) == ns


def test_yaml_is_the_configuration_and_each_inexact_entry_gets_a_stderr_line():
    result = run("--algorithm-provider", "ClusterAutoscalerProvider", "--to", "1.32")
    assert result.exit_code == 0
    config = yaml.safe_load(result.stdout)
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1" and config["kind"] == "KubeSchedulerConfiguration"
    (fit,) = [c for c in config["profiles"][0]["pluginConfig"] if c["name"] == "NodeResourcesFit"]
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    data = json.loads(run("--algorithm-provider", "ClusterAutoscalerProvider", "--to", "1.32", "-o", "json").stdout)
    inexact = [e for e in data["mapping"] if e["status"] != "exact"]
    assert len(result.stderr.splitlines()) == len(inexact) > 0
    assert all(line.split(":")[0] in ("approximate", "dropped", "implicit") for line in result.stderr.splitlines())


def test_strict_fails_on_approximate_or_dropped_policy_entries_only(tmp_path):
    result = run("--algorithm-provider", "DefaultProvider", "--strict")
    assert result.exit_code == 1
    # 12 under the cluster rules (the default): NoVolumeZoneConflict reads the GA zone labels as v1 does
    assert result.stderr.splitlines()[-1] == "error: --strict: 12 Policy entries are approximate or dropped"
    exact = _write(tmp_path, {"predicates": [{"name": "GeneralPredicates"}, {"name": "PodToleratesNodeTaints"}],
                              "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]})
    for args in ((), ("--rules", "1.9"), ("--feature-gates", "PodPriority=true")):
        result = run("--policy-config-file", str(exact), "--strict", *args)
        # what 1.9 did unasked (the mandatory CheckNodeCondition, the queue, preemption) is said, not refused
        assert result.exit_code == 0, result.stderr
        assert "approximate: CheckNodeCondition: (mandatory" in result.stderr
    named = _write(tmp_path, {"predicates": [{"name": "PodFitsResources"}, {"name": "CheckNodeCondition"}]})
    result = run("--policy-config-file", str(named), "--strict")
    assert result.exit_code == 1 and "approximate: predicate CheckNodeCondition" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("--to", "1.24"), "error: --to 1.24: unsupported kube-scheduler version; supported: 1.25 to 1.36"),
    (("--to", "2.0"), "error: --to 2.0: unsupported kube-scheduler version; supported: 1.25 to 1.36"),
    (("--algorithm-provider", "Nope"), 'error: couldn\'t create scheduler using provider "Nope"'),
    (("--feature-gates", "Nope=true"), "error: unrecognized key: Nope"),
    (("--policy-config-file", "/nonexistent/policy.json"), "error: missing policy config file /nonexistent/policy.json"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1 and not result.stdout


def test_a_policy_the_loader_refuses_is_refused_the_same_way(tmp_path):
    bad = _write(tmp_path, {"predicates": [{"name": "NoSuchPredicate"}]})
    result = run("--policy-config-file", str(bad))
    validate = CliRunner().invoke(main, ["policy", "validate", str(bad)])
    assert result.exit_code == validate.exit_code == 2
    assert result.stderr.strip() == f"error: {bad}: couldn't create scheduler from policy: Invalid configuration: " \
                                    "Predicate type not found for NoSuchPredicate"
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "Policy", "priorities": [{"name": "LeastRequestedPriority", "weight": "x"}]}')
    result = run("--policy-config-file", str(broken))
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {broken}") and "Traceback" not in result.output


@pytest.mark.parametrize("policy", sorted((ROOT / "policies").glob("*.[jy]*")), ids=lambda p: p.name)
def test_every_bundled_policy_migrates_with_a_status_for_every_entry(policy):
    data = json.loads(run("--policy-config-file", str(policy), "-o", "json").stdout)
    loaded = load_policy_file(str(policy))
    named = [p.name for p in loaded.predicates or ()] + [p.name for p in loaded.priorities or ()]
    sources = [e["from"] for e in data["mapping"]]
    assert all(name in sources for name in named)
    assert all(e["status"] in ("exact", "approximate", "dropped", "implicit") and e["note"] for e in data["mapping"])


def _write(tmp_path: Path, policy: dict[str, Any]) -> Path:
    path = tmp_path / f"policy-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1", **policy}))
    return path


def test_an_algorithm_without_a_v1_plugin_is_dropped_with_where_it_came_from():
    from algorithmprovider.defaults import register_defaults
    from policy_scheduler.algorithm_source import from_provider
    from policy_scheduler.features import FeatureGates
    from policy_scheduler.migration import migrate, parse_target
    from policy_scheduler.registry import Registry

    reg = Registry()
    register_defaults(reg)
    reg.register_fit_predicate("RackHasPower", lambda pod, meta, node_info: (True, []))
    reg.register_priority_function2("PreferCheapNodes", lambda pod, meta, node_info: 0, None, 2)
    reg.register_algorithm_provider("Custom", {"PodFitsResources", "RackHasPower"}, {"PreferCheapNodes"})
    data = migrate(from_provider("Custom"), target=parse_target("1.32"), feature_gates=FeatureGates(),
                   registry=reg).as_dict()
    rack, cheap = entry(data, "RackHasPower"), entry(data, "PreferCheapNodes")
    assert rack["status"] == cheap["status"] == "dropped"
    assert "Filter plugin" in rack["note"] and "Score plugin" in cheap["note"] and "HTTP extender" in rack["note"]
    assert entry(data, "PodFitsResources")["status"] == "exact"


# -- 1.33 to 1.36 -------------------------------------------------------------------------------------------
FITS_ONLY = {"predicates": [{"name": "PodFitsResources"}], "priorities": []}


def test_the_default_target_is_the_newest_and_1_37_is_refused_with_the_range(tmp_path):
    assert migrated(tmp_path, FITS_ONLY)["target"] == "1.36"
    assert migrated(tmp_path, FITS_ONLY, "--to", "v1.36.3")["target"] == "1.36"
    result = run("--to", "1.37")
    assert result.exit_code == 2 and not result.stdout
    assert result.stderr.strip() == "error: --to 1.37: unsupported kube-scheduler version; supported: 1.25 to 1.36"


@pytest.mark.parametrize(("to", "present", "gate_off"), [("1.32", False, False), ("1.34", False, False),
                                                         ("1.35", True, True), ("1.36", True, False)])
def test_node_declared_features_follow_the_cluster_rules_where_the_target_registers_the_plugin(
        tmp_path, to, present, gate_off):
    data = migrated(tmp_path, FITS_ONLY, "--to", to)
    features = [e for e in data["mapping"] if e["from"] == "(cluster rules: node declared features)"]
    assert ("NodeDeclaredFeatures" in enabled(data)) == present
    if present:
        (found,) = features
        assert found["kind"] == "implicit" and found["status"] == "implicit"
        assert found["to"] == [{"plugin": "NodeDeclaredFeatures", "extensionPoint": "filter"}]
        assert ("gate NodeDeclaredFeatures is alpha and off" in found["note"]) == gate_off
        assert list(enabled(data))[-1] == "NodeDeclaredFeatures"  # last, as 1.36's default profile appends it
    else:
        assert not features
    # --rules 1.9: the Policy alone
    assert "NodeDeclaredFeatures" not in enabled(migrated(tmp_path, FITS_ONLY, "--to", to, "--rules", "1.9"))


def test_a_policy_naming_node_declared_features_keeps_it_where_it_exists(tmp_path):
    policy = {"predicates": [{"name": "NodeDeclaredFeatures"}], "priorities": []}
    newest = migrated(tmp_path, policy, "--to", "1.36")
    assert entry(newest, "NodeDeclaredFeatures")["status"] == "exact"
    assert "NodeDeclaredFeatures" in enabled(newest)
    assert not [e for e in newest["mapping"] if e["from"] == "(cluster rules: node declared features)"]
    older = migrated(tmp_path, policy, "--to", "1.32")
    assert entry(older, "NodeDeclaredFeatures")["status"] == "dropped"
    assert "no NodeDeclaredFeatures plugin before kube-scheduler 1.35" in entry(older, "NodeDeclaredFeatures")["note"]
    assert "NodeDeclaredFeatures" not in json.dumps(older["configuration"])


@pytest.mark.parametrize(("to", "decisions"), [
    ("1.32", None), ("1.33", None),  # DynamicResourceAllocation off by default: the API server drops the claims
    ("1.34", [("filter", None), ("postFilter", None)]),
    ("1.36", [("filter", None), ("postFilter", None), ("score", 2)])])
@pytest.mark.parametrize("rules", ["cluster", "1.9"])
def test_dynamic_resources_stay_on_where_the_claims_exist(tmp_path, to, decisions, rules):
    data = migrated(tmp_path, FITS_ONLY, "--to", to, "--rules", rules)
    claims = [e for e in data["mapping"] if e["from"] == "(spec.resourceClaims: dynamic resource allocation)"]
    if decisions is None:
        assert not claims and "DynamicResources" not in enabled(data)
        return
    (found,) = claims
    assert found["kind"] == "implicit" and found["status"] == "approximate"
    assert [(t["plugin"], t["extensionPoint"], t.get("weight")) for t in found["to"]] == \
        [("DynamicResources", point, weight) for point, weight in decisions]
    assert enabled(data)["DynamicResources"] == (2 if to == "1.36" else None)
    # in v1's default order: before DefaultPreemption, after the filters
    order = list(enabled(data))
    assert order.index("DynamicResources") > order.index("NodeResourcesFit")
    assert "DynamicResources" not in disabled(data, "filter") + disabled(data, "score")
    assert "Switched off, v1 would bind the pod as if it had no claims" in found["note"]
    assert ("allocates a pod's spec.resourceClaims as v1's DynamicResources does" in found["note"]) == (
        rules == "cluster")
    # the claims are not the Policy's: --strict does not count the entry
    assert run("--policy-config-file", str(_write(tmp_path, {"predicates": [{"name": "GeneralPredicates"}]})),
               "--to", to, "--rules", rules, "--strict").exit_code == 0


def test_version_dependent_notes_follow_the_target(tmp_path):
    policy = {"priorities": [{"name": "BalancedResourceAllocation", "weight": 1},
                             {"name": "ImageLocalityPriority", "weight": 1}]}
    notes = {to: {name: entry(migrated(tmp_path, policy, "--to", to), name)["note"]
                  for name in ("BalancedResourceAllocation", "ImageLocalityPriority")}
             for to in ("1.32", "1.33", "1.35", "1.36")}
    for to, note in notes.items():
        balanced, image = note["BalancedResourceAllocation"], note["ImageLocalityPriority"]
        assert ("PreScore skips best-effort pods since 1.33" in balanced) == (to != "1.32"), to
        assert ("50 + (50 + with - without)/2" in balanced) == (to == "1.36"), to
        assert ("1 - (standard deviation" in balanced) == (to != "1.36"), to
        assert ("image volumes (spec.volumes[].image" in image) == (to == "1.36"), to
    preemption = {to: entry(migrated(tmp_path, FITS_ONLY, "--to", to, "--feature-gates", "PodPriority=true"),
                            "(feature gate PodPriority: preemption)")["note"] for to in ("1.32", "1.33")}
    assert "SchedulerAsyncPreemption" not in preemption["1.32"] and "SchedulerAsyncPreemption" in preemption["1.33"]
