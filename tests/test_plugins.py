"""Third-party predicates, priorities and providers through Python entry points.

A real distribution (dist-info with entry_points.txt and a module) is put on sys.path, as pip would
install it; the registry discovers it through importlib.metadata. (``tests/plugins/`` pip-installs the
example plugin into a virtual environment and drives the command line.)
"""

from __future__ import annotations

import json
import logging
import sys
import textwrap

import pytest
from click.testing import CliRunner

from policy_scheduler.api import load_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.errors import ConfigurationError
from policy_scheduler.factory import create_from_policy, create_from_provider
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.plugins import BUILT_IN, PluginSource, failed_plugins_context, load_plugins, source_json
from policy_scheduler.registry import REGISTRY, RegistryError

PLUGIN = '''
from policy_scheduler.algorithm import PriorityConfigFactory

def avoid_canary(pod, meta, node_info):
    if node_info.node.labels.get("canary") == "true" and pod.labels.get("tier") == "prod":
        return False, ["AvoidCanary"]
    return True, []

def prefer_big(pod, meta, node_info):
    return min(10, node_info.allocatable.milli_cpu // 1000)

def register(registry):
    registry.register_fit_predicate("AvoidCanary", avoid_canary)
    registry.register_priority_function2("PreferBigNodes", prefer_big, None, 2)
    registry.register_algorithm_provider("CanaryAwareProvider", {"AvoidCanary", "GeneralPredicates"}, {"PreferBigNodes"})
'''

MODULES = ("canaryplugin", "brokenplugin", "dupplugin", "selfplugin", "extendplugin")


def install_fake_distribution(root, name, module_source, entry_points, version="1.0"):
    (root / f"{name}.py").write_text(textwrap.dedent(module_source))
    info = root / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in [m for m in sys.modules if m.startswith(MODULES)]:
        del sys.modules[mod]


def cluster_with_canary() -> ClusterState:
    cluster = ClusterState()
    cluster.add_node(Node({"metadata": {"name": "canary-1", "labels": {"canary": "true"}},
                           "status": {"allocatable": {"cpu": "16", "memory": "1Gi", "pods": "10"}}}))
    cluster.add_node(Node({"metadata": {"name": "small-1"}, "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}}}))
    cluster.add_node(Node({"metadata": {"name": "big-1"}, "status": {"allocatable": {"cpu": "8", "memory": "1Gi", "pods": "10"}}}))
    return cluster


PROD = Pod({"metadata": {"name": "web", "namespace": "default", "labels": {"tier": "prod"}}, "spec": {"containers": [{}]}})


def test_entry_point_plugins_register_predicates_priorities_and_providers(plugin_path):
    install_fake_distribution(plugin_path, "canaryplugin", PLUGIN, """
        [policy_scheduler.predicates]
        canary = canaryplugin:register
        """)
    reg = REGISTRY.copy()
    assert load_plugins(reg) == ["policy_scheduler.predicates:canary"]
    assert "AvoidCanary" not in REGISTRY.fit_predicates  # only the given registry changed
    cluster = cluster_with_canary()
    scheduler = create_from_provider("CanaryAwareProvider", cluster=cluster, registry=reg)
    explanation = scheduler.explain(PROD)
    assert explanation.host == "big-1"
    assert explanation.nodes["canary-1"].predicates["AvoidCanary"].reasons == ["AvoidCanary"]
    assert explanation.nodes["big-1"].priorities["PreferBigNodes"] == (8, 2)
    # A Policy can name plugin algorithms like built-ins.
    policy = load_policy('{"predicates": [{"name": "AvoidCanary"}], "priorities": [{"name": "PreferBigNodes", "weight": 1}]}')
    assert create_from_policy(policy, cluster=cluster, registry=reg).schedule(PROD) == "big-1"


def test_provenance_of_every_name(plugin_path):
    install_fake_distribution(plugin_path, "canaryplugin", PLUGIN, """
        [policy_scheduler.predicates]
        canary = canaryplugin:register
        """, version="2.3.1")
    reg = REGISTRY.copy()
    load_plugins(reg)
    source = PluginSource("canaryplugin", "2.3.1", "policy_scheduler.predicates:canary", "canaryplugin:register")
    expected = {"distribution": "canaryplugin", "version": "2.3.1",
                "entry_point": "policy_scheduler.predicates:canary", "value": "canaryplugin:register"}
    for kind, name in (("predicate", "AvoidCanary"), ("priority", "PreferBigNodes"), ("provider", "CanaryAwareProvider")):
        assert reg.sources[(kind, name)] == source
        assert source_json(reg, kind, name) == expected
    assert source_json(reg, "predicate", "GeneralPredicates") == BUILT_IN
    assert source_json(reg, "provider", "DefaultProvider") == BUILT_IN
    assert reg.copy().sources == reg.sources  # schedulers' registry copies keep it


def test_broken_plugin_is_a_warning_and_the_rest_loads(plugin_path, caplog):
    install_fake_distribution(plugin_path, "brokenplugin", "raise RuntimeError('boom\\n  on two lines')\n", """
        [policy_scheduler.providers]
        broken = brokenplugin:register
        """)
    install_fake_distribution(plugin_path, "canaryplugin", PLUGIN, """
        [policy_scheduler.predicates]
        canary = canaryplugin:register
        """)
    reg = REGISTRY.copy()
    with caplog.at_level(logging.WARNING, logger="policy_scheduler.plugins"):
        assert load_plugins(reg) == ["policy_scheduler.predicates:canary"]
    message = ("plugin policy_scheduler.providers:broken = brokenplugin:register (brokenplugin 1.0) "
               "failed to load: RuntimeError: boom on two lines")
    assert [r.getMessage() for r in caplog.records] == [f"{message}; continuing without it"]
    assert [str(f) for f in reg.plugin_failures] == [message]
    assert failed_plugins_context(reg) == f"; {message}"
    assert "AvoidCanary" in reg.fit_predicates


def test_a_plugin_may_not_take_a_registered_name_and_is_all_or_nothing(plugin_path, caplog):
    install_fake_distribution(plugin_path, "dupplugin", """
        def register(registry):
            registry.register_fit_predicate("StrictResources", lambda pod, meta, info: (True, []))
            registry.register_fit_predicate("PodFitsResources", lambda pod, meta, info: (False, ["no"]))
        """, """
        [policy_scheduler.predicates]
        dup = dupplugin:register
        """)
    reg = REGISTRY.copy()
    builtin = reg.fit_predicates["PodFitsResources"]
    with caplog.at_level(logging.WARNING, logger="policy_scheduler.plugins"):
        assert load_plugins(reg) == []
    assert reg.fit_predicates["PodFitsResources"] is builtin
    assert "StrictResources" not in reg.fit_predicates  # nothing of a failed plugin is kept
    [failure] = reg.plugin_failures
    assert failure.error == ('RegistryError: predicate "PodFitsResources" is already registered (built-in); '
                             "a plugin cannot replace it")
    assert "dupplugin 1.0" in caplog.text


def test_two_plugins_registering_one_name_first_in_order_wins(plugin_path):
    for dist in ("aaa_plugin", "bbb_plugin"):
        install_fake_distribution(plugin_path, dist, """
            def register(registry):
                registry.register_priority_function2("SharedName", lambda pod, meta, info: 1, None, 1)
            """, f"""
            [policy_scheduler.priorities]
            shared = {dist}:register
            """)
    try:
        reg = REGISTRY.copy()
        assert load_plugins(reg) == ["policy_scheduler.priorities:shared"]
        assert reg.sources[("priority", "SharedName")].distribution == "aaa_plugin"
        [failure] = reg.plugin_failures
        assert failure.source.distribution == "bbb_plugin"
        assert 'priority "SharedName" is already registered (by plugin policy_scheduler.priorities:shared' in failure.error
    finally:
        for mod in ("aaa_plugin", "bbb_plugin"):
            sys.modules.pop(mod, None)


def test_module_entry_point_registering_on_import(plugin_path):
    """An entry point naming a module: its import registers through the module-level functions."""
    install_fake_distribution(plugin_path, "selfplugin", """
        from policy_scheduler import registry
        registry.register_fit_predicate("SelfRegistered", lambda pod, meta, info: (True, []))
        """, """
        [policy_scheduler.predicates]
        self = selfplugin
        """)
    reg = REGISTRY.copy()
    assert load_plugins(reg) == ["policy_scheduler.predicates:self"]
    assert "SelfRegistered" in reg.fit_predicates
    assert "SelfRegistered" not in REGISTRY.fit_predicates  # went to the registry being loaded
    assert reg.sources[("predicate", "SelfRegistered")].value == "selfplugin"


def test_provider_plugin_extending_a_built_in_provider(plugin_path):
    install_fake_distribution(plugin_path, "extendplugin", """
        def register(registry):
            registry.register_fit_predicate("AlwaysFits", lambda pod, meta, info: (True, []))
            registry.insert_predicate_key_to_algo_provider("DefaultProvider", "AlwaysFits")
        """, """
        [policy_scheduler.providers]
        extend = extendplugin:register
        """)
    reg = REGISTRY.copy()
    load_plugins(reg)
    assert "AlwaysFits" in reg.get_algorithm_provider("DefaultProvider").fit_predicate_keys
    # ClusterAutoscalerProvider shares DefaultProvider's predicate set, as upstream.
    assert "AlwaysFits" in reg.get_algorithm_provider("ClusterAutoscalerProvider").fit_predicate_keys
    assert [s.distribution for s in reg.provider_extensions["DefaultProvider"]] == ["extendplugin"]
    assert "AlwaysFits" not in REGISTRY.get_algorithm_provider("DefaultProvider").fit_predicate_keys


def test_unknown_names_name_the_failed_plugins(plugin_path):
    install_fake_distribution(plugin_path, "brokenplugin", "import policy_scheduler_no_such_module\n", """
        [policy_scheduler.predicates]
        rack = brokenplugin:register
        """)
    reg = REGISTRY.copy()
    load_plugins(reg)
    context = ("; plugin policy_scheduler.predicates:rack = brokenplugin:register (brokenplugin 1.0) failed to load: "
               "ModuleNotFoundError: No module named 'policy_scheduler_no_such_module'")
    cluster = ClusterState()
    policy = load_policy('{"predicates": [{"name": "RackPredicate"}]}')
    with pytest.raises(ConfigurationError) as exc:
        create_from_policy(policy, cluster=cluster, registry=reg)
    assert str(exc.value) == "Invalid configuration: Predicate type not found for RackPredicate" + context
    policy = load_policy('{"priorities": [{"name": "RackPriority", "weight": 1}]}')
    with pytest.raises(ConfigurationError, match="Priority type not found for RackPriority; plugin policy_scheduler"):
        create_from_policy(policy, cluster=cluster, registry=reg)
    with pytest.raises(RegistryError) as exc:
        create_from_provider("RackProvider", cluster=cluster, registry=reg)
    assert str(exc.value) == ('plugin "RackProvider" has not been registered (valid: ClusterAutoscalerProvider, '
                              'DefaultProvider)' + context)
    reg.register_algorithm_provider("HalfProvider", {"RackPredicate"}, set())
    with pytest.raises(RegistryError) as exc:
        create_from_provider("HalfProvider", cluster=cluster, registry=reg)
    assert str(exc.value) == 'Invalid predicate name "RackPredicate" specified - no corresponding function found' + context
    # Without failed plugins the upstream texts are followed by the registered names only.
    with pytest.raises(RegistryError) as exc:
        create_from_provider("RackProvider", cluster=cluster, registry=REGISTRY.copy())
    assert str(exc.value) == ('plugin "RackProvider" has not been registered (valid: ClusterAutoscalerProvider, '
                              'DefaultProvider)')


def test_every_command_loads_the_process_registry_once_and_listings_show_sources(plugin_path, monkeypatch):
    """``cli._registry()`` (every command's way to the registry) loads the plugins into it, once."""
    from policy_scheduler import cli, plugins, registry

    install_fake_distribution(plugin_path, "canaryplugin", PLUGIN, """
        [policy_scheduler.predicates]
        canary = canaryplugin:register
        """)
    process = REGISTRY.copy()  # stands in for the process registry
    monkeypatch.setattr(registry, "REGISTRY", process)
    monkeypatch.setattr(plugins, "REGISTRY", process)
    monkeypatch.setattr(plugins, "_process_registry_loaded", False)
    runner = CliRunner()
    rows = {r["name"]: r for r in json.loads(runner.invoke(cli.main, ["predicates", "-o", "json"]).output)}
    assert rows["AvoidCanary"]["source"] == {"distribution": "canaryplugin", "version": "1.0",
                                             "entry_point": "policy_scheduler.predicates:canary",
                                             "value": "canaryplugin:register"}
    assert rows["GeneralPredicates"]["source"] == BUILT_IN
    table = runner.invoke(cli.main, ["priorities"]).output
    assert ("PreferBigNodes (weight 2, map)  [CanaryAwareProvider]  from canaryplugin 1.0 "
            "(policy_scheduler.predicates:canary)") in table.splitlines()
    providers = runner.invoke(cli.main, ["providers"]).output
    assert "CanaryAwareProvider  from canaryplugin 1.0 (policy_scheduler.predicates:canary)" in providers.splitlines()
    data = json.loads(runner.invoke(cli.main, ["providers", "-o", "json"]).output)
    assert data["DefaultProvider"] | {"predicates": None, "priorities": None} == {
        "predicates": None, "priorities": None, "source": BUILT_IN, "extended_by": []}
    assert len(process.fit_predicates) == len(REGISTRY.fit_predicates) + 1  # loaded once across commands
