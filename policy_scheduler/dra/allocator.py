"""The structured allocator of kube-scheduler 1.36 (``dynamic-resource-allocation/structured``, the
*incubating* channel, which 1.36's default feature set selects: AdminAccess, PrioritizedList,
PartitionableDevices, DeviceTaints, ConsumableCapacity, DeviceBindingAndStatus all on).

Given the cluster's slices, classes and allocated devices, :meth:`Allocator.allocate` picks devices for a pod's
unallocated claims on one node, in upstream's order: claims in the pod's order, requests in the claim's order,
a ``firstAvailable`` request's subrequests in turn, and for each device needed the candidates in pool order
(driver, then pool name), slice name order, device order within the slice, with backtracking; the first full
solution wins. Only a pool's newest generation counts; a pool whose slices are not all there is skipped (and a
request for ``All`` devices fails on it); devices taken by any allocated (or assumed) claim are not candidates;
DeviceClass and request selectors are CEL (``policy_scheduler.dra.cel``); ``matchAttribute`` constraints
(``distinctAttribute`` is not part of ``resource.k8s.io/v1``); admin access (takes a device even if it is in
use); device taints and the request's tolerations; shared counters of partitionable devices; consumable capacity (a request's capacity
against the device's, devices that allow multiple allocations shared between claims, each share with its ID
and the capacity it consumes).

What this engine does not do it refuses with :class:`UnsupportedDRAFeature` (one line naming the feature)
rather than write an allocation upstream would not: a solution holding a device with ``bindingConditions``
(PreBind would have to wait for them). The search itself treats such devices as upstream does, so the
refusal comes exactly when upstream would have picked one.

Errors upstream's allocator returns (a selector that does not compile or evaluate, a constraint an ``All``
request cannot meet, ...) raise :class:`AllocationError` with upstream's text, CEL errors wrapped as upstream
wraps them (``claim ns/c: selector #0: CEL runtime error: ...``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil
from typing import Any, Protocol

from ..errors import SchedulingError, UserError
from ..model.dra import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceConstraint,
    RequestSpec,
    ResourceClaim,
    ResourceSlice,
    node_matches,
)
from ..model.quantity import format_quantity

DeviceID = tuple[str, str, str]  # (driver, pool, device)


class AllocationError(Exception):
    """Upstream's allocator returned an error: scheduling the pod fails with this message (``statusError``)."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class InvalidPoolsError(AllocationError):
    """``ErrFailedAllocationOnNode``: nothing could be allocated and an invalid pool was seen on the node; the
    node is unschedulable with this message (not an error of the whole attempt)."""


class UnsupportedDRAFeature(AllocationError):
    """The allocation upstream would make needs something this engine does not implement."""


class Selector(Protocol):
    expression: str

    def matches(self, device: Any, key: Hashable | None = None) -> bool: ...


@dataclass(frozen=True)
class CELEnvironment:
    """What the allocator needs of the CEL environment (:mod:`policy_scheduler.dra.cel`): ``compile``
    (cached per expression), and the exception types of a failed compilation and a failed evaluation (their
    ``message`` is upstream's text)."""

    compile: Callable[[str], Selector]
    compile_error: type[Exception]
    runtime_error: type[Exception]


class CELUnavailableError(SchedulingError, UserError):
    """No CEL runtime to evaluate DRA's selectors with (cel-expr-python ships wheels for Python 3.11 and newer
    only): a pod with claims fails with this message, a snapshot with DRA objects is refused in one line."""


def default_environment() -> CELEnvironment:
    try:
        from . import cel  # the CEL environment; imported when an allocator is first built
    except ImportError as e:
        raise CELUnavailableError(
            f"DRA's CEL selectors need the cel-expr-python package (Python 3.11 or newer): {e}") from e
    return CELEnvironment(cel.compile_selector, cel.CELCompileError, cel.CELRuntimeError)


Compiler = CELEnvironment


# -- pools ----------------------------------------------------------------------------------------------------
@dataclass
class Pool:
    """``Pool``: one driver's pool as seen from a node."""

    driver: str
    pool: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[ResourceSlice] = field(default_factory=list)  # DeviceSlicesTargetingNode
    slices_not_targeting: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.pool}"


def gather_pools(slices_for_node: Iterable[ResourceSlice], node_name: str, labels: Mapping[str, str],
                 all_slices: Sequence[ResourceSlice]) -> list[Pool]:
    """``GatherPools``: the pools with devices for the node, newest generation only, sorted by driver and
    pool; pools holding devices with binding conditions last."""
    pools: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices_for_node:
        if s.shared_counters:
            relevant = True
        elif s.node_name or s.all_nodes or s.node_selector is not None:
            relevant = node_matches(node_name, labels, s.node_name, s.all_nodes, s.node_selector)
        elif s.per_device_node_selection:
            relevant = any(node_matches(node_name, labels, d.node_name, d.all_nodes, d.node_selector)
                           for d in s.devices)
        else:
            continue
        if relevant:
            key = (s.driver, s.pool)
            current = pools.get(key)
            if current is None or s.generation > current[0].generation:
                pools[key] = [s]
            elif s.generation == current[0].generation:
                current.append(s)
    result: list[Pool] = []
    with_binding: list[Pool] = []
    for (driver, name), slices in pools.items():
        generation = slices[0].generation
        if len(slices) == slices[0].resource_slice_count:
            pool = _build_pool(driver, name, slices, None)
        else:
            obsolete = False
            all_for_pool: list[ResourceSlice] = []
            for s in all_slices:
                if s.driver != driver or s.pool != name:
                    continue
                if s.generation == generation:
                    all_for_pool.append(s)
                elif s.generation > generation:
                    obsolete = True
                    break
            if obsolete:
                continue
            if len(all_for_pool) != slices[0].resource_slice_count:
                result.append(Pool(driver, name, incomplete=True))
                continue
            pool = _build_pool(driver, name, slices, all_for_pool)
        if any(d.binding_conditions for s in pool.slices for d in s.devices):
            with_binding.append(pool)
        else:
            result.append(pool)
    result.sort(key=lambda p: (p.driver, p.pool))
    with_binding.sort(key=lambda p: (p.driver, p.pool))
    return result + with_binding


def _build_pool(driver: str, name: str, slices: list[ResourceSlice], all_for_pool: list[ResourceSlice] | None) -> Pool:
    slices = sorted(slices, key=lambda s: s.name)
    device_slices = [s for s in slices if not s.shared_counters]
    counter_slices = [s for s in slices if s.shared_counters]
    seen: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in seen:
                return Pool(driver, name, invalid=True, invalid_reason=f"duplicate device name {d.name}")
            seen.add(d.name)
    counter_sets: dict[str, CounterSet] = {}
    for s in counter_slices:
        for cs in s.shared_counters:
            if cs.name in counter_sets:
                return Pool(driver, name, invalid=True, invalid_reason=f"duplicate counter set name {cs.name}")
            counter_sets[cs.name] = cs
    error = _check_counter_consumption(counter_sets, slices)
    if error:
        return Pool(driver, name, invalid=True, invalid_reason=error)
    if all_for_pool is None or len(slices) == len(all_for_pool):
        return Pool(driver, name, slices=device_slices, counter_sets=counter_sets)
    names = {s.name for s in slices}
    not_targeting = [s for s in all_for_pool if s.name not in names]
    error = _check_counter_consumption(counter_sets, not_targeting)
    if error:
        return Pool(driver, name, invalid=True, invalid_reason=error)
    return Pool(driver, name, slices=device_slices, slices_not_targeting=not_targeting, counter_sets=counter_sets)


def _check_counter_consumption(counter_sets: Mapping[str, CounterSet], slices: Iterable[ResourceSlice]) -> str:
    for s in slices:
        for d in s.devices:
            for set_name, counters in d.consumes_counters:
                counter_set = counter_sets.get(set_name)
                if counter_set is None:
                    return f"counter set {set_name} not found"
                for counter in counters:
                    if counter not in counter_set.counters:
                        return f"counter {counter} not found in counter set {counter_set.name}"
    return ""


# -- constraints ------------------------------------------------------------------------------------------------
def lookup_attribute(device: Device, name: str) -> DeviceAttribute | None:
    """``lookupAttribute``: the device's attributes are kept qualified (an unqualified one with the driver's
    domain), so a fully qualified name is one lookup."""
    return device.attributes.get(name)


def _same_value(a: DeviceAttribute, b: DeviceAttribute) -> bool:
    return a.kind == b.kind and a.value == b.value and type(a.value) is type(b.value)


class _Constraint:
    def __init__(self, spec: DeviceConstraint) -> None:
        self.requests = frozenset(spec.requests)
        self.attribute = spec.match_attribute
        self.num_devices = 0

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if not sub_request:
            return request in self.requests
        return request in self.requests or f"{request}/{sub_request}" in self.requests


class MatchAttributeConstraint(_Constraint):
    """``matchAttributeConstraint``: every device of the named requests has the same value."""

    def __init__(self, spec: DeviceConstraint) -> None:
        super().__init__(spec)
        self.value: DeviceAttribute | None = None

    def add(self, request: str, sub_request: str, device: Device) -> bool:
        if not self.applies(request, sub_request):
            return True
        attribute = lookup_attribute(device, self.attribute)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.value = attribute
            self.num_devices = 1
            return True
        assert self.value is not None
        if not _same_value(attribute, self.value):
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, device: Device) -> None:
        if self.applies(request, sub_request):
            self.num_devices -= 1


# -- consumable capacity ------------------------------------------------------------------------------------------
def _value(q: Fraction) -> int:
    """``Quantity.Value()``: rounded up to an integer."""
    return ceil(q)


def _consumed(requested: Fraction | None, device: Device, name: str) -> Fraction:
    """``calculateConsumedCapacity``."""
    policy = device.capacity_policies.get(name)
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return device.capacity[name]
    if policy is None:
        return requested
    if policy.has_range and policy.range_min is not None:
        if requested < policy.range_min:
            return policy.range_min
        if policy.range_step is None:
            return requested
        req, step, low = _value(requested), _value(policy.range_step), _value(policy.range_min)
        added = req - low
        n = int(added / step)  # Go's integer division truncates toward zero
        if added - n * step != 0:
            n += 1
        return Fraction(low + step * n)
    if policy.valid_values:
        for v in policy.valid_values:
            if requested <= v:
                return v
    return requested


def _violates_policy(value: Fraction, device: Device, name: str) -> bool:
    policy = device.capacity_policies.get(name)
    if policy is None:
        return False
    if policy.default is not None and value == policy.default:
        return False
    if policy.has_range:
        if policy.range_max is not None and value > policy.range_max:
            return True
        if policy.range_step is not None:
            assert policy.range_min is not None
            added = _value(value) - _value(policy.range_min)
            step = _value(policy.range_step)
            return added - int(added / step) * step != 0
        return False
    if policy.valid_values:
        return all(value != v for v in policy.valid_values)
    return False


def request_fits_capacity(request: RequestSpec, device: Device, allocating: Mapping[str, Fraction],
                          allocated: Mapping[str, Fraction] | None = None) -> bool | None:
    """``CmpRequestOverCapacity``: what the request consumes of each capacity, plus what the device's shares
    consume already (``allocated``) and what this allocation takes of it so far (``allocating``), within the
    capacity; None when the request names a capacity the device does not have (upstream's error: the device is
    skipped)."""
    allocated = allocated or {}
    requested = request.capacity or {}
    qualified = {n if "/" in n else f"{device.driver}/{n}": q for n, q in requested.items()}
    if any(n not in device.capacity for n in qualified):
        return None
    for name, value in device.capacity.items():
        consumed = _consumed(qualified.get(name), device, name)
        if _violates_policy(consumed, device, name):
            return False
        total = allocated.get(name, Fraction(0)) + consumed + allocating.get(name, Fraction(0))
        if total > value:
            return False
    return True


# -- the allocator -------------------------------------------------------------------------------------------------
@dataclass
class _RequestData:
    request: RequestSpec
    parent: str | None  # the name of the request holding this subrequest
    device_class: DeviceClass | None
    num_devices: int = 0
    all_devices: list[tuple[DeviceID, Device, ResourceSlice, Pool]] | None = None
    selected_sub_request: int = 0

    @property
    def request_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent is not None else self.request.name


@dataclass
class DeviceResult:
    """One device of a solution."""

    request: str  # the request, or request/subrequest
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    spec: RequestSpec
    share_id: str = ""  # a share of a device that allows multiple allocations
    consumed: Mapping[str, Fraction] | None = None  # the capacity the share consumes (qualified names)

    @property
    def admin_access(self) -> bool:
        return bool(self.spec.admin_access)


class Allocator:
    """``NewAllocator``: built once per pod (upstream's PreFilter), asked once per node."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        allocated: frozenset[DeviceID] | set[DeviceID],
        compiler: Compiler | None = None,
        shared: frozenset[DeviceID] = frozenset(),
        consumed: Mapping[DeviceID, Mapping[str, Fraction]] | None = None,
        pool_cache: dict[str, Any] | None = None,
        slice_cache: dict[str, Any] | None = None,
    ) -> None:
        self.classes = classes
        self.all_slices = slices
        self.allocated = allocated  # AllocatedDevices: held for one claim each
        self.shared = shared  # AllocatedSharedDeviceIDs' devices
        self.consumed: Mapping[DeviceID, Mapping[str, Fraction]] = consumed or {}  # AggregatedCapacity
        # node name -> (its labels, its pools): the pools depend on the slices and the node only, so a cache that
        # lives as long as the slices (ClusterState.dra_slice_cache) serves every pod
        self.pool_cache = pool_cache if pool_cache is not None else {}
        self.cel = compiler or default_environment()
        # the slices by node (and those for no one node): they depend on the slices only, so a cache that lives
        # as long as the slices (``slice_cache``, for ``slices``) keeps them for every pod
        split = slice_cache.get("split") if slice_cache is not None else None
        if split is None:
            split = ({}, [])
            for s in slices:
                if not s.node_name or s.shared_counters:
                    split[1].append(s)
                else:
                    split[0].setdefault(s.node_name, []).append(s)
            if slice_cache is not None:
                slice_cache["split"] = split
        self.slices_on_node: dict[str, list[ResourceSlice]] = split[0]
        self.slices_shared: list[ResourceSlice] = split[1]
        self.available_counters: dict[str, dict[str, dict[str, Fraction]]] = {}  # by pool name, as upstream
        self.num_allocate_one = 0

    def pools_for(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
        """``GatherPools`` for the node (kept per node while its labels are the same)."""
        kept = self.pool_cache.get(node_name)
        if kept is not None and kept[0] == labels:
            return kept[1]
        slices = self.slices_on_node.get(node_name, []) + self.slices_shared
        pools = gather_pools(slices, node_name, labels, self.all_slices)
        self.pool_cache[node_name] = (dict(labels), pools)
        return pools

    def allocate(self, node_name: str, labels: Mapping[str, str],
                 claims: Sequence[ResourceClaim]) -> list[list[DeviceResult]] | None:
        """One solution per claim, or None when the claims cannot all be allocated on the node."""
        return _Run(self, node_name, labels, claims).run()

    def allocation_results(self, node_name: str, labels: Mapping[str, str], claims: Sequence[ResourceClaim],
                           solution: list[list[DeviceResult]]) -> list[dict[str, Any]]:
        """The ``status.allocation`` JSON of each claim (``AllocationResult``), as upstream fills it."""
        return [allocation_result(self.classes, claim, devices, node_name) for claim, devices in zip(claims, solution)]


class _Run:
    """``allocator``: one ``Allocate`` call."""

    def __init__(self, a: Allocator, node_name: str, labels: Mapping[str, str], claims: Sequence[ResourceClaim]) -> None:
        self.a = a
        self.node_name = node_name
        self.labels = labels
        self.claims = claims
        self.matches: dict[tuple[DeviceID, tuple[int, int, int]], bool] = {}
        self.constraints: list[list[Any]] = []
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.result: list[list[DeviceResult]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.pools: list[Pool] = []

    def run(self) -> list[list[DeviceResult]] | None:
        self.pools = self.a.pools_for(self.node_name, self.labels)
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.spec.requests):
                if request.first_available:
                    least = None
                    for si, sub in enumerate(request.first_available):
                        data = self._validate_request(ci, (ci, ri, si), sub, request.name)
                        self.request_data[(ci, ri, si)] = data
                        least = data.num_devices if least is None else min(least, data.num_devices)
                    min_devices += least or 0
                else:
                    assert request.exactly is not None
                    data = self._validate_request(ci, (ci, ri, 0), request.exactly, None)
                    self.request_data[(ci, ri, 0)] = data
                    min_devices += data.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {claim.ref}: number of requested devices {min_devices} exceeds the "
                                      f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            constraints = []
            for spec in claim.spec.constraints:
                constraints.append(MatchAttributeConstraint(spec))
            self.constraints.append(constraints)
        try:
            done = self._allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except _MaxSizeExceeded:  # reached the top: upstream returns the sentinel as Allocate's error
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            for pool in self.pools:
                if pool.invalid:
                    raise InvalidPoolsError("invalid resource pools were encountered")
            return None
        for devices in self.result:
            for r in devices:
                if r.device.binding_conditions:
                    raise UnsupportedDRAFeature(
                        f"device {'/'.join(r.device_id)} has binding conditions (DRADeviceBindingConditions): "
                        "allocating it is not supported by this scheduler")
        return self.result

    # -- validation -------------------------------------------------------------------------------------------
    def _validate_request(self, ci: int, key: tuple[int, int, int], request: RequestSpec,
                          parent: str | None) -> _RequestData:
        claim = self.claims[ci]
        name = request.name  # upstream's request.name(): the subrequest's own name for a subrequest
        device_class = self.a.classes.get(request.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {claim.ref}, request {name}: could not retrieve device class {request.device_class_name}: "
                f'deviceclass.resource.k8s.io "{request.device_class_name}" not found')
        data = _RequestData(request, parent, device_class)
        if request.allocation_mode != ALLOCATION_MODE_ALL:
            data.num_devices = request.count
            return data
        data.all_devices = []
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(f"claim {claim.ref}, request {name}: asks for all devices, but resource pool "
                                      f"{pool.pool_id} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {claim.ref}, request {name}: asks for all devices, but resource pool "
                                      f"{pool.pool_id} is currently invalid")
            for s in pool.slices:
                for device in s.devices:
                    device_id = (s.driver, s.pool, device.name)
                    if not self._selectable(key, data, s, device, device_id):
                        continue
                    if not self._fits_capacity(data.request, device, device_id):
                        continue
                    data.all_devices.append((device_id, device, s, pool))
        data.num_devices = len(data.all_devices)
        return data

    # -- the search ---------------------------------------------------------------------------------------------
    def _allocate_one(self, ci: int, ri: int, si: int, di: int, sub_request: bool,
                      start: tuple[int, int, int]) -> bool:
        self.a.num_allocate_one += 1
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.requests):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except _MaxSizeExceeded:
                return False
        key = (ci, ri, si)
        data = self.request_data[key]
        if not sub_request and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self.request_data:
                try:
                    success = self._allocate_one(ci, ri, sub, di, True, (0, 0, 0))
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    data.selected_sub_request = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded()
            return False
        request = data.request
        do_all = request.allocation_mode == ALLOCATION_MODE_ALL
        if do_all and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if len(self.result[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded()
        admin = bool(request.admin_access)
        if do_all:
            assert data.all_devices is not None
            device_id, device, s, pool = data.all_devices[di]
            undo = self._allocate_device(ci, key, data, device_id, device, s, pool, must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, sub_request, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            slice_start = start[1] if pi == start[0] else 0
            for sli in range(slice_start, len(pool.slices)):
                s = pool.slices[sli]
                device_start = start[2] if pi == start[0] and sli == start[1] else 0
                for dvi in range(device_start, len(s.devices)):
                    device = s.devices[dvi]
                    device_id = (pool.driver, pool.pool, device.name)
                    if admin and ci in self.allocating.get(device_id, ()):
                        continue
                    if not admin and self._in_use(device_id):
                        continue
                    if not self._selectable(key, data, s, device, device_id):
                        continue
                    if self._fits_capacity(request, device, device_id) is not True:
                        continue
                    undo = self._allocate_device(ci, key, data, device_id, device, s, pool, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(ci, ri, si, di + 1, sub_request, (pi, sli, dvi + 1))
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _fits_capacity(self, request: RequestSpec, device: Device, device_id: DeviceID) -> bool | None:
        return request_fits_capacity(request, device, self.allocating_capacity.get(device_id, {}),
                                     self.a.consumed.get(device_id))

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated or bool(self.allocating.get(device_id))

    def _selectable(self, key: tuple[int, int, int], data: _RequestData, s: ResourceSlice, device: Device,
                    device_id: DeviceID) -> bool:
        """``isSelectable``: the class's and the request's selectors, and per-device node selection."""
        match_key = (device_id, key)
        cached = self.matches.get(match_key)
        if cached is not None:
            return cached
        ok = True
        if data.device_class is not None:
            ok = self._selectors_match(key, device, data.device_class.selectors, data.device_class.name)
        if ok:
            ok = self._selectors_match(key, device, data.request.selectors, None)
        if ok and s.per_device_node_selection:
            ok = node_matches(self.node_name, self.labels, device.node_name, device.all_nodes, device.node_selector)
        self.matches[match_key] = ok
        return ok

    def _selectors_match(self, key: tuple[int, int, int], device: Device, selectors: Sequence[str],
                         class_name: str | None) -> bool:
        cel = self.a.cel
        where = f"class {class_name}" if class_name is not None else f"claim {self.claims[key[0]].ref}"
        for i, expression in enumerate(selectors):
            try:
                selector = cel.compile(expression)
            except cel.compile_error as e:
                raise AllocationError(f"{where}: selector #{i}: CEL compile error: {_message(e)}") from None
            try:
                matched = selector.matches(device, device.serial)
            except cel.runtime_error as e:
                raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {_message(e)}") from None
            if not matched:
                return False
        return True

    def _allocate_device(self, ci: int, key: tuple[int, int, int], data: _RequestData, device_id: DeviceID,
                         device: Device, s: ResourceSlice, pool: Pool, must: bool) -> Callable[[], None] | None:
        """``allocateDevice``: the rollback, or None when the candidate cannot be taken."""
        request = data.request
        admin = bool(request.admin_access)
        multi = device.allow_multiple_allocations
        if not multi and admin and ci in self.allocating.get(device_id, ()):
            return None
        if not admin and self._in_use(device_id):
            return None
        skip_counters = multi and (device_id in self.a.consumed or device_id in self.allocating_capacity)
        counters_reserved = False
        if not skip_counters and device.consumes_counters:
            if not self._check_counters(device, pool):
                return None
            counters_reserved = True
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent, request.name
        undo_steps: list[Callable[[], None]] = []
        if counters_reserved:
            undo_steps.append(lambda: self._release_counters(device, pool))

        def rollback() -> None:
            for step in reversed(undo_steps):
                step()

        if any(t.prevents_allocation(request.tolerations) for t in device.taints):
            rollback()
            return None
        for constraint in self.constraints[ci]:
            if not constraint.add(base, sub, device):
                rollback()
                if must:
                    raise AllocationError(
                        f"claim {self.claims[ci].ref}, request {request.name}: cannot add device "
                        f"{'/'.join(device_id)} because a claim constraint would not be satisfied")
                return None
            undo_steps.append(lambda c=constraint: c.remove(base, sub, device))
        if not multi:
            self.allocating.setdefault(device_id, set()).add(ci)
            undo_steps.append(lambda: self.allocating[device_id].discard(ci))
        fits = self._fits_capacity(request, device, device_id)
        if fits is not True:
            rollback()
            return None
        consumed: dict[str, Fraction] | None = None
        share_id = ""
        if multi:
            consumed = {name: _consumed(_requested(request, device, name), device, name) for name in device.capacity}
            share_id = share_id_of(self.claims[ci], data.request_name, device_id, len(self.result[ci]))
            existed = device_id in self.allocating_capacity
            entry = self.allocating_capacity.setdefault(device_id, {})
            for name, q in consumed.items():
                entry[name] = entry.get(name, Fraction(0)) + q

            def release() -> None:
                e = self.allocating_capacity[device_id]
                for n, v in consumed.items():
                    e[n] -= v
                if not existed and all(v == 0 for v in e.values()):
                    del self.allocating_capacity[device_id]
            undo_steps.append(release)

        results = self.result[ci]
        results.append(DeviceResult(data.request_name, device_id, device, s, request, share_id, consumed or None))
        undo_steps.append(results.pop)
        return rollback

    def _check_counters(self, device: Device, pool: Pool) -> bool:
        """``checkAvailableCounters``: reserve the device's counters if the pool has them left."""
        available = self.a.available_counters.get(pool.pool)
        if available is None:
            available = {name: dict(cs.counters) for name, cs in pool.counter_sets.items()}
            for slices in (pool.slices, pool.slices_not_targeting):
                for s in slices:
                    for d in s.devices:
                        device_id = (s.driver, s.pool, d.name)
                        if not (device_id in self.a.allocated or device_id in self.a.shared
                                or device_id in self.a.consumed):  # IsDeviceAllocated
                            continue
                        for set_name, counters in d.consumes_counters:
                            target = available.get(set_name, {})
                            for name, value in counters.items():
                                if name in target:
                                    target[name] -= value
            self.a.available_counters[pool.pool] = available
        consumed = self.consumed_counters.setdefault(pool.pool, {})
        for set_name, counters in device.consumes_counters:
            target = consumed.setdefault(set_name, {})
            for name, value in counters.items():
                target[name] = target.get(name, Fraction(0)) + value
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if value < used.get(name, Fraction(0)):
                    self._release_counters(device, pool)
                    return False
        return True

    def _release_counters(self, device: Device, pool: Pool) -> None:
        consumed = self.consumed_counters[pool.pool]
        for set_name, counters in device.consumes_counters:
            for name, value in counters.items():
                consumed[set_name][name] -= value


def share_id_of(claim: ResourceClaim, request: str, device_id: DeviceID, index: int) -> str:
    """A share's ID (``GenerateShareID``): upstream draws a random UUID; this engine has no randomness, so the UUID
    is derived from the claim, the request, the device and the result's place, unique wherever upstream's is."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"dra-share:{claim.uid or claim.ref}/{request}/{'/'.join(device_id)}/{index}"))


def _requested(request: RequestSpec, device: Device, name: str) -> Fraction | None:
    for key, value in (request.capacity or {}).items():
        if (key if "/" in key else f"{device.driver}/{key}") == name:
            return value
    return None


class _MaxSizeExceeded(Exception):
    """``errAllocationResultMaxSizeExceeded``."""


def _message(e: Exception) -> str:
    return str(getattr(e, "message", None) or e)


# -- the AllocationResult -------------------------------------------------------------------------------------------
def allocation_result(classes: Mapping[str, DeviceClass], claim: ResourceClaim, devices: Sequence[DeviceResult],
                      node_name: str) -> dict[str, Any]:
    """The claim's ``status.allocation`` (``AllocationResult`` JSON): results, configs, node selector."""
    results = []
    for r in devices:
        entry: dict[str, Any] = {"request": r.request, "driver": r.device_id[0], "pool": r.device_id[1],
                                 "device": r.device_id[2]}
        if r.spec.admin_access:
            entry["adminAccess"] = True
        if r.spec.raw_tolerations:
            entry["tolerations"] = [dict(t) for t in r.spec.raw_tolerations]
        if r.share_id:
            entry["shareID"] = r.share_id
        if r.consumed:
            names = r.device.capacity_names
            entry["consumedCapacity"] = {names.get(k, k): format_quantity(v) for k, v in r.consumed.items()}
        results.append(entry)
    config: list[dict[str, Any]] = []
    chosen: dict[str, str] = {}  # request name -> the request or request/subrequest it was satisfied by
    by_class: dict[str, tuple[int, int]] = {}
    for request in claim.spec.requests:
        if request.exactly is not None:
            spec, name = request.exactly, request.name
        else:
            name = next((r.request for r in devices if r.request.split("/", 1)[0] == request.name), "")
            sub = name.split("/", 1)[1] if "/" in name else ""
            spec = next((s for s in request.first_available if s.name == sub), None)
            if spec is None:
                continue
        chosen[request.name] = name
        device_class = classes.get(spec.device_class_name)
        if device_class is None:
            continue
        if device_class.name in by_class:
            start, end = by_class[device_class.name]
            for i in range(start, end):
                config[i]["requests"].append(name)
            continue
        start = len(config)
        for c in device_class.config:
            config.append({"source": "FromClass", "requests": [name],
                           **{k: v for k, v in c.items() if k != "requests"}})
        by_class[device_class.name] = (start, len(config))
    for c in claim.spec.config:
        requests = list(c.get("requests") or [])
        body = {k: v for k, v in c.items() if k != "requests"}
        if not requests:
            config.append({"source": "FromClaim", **body})
            continue
        for request in claim.spec.requests:
            if request.name in requests:
                config.append({"source": "FromClaim", "requests": requests, **body})
                continue
            if request.exactly is not None:
                continue
            if chosen.get(request.name, "") in requests:
                config.append({"source": "FromClaim", "requests": requests, **body})
    allocation: dict[str, Any] = {"devices": {"results": results}}
    if config:
        allocation["devices"]["config"] = config
    selector = node_selector(devices, node_name, claim.name)
    if selector is not None:
        allocation["nodeSelector"] = selector
    return allocation


def node_selector(devices: Sequence[DeviceResult], node_name: str, claim_name: str = "") -> dict[str, Any] | None:
    """``createNodeSelector``: the node itself when a device is local to it, else the slices' selectors
    merged into one term, else None (available everywhere)."""
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for r in devices:
        if r.slice.per_device_node_selection:
            name, selector = r.device.node_name, r.device.node_selector_raw
        else:
            name, selector = r.slice.node_name, r.slice.node_selector_raw
        if name or r.device.binds_to_node:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
        if selector is not None:
            terms = selector.get("nodeSelectorTerms") or []
            if len(terms) == 1:
                _merge(terms[0].get("matchFields") or [], fields)
                _merge(terms[0].get("matchExpressions") or [], expressions)
            elif len(terms) > 1:
                raise AllocationError(f"create NodeSelector for claim {claim_name}: unsupported "
                                      f"ResourceSlice.NodeSelector with {len(terms)} terms")
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _merge(source: Iterable[dict[str, Any]], target: list[dict[str, Any]]) -> None:
    for requirement in source:
        values = set(requirement.get("values") or [])
        if not any(r.get("key") == requirement.get("key") and r.get("operator") == requirement.get("operator")
                   and set(r.get("values") or []) == values for r in target):
            target.append(requirement)
