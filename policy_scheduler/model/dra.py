"""Dynamic Resource Allocation objects (``resource.k8s.io/v1``), parsed once.

A device's attribute is one of four kinds, as ``resourceapi.DeviceAttribute`` has them (``bool``, ``int``,
``string``, ``version``: a semantic version kept as its text); CEL selectors read them through
:mod:`policy_scheduler.dra.cel`. Attribute and capacity names are kept qualified (``domain/id``): a name
without a domain gets the driver's, as upstream's CEL environment and ``lookupAttribute`` read it.
Capacities and counters are exact :class:`fractions.Fraction` values (``model/quantity.py``).

Validation (``pkg/apis/resource/validation`` of 1.36) covers what the scheduler reads; bad input is an
:class:`~policy_scheduler.errors.ObjectError` naming the object and the field, with the API server's words
(``Required value``, ``Invalid value: ...``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import ObjectError
from .fields import (
    bool_field,
    describe,
    int_field,
    obj_field,
    obj_list_field,
    object_identity,
    opt_obj_field,
    str_field,
    str_list_field,
)
from .node_selector import NodeSelectorTerm, match_node_selector_terms, parse_node_selector_term
from .quantity import QuantityError, parse_quantity
from .taints import NO_EXECUTE, NO_SCHEDULE, Toleration

#: ``DeviceAttribute``'s one-of fields, in the API's order.
ATTRIBUTE_KINDS = ("int", "bool", "string", "version")

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
#: ``resourceapi.AllocationResultsMaxSize``.
ALLOCATION_RESULTS_MAX_SIZE = 32
#: ``resourceapi.ResourceClaimReservedForMaxSize``.
RESERVED_FOR_MAX_SIZE = 256
#: ``resourceapi.FirstAvailableDeviceRequestMaxSize``.
FIRST_AVAILABLE_MAX_SIZE = 8
#: ``resourceapi.Finalizer``: what the scheduler adds to a claim it allocates.
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
#: ``DRAAdminNamespaceLabelKey``: a claim with admin access lives in a namespace with this label ``"true"``.
ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
DEVICE_TAINT_EFFECTS = (NO_SCHEDULE, NO_EXECUTE, "None")
_SERIALS = itertools.count()


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One attribute value of a device: ``kind`` is one of :data:`ATTRIBUTE_KINDS`."""

    kind: str
    value: bool | int | str


def qualify(driver: str, name: str) -> str:
    """A device's attribute or capacity name with its domain: unqualified names belong to the driver."""
    return name if "/" in name else f"{driver}/{name}"


def _required(obj: str, path: str, detail: str = "") -> ObjectError:
    return ObjectError(obj, path, f"Required value: {detail}" if detail else "Required value")


def _invalid(obj: str, path: str, value: Any, detail: str) -> ObjectError:
    shown = f'"{value}"' if isinstance(value, str) else ("true" if value is True else "false" if value is False else value)
    return ObjectError(obj, path, f"Invalid value: {shown}: {detail}")


def _quantity(obj: str, path: str, raw: Any) -> Fraction:
    try:
        return parse_quantity(raw)
    except QuantityError as e:
        raise ObjectError(obj, path, f"Invalid value: {describe(raw)}: {e}") from None


def _name_list(obj: str, path: str, raw: Any) -> tuple[str, ...]:
    return tuple(str_list_field(obj, path, raw))


# -- devices and slices -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str

    def prevents_allocation(self, tolerations: tuple[Toleration, ...]) -> bool:
        """``taintPreventsAllocation`` for one taint: only NoSchedule / NoExecute, unless tolerated
        (``resourceclaim.ToleratesTaint`` is the core toleration's rule)."""
        if self.effect not in (NO_SCHEDULE, NO_EXECUTE):
            return False
        return not any(t.tolerates(self) for t in tolerations)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """``CapacityRequestPolicy``: ``default``, ``valid_values``, ``valid_range`` (min, max, step)."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    range_min: Fraction | None = None
    range_max: Fraction | None = None
    range_step: Fraction | None = None
    has_range: bool = False


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a slice (``resourceapi.Device``); also what CEL reads (``CELDevice``)."""

    name: str
    driver: str
    attributes: Mapping[str, DeviceAttribute]
    capacity: Mapping[str, Fraction]
    capacity_policies: Mapping[str, CapacityPolicy]
    consumes_counters: tuple[tuple[str, Mapping[str, Fraction]], ...] = ()
    node_name: str = ""
    node_selector: tuple[NodeSelectorTerm, ...] | None = None
    all_nodes: bool = False
    taints: tuple[DeviceTaint, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    allow_multiple_allocations: bool = False
    node_selector_raw: dict | None = field(default=None, compare=False, repr=False)
    capacity_names: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)  # qualified -> as written
    raw_taints: tuple[dict, ...] = field(default=(), compare=False, repr=False)
    #: Unique per parsed device: the key CEL results are cached under (a replaced slice has new devices).
    serial: int = field(default_factory=lambda: next(_SERIALS), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, Fraction]


def node_matches(node_name: str, labels: Mapping[str, str], match_name: str, all_nodes: bool,
                 selector: tuple[NodeSelectorTerm, ...] | None) -> bool:
    """``NodeMatches``: a node name, all nodes, or a node selector."""
    if match_name:
        return node_name == match_name
    if all_nodes:
        return True
    if selector is not None:
        return match_node_selector_terms(selector, labels, node_name)
    return False


def _parse_node_selector(obj: str, path: str, raw: Any) -> tuple[NodeSelectorTerm, ...] | None:
    selector = opt_obj_field(obj, path, raw)
    if selector is None:
        return None
    terms = obj_list_field(obj, f"{path}.nodeSelectorTerms", selector.get("nodeSelectorTerms"))
    return tuple(parse_node_selector_term(obj, f"{path}.nodeSelectorTerms[{i}]", t) for i, t in enumerate(terms))


def _parse_attribute(obj: str, path: str, raw: Any) -> DeviceAttribute:
    raw = obj_field(obj, path, raw)
    set_kinds = [k for k in ATTRIBUTE_KINDS if raw.get(k) is not None]
    if len(set_kinds) != 1:
        raise _invalid(obj, path, "", "exactly one value must be specified")
    kind = set_kinds[0]
    value = raw[kind]
    if kind == "int":
        value = int_field(obj, f"{path}.int", value)
    elif kind == "bool":
        value = bool_field(obj, f"{path}.bool", value)
    else:
        value = str_field(obj, f"{path}.{kind}", value)
        if kind == "version" and not _is_semver(value):
            raise _invalid(obj, f"{path}.version", value, "must be a string compatible with semver.org spec 2.0.0")
        if kind == "string" and len(value) > 64:
            raise ObjectError(obj, f"{path}.string", "Too long: may not be more than 64 bytes")
    return DeviceAttribute(kind, value)


def _is_semver(text: str) -> bool:
    return re.fullmatch(
        r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
        r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
        r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?", text) is not None


def _check_qualified_name(obj: str, path: str, name: str) -> None:
    """``validateQualifiedName`` (the parts a scheduler cares about: non-empty domain and id)."""
    if "/" in name:
        domain, _, ident = name.partition("/")
        if not domain:
            raise _invalid(obj, path, "", "the domain must not be empty")
        if not ident:
            raise _invalid(obj, path, "", "the name must not be empty")
    elif not name:
        raise _invalid(obj, path, "", "the name must not be empty")


def _parse_capacity_policy(obj: str, path: str, raw: Any) -> CapacityPolicy | None:
    policy = opt_obj_field(obj, path, raw)
    if policy is None:
        return None
    default = _quantity(obj, f"{path}.default", policy["default"]) if policy.get("default") is not None else None
    values = tuple(_quantity(obj, f"{path}.validValues[{i}]", v)
                   for i, v in enumerate(policy.get("validValues") or []))
    valid_range = opt_obj_field(obj, f"{path}.validRange", policy.get("validRange"))
    if values and valid_range is not None:
        raise ObjectError(obj, path, 'Forbidden: exactly one policy can be specified, cannot specify "validValues" '
                                     'and "validRange" at the same time')
    if (values or valid_range is not None) and default is None:
        which = "validValues" if values else "validRange"
        raise _required(obj, f"{path}.default", f"required when {which} is defined")
    if valid_range is None:
        return CapacityPolicy(default, values)
    if valid_range.get("min") is None:
        raise _required(obj, f"{path}.validRange.min", "required when validRange is defined")

    def q(key: str) -> Fraction | None:
        v = valid_range.get(key)
        return None if v is None else _quantity(obj, f"{path}.validRange.{key}", v)
    return CapacityPolicy(default, values, q("min"), q("max"), q("step"), True)


def _parse_device(obj: str, path: str, raw: dict[str, Any], driver: str, per_device: bool) -> Device:
    name = str_field(obj, f"{path}.name", raw.get("name"))
    if not name:
        raise _required(obj, f"{path}.name")
    attributes: dict[str, DeviceAttribute] = {}
    for key, value in obj_field(obj, f"{path}.attributes", raw.get("attributes")).items():
        _check_qualified_name(obj, f"{path}.attributes[{key}]", key)
        attributes[qualify(driver, key)] = _parse_attribute(obj, f"{path}.attributes[{key}]", value)
    capacity: dict[str, Fraction] = {}
    policies: dict[str, CapacityPolicy] = {}
    multi = bool_field(obj, f"{path}.allowMultipleAllocations", raw.get("allowMultipleAllocations"))
    for key, value in obj_field(obj, f"{path}.capacity", raw.get("capacity")).items():
        cpath = f"{path}.capacity[{key}]"
        _check_qualified_name(obj, cpath, key)
        value = obj_field(obj, cpath, value)
        if value.get("value") is None:
            raise _required(obj, f"{cpath}.value")
        capacity[qualify(driver, key)] = _quantity(obj, f"{cpath}.value", value["value"])
        policy = _parse_capacity_policy(obj, f"{cpath}.requestPolicy", value.get("requestPolicy"))
        if policy is not None:
            if not multi:
                raise ObjectError(obj, f"{cpath}.requestPolicy", "Forbidden: allowMultipleAllocations must be true")
            policies[qualify(driver, key)] = policy
    counters = []
    for i, c in enumerate(obj_list_field(obj, f"{path}.consumesCounters", raw.get("consumesCounters"))):
        cpath = f"{path}.consumesCounters[{i}]"
        counter_set = str_field(obj, f"{cpath}.counterSet", c.get("counterSet"))
        if not counter_set:
            raise _required(obj, f"{cpath}.counterSet")
        values = _counters(obj, f"{cpath}.counters", c.get("counters"))
        counters.append((counter_set, values))
    node_name = str_field(obj, f"{path}.nodeName", raw.get("nodeName"))
    node_selector = _parse_node_selector(obj, f"{path}.nodeSelector", raw.get("nodeSelector"))
    all_nodes = raw.get("allNodes")
    if all_nodes is not None:
        bool_field(obj, f"{path}.allNodes", all_nodes)
    set_fields = [f for f, on in (("`nodeName`", raw.get("nodeName") is not None),
                                  ("`nodeSelector`", node_selector is not None),
                                  ("`allNodes`", all_nodes is not None)) if on]
    if per_device:
        if raw.get("nodeName") is not None and not node_name:
            raise _invalid(obj, f"{path}.nodeName", "", "must not be empty")
        if all_nodes is False:
            raise _invalid(obj, f"{path}.allNodes", False, "must be either unset or set to true")
        if not set_fields:
            raise _required(obj, path, "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                                       "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
        if len(set_fields) > 1:
            raise _invalid(obj, path, "{" + ", ".join(set_fields) + "}",
                           "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                           "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    elif set_fields:
        raise ObjectError(obj, path, "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set "
                                     "if `perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    taints = []
    for i, t in enumerate(obj_list_field(obj, f"{path}.taints", raw.get("taints"))):
        tpath = f"{path}.taints[{i}]"
        key = str_field(obj, f"{tpath}.key", t.get("key"))
        effect = str_field(obj, f"{tpath}.effect", t.get("effect"))
        if not effect:
            raise _required(obj, f"{tpath}.effect")
        if effect not in DEVICE_TAINT_EFFECTS:
            supported = ", ".join(f'"{e}"' for e in sorted(DEVICE_TAINT_EFFECTS))
            raise ObjectError(obj, f"{tpath}.effect", f'Unsupported value: "{effect}": supported values: {supported}')
        taints.append(DeviceTaint(key, str_field(obj, f"{tpath}.value", t.get("value")), effect))
    return Device(
        name, driver, attributes, capacity, policies, tuple(counters), node_name, node_selector, bool(all_nodes),
        tuple(taints),
        _name_list(obj, f"{path}.bindingConditions", raw.get("bindingConditions")),
        _name_list(obj, f"{path}.bindingFailureConditions", raw.get("bindingFailureConditions")),
        bool_field(obj, f"{path}.bindsToNode", raw.get("bindsToNode")),
        multi,
        raw.get("nodeSelector"),
        {qualify(driver, k): k for k in obj_field(obj, f"{path}.capacity", raw.get("capacity"))},
        tuple(obj_list_field(obj, f"{path}.taints", raw.get("taints"))),
    )


def _counters(obj: str, path: str, raw: Any) -> dict[str, Fraction]:
    counters = obj_field(obj, path, raw)
    if not counters:
        raise _required(obj, path)
    out = {}
    for name, c in counters.items():
        c = obj_field(obj, f"{path}[{name}]", c)
        if c.get("value") is None:
            raise _required(obj, f"{path}[{name}].value")
        out[name] = _quantity(obj, f"{path}[{name}].value", c["value"])
    return out


@dataclass(frozen=True, slots=True, eq=False)
class ResourceSlice:
    """``resourceapi.ResourceSlice``: one slice of a driver's pool of devices."""

    name: str
    raw: dict = field(repr=False)
    driver: str
    pool: str
    generation: int
    resource_slice_count: int
    node_name: str
    node_selector: tuple[NodeSelectorTerm, ...] | None
    all_nodes: bool
    per_device_node_selection: bool
    shared_counters: tuple[CounterSet, ...]
    devices: tuple[Device, ...]
    node_selector_raw: dict | None = field(default=None, repr=False)

    @property
    def resource_version(self) -> str:
        return _resource_version(self.raw)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ResourceSlice:
        _meta, name, _, obj = object_identity("ResourceSlice", raw, namespaced=False)
        spec = obj_field(obj, "spec", raw.get("spec"))
        driver = str_field(obj, "spec.driver", spec.get("driver"))
        if not driver:
            raise _required(obj, "spec.driver")
        pool = obj_field(obj, "spec.pool", spec.get("pool"))
        pool_name = str_field(obj, "spec.pool.name", pool.get("name"))
        if not pool_name:
            raise _required(obj, "spec.pool.name")
        generation = int_field(obj, "spec.pool.generation", pool.get("generation"))
        if generation < 0:
            raise _invalid(obj, "spec.pool.generation", generation, "must be greater than or equal to zero")
        count = int_field(obj, "spec.pool.resourceSliceCount", pool.get("resourceSliceCount"))
        if count <= 0:
            raise _invalid(obj, "spec.pool.resourceSliceCount", count, "must be greater than zero")
        node_name = str_field(obj, "spec.nodeName", spec.get("nodeName"))
        node_selector = _parse_node_selector(obj, "spec.nodeSelector", spec.get("nodeSelector"))
        if node_selector is not None and len(node_selector) != 1:
            raise ObjectError(obj, "spec.nodeSelector.nodeSelectorTerms",
                              "Invalid value: must have exactly one node selector term")
        all_nodes = spec.get("allNodes")
        if all_nodes is not None and bool_field(obj, "spec.allNodes", all_nodes) is not True:
            raise _invalid(obj, "spec.allNodes", False, "must be either unset or set to true")
        per_device = spec.get("perDeviceNodeSelection")
        if per_device is not None and bool_field(obj, "spec.perDeviceNodeSelection", per_device) is not True:
            raise _invalid(obj, "spec.perDeviceNodeSelection", False, "must be either unset or set to true")
        if spec.get("nodeName") is not None and not node_name:
            raise _invalid(obj, "spec.nodeName", "", "must not be empty")
        shared = []
        for i, s in enumerate(obj_list_field(obj, "spec.sharedCounters", spec.get("sharedCounters"))):
            sname = str_field(obj, f"spec.sharedCounters[{i}].name", s.get("name"))
            if not sname:
                raise _required(obj, f"spec.sharedCounters[{i}].name")
            shared.append(CounterSet(sname, _counters(obj, f"spec.sharedCounters[{i}].counters", s.get("counters"))))
        raw_devices = obj_list_field(obj, "spec.devices", spec.get("devices"))
        set_fields = [f for f, on in (("`nodeName`", spec.get("nodeName") is not None),
                                      ("`nodeSelector`", node_selector is not None),
                                      ("`allNodes`", all_nodes is not None),
                                      ("`perDeviceNodeSelection`", per_device is not None)) if on]
        if shared and raw_devices:
            raise ObjectError(obj, "spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed')
        if not shared:
            if not set_fields:
                raise _required(obj, "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                                             "`perDeviceNodeSelection` is required")
            if len(set_fields) > 1:
                raise _invalid(obj, "spec", "{" + ", ".join(set_fields) + "}",
                               "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
                               "required, but multiple fields are set")
        devices = tuple(_parse_device(obj, f"spec.devices[{i}]", d, driver, bool(per_device))
                        for i, d in enumerate(raw_devices))
        seen: set[str] = set()
        for i, d in enumerate(devices):
            if d.name in seen:
                raise ObjectError(obj, f"spec.devices[{i}].name", f'Duplicate value: "{d.name}"')
            seen.add(d.name)
        return cls(name, raw, driver, pool_name, generation, count, node_name, node_selector, bool(all_nodes),
                   bool(per_device), tuple(shared), devices, spec.get("nodeSelector"))


# -- classes ------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, eq=False)
class DeviceClass:
    name: str
    raw: dict = field(repr=False)
    selectors: tuple[str, ...]
    config: tuple[dict, ...]
    extended_resource_name: str = ""

    @property
    def resource_version(self) -> str:
        return _resource_version(self.raw)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> DeviceClass:
        _meta, name, _, obj = object_identity("DeviceClass", raw, namespaced=False)
        spec = obj_field(obj, "spec", raw.get("spec"))
        selectors = _selectors(obj, "spec.selectors", spec.get("selectors"))
        config = tuple(obj_list_field(obj, "spec.config", spec.get("config")))
        ext = str_field(obj, "spec.extendedResourceName", spec.get("extendedResourceName"))
        return cls(name, raw, selectors, config, ext)


def _selectors(obj: str, path: str, raw: Any) -> tuple[str, ...]:
    out = []
    for i, s in enumerate(obj_list_field(obj, path, raw)):
        cel = opt_obj_field(obj, f"{path}[{i}].cel", s.get("cel"))
        if cel is None:
            raise _required(obj, f"{path}[{i}].cel")
        expression = str_field(obj, f"{path}[{i}].cel.expression", cel.get("expression"))
        if not expression:
            raise _required(obj, f"{path}[{i}].cel.expression")
        out.append(expression)
    return tuple(out)


# -- claims -------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RequestSpec:
    """An ``ExactDeviceRequest`` or a ``DeviceSubRequest`` (``admin_access`` is None for the latter)."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...]
    allocation_mode: str
    count: int
    admin_access: bool | None = None
    tolerations: tuple[Toleration, ...] = ()
    capacity: Mapping[str, Fraction] | None = None
    raw_tolerations: tuple[dict, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: RequestSpec | None
    first_available: tuple[RequestSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...]
    match_attribute: str


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...]
    config: tuple[dict, ...]


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One ``DeviceRequestAllocationResult``."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str = ""  # set: one of several allocations of a device that allows them (consumable capacity)
    consumed_capacity: Mapping[str, Fraction] = field(default_factory=dict)  # qualified names

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class ConsumerReference:
    """``ResourceClaimConsumerReference``."""

    api_group: str
    resource: str
    name: str
    uid: str


def _request_spec(obj: str, path: str, raw: dict[str, Any], name: str, sub: bool) -> RequestSpec:
    class_name = str_field(obj, f"{path}.deviceClassName", raw.get("deviceClassName"))
    if not class_name:
        raise _required(obj, f"{path}.deviceClassName")
    mode = str_field(obj, f"{path}.allocationMode", raw.get("allocationMode")) or ALLOCATION_MODE_EXACT_COUNT
    count_raw = raw.get("count")
    count = int_field(obj, f"{path}.count", count_raw)
    if mode == ALLOCATION_MODE_ALL:
        if count_raw is not None and count != 0:
            raise _invalid(obj, f"{path}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == ALLOCATION_MODE_EXACT_COUNT:
        if count_raw is None:
            count = 1
        elif count <= 0:
            raise _invalid(obj, f"{path}.count", count, "must be greater than zero")
    else:
        raise ObjectError(obj, f"{path}.allocationMode",
                          f'Unsupported value: "{mode}": supported values: "All", "ExactCount"')
    admin = None
    if not sub and raw.get("adminAccess") is not None:
        admin = bool_field(obj, f"{path}.adminAccess", raw.get("adminAccess"))
    tolerations = []
    for i, t in enumerate(obj_list_field(obj, f"{path}.tolerations", raw.get("tolerations"))):
        for key in ("key", "operator", "value", "effect"):
            str_field(obj, f"{path}.tolerations[{i}].{key}", t.get(key))
        tolerations.append(Toleration.from_dict(t))
    capacity = None
    cap = opt_obj_field(obj, f"{path}.capacity", raw.get("capacity"))
    if cap is not None:
        capacity = {}
        for key, q in obj_field(obj, f"{path}.capacity.requests", cap.get("requests")).items():
            _check_qualified_name(obj, f"{path}.capacity.requests[{key}]", key)
            capacity[key] = _quantity(obj, f"{path}.capacity.requests[{key}]", q)
    return RequestSpec(name, class_name, _selectors(obj, f"{path}.selectors", raw.get("selectors")), mode, count,
                       admin, tuple(tolerations), capacity,
                       tuple(obj_list_field(obj, f"{path}.tolerations", raw.get("tolerations"))))


def parse_claim_spec(obj: str, path: str, raw: Any) -> ClaimSpec:
    """``ResourceClaimSpec`` at ``path`` (``spec`` of a claim, ``spec.spec`` of a template)."""
    spec = obj_field(obj, path, raw)
    devices = obj_field(obj, f"{path}.devices", spec.get("devices"))
    requests = []
    names: set[str] = set()
    sub_names: set[str] = set()
    for i, r in enumerate(obj_list_field(obj, f"{path}.devices.requests", devices.get("requests"))):
        rpath = f"{path}.devices.requests[{i}]"
        name = str_field(obj, f"{rpath}.name", r.get("name"))
        if not name:
            raise _required(obj, f"{rpath}.name")
        if name in names:
            raise ObjectError(obj, f"{rpath}.name", f'Duplicate value: "{name}"')
        names.add(name)
        exactly = opt_obj_field(obj, f"{rpath}.exactly", r.get("exactly"))
        first = obj_list_field(obj, f"{rpath}.firstAvailable", r.get("firstAvailable"))
        if exactly is None and not first:
            raise _required(obj, rpath, "exactly one of `exactly` or `firstAvailable` is required")
        if exactly is not None and first:
            raise ObjectError(obj, rpath, "Invalid value: null: exactly one of `exactly` or `firstAvailable` is "
                                          "required, but multiple fields are set")
        if len(first) > FIRST_AVAILABLE_MAX_SIZE:
            raise ObjectError(obj, f"{rpath}.firstAvailable",
                              f"Too many: {len(first)}: must have at most {FIRST_AVAILABLE_MAX_SIZE} items")
        subs = []
        seen_sub: set[str] = set()
        for j, s in enumerate(first):
            spath = f"{rpath}.firstAvailable[{j}]"
            sname = str_field(obj, f"{spath}.name", s.get("name"))
            if not sname:
                raise _required(obj, f"{spath}.name")
            if sname in seen_sub:
                raise ObjectError(obj, f"{spath}.name", f'Duplicate value: "{sname}"')
            seen_sub.add(sname)
            sub_names.add(f"{name}/{sname}")
            subs.append(_request_spec(obj, spath, s, sname, True))
        spec_exact = _request_spec(obj, f"{rpath}.exactly", exactly, name, False) if exactly is not None else None
        requests.append(DeviceRequest(name, spec_exact, tuple(subs)))
    constraints = []
    for i, c in enumerate(obj_list_field(obj, f"{path}.devices.constraints", devices.get("constraints"))):
        cpath = f"{path}.devices.constraints[{i}]"
        reqs = _name_list(obj, f"{cpath}.requests", c.get("requests"))
        for j, ref in enumerate(reqs):
            if ref not in names and ref not in sub_names:
                raise _invalid(obj, f"{cpath}.requests[{j}]", ref, "must be the name of a request in the claim or "
                               "the name of a request and a subrequest separated by '/'")
        # resource.k8s.io/v1 has matchAttribute only (distinctAttribute is not part of the v1 API: the API
        # server drops it, and then the constraint is empty).
        match = c.get("matchAttribute")
        if match is None:
            raise _required(obj, f"{cpath}.matchAttribute")
        text = str_field(obj, f"{cpath}.matchAttribute", match)
        if "/" not in text:
            raise _invalid(obj, f"{cpath}.matchAttribute", text,
                           "a fully qualified name must be a domain and a name separated by a slash")
        _check_qualified_name(obj, f"{cpath}.matchAttribute", text)
        constraints.append(DeviceConstraint(reqs, text))
    config = tuple(obj_list_field(obj, f"{path}.devices.config", devices.get("config")))
    return ClaimSpec(tuple(requests), tuple(constraints), config)


def _resource_version(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata")
    rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return rv if isinstance(rv, str) else ""


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaim:
    """``resourceapi.ResourceClaim``: its spec, and of its status the allocation and ``reservedFor``."""

    name: str
    namespace: str
    uid: str
    raw: dict = field(repr=False)
    spec: ClaimSpec
    allocation: dict | None  # status.allocation as the API holds it (None: not allocated)
    results: tuple[AllocatedDevice, ...]
    allocation_node_selector: tuple[NodeSelectorTerm, ...] | None
    reserved_for: tuple[ConsumerReference, ...]
    deleting: bool
    finalizers: tuple[str, ...]
    controller_uid: str | None  # the controller owner reference's uid (None when the claim has no controller)

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def resource_version(self) -> str:
        return _resource_version(self.raw)

    @property
    def allocated(self) -> bool:
        return self.allocation is not None

    def reserved_for_uid(self, uid: str) -> bool:
        return any(r.uid == uid for r in self.reserved_for)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ResourceClaim:
        meta, name, namespace, obj = object_identity("ResourceClaim", raw)
        spec = parse_claim_spec(obj, "spec", raw.get("spec"))
        status = obj_field(obj, "status", raw.get("status"))
        allocation = opt_obj_field(obj, "status.allocation", status.get("allocation"))
        results: list[AllocatedDevice] = []
        selector = None
        if allocation is not None:
            devices = obj_field(obj, "status.allocation.devices", allocation.get("devices"))
            for i, r in enumerate(obj_list_field(obj, "status.allocation.devices.results", devices.get("results"))):
                rpath = f"status.allocation.devices.results[{i}]"
                values = []
                for key in ("request", "driver", "pool", "device"):
                    v = str_field(obj, f"{rpath}.{key}", r.get(key))
                    if not v:
                        raise _required(obj, f"{rpath}.{key}")
                    values.append(v)
                admin = bool_field(obj, f"{rpath}.adminAccess", r.get("adminAccess"))
                consumed = {qualify(values[1], k): _quantity(obj, f"{rpath}.consumedCapacity[{k}]", q)
                            for k, q in obj_field(obj, f"{rpath}.consumedCapacity", r.get("consumedCapacity")).items()}
                results.append(AllocatedDevice(*values, admin, str_field(obj, f"{rpath}.shareID", r.get("shareID")),
                                               consumed))
            selector = _parse_node_selector(obj, "status.allocation.nodeSelector", allocation.get("nodeSelector"))
        reserved = []
        for i, r in enumerate(obj_list_field(obj, "status.reservedFor", status.get("reservedFor"))):
            rpath = f"status.reservedFor[{i}]"
            values = [str_field(obj, f"{rpath}.{k}", r.get(k)) for k in ("apiGroup", "resource", "name", "uid")]
            for key, v in zip(("resource", "name", "uid"), values[1:]):
                if not v:
                    raise _required(obj, f"{rpath}.{key}")
            reserved.append(ConsumerReference(*values))
        if reserved and allocation is None:
            raise ObjectError(obj, "status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
        if len(reserved) > RESERVED_FOR_MAX_SIZE:
            raise ObjectError(obj, "status.reservedFor",
                              f"Too many: {len(reserved)}: must have at most {RESERVED_FOR_MAX_SIZE} items")
        controller = None
        for i, o in enumerate(obj_list_field(obj, "metadata.ownerReferences", meta.get("ownerReferences"))):
            if bool_field(obj, f"metadata.ownerReferences[{i}].controller", o.get("controller")):
                controller = str_field(obj, f"metadata.ownerReferences[{i}].uid", o.get("uid"))
        deleting = bool(str_field(obj, "metadata.deletionTimestamp", meta.get("deletionTimestamp")))
        return cls(name, namespace, str_field(obj, "metadata.uid", meta.get("uid")), raw, spec, allocation,
                   tuple(results), selector, tuple(reserved), deleting,
                   tuple(str_list_field(obj, "metadata.finalizers", meta.get("finalizers"))), controller)


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaimTemplate:
    name: str
    namespace: str
    raw: dict = field(repr=False)
    spec: ClaimSpec

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def resource_version(self) -> str:
        return _resource_version(self.raw)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ResourceClaimTemplate:
        _meta, name, namespace, obj = object_identity("ResourceClaimTemplate", raw)
        spec = obj_field(obj, "spec", raw.get("spec"))
        return cls(name, namespace, raw, parse_claim_spec(obj, "spec.spec", spec.get("spec")))


def selector_expressions(claim_spec: ClaimSpec) -> list[tuple[str, str]]:
    """Every CEL expression of a claim spec with its field path (for compile checks)."""
    out = []
    for i, r in enumerate(claim_spec.requests):
        if r.exactly is not None:
            out += [(f"devices.requests[{i}].exactly.selectors[{j}].cel.expression", e)
                    for j, e in enumerate(r.exactly.selectors)]
        for k, s in enumerate(r.first_available):
            out += [(f"devices.requests[{i}].firstAvailable[{k}].selectors[{j}].cel.expression", e)
                    for j, e in enumerate(s.selectors)]
    return out
