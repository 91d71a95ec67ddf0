"""PodFitsHostPorts (and its alias PodFitsPorts): upstream ``TestPodFitsHostPorts``, ``TestGetUsedPorts``,
``Test_decode``, ``Test_specialPortConflictCheck`` and ``Test_portsConflict``, every row."""

from __future__ import annotations

import pytest

from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.predicates import pod_fits_host_ports, pod_fits_ports
from policy_scheduler.predicates.ports import decode, ports_conflict, special_port_conflict

from .conftest import make_node_info, make_pod, metadata, port_pod

CASES = [
    ("nothing running", make_pod(), [], True),
    ("other port", port_pod("m1", "UDP/127.0.0.1/8080"), [port_pod("m1", "UDP/127.0.0.1/9090")], True),
    ("same udp port", port_pod("m1", "UDP/127.0.0.1/8080"), [port_pod("m1", "UDP/127.0.0.1/8080")], False),
    ("same tcp port", port_pod("m1", "TCP/127.0.0.1/8080"), [port_pod("m1", "TCP/127.0.0.1/8080")], False),
    ("different host ip", port_pod("m1", "TCP/127.0.0.1/8080"), [port_pod("m1", "TCP/127.0.0.2/8080")], True),
    ("different protocol", port_pod("m1", "UDP/127.0.0.1/8080"), [port_pod("m1", "TCP/127.0.0.1/8080")], True),
    ("second udp port conflict", port_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), [port_pod("m1", "UDP/127.0.0.1/8080")], False),
    ("first tcp port conflict", port_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"), [port_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")], False),
    ("first tcp port conflict due to 0.0.0.0 hostIP", port_pod("m1", "TCP/0.0.0.0/8001"), [port_pod("m1", "TCP/127.0.0.1/8001")], False),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", port_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), [port_pod("m1", "TCP/127.0.0.1/8001")], False),
    ("second tcp port conflict to 0.0.0.0 hostIP", port_pod("m1", "TCP/127.0.0.1/8001"), [port_pod("m1", "TCP/0.0.0.0/8001")], False),
    ("second different protocol", port_pod("m1", "UDP/127.0.0.1/8001"), [port_pod("m1", "TCP/0.0.0.0/8001")], True),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", port_pod("m1", "UDP/127.0.0.1/8001"), [port_pod("m1", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")], False),
]


@pytest.mark.parametrize(("name", "pod", "existing", "fits"), CASES, ids=[c[0] for c in CASES])
def test_pod_fits_host_ports(name, pod, existing, fits) -> None:
    """Upstream TestPodFitsHostPorts (NodeInfo without a node object)."""
    node_info = make_node_info(None, existing)
    got = pod_fits_host_ports(pod, metadata(pod), node_info)
    assert got == (fits, [] if fits else ["PodFitsHostPorts"])
    assert pod_fits_host_ports(pod, None, node_info) == got
    assert pod_fits_ports(pod, None, node_info) == got


USED_PORTS = [
    ([port_pod("m1", "UDP/127.0.0.1/9090")], {"UDP/127.0.0.1/9090"}),
    ([port_pod("m1", "UDP/127.0.0.1/9090"), port_pod("m1", "UDP/127.0.0.1/9091")], {"UDP/127.0.0.1/9090", "UDP/127.0.0.1/9091"}),
    ([port_pod("m1", "TCP/0.0.0.0/9090"), port_pod("m2", "UDP/127.0.0.1/9091")], {"TCP/0.0.0.0/9090", "UDP/127.0.0.1/9091"}),
]


@pytest.mark.parametrize(("pods", "ports"), USED_PORTS)
def test_get_used_ports(pods, ports) -> None:
    """Upstream TestGetUsedPorts: NodeInfo's used ports and the metadata's pod ports."""
    assert set(make_node_info(None, pods).used_ports) == ports
    assert set().union(*(metadata(p).pod_ports for p in pods)) == ports


def test_port_defaults() -> None:
    """Protocol defaults to TCP and hostIP to 0.0.0.0; hostPort 0 is not a host port."""
    pod = make_pod(containers=[{"ports": [{"hostPort": 80}, {"containerPort": 8080}]}])
    assert metadata(pod).pod_ports == frozenset({"TCP/0.0.0.0/80"})
    assert pod_fits_host_ports(pod, None, None) == (True, [])


@pytest.mark.parametrize(
    ("text", "want"),
    [("UDP/127.0.0.1/80", ("UDP", "127.0.0.1", "80")), ("TCP/127.0.0.1/80", ("TCP", "127.0.0.1", "80")), ("TCP/0.0.0.0/80", ("TCP", "0.0.0.0", "80"))],
    ids=["test1", "test2", "test3"],
)
def test_decode(text, want) -> None:
    """Upstream Test_decode."""
    assert decode(text) == want


@pytest.mark.parametrize(
    ("special", "others", "want"),
    [
        ("TCP/0.0.0.0/80", {"TCP/127.0.0.2/8080", "TCP/127.0.0.1/80", "UDP/127.0.0.2/8080"}, True),
        ("TCP/0.0.0.0/80", {"TCP/127.0.0.2/8080", "UDP/127.0.0.1/80", "UDP/127.0.0.2/8080"}, False),
        ("TCP/0.0.0.0/80", {"TCP/127.0.0.2/8080", "TCP/127.0.0.1/8090", "UDP/127.0.0.2/8080"}, False),
        ("TCP/0.0.0.0/80", {"UDP/127.0.0.2/8080", "UDP/127.0.0.1/8090", "TCP/127.0.0.2/8080"}, False),
    ],
    ids=["test-1", "test-2", "test-3", "test-4"],
)
def test_special_port_conflict_check(special, others, want) -> None:
    """Upstream Test_specialPortConflictCheck."""
    assert special_port_conflict(special, others) is want


@pytest.mark.parametrize(
    ("existing", "wanted", "want"),
    [
        ({"UDP/127.0.0.1/8080"}, {"UDP/127.0.0.1/8080"}, True),
        ({"UDP/127.0.0.2/8080"}, {"UDP/127.0.0.1/8080"}, False),
        ({"TCP/127.0.0.1/8080"}, {"UDP/127.0.0.1/8080"}, False),
        ({"TCP/0.0.0.0/8080"}, {"TCP/127.0.0.1/8080"}, True),
        ({"TCP/127.0.0.1/8080"}, {"TCP/0.0.0.0/8080"}, True),
    ],
    ids=["test1", "test2", "test3", "test4", "test5"],
)
def test_ports_conflict(existing, wanted, want) -> None:
    """Upstream Test_portsConflict."""
    assert ports_conflict(existing, wanted) is want


def sidecar_port_pod(port: int, restart_policy: str | None = "Always") -> Pod:
    init: dict = {"name": "proxy", "ports": [{"hostPort": port}]}
    if restart_policy:
        init["restartPolicy"] = restart_policy
    return make_pod(containers=[{"name": "app"}], initContainers=[init])


def test_native_sidecars_host_ports_count_under_the_clusters_rules():
    """1.33+ NodePorts (``util.GetHostPorts``): a native sidecar runs as long as the pod, so its host ports count,
    for the pod placed and for the pods on the node; a regular init container's do not; 1.9 reads app containers."""
    sidecar = sidecar_port_pod(8080)
    assert sidecar.host_ports == ("TCP/0.0.0.0/8080",)
    assert sidecar_port_pod(8080, restart_policy=None).host_ports == ()
    assert Pod(sidecar.raw, Rules.V1_9).host_ports == ()
    taken = make_node_info(pods=[sidecar_port_pod(8080)])
    assert pod_fits_host_ports(port_pod("m1", "TCP/0.0.0.0/8080"), metadata(port_pod("m1", "TCP/0.0.0.0/8080")),
                               taken)[0] is False
    assert pod_fits_host_ports(sidecar, metadata(sidecar), make_node_info(pods=[port_pod("m1", "TCP/0.0.0.0/8080")]))[0] \
        is False
