"""Pod parsing: 1.9's request rules, non-zero defaults, QoS and errors naming the field."""

from __future__ import annotations

import pytest

from policy_scheduler.cache.node_info import NodeInfo
from policy_scheduler.errors import ObjectError
from policy_scheduler.features import Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod


def _container(cpu=None, mem=None, **extra):
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if mem is not None:
        requests["memory"] = mem
    requests.update(extra)
    return {"name": "c", "resources": {"requests": requests}}


INIT_EXAMPLE = {
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
        "initContainers": [_container("2", "1G"), _container("2", "3G")],
        "containers": [_container("2", "1G"), _container("1", "1G")],
    },
}


def test_request_is_sum_then_max_with_init_containers_under_1_9_rules():
    """predicates.md §0.3 example: init 2 CPU/1G and 2 CPU/3G, containers 2/1G + 1/1G → 3 CPU, 3G."""
    pod = Pod(INIT_EXAMPLE, Rules.V1_9)
    assert pod.request.milli_cpu == 3000
    assert pod.request.memory == 3 * 10**9
    # NodeInfo counts regular containers only.
    assert pod.container_request.milli_cpu == 3000
    assert pod.container_request.memory == 2 * 10**9


def test_the_cluster_rules_count_init_containers_on_the_node_too():
    """The 1.9 bug fixed upstream later (docs/deviations.md): a node holds the effective request."""
    pod = Pod(INIT_EXAMPLE)
    assert (pod.request.milli_cpu, pod.request.memory) == (3000, 3 * 10**9)
    assert (pod.container_request.milli_cpu, pod.container_request.memory) == (3000, 3 * 10**9)


def test_non_zero_defaults_apply_per_container_when_the_key_is_absent():
    pod = Pod({"spec": {"containers": [_container(), _container(cpu="0"), _container(mem="1Ki")]}})
    assert pod.nonzero_milli_cpu == 100 + 0 + 100
    assert pod.nonzero_memory == 209715200 + 209715200 + 1024


def test_scalar_and_ignored_resources():
    pod = Pod({"spec": {"containers": [_container(**{"example.com/foo": "2", "hugepages-2Mi": "4", "kubernetes.io/foo": "1", "storage": "3"})]}})
    assert pod.request.scalar == {"example.com/foo": 2, "hugepages-2Mi": 4}


def test_best_effort():
    assert Pod({"spec": {"containers": [{}]}}).best_effort
    assert Pod({"spec": {"containers": [_container(cpu="0")]}}).best_effort
    assert not Pod({"spec": {"containers": [_container(mem="1")]}}).best_effort
    limited = {"resources": {"limits": {"cpu": "1"}}}
    assert not Pod({"spec": {"containers": [limited]}}).best_effort


def test_host_ports():
    pod = Pod({"spec": {"containers": [{"ports": [
        {"containerPort": 80, "hostPort": 8080}, {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
        {"containerPort": 9090},
    ]}]}})
    assert pod.host_ports == ("TCP/0.0.0.0/8080", "UDP/10.0.0.1/53")


def test_invalid_quantity_names_object_and_field():
    with pytest.raises(ObjectError) as exc:
        Pod({"metadata": {"name": "web", "namespace": "prod"}, "spec": {"containers": [{}, _container(cpu="lots")]}})
    assert str(exc.value).startswith("Pod prod/web: spec.containers[1].resources.requests.cpu: quantities must match")


def test_invalid_node_allocatable():
    with pytest.raises(ObjectError) as exc:
        Node({"metadata": {"name": "n1"}, "status": {"allocatable": {"memory": "1 Gi"}}})
    assert str(exc.value).startswith("Node n1: status.allocatable.memory:")


def test_node_info_add_remove_is_symmetric():
    node = Node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    info = NodeInfo(node)
    pod = Pod({"metadata": {"name": "p", "namespace": "d", "uid": "u1"}, "spec": {"nodeName": "n1", "containers": [
        _container("500m", "1Gi", **{"ephemeral-storage": "1Gi"}) | {"ports": [{"hostPort": 80}]}
    ]}})
    info.add_pod(pod)
    assert info.requested.milli_cpu == 500
    assert info.requested.ephemeral_storage == 2**30
    assert info.used_ports["TCP/0.0.0.0/80"] == 1
    info.remove_pod(pod)
    assert info.requested.milli_cpu == 0
    assert info.requested.ephemeral_storage == 0  # 1.9 forgot to subtract this; we do
    assert not info.used_ports
    assert info.nonzero_milli_cpu == 0 and info.nonzero_memory == 0


def test_zero_init_container_scalar_request_is_not_a_request():
    """Resource.SetMaxResource only records a scalar larger than what is there (0 when absent)."""
    pod = Pod({"spec": {"initContainers": [_container(**{"example.com/foo": "0"})], "containers": [{}]}})
    assert pod.request.scalar == {}
    assert pod.request.is_zero_request()
