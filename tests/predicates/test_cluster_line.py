"""The cluster's Kubernetes line (``ClusterState.kubernetes_line``) and the messages that follow it: upstream's
volume plugins reworded two reasons between 1.32 and 1.36 (``volumerestrictions.ErrReasonReadWriteOncePodConflict``
in 1.34; ``volumebinding.ErrReasonNodeConflict`` in 1.33, which this scheduler reports by 1.9's name
``VolumeNodeAffinityConflict``). The daemon reads the line from ``/version`` once at start; offline commands take
the snapshot's server's (``--from-cluster``), else the newest line."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.features import NEWEST_LINE, Rules, by_line, parse_line
from policy_scheduler.kube.client.rest import ApiError
from policy_scheduler.kube.client.snapshot import read_cluster_snapshot
from policy_scheduler.kube.client.version import server_line
from policy_scheduler.offline.simulate import simulate
from policy_scheduler.offline.snapshot import load_objects
from policy_scheduler.predicates.read_write_once_pod import (
    ERR_READ_WRITE_ONCE_POD_CONFLICT,
    ERR_READ_WRITE_ONCE_POD_CONFLICT_1_22,
    read_write_once_pod_conflict,
)

from ..offline.test_from_cluster import api_server  # noqa: F401 - a fixture: for pytest to find
from .test_volume_rules import RWOP, build, outcomes, pod, snapshot

#: upstream's texts, word for word (release-4.19 = 1.32, release-4.21 = 1.34, release-5.0 = 1.36).
RWOP_1_32 = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
RWOP_1_36 = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"


@pytest.mark.parametrize("major, minor, line", [
    ("1", "36", (1, 36)), ("1", "32+", (1, 32)), ("1", 26, (1, 26)), ("v1.36.3", None, (1, 36)), ("1.9", None, (1, 9)),
    ("1", "", None), ("", "", None), ("latest", None, None),
])
def test_parse_line(major, minor, line):
    assert parse_line(major, minor) == line


def test_by_line_takes_the_newest_wording_at_or_before_the_line():
    texts = {(1, 22): "old", (1, 34): "new"}
    assert [by_line(line, texts) for line in ((1, 9), (1, 22), (1, 33), (1, 34), (1, 36), (2, 0))] == [
        "old", "old", "old", "new", "new", "new"]


@pytest.mark.parametrize("line, text", [((1, 26), RWOP_1_32), ((1, 32), RWOP_1_32), ((1, 33), RWOP_1_32),
                                        ((1, 34), RWOP_1_36), ((1, 36), RWOP_1_36)])
def test_read_write_once_pod_reason_of_each_line(line, text):
    assert read_write_once_pod_conflict(line) == text
    assert (ERR_READ_WRITE_ONCE_POD_CONFLICT_1_22, ERR_READ_WRITE_ONCE_POD_CONFLICT) == (RWOP_1_32, RWOP_1_36)


@pytest.mark.parametrize("line, text", [(None, RWOP_1_36), ((1, 26), RWOP_1_32), ((1, 32), RWOP_1_32),
                                        ((1, 36), RWOP_1_36)])
def test_simulate_words_the_conflict_as_the_snapshots_server(line, text):
    """A snapshot read from a server (``--from-cluster``) has its line; manifests (None) the newest."""
    snap = snapshot([*RWOP, pod("second", ("data",))], Rules.CLUSTER)
    snap.kubernetes_line = line
    assert snap.cluster_state().kubernetes_line == (line or NEWEST_LINE)
    (placement,) = simulate(snap, build(Rules.CLUSTER)).placements
    assert placement.error == f"0/2 nodes are available: 2 {text}."


def test_manifests_have_the_newest_line():
    assert load_objects([], "test").cluster_state().kubernetes_line == NEWEST_LINE == (1, 36)
    assert outcomes([*RWOP, pod("second", ("data",))]) == {"second": f"error: 0/2 nodes are available: 2 {RWOP_1_36}."}


class VersionServer:
    """What ``server_line`` asks of a RestClient: ``get`` and ``host``."""

    host = "https://127.0.0.1:6443"

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def get(self, path: str) -> Any:
        assert path == "/version"
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


@pytest.mark.parametrize("reply, line", [
    ({"major": "1", "minor": "36", "gitVersion": "v1.36.3"}, (1, 36)),
    ({"major": "1", "minor": "32+", "gitVersion": "v1.32.13-eks"}, (1, 32)),
    ({"major": "1", "minor": ""}, None),
    ({"gitVersion": "v1.36.3"}, None),
    (["not", "an", "object"], None),
    (ApiError(403, "Forbidden", "forbidden"), None),
])
def test_server_line(reply, line):
    assert server_line(VersionServer(reply)) == line  # type: ignore[arg-type]


@pytest.mark.parametrize("validate", [True, False])
def test_a_snapshot_read_from_a_server_has_its_line(api_server, validate):  # noqa: F811 - the fixture
    """``--from-cluster``: the server answers ``/version`` with 1.26+; its pods are decided with 1.26's words."""
    kubeconfig, requests = api_server
    snap = read_cluster_snapshot(str(kubeconfig), validate=validate)
    assert snap.kubernetes_line == (1, 26) and "/version" in requests
    assert snap.under(Rules.CLUSTER).cluster_state().kubernetes_line == (1, 26)
