"""Failure reason texts (predicates.md §1) and their 1.10 descriptions."""

from __future__ import annotations

import pytest

from policy_scheduler.algorithm import InsufficientResource
from policy_scheduler.predicates import reasons
from policy_scheduler.predicates.reasons import DESCRIPTIONS, describe, is_insufficient_resource

TABLE = [
    ("ERR_DISK_CONFLICT", "NoDiskConflict", "node(s) had no available disk"),
    ("ERR_VOLUME_ZONE_CONFLICT", "NoVolumeZoneConflict", "node(s) had no available volume zone"),
    ("ERR_NODE_SELECTOR_NOT_MATCH", "MatchNodeSelector", "node(s) didn't match node selector"),
    ("ERR_POD_AFFINITY_NOT_MATCH", "MatchInterPodAffinity", "node(s) didn't match pod affinity/anti-affinity"),
    ("ERR_POD_AFFINITY_RULES_NOT_MATCH", "PodAffinityRulesNotMatch", "node(s) didn't match pod affinity rules"),
    ("ERR_POD_ANTI_AFFINITY_RULES_NOT_MATCH", "PodAntiAffinityRulesNotMatch", "node(s) didn't match pod anti-affinity rules"),
    ("ERR_EXISTING_PODS_ANTI_AFFINITY_RULES_NOT_MATCH", "ExistingPodsAntiAffinityRulesNotMatch",
     "node(s) didn't satisfy existing pods anti-affinity rules"),
    ("ERR_TAINTS_TOLERATIONS_NOT_MATCH", "PodToleratesNodeTaints", "node(s) had taints that the pod didn't tolerate"),
    ("ERR_POD_NOT_MATCH_HOST_NAME", "HostName", "node(s) didn't match the requested hostname"),
    ("ERR_POD_NOT_FITS_HOST_PORTS", "PodFitsHostPorts", "node(s) didn't have free ports for the requested pod ports"),
    ("ERR_NODE_LABEL_PRESENCE_VIOLATED", "CheckNodeLabelPresence", "node(s) didn't have the requested labels"),
    ("ERR_SERVICE_AFFINITY_VIOLATED", "CheckServiceAffinity", "node(s) didn't match service affinity"),
    ("ERR_MAX_VOLUME_COUNT_EXCEEDED", "MaxVolumeCount", "node(s) exceed max volume count"),
    ("ERR_NODE_UNDER_MEMORY_PRESSURE", "NodeUnderMemoryPressure", "node(s) had memory pressure"),
    ("ERR_NODE_UNDER_DISK_PRESSURE", "NodeUnderDiskPressure", "node(s) had disk pressure"),
    ("ERR_NODE_OUT_OF_DISK", "NodeOutOfDisk", "node(s) were out of disk space"),
    ("ERR_NODE_NOT_READY", "NodeNotReady", "node(s) were not ready"),
    ("ERR_NODE_NETWORK_UNAVAILABLE", "NodeNetworkUnavailable", "node(s) had unavailable network"),
    ("ERR_NODE_UNSCHEDULABLE", "NodeUnschedulable", "node(s) were unschedulable"),
    ("ERR_NODE_UNKNOWN_CONDITION", "NodeUnknownCondition", "node(s) had unknown conditions"),
    ("ERR_VOLUME_NODE_CONFLICT", "VolumeNodeAffinityConflict", "node(s) had volume node affinity conflict"),
    ("ERR_VOLUME_BIND_CONFLICT", "VolumeBindingNoMatch", "node(s) didn't find available persistent volumes to bind"),
]


@pytest.mark.parametrize(("constant", "text", "description"), TABLE, ids=[t[1] for t in TABLE])
def test_reason_texts(constant, text, description) -> None:
    assert getattr(reasons, constant) == text
    assert DESCRIPTIONS[text] == description
    assert describe(text) == description


def test_every_reason_is_described() -> None:
    assert set(DESCRIPTIONS) == {t[1] for t in TABLE} == reasons.ALL_REASONS


def test_insufficient_resources_and_unknown_texts_pass_through() -> None:
    reason = InsufficientResource("nvidia.com/gpu", 1, 0, 0)
    assert describe(reason) == "Insufficient nvidia.com/gpu"
    assert is_insufficient_resource(reason)
    assert describe("extender said no") == "extender said no"
    assert not is_insufficient_resource("HostName")
