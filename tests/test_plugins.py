"""Third-party predicates, priorities and providers through Python entry points.

A real distribution (dist-info with entry_points.txt and a module) is put on sys.path, as pip would
install it; the registry discovers it through importlib.metadata.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from policy_scheduler.api import load_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.errors import ConfigurationError
from policy_scheduler.factory import create_from_policy, create_from_provider
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.registry import REGISTRY, load_plugins

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


def install_fake_distribution(root, name, module_source, entry_points):
    (root / f"{name}.py").write_text(textwrap.dedent(module_source))
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in [m for m in sys.modules if m.startswith("canaryplugin") or m.startswith("brokenplugin")]:
        del sys.modules[mod]


def test_entry_point_plugins_register_predicates_priorities_and_providers(plugin_path):
    install_fake_distribution(plugin_path, "canaryplugin", PLUGIN, """
        [policy_scheduler.predicates]
        canary = canaryplugin:register
        """)
    reg = REGISTRY.copy()
    assert load_plugins(reg) == ["policy_scheduler.predicates:canary"]
    assert "AvoidCanary" not in REGISTRY.fit_predicates  # only the given registry changed
    cluster = ClusterState()
    cluster.add_node(Node({"metadata": {"name": "canary-1", "labels": {"canary": "true"}},
                           "status": {"allocatable": {"cpu": "16", "memory": "1Gi", "pods": "10"}}}))
    cluster.add_node(Node({"metadata": {"name": "small-1"}, "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}}}))
    cluster.add_node(Node({"metadata": {"name": "big-1"}, "status": {"allocatable": {"cpu": "8", "memory": "1Gi", "pods": "10"}}}))
    prod = Pod({"metadata": {"name": "web", "namespace": "default", "labels": {"tier": "prod"}}, "spec": {"containers": [{}]}})
    scheduler = create_from_provider("CanaryAwareProvider", cluster=cluster, registry=reg)
    explanation = scheduler.explain(prod)
    assert explanation.host == "big-1"
    assert explanation.nodes["canary-1"].predicates["AvoidCanary"].reasons == ["AvoidCanary"]
    assert explanation.nodes["big-1"].priorities["PreferBigNodes"] == (8, 2)
    # A Policy can name plugin algorithms like built-ins.
    policy = load_policy('{"predicates": [{"name": "AvoidCanary"}], "priorities": [{"name": "PreferBigNodes", "weight": 1}]}')
    assert create_from_policy(policy, cluster=cluster, registry=reg).schedule(prod) == "big-1"


def test_broken_plugin_is_a_configuration_error(plugin_path):
    install_fake_distribution(plugin_path, "brokenplugin", "raise RuntimeError('boom')\n", """
        [policy_scheduler.providers]
        broken = brokenplugin:register
        """)
    with pytest.raises(ConfigurationError, match=r"cannot load plugin broken \(brokenplugin:register\) from policy_scheduler.providers: boom"):
        load_plugins(REGISTRY.copy())
