"""Priority metadata (upstream ``priorities/metadata.go``; ``TestPriorityMetadata`` in metadata_test.go)."""

from __future__ import annotations

import pytest

from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from policy_scheduler.model.taints import Toleration
from policy_scheduler.model.workloads import LabelSelectedController
from policy_scheduler.priorities import PriorityMetadata, PriorityMetadataFactory
from policy_scheduler.priorities.metadata import get_selectors

from .conftest import (
    container,
    make_cluster,
    make_pod,
    replica_set,
    replication_controller,
    service,
    stateful_set,
)

TOLERATIONS = [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]
POD_AFFINITY = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 5,
                "podAffinityTerm": {
                    "labelSelector": {"matchExpressions": [{"key": "security", "operator": "In", "values": ["S1"]}]},
                    "topologyKey": "region",
                },
            }
        ]
    }
}
REQUESTS = {"cpu": "200m", "memory": "2000"}


def _pod(requests: dict | None, tolerations: list | None, affinity: dict | None):
    c = container(requests=requests, image="image")
    return make_pod(containers=[c], tolerations=tolerations, affinity=affinity)


@pytest.mark.parametrize(
    ("pod", "cpu", "memory", "tolerations", "has_affinity"),
    [
        pytest.param(
            _pod(None, TOLERATIONS, POD_AFFINITY), DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST, 1, True,
            id="Produce a priorityMetadata with default requests",
        ),
        pytest.param(
            _pod(REQUESTS, TOLERATIONS, None), 200, 2000, 1, False,
            id="Produce a priorityMetadata with specified requests (tolerations)",
        ),
        pytest.param(
            _pod(REQUESTS, None, POD_AFFINITY), 200, 2000, 0, True,
            id="Produce a priorityMetadata with specified requests (affinity)",
        ),
    ],
)
def test_priority_metadata(pod, cpu: int, memory: int, tolerations: int, has_affinity: bool) -> None:
    """Upstream TestPriorityMetadata rows 1-3 (empty listers)."""
    meta = PriorityMetadataFactory(make_cluster()).get_metadata(pod, None)
    assert isinstance(meta, PriorityMetadata)
    assert (meta.non_zero_request.milli_cpu, meta.non_zero_request.memory) == (cpu, memory)
    expected_tolerations = tuple(Toleration.from_dict(t) for t in TOLERATIONS[:tolerations])
    assert meta.pod_tolerations == expected_tolerations
    assert (meta.affinity is pod.affinity) and ((meta.affinity is not None) == has_affinity)
    assert meta.pod_selectors == ()


def test_priority_metadata_nil_pod() -> None:
    """Upstream TestPriorityMetadata row 0: "pod is nil , priorityMetadata is nil"."""
    assert PriorityMetadataFactory(make_cluster()).get_metadata(None, None) is None


def test_tolerations_kept_only_for_empty_or_prefer_no_schedule_effect() -> None:
    tolerations = [
        {"key": "a", "operator": "Exists"},
        {"key": "b", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "c", "operator": "Exists", "effect": "PreferNoSchedule"},
        {"key": "d", "operator": "Exists", "effect": "NoExecute"},
    ]
    meta = PriorityMetadataFactory(make_cluster()).get_metadata(make_pod(tolerations=tolerations))
    assert [t.key for t in meta.pod_tolerations] == ["a", "c"]


def test_non_zero_request_ignores_init_containers_and_honours_explicit_zero_under_1_9_rules() -> None:
    pod = make_pod(
        containers=[container(requests={"cpu": "0"}), container(requests={"memory": "0"})],
        init_containers=[container(requests={"cpu": "5", "memory": "5Gi"})],
    )
    meta = PriorityMetadataFactory(make_cluster()).get_metadata(Pod(pod.raw, Rules.V1_9))
    assert meta.non_zero_request.milli_cpu == 0 + DEFAULT_MILLI_CPU_REQUEST
    assert meta.non_zero_request.memory == DEFAULT_MEMORY_REQUEST + 0


def test_non_zero_request_counts_init_containers_and_overhead_under_the_cluster_rules() -> None:
    """Upstream 1.26+ ``calculatePodResourceRequest``: containers with missing cpu/memory defaulted,
    max with each init container (defaulted too), plus overhead."""
    pod = make_pod(
        containers=[container(requests={"cpu": "0"}), container(requests={"memory": "0"})],
        init_containers=[container(requests={"cpu": "5"})],
    )
    pod = Pod({**pod.raw, "spec": {**pod.raw["spec"], "overhead": {"cpu": "50m", "memory": "1Mi"}}})
    meta = PriorityMetadataFactory(make_cluster()).get_metadata(pod)
    assert meta.non_zero_request.milli_cpu == 5000 + 50
    assert meta.non_zero_request.memory == DEFAULT_MEMORY_REQUEST + 2**20


def test_selectors_from_every_lister_in_order() -> None:
    labels = {"app": "web", "tier": "front"}
    cluster = make_cluster(
        services=[service({"app": "web"}), service({"app": "other"}), service({"app": "web"}, namespace="elsewhere")],
        rcs=[replication_controller({"tier": "front"})],
        replica_sets=[replica_set({"app": "web"})],
        stateful_sets=[stateful_set({"tier": "front"})],
    )
    pod = make_pod(labels=labels)
    selectors = PriorityMetadataFactory(cluster).get_metadata(pod).pod_selectors
    assert len(selectors) == 4
    assert all(s.matches(labels) for s in selectors)
    assert not selectors[0].matches({"tier": "front"})  # the service's {app: web}
    assert not selectors[1].matches({"app": "web"})  # the RC's {tier: front}
    assert len(get_selectors(pod, cluster, services_only=True)) == 1


def test_lister_errors_contribute_nothing() -> None:
    """A pod without labels makes the RC/RS/StatefulSet listers fail; a Service with an empty selector
    still matches it (an empty set selector selects everything)."""
    cluster = make_cluster(
        services=[service({})],
        rcs=[replication_controller({"a": "b"})],
        replica_sets=[replica_set({"a": "b"})],
        stateful_sets=[stateful_set({"a": "b"})],
    )
    selectors = PriorityMetadataFactory(cluster).get_metadata(make_pod()).pod_selectors
    assert len(selectors) == 1 and selectors[0].matches({"anything": "x"})


def test_replica_set_with_invalid_selector_contributes_nothing() -> None:
    bad = LabelSelectedController.from_dict(
        "ReplicaSet",
        {"metadata": {"namespace": ""}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}},
    )
    cluster = make_cluster(replica_sets=[bad], stateful_sets=[stateful_set({"a": "b"})])
    selectors = PriorityMetadataFactory(cluster).get_metadata(make_pod(labels={"a": "b"})).pod_selectors
    assert len(selectors) == 1
