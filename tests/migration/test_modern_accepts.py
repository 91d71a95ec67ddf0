"""``policy-scheduler migrate`` against the real modern kube-schedulers (``<envtest>/1.26|1.32|1.36/bin``).

* Every bundled Policy and both providers, for ``--to 1.26``, ``1.32`` and ``1.36``: the binary of that line
  accepts the configuration (``--write-config-to``), its defaulted profile is ours, and the decisions it
  will take (plugin x extension point x weight) are exactly those the mapping entries claim.
* The cloud volume-limit plugins: a ``--to 1.31`` configuration is refused by 1.32 and accepted by 1.26.
* The issue's done-when check: ``migrate --algorithm-provider ClusterAutoscalerProvider --to 1.32`` (YAML).
* Live: the reference scheduler, started with a migrated configuration against an envtest server of its
  line, binds the pods, packs them under MostAllocated and never uses a node the configuration forbids.
* ``--policy-configmap`` against a real API server.
* 1.36: a pod with ``spec.resourceClaims`` stays pending under the migrated configuration (DynamicResources
  on), and is bound, its claim unallocated, once DynamicResources is switched off: why the mapping keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchmarks.harness.daemon import Cluster, node, pod, wait_until
from benchmarks.harness.envtest import EnvtestServer
from policy_scheduler.cli import main
from policy_scheduler.migration.versions import DECISIONS, POINTS, SCORE, parse_target
from tests.kube.reference import ConfigurationRefused, ReferenceScheduler, write_config_to

POLICIES = Path(__file__).resolve().parents[2] / "policies"
MODERN = ("1.26", "1.32", "1.36")
SCHEDULER_NAME = "migrated"
#: The extension points a profile lists besides multiPoint (v1's ``Plugins``).
POINT_NAMES = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve",
               "permit", "preBind", "bind", "postBind")
CLOUD_VOLUME_LIMITS = ("EBSLimits", "GCEPDLimits", "AzureDiskLimits")

#: test id -> ``migrate`` arguments (besides ``--to`` and ``-o json``).
SOURCES: dict[str, list[str]] = {
    **{path.name: ["--policy-config-file", str(path)]
       for path in sorted([*POLICIES.glob("*.json"), *POLICIES.glob("*.yaml")])},
    "DefaultProvider": ["--algorithm-provider", "DefaultProvider"],
    "ClusterAutoscalerProvider": ["--algorithm-provider", "ClusterAutoscalerProvider"],
    "DefaultProvider+PodPriority": ["--algorithm-provider", "DefaultProvider", "--feature-gates", "PodPriority=true"],
    "all-arguments.yaml+rules-1.9": ["--policy-config-file", str(POLICIES / "all-arguments.yaml"), "--rules", "1.9"],
}


def run_migrate(*args: str) -> dict[str, Any]:
    """``migrate ... -o json``: the document (kind, source, target, configuration, mapping)."""
    result = CliRunner().invoke(main, ["migrate", *args, "-o", "json"])
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.stderr}{result.exception!r}"
    return json.loads(result.stdout)


def only_profile(configuration: dict[str, Any]) -> dict[str, Any]:
    profiles = configuration["profiles"]
    assert len(profiles) == 1, profiles
    return profiles[0]


def names(plugin_set: dict[str, Any] | None, key: str) -> list[str]:
    return [p["name"] for p in ((plugin_set or {}).get(key) or ())]


def effective_decisions(profile: dict[str, Any], version: str) -> set[tuple[str, str, int | None]]:
    """What the profile decides: each plugin enabled through multiPoint at each of its decisions in that
    version (``DECISIONS``, ``Target.decisions``) that is not switched off at its extension points
    (``POINTS``); a decision off at some of its points but not all is reported as such (it would fail any
    comparison)."""
    target = parse_target(version)
    plugins = profile["plugins"]
    disabled = {point: set(names(plugins.get(point), "disabled")) for point in POINT_NAMES}
    out: set[tuple[str, str, int | None]] = set()
    for entry in plugins["multiPoint"]["enabled"]:
        plugin = entry["name"]
        assert plugin in DECISIONS, f"the scheduler enabled {plugin}, which versions.DECISIONS does not know"
        for decision in target.decisions(plugin):
            points = POINTS.get(decision, ())
            off = [p for p in points if plugin in disabled[p] or "*" in disabled[p]]
            if off and len(off) < len(points):
                out.add((plugin, f"{decision} (partly disabled at {', '.join(off)})", None))
            elif not off:
                out.add((plugin, decision, entry.get("weight") if decision == SCORE else None))
    return out


def claimed_decisions(mapping: list[dict[str, Any]]) -> set[tuple[str, str, int | None]]:
    """The union of the mapping entries' plugin claims; a score's weight is the highest claimed."""
    weights: dict[str, int] = {}
    claims: set[tuple[str, str]] = set()
    for entry in mapping:
        for item in entry["to"]:
            if "plugin" not in item:
                continue
            claims.add((item["plugin"], item["extensionPoint"]))
            if item["extensionPoint"] == SCORE:
                weights[item["plugin"]] = max(weights.get(item["plugin"], 0), item["weight"])
    return {(plugin, point, weights[plugin] if point == SCORE else None) for plugin, point in claims}


def contained(ours: Any, theirs: Any, path: str = "args") -> list[str]:
    """Where ``ours`` is not part of ``theirs`` (dicts: our keys with contained values; lists: same length,
    element by element; anything else: equal)."""
    if isinstance(ours, dict):
        if not isinstance(theirs, dict):
            return [f"{path}: {theirs!r} is not a mapping"]
        return [miss for key, value in ours.items()
                for miss in (contained(value, theirs[key], f"{path}.{key}") if key in theirs
                             else [f"{path}.{key}: missing"])]
    if isinstance(ours, list):
        if not isinstance(theirs, list) or len(ours) != len(theirs):
            return [f"{path}: {theirs!r} is not {ours!r}"]
        return [miss for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
                for miss in contained(a, b, f"{path}[{i}]")]
    return [] if ours == theirs else [f"{path}: {theirs!r} != {ours!r}"]


# -- 1. every source, both lines: accepted, and the effective plugins are the mapping's claims -----------
@pytest.mark.parametrize("version", MODERN, ids=lambda v: f"to-{v}")
@pytest.mark.parametrize("source", list(SOURCES))
def test_the_modern_scheduler_accepts_it_as_claimed(source: str, version: str, tmp_path: Path) -> None:
    migrated = run_migrate(*SOURCES[source], "--to", version)
    assert migrated["target"] == version
    ours = migrated["configuration"]
    try:
        out = write_config_to(version, ours, tmp_path)
    except ConfigurationRefused as e:
        pytest.fail(f"{e}\nconfiguration: {json.dumps(ours)}")
    mine, theirs = only_profile(ours), only_profile(out)

    # (a) the same profile, as the scheduler defaulted it
    assert theirs["schedulerName"] == mine["schedulerName"]
    assert [(p["name"], p.get("weight", 0)) for p in theirs["plugins"]["multiPoint"]["enabled"]] == \
        [(p["name"], p.get("weight", 0)) for p in mine["plugins"]["multiPoint"]["enabled"]]
    assert names(theirs["plugins"]["multiPoint"], "disabled") == ["*"]
    for point in POINT_NAMES:
        assert names(theirs["plugins"].get(point), "disabled") == names(mine["plugins"].get(point), "disabled"), point
        assert names(theirs["plugins"].get(point), "enabled") == [], f"{point}: enabled outside multiPoint"

    # (b) the decisions it will take are those the mapping claims
    effective, claimed = effective_decisions(theirs, version), claimed_decisions(migrated["mapping"])
    assert effective == claimed, (f"the scheduler decides but nothing claims: {sorted(effective - claimed, key=str)}; "
                                  f"claimed but not decided: {sorted(claimed - effective, key=str)}")

    # (c) our plugin arguments survive the scheduler's defaulting
    their_args = {c["name"]: c["args"] for c in theirs.get("pluginConfig") or ()}
    for config in mine.get("pluginConfig") or ():
        assert config["name"] in their_args, f"the scheduler dropped the arguments of {config['name']}"
        missing = contained(config["args"], their_args[config["name"]], f"{config['name']}.args")
        assert not missing, missing

    # (d) every feasible node is scored, as in 1.9
    assert out["percentageOfNodesToScore"] == 100

    # (e) the extenders as emitted
    assert len(out.get("extenders") or ()) == len(ours.get("extenders") or ())
    for emitted, defaulted in zip(ours.get("extenders") or (), out.get("extenders") or (), strict=True):
        missing = contained(emitted, defaulted, "extender")
        assert not missing, missing
    if source == "with-extender.json":
        (extender,) = out["extenders"]
        assert extender["urlPrefix"] == "http://127.0.0.1:12346/scheduler"
        assert extender["httpTimeout"] == "3s"
        assert extender["weight"] == 5
        assert (extender["filterVerb"], extender["prioritizeVerb"]) == ("filter", "prioritize")
        assert not extender.get("enableHTTPS")


# -- 2. the cloud volume-limit plugins follow the target version ---------------------------------------
def test_cloud_volume_limits_follow_the_target(tmp_path: Path) -> None:
    to_1_31 = run_migrate("--algorithm-provider", "DefaultProvider", "--to", "1.31")["configuration"]
    enabled_1_31 = names(only_profile(to_1_31)["plugins"]["multiPoint"], "enabled")
    assert set(CLOUD_VOLUME_LIMITS) <= set(enabled_1_31), enabled_1_31
    with pytest.raises(ConfigurationRefused) as refused:
        write_config_to("1.32", to_1_31, tmp_path)
    assert any(name in str(refused.value) for name in CLOUD_VOLUME_LIMITS), str(refused.value)
    accepted = write_config_to("1.26", to_1_31, tmp_path)
    assert set(CLOUD_VOLUME_LIMITS) <= set(names(only_profile(accepted)["plugins"]["multiPoint"], "enabled"))

    to_1_32 = run_migrate("--algorithm-provider", "DefaultProvider", "--to", "1.32")["configuration"]
    assert not any(name in json.dumps(to_1_32) for name in CLOUD_VOLUME_LIMITS), to_1_32
    assert "NodeVolumeLimits" in names(only_profile(to_1_32)["plugins"]["multiPoint"], "enabled")
    write_config_to("1.32", to_1_32, tmp_path)


# -- 3. the done-when check --------------------------------------------------------------------
def test_cluster_autoscaler_provider_yaml_runs_on_1_32(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["migrate", "--algorithm-provider", "ClusterAutoscalerProvider", "--to", "1.32"])
    assert result.exit_code == 0, result.stderr
    configuration = yaml.safe_load(result.stdout)
    assert configuration["kind"] == "KubeSchedulerConfiguration"
    out = write_config_to("1.32", configuration, tmp_path)
    args = {c["name"]: c["args"] for c in only_profile(out)["pluginConfig"]}
    assert args["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"


# -- 4. live: the reference scheduler binds with the migrated configuration ----------------------------
@pytest.mark.parametrize("version", MODERN, ids=lambda v: f"to-{v}")
def test_extender_keys_are_v1_s_which_are_decoded_strictly(version: str, tmp_path: Path) -> None:
    """1.9's ``enableHttps`` is an unknown field to v1's strict decoder: the spelling ``migrate`` changes matters."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1", "extenders": [
        {"urlPrefix": "https://127.0.0.1:9/ext", "filterVerb": "filter", "weight": 1, "enableHttps": True,
         "httpTimeout": 2500000000}]}))
    configuration = run_migrate("--policy-config-file", str(policy), "--to", version)["configuration"]
    (extender,) = write_config_to(version, configuration, tmp_path)["extenders"]
    assert extender["enableHTTPS"] is True and extender["httpTimeout"] == "2.5s"
    verbatim = json.loads(json.dumps(configuration).replace('"enableHTTPS"', '"enableHttps"'))
    with pytest.raises(ConfigurationRefused, match=r'unknown field \\?"extenders\[0\]\.enableHttps'):
        write_config_to(version, verbatim, tmp_path)


@pytest.fixture(scope="module")
def servers(envtest_pool) -> Iterator[Any]:
    """``servers(version)``: one envtest server per line for the module, leased on first use."""
    started: dict[str, EnvtestServer] = {}

    def get(version: str) -> EnvtestServer:
        if version not in started:
            started[version] = envtest_pool.lease(version)
        return started[version]

    yield get
    for server in started.values():
        envtest_pool.release(server)


@pytest.fixture
def live(servers, request) -> Iterator[tuple[EnvtestServer, Cluster]]:
    """The module's server of ``version`` (the test's parameter), emptied of nodes and pods afterwards."""
    server = servers(request.node.callspec.params["version"])
    rest = server.rest()
    yield server, Cluster(rest)
    rest.delete("/api/v1/namespaces/default/pods", {"gracePeriodSeconds": 0})
    rest.delete("/api/v1/nodes")
    wait_until(lambda: not rest.get("/api/v1/nodes")["items"]
               and not rest.get("/api/v1/namespaces/default/pods")["items"], 30, what="an empty cluster")


def filler(name: str, node_name: str) -> dict[str, Any]:
    """A pod of another scheduler already bound to ``node_name`` (cpu and memory in proportion, so
    NodeResourcesBalancedAllocation scores every node alike)."""
    return pod(name, cpu="2", memory="4Gi", scheduler="someone-else", node_name=node_name)


LOG_TAIL = 6000


def run_reference(server: EnvtestServer, cluster: Cluster, log_dir: Path, configuration: dict[str, Any],
                  pods: list[str]) -> tuple[dict[str, str], str]:
    """Start the reference scheduler with ``configuration`` and wait until ``pods`` are bound: their hosts,
    and the tail of the scheduler's log (for the assertion messages)."""
    reference = ReferenceScheduler(server, log_dir, configuration=configuration).start()
    try:
        try:
            wait_until(lambda: set(pods) <= set(cluster.bound()) or reference.exited(), 60,
                       what=f"{len(pods)} pods bound")
            assert not reference.exited(), "the reference scheduler exited"
        except AssertionError as e:
            raise AssertionError(f"{e}; placements {cluster.placements()}\n"
                                 f"--- kube-scheduler log (tail) ---\n{reference.log()[-LOG_TAIL:]}") from None
        bound = cluster.bound()
    finally:
        reference.stop()
    log = f"\n--- kube-scheduler log (tail) ---\n{reference.log()[-LOG_TAIL:]}"
    return {name: bound[name] for name in pods}, log


@pytest.mark.parametrize("version", MODERN, ids=lambda v: f"k8s-{v}")
def test_live_cluster_autoscaler_provider_packs(version: str, live, tmp_path: Path) -> None:
    server, cluster = live
    configuration = run_migrate("--algorithm-provider", "ClusterAutoscalerProvider", "--to", version,
                                "--scheduler-name", SCHEDULER_NAME)["configuration"]
    allowed = ["ready-1", "ready-2", "ready-3"]
    for name in allowed:
        cluster.add_node(node(name, cpu="4", memory="8Gi"))
    # The forbidden nodes are the most allocated ones (a filler each), so MostAllocated would pick them first.
    cluster.add_node(node("cordoned", cpu="4", memory="8Gi", unschedulable=True))
    cluster.add_node(node("tainted", cpu="4", memory="8Gi",
                          taints=[{"key": "dedicated", "value": "other", "effect": "NoSchedule"}]))
    cluster.add_pod(filler("filler-cordoned", "cordoned"))
    cluster.add_pod(filler("filler-tainted", "tainted"))
    pods = [f"packed-{i}" for i in range(6)]  # 6 x (500m, 1Gi): all fit on one 4-cpu 8Gi node
    for name in pods:
        cluster.add_pod(pod(name, cpu="500m", memory="1Gi", scheduler=SCHEDULER_NAME))

    hosts, log = run_reference(server, cluster, tmp_path, configuration, pods)
    assert set(hosts.values()) <= set(allowed), f"bound to a forbidden node: {hosts}{log}"
    assert len(set(hosts.values())) == 1, f"MostAllocated should pack the pods onto one node: {hosts}{log}"


@pytest.mark.parametrize("version", MODERN, ids=lambda v: f"k8s-{v}")
def test_live_all_arguments_keeps_labels_presence(version: str, live, tmp_path: Path) -> None:
    server, cluster = live
    configuration = run_migrate("--policy-config-file", str(POLICIES / "all-arguments.yaml"), "--to", version,
                                "--scheduler-name", SCHEDULER_NAME)["configuration"]
    allowed = ["zoned-1", "zoned-2", "zoned-3"]
    for i, name in enumerate(allowed):
        cluster.add_node(node(name, cpu="4", memory="8Gi", labels={"zone": "z1", "rack": f"r{i}", "region": "eu"}))
    # The forbidden nodes are bigger and labelled ssd, so LeastAllocated and PreferSSD would both pick them.
    cluster.add_node(node("no-zone", cpu="64", memory="128Gi", labels={"ssd": "true", "rack": "r9", "region": "eu"}))
    cluster.add_node(node("retiring", cpu="64", memory="128Gi",
                          labels={"zone": "z1", "retiring": "yes", "ssd": "true", "rack": "r8", "region": "eu"}))
    pods = [f"labelled-{i}" for i in range(6)]
    for name in pods:
        cluster.add_pod(pod(name, cpu="500m", memory="1Gi", scheduler=SCHEDULER_NAME))

    hosts, log = run_reference(server, cluster, tmp_path, configuration, pods)
    assert set(hosts.values()) <= set(allowed), f"bound to a node without zone or with retiring: {hosts}{log}"


# -- 4b. 1.36: why DynamicResources stays on -----------------------------------------------------------
DEVICE_CLASS = "gpu.example.com"
RESOURCE = "/apis/resource.k8s.io/v1"


def claiming_pod(name: str) -> dict[str, Any]:
    """A pod of the migrated scheduler with one ResourceClaim (``gpu-claim``: a device of a class no node has)."""
    obj = pod(name, cpu="100m", memory="64Mi", scheduler=SCHEDULER_NAME)
    obj["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    obj["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return obj


def pod_scheduled_false(cluster: Cluster, name: str) -> str | None:
    for condition in ((cluster.get_pod(name) or {}).get("status") or {}).get("conditions") or ():
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition.get("message") or ""
    return None


@pytest.mark.parametrize("version", ["1.36"], ids=lambda v: f"k8s-{v}")
def test_live_a_pod_with_claims_is_bound_only_with_dynamic_resources_on(version: str, live, tmp_path: Path) -> None:
    """The migrated configuration keeps DynamicResources (the mapping's claims entry): the pod whose claim
    cannot be allocated stays pending. The same configuration without it binds the pod, claim unallocated:
    nothing else in the kube-scheduler reads ``spec.resourceClaims``."""
    server, cluster = live
    rest = server.rest()
    migrated = run_migrate("--algorithm-provider", "DefaultProvider", "--to", version, "--scheduler-name", SCHEDULER_NAME)
    (claims,) = [e for e in migrated["mapping"] if e["from"] == "(spec.resourceClaims: dynamic resource allocation)"]
    assert claims["status"] == "approximate"
    configuration = migrated["configuration"]
    multi_point = only_profile(configuration)["plugins"]["multiPoint"]
    assert "DynamicResources" in names(multi_point, "enabled")
    without = json.loads(json.dumps(configuration))
    plugins = only_profile(without)["plugins"]
    plugins["multiPoint"]["enabled"] = [p for p in plugins["multiPoint"]["enabled"] if p["name"] != "DynamicResources"]

    rest.post(f"{RESOURCE}/deviceclasses", {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                            "metadata": {"name": DEVICE_CLASS}, "spec": {}})
    try:
        rest.post(f"{RESOURCE}/namespaces/default/resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu-claim"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}]}}})
        for name in ("n1", "n2"):
            cluster.add_node(node(name, cpu="4", memory="8Gi"))
        cluster.add_pod(claiming_pod("claimer"))
        cluster.add_pod(pod("plain", cpu="100m", memory="64Mi", scheduler=SCHEDULER_NAME))

        reference = ReferenceScheduler(server, tmp_path, configuration=configuration).start()
        try:
            message = wait_until(lambda: pod_scheduled_false(cluster, "claimer"), 60, what="claimer unschedulable")
            # Both pods were pending when it started: claimer (the older) is tried first, plain's bind may follow.
            try:
                wait_until(lambda: "plain" in cluster.bound(), 30, interval=0.05, what="plain bound")
            except AssertionError as e:
                raise AssertionError(f"{e}\n{reference.log()[-LOG_TAIL:]}") from None
            assert "claimer" not in cluster.bound()
            assert "claim" in message, message
        finally:
            reference.stop()

        second = tmp_path / "without"
        second.mkdir()
        hosts, log = run_reference(server, cluster, second, without, ["claimer"])
        assert hosts["claimer"] in ("n1", "n2"), log
        claim = rest.get(f"{RESOURCE}/namespaces/default/resourceclaims/gpu-claim")
        assert not (claim.get("status") or {}).get("allocation"), f"bound without an allocation: {claim}{log}"
    finally:
        rest.delete(f"{RESOURCE}/namespaces/default/resourceclaims/gpu-claim")
        rest.delete(f"{RESOURCE}/deviceclasses/{DEVICE_CLASS}")


# -- 5. --policy-configmap against a real API server ---------------------------------------------------
def test_policy_configmap(servers) -> None:
    server = servers("1.26")
    example = POLICIES / "upstream-example.json"
    Cluster(server.rest()).put_configmap("kube-system", "scheduler-policy", {"policy.cfg": example.read_text()})

    from_configmap = run_migrate("--policy-configmap", "scheduler-policy", "--kubeconfig", server.kubeconfig)
    from_file = run_migrate("--policy-config-file", str(example))
    assert from_configmap["configuration"] == from_file["configuration"]
    assert from_configmap["mapping"] == from_file["mapping"]
    assert "kube-system/scheduler-policy" in from_configmap["source"], from_configmap["source"]

    missing = CliRunner().invoke(main, ["migrate", "--policy-configmap", "nope", "--kubeconfig", server.kubeconfig,
                                        "-o", "json"])
    assert missing.exit_code == 2, (missing.exit_code, missing.stderr, missing.exception)
    lines = missing.stderr.splitlines()
    assert len(lines) == 1, missing.stderr
    assert lines[0].startswith("error: couldn't get policy config map kube-system/nope: "), lines[0]
    assert "Traceback" not in missing.output
    assert missing.stdout == ""
