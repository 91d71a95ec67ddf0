"""What ``explain`` shows of a pod's claims on each node: the devices the allocator would give, or why it gives
none, counted per request (devices in the node's usable pools, how many are free, how many of those the
DeviceClass and the request select). Short by design: one line per node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .allocator import AllocationError, Allocator, _RequestData, _Run, gather_pools

if TYPE_CHECKING:
    from ..model.dra import ResourceClaim
    from ..model.node import Node


@dataclass
class NodeDevices:
    """One node: ``devices`` the claims would get (``claim: request -> driver/pool/device``), else ``why``."""

    node: str
    devices: list[str] = field(default_factory=list)
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "devices": self.devices, "why": self.why}

    def __str__(self) -> str:
        return f"{self.node}: {', '.join(self.devices)}" if self.devices else f"{self.node}: {self.why}"


def census(allocator: Allocator, node: Node, claims: list[ResourceClaim]) -> str:
    """Per request to allocate: ``request R: N devices, F free, M free and selected``."""
    run = _Run(allocator, node.name, node.labels, claims)
    slices = allocator.slices_on_node.get(node.name, []) + allocator.slices_shared
    run.pools = pools = gather_pools(slices, node.name, node.labels, allocator.all_slices)
    usable = [p for p in pools if not p.incomplete and not p.invalid]
    parts = []
    skipped = [p.pool_id + (" (incomplete)" if p.incomplete else " (invalid)") for p in pools if p not in usable]
    for ci, claim in enumerate(claims):
        for ri, request in enumerate(claim.spec.requests):
            specs = ([(request.exactly, None, 0)] if request.exactly is not None
                     else [(s, request.name, si) for si, s in enumerate(request.first_available)])
            for spec, parent, si in specs:
                data = _RequestData(spec, parent, allocator.classes.get(spec.device_class_name))
                total = free = selected = 0
                for pool in usable:
                    for s in pool.slices:
                        for d in s.devices:
                            total += 1
                            device_id = (s.driver, s.pool, d.name)
                            if device_id in allocator.allocated:
                                continue
                            free += 1
                            try:
                                if run._selectable((ci, ri, si), data, s, d, device_id):
                                    selected += 1
                            except AllocationError as e:
                                return e.message
                want = "all" if spec.allocation_mode == "All" else str(spec.count)
                parts.append(f"{claim.name}: request {data.request_name} (wants {want}): {total} devices, "
                             f"{free} free, {selected} free and selected")
    if skipped:
        parts.append("pools skipped: " + ", ".join(skipped))
    return "; ".join(parts) if parts else "no devices for this node"


def explain_devices(checker: Any, pod: Any, node_infos: Any, names: list[str]) -> list[NodeDevices]:
    """Every named node's line for a pod with claims (``checker``: the DynamicResources predicate)."""
    out = []
    try:
        state = checker.state(pod)
    except Exception as e:  # a refusal: said once
        return [NodeDevices("(all nodes)", why=str(e))]
    if state.reason is not None:
        return [NodeDevices("(all nodes)", why=state.reason)]
    for name in names:
        info = node_infos.get(name)
        if info is None or info.node is None:
            continue
        line = NodeDevices(name)
        try:
            reasons, solution = checker.filter(pod, info)
        except Exception as e:  # an allocator error (a CEL expression ...): the attempt's error
            line.why = f"error: {e}"
            out.append(line)
            continue
        if reasons:
            line.why = str(reasons[0])
            if state.allocator is not None and str(reasons[0]) == "cannot allocate all claims":
                line.why += f" ({census(state.allocator, info.node, state.to_allocate)})"
        else:
            for claim in state.claims:
                if claim.allocated:
                    line.devices.append(f"{claim.name}: allocated already")
            for claim, devices in zip(state.to_allocate, solution or []):
                line.devices += [f"{claim.name}: {r.request} -> {'/'.join(r.device_id)}" for r in devices]
        out.append(line)
    return out
