"""PodFitsHostPorts, also registered as ``PodFitsPorts`` (upstream ``predicates.PodFitsHostPorts``,
``portsConflict`` and ``specialPortConflictCheck`` from ``utils.go``).

Host ports are strings ``<protocol>/<hostIP>/<hostPort>``; hostIP ``0.0.0.0`` binds every address and
therefore conflicts with the same protocol and port on any address.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from .metadata import PredicateMetadata
from .reasons import ERR_POD_NOT_FITS_HOST_PORTS

if TYPE_CHECKING:
    from ..cache.node_info import NodeInfo
    from ..model.pod import Pod

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


def decode(port: str) -> tuple[str, str, str]:
    """Split ``protocol/hostIP/hostPort`` into its three parts."""
    protocol, host_ip, host_port = port.split("/")[:3]
    return protocol, host_ip, host_port


def special_port_conflict(special: str, others: Collection[str]) -> bool:
    """A ``0.0.0.0`` port conflicts with any other port of the same protocol and number."""
    protocol, host_ip, host_port = decode(special)
    if host_ip != DEFAULT_BIND_ALL_HOST_IP:
        return False
    for other in others:
        o_protocol, _, o_port = decode(other)
        if o_port == host_port and o_protocol == protocol:
            return True
    return False


def ports_conflict(existing: Collection[str], wanted: Collection[str]) -> bool:
    """``portsConflict``: any wildcard overlap either way, or an identical port string."""
    if any(special_port_conflict(e, wanted) for e in existing):
        return True
    return any(special_port_conflict(w, existing) or w in existing for w in wanted)


def pod_fits_host_ports(pod: Pod, meta: PredicateMetadata | None, node_info: NodeInfo | None) -> tuple[bool, list[str]]:
    """Fits iff none of the pod's host ports conflicts with a port already used on the node."""
    wanted = meta.pod_ports if meta is not None else frozenset(pod.host_ports)
    if not wanted:
        return True, []
    existing = {p for p, n in node_info.used_ports.items() if n > 0} if node_info is not None else set()
    if ports_conflict(existing, wanted):
        return False, [ERR_POD_NOT_FITS_HOST_PORTS]
    return True, []


#: The 1.0-era registered name ``PodFitsPorts`` is the same predicate.
pod_fits_ports = pod_fits_host_ports
