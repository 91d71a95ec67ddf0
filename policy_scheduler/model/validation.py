"""The API server's semantic checks on the fields the scheduler reads.

The structural checks (types, enums, unknown fields) come from the OpenAPI schema (:mod:`.openapi`).
These are the rules of ``pkg/apis/core/validation`` and ``apimachinery``'s label validation that a
schema cannot say: label keys and values, selector operators and their values, resource names and
quantities, taint effects, toleration operators. Objects that break them would never reach a real
scheduler, so a snapshot holding one is refused with the API server's wording, naming the field.

They run on already-parsed objects (the model's typed readers have checked the field types), which is
why they can read ``raw`` fields without further type checks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import ObjectError
from .fields import resource_list_field
from .labels import _DNS1123_SUBDOMAIN, label_key_error, label_value_error
from .node import Node
from .node_selector import NODE_NAME_FIELD
from .pod import Container, Pod
from .quantity import parse_quantity
from .volumes import READ_WRITE_ONCE_POD, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Exists", "Equal")
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
VOLUME_BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", READ_WRITE_ONCE_POD)
CSI_DRIVER_NAME_MAX_LENGTH = 63
CSI_NODE_ID_MAX_LENGTH = 256  # csiNodeIDLongerMaxLength, which 1.26's CSINode strategy allows on create
DNS1123_SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                             "or '.', and must start and end with an alphanumeric character")
DNS1123_SUBDOMAIN_FORMAT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"  # in the message


def supported(values: tuple[str, ...]) -> str:
    return "supported values: " + ", ".join(f'"{v}"' for v in values)


def check_labels(obj: str, path: str, labels: Mapping[str, str]) -> None:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    for key, val in labels.items():
        err = label_key_error(key)
        if err:
            raise ObjectError(obj, path, f"Invalid value: {key!r}: {_detail(err)}")
        err = label_value_error(val)
        if err:
            raise ObjectError(obj, f"{path}.{key}", f"Invalid value: {val!r}: {_detail(err)}")


def check_label_selector(obj: str, path: str, selector: Mapping[str, Any] | None) -> None:
    """``ValidateLabelSelector``: matchLabels as labels; expressions with a known operator and values."""
    if not selector:
        return
    check_labels(obj, f"{path}.matchLabels", selector.get("matchLabels") or {})
    _check_requirements(obj, f"{path}.matchExpressions", selector.get("matchExpressions") or [],
                        LABEL_SELECTOR_OPERATORS)


def check_pod(pod: Pod) -> None:
    obj = f"Pod {pod.ref}"
    spec = pod.raw.get("spec") or {}
    check_labels(obj, "metadata.labels", pod.labels)
    if not pod.containers:
        raise ObjectError(obj, "spec.containers", "Required value")
    for field_name, containers in (("containers", pod.containers), ("initContainers", pod.init_containers)):
        for i, c in enumerate(containers):
            _check_container(obj, f"spec.{field_name}[{i}]", c)
    for name, q in pod.overhead.items():  # validateOverhead: checked as a container's limits
        path = f"spec.overhead.limits.{name}"
        _check_container_resource_name(obj, path, name)
        _check_non_negative(obj, path, q)
    check_labels(obj, "spec.nodeSelector", pod.node_selector)
    for i, t in enumerate(spec.get("tolerations") or []):
        _check_toleration(obj, f"spec.tolerations[{i}]", t or {})
    _check_affinity(obj, spec.get("affinity") or {})
    _check_topology_spread(obj, pod)
    _check_scheduling_gates(obj, pod.scheduling_gates)
    for i, volume in enumerate(spec.get("volumes") or []):
        ephemeral = (volume or {}).get("ephemeral")
        if isinstance(ephemeral, Mapping) and not ephemeral.get("volumeClaimTemplate"):
            raise ObjectError(obj, f"spec.volumes[{i}].ephemeral.volumeClaimTemplate", "Required value")


def _check_scheduling_gates(obj: str, gates: tuple[str, ...]) -> None:
    """1.26's ``validateSchedulingGates``: every gate named, no name twice (the first error, as the others)."""
    seen: set[str] = set()
    for i, name in enumerate(gates):
        if not name:
            raise ObjectError(obj, f"spec.schedulingGates[{i}]", "Required value: must not be empty")
        if name in seen:
            raise ObjectError(obj, f"spec.schedulingGates[{i}]", f"Duplicate value: {json.dumps(name)}")
        seen.add(name)


def check_node(node: Node) -> None:
    obj = f"Node {node.name}"
    check_labels(obj, "metadata.labels", node.labels)
    status = node.raw.get("status") or {}
    for field_name in ("capacity", "allocatable"):
        path = f"status.{field_name}"
        for name, q in resource_list_field(obj, path, status.get(field_name)).items():
            _check_resource_name(obj, f"{path}.{name}", name)
            _check_non_negative(obj, f"{path}.{name}", q)
    for i, t in enumerate(node.taints):
        path = f"spec.taints[{i}]"
        err = label_key_error(t.key)
        if err:
            raise ObjectError(obj, f"{path}.key", f"Invalid value: {t.key!r}: {_detail(err)}")
        if t.value:
            err = label_value_error(t.value)
            if err:
                raise ObjectError(obj, f"{path}.value", f"Invalid value: {t.value!r}: {_detail(err)}")
        if t.effect not in TAINT_EFFECTS:
            raise ObjectError(obj, f"{path}.effect", _unsupported(t.effect, TAINT_EFFECTS))


def check_persistent_volume_claim(pvc: PersistentVolumeClaim) -> None:
    """``ValidatePersistentVolumeClaimSpec`` on the access modes (1.32: ReadWriteOncePod is GA and alone) and
    the ``volumeAttributesClassName`` (a class name when not empty)."""
    obj = f"PersistentVolumeClaim {pvc.namespace}/{pvc.name}"
    if not pvc.access_modes:
        raise ObjectError(obj, "spec.accessModes", "Required value: at least 1 access mode is required")
    for mode in pvc.access_modes:
        if mode not in ACCESS_MODES:
            raise ObjectError(obj, "spec.accessModes", _unsupported(mode, ACCESS_MODES))
    if READ_WRITE_ONCE_POD in pvc.access_modes and len(pvc.access_modes) > 1:
        raise ObjectError(obj, "spec.accessModes", "Forbidden: may not use ReadWriteOncePod with other access modes")
    if pvc.volume_attributes_class:  # "" is allowed on a claim (no class)
        _check_class_name(obj, "spec.volumeAttributesClassName", pvc.volume_attributes_class)


def check_storage_class(sc: StorageClass) -> None:
    """``ValidateStorageClass``: ``volumeBindingMode`` (nil is defaulted to ``Immediate`` before validation)
    and ``allowedTopologies`` (``validateAllowedTopologies`` / ``ValidateTopologySelectorTerm``)."""
    obj = f"StorageClass {sc.name}"
    mode = sc.volume_binding_mode
    if mode is not None and mode not in VOLUME_BINDING_MODES:
        raise ObjectError(obj, "volumeBindingMode", _unsupported(mode, VOLUME_BINDING_MODES))
    seen_terms: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(sc.raw.get("allowedTopologies") or []):
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        keys: dict[str, frozenset[str]] = {}
        for j, expr in enumerate((term or {}).get("matchLabelExpressions") or []):
            expr = expr or {}
            here = f"{path}[{j}]"
            key, values = expr.get("key") or "", expr.get("values") or []
            if not values:
                raise ObjectError(obj, f"{here}.values", "Required value")
            for k, value in enumerate(values):
                if value in values[:k]:
                    raise ObjectError(obj, f"{here}.values[{k}]", f"Duplicate value: {value!r}")
            err = label_key_error(key)
            if err:
                raise ObjectError(obj, f"{here}.key", f"Invalid value: {key!r}: {_detail(err)}")
            if key in keys:
                raise ObjectError(obj, f"{here}.key", f"Duplicate value: {key!r}")
            keys[key] = frozenset(values)
        if keys in seen_terms:
            raise ObjectError(obj, path, "Duplicate value: ''")
        seen_terms.append(keys)


def check_csi_node(csi_node: CSINode) -> None:
    """``ValidateCSINode`` (``pkg/apis/storage/validation``, 1.26), driver by driver in its order: the name
    (``ValidateCSIDriverName``), the nodeID, ``allocatable.count``, a name seen before, the topology keys."""
    obj = f"CSINode {csi_node.name}"
    raw_drivers = (csi_node.raw.get("spec") or {}).get("drivers") or []
    names: set[str] = set()
    for i, (driver, raw) in enumerate(zip(csi_node.drivers, raw_drivers)):
        path = f"spec.drivers[{i}]"
        name = driver.name
        if not name:
            raise ObjectError(obj, f"{path}.name", "Required value")
        if len(name.encode()) > CSI_DRIVER_NAME_MAX_LENGTH:  # Go's len: bytes
            raise ObjectError(obj, f"{path}.name", f"Too long: must have at most {CSI_DRIVER_NAME_MAX_LENGTH} bytes")
        if not _DNS1123_SUBDOMAIN.match(name.lower()):
            raise ObjectError(obj, f"{path}.name", f"Invalid value: {name!r}: {DNS1123_SUBDOMAIN_MESSAGE}")
        if not driver.node_id:
            raise ObjectError(obj, f"{path}.nodeID", "Required value")
        if len(driver.node_id.encode()) > CSI_NODE_ID_MAX_LENGTH:
            raise ObjectError(obj, f"{path}.nodeID", f"Invalid value: {driver.node_id!r}: "
                              f"must be {CSI_NODE_ID_MAX_LENGTH} characters or less")
        count = driver.allocatable_count
        if count is not None and count < 0:
            raise ObjectError(obj, f"{path}.allocatable.count",
                              f"Invalid value: {count}: must be greater than or equal to 0")
        if name in names:
            raise ObjectError(obj, f"{path}.name", f"Duplicate value: {name!r}")
        names.add(name)
        keys: set[str] = set()
        for key in (raw or {}).get("topologyKeys") or []:
            if not key:
                raise ObjectError(obj, path, "Required value")
            if key in keys:
                raise ObjectError(obj, path, f"Duplicate value: {key!r}")
            keys.add(key)
            err = label_key_error(key)
            if err:
                raise ObjectError(obj, path, f"Invalid value: {key!r}: {_detail(err)}")


def check_persistent_volume(pv: PersistentVolume) -> None:
    """``validateVolumeNodeAffinity`` / ``ValidateNodeSelector`` of a PV's ``spec.nodeAffinity``, then its
    ``spec.volumeAttributesClassName`` (1.34+: not empty, a class name, only on a CSI volume)."""
    obj = f"PersistentVolume {pv.name}"
    _check_pv_node_affinity(obj, pv)
    vac = pv.spec.get("volumeAttributesClassName")
    if vac is not None:
        if not vac:
            raise ObjectError(obj, "spec.volumeAttributesClassName", "Required value: an empty string is disallowed")
        _check_class_name(obj, "spec.volumeAttributesClassName", vac)
        if pv.spec.get("csi") is None:
            raise ObjectError(obj, "spec.csi", "Required value: has to be specified when using volumeAttributesClassName")


def _check_class_name(obj: str, path: str, name: str) -> None:
    """``ValidateClassName``: apimachinery's ``NameIsDNSSubdomain``."""
    if len(name) > 253:
        raise ObjectError(obj, path, f"Invalid value: {name!r}: must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(name):
        raise ObjectError(obj, path, f"Invalid value: {name!r}: {DNS1123_SUBDOMAIN_MESSAGE}"
                          f" (e.g. 'example.com', regex used for validation is '{DNS1123_SUBDOMAIN_FORMAT}')")


def _check_pv_node_affinity(obj: str, pv: PersistentVolume) -> None:
    affinity = pv.spec.get("nodeAffinity")
    if affinity is None:
        return
    required = affinity.get("required")
    if required is None:
        raise ObjectError(obj, "spec.nodeAffinity.required", "Required value: must specify required node constraints")
    path = "spec.nodeAffinity.required.nodeSelectorTerms"
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        raise ObjectError(obj, path, "Required value: must have at least one node selector term")
    for i, term in enumerate(terms):
        _check_node_selector_term(obj, f"{path}[{i}]", term or {})


def _check_node_selector_term(obj: str, path: str, term: Mapping[str, Any]) -> None:
    """``ValidateNodeSelectorTerm`` (a pod's node affinity terms, a PV's): the ``matchExpressions``
    (``ValidateNodeSelectorRequirement``), then the ``matchFields`` (``ValidateNodeFieldSelectorRequirement``:
    ``In``/``NotIn`` with exactly one value, the key ``metadata.name``, each value a node name)."""
    _check_requirements(obj, f"{path}.matchExpressions", term.get("matchExpressions") or [], NODE_SELECTOR_OPERATORS)
    for j, req in enumerate(term.get("matchFields") or []):
        req = req or {}
        here = f"{path}.matchFields[{j}]"
        op, values, key = req.get("operator") or "", req.get("values") or [], req.get("key") or ""
        if op in ("In", "NotIn"):
            if len(values) != 1:
                raise ObjectError(obj, f"{here}.values", "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector")
        else:
            raise ObjectError(obj, f"{here}.operator", f"Invalid value: {op!r}: not a valid selector operator")
        if key != NODE_NAME_FIELD:
            raise ObjectError(obj, f"{here}.key", f"Invalid value: {key!r}: not a valid field selector key")
        for k, value in enumerate(values):  # ValidateNodeName: apimachinery's NameIsDNSSubdomain
            if len(value) > 253:
                raise ObjectError(obj, f"{here}.values[{k}]", f"Invalid value: {value!r}: must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN.match(value):
                raise ObjectError(obj, f"{here}.values[{k}]", f"Invalid value: {value!r}: {DNS1123_SUBDOMAIN_MESSAGE}"
                                  f" (e.g. 'example.com', regex used for validation is '{DNS1123_SUBDOMAIN_FORMAT}')")


def _check_container(obj: str, path: str, c: Container) -> None:
    if not c.name:
        raise ObjectError(obj, f"{path}.name", "Required value")
    for field_name, rl in (("limits", c.limits), ("requests", c.requests)):  # upstream's order
        for name, q in rl.items():
            rpath = f"{path}.resources.{field_name}.{name}"
            _check_container_resource_name(obj, rpath, name)
            _check_non_negative(obj, rpath, q)
    for name, q in c.requests.items():
        if name in c.limits and parse_quantity(q) > parse_quantity(c.limits[name]):
            raise ObjectError(obj, f"{path}.resources.requests.{name}",
                              f"Invalid value: {str(q)!r}: must be less than or equal to {name} limit")


def _check_non_negative(obj: str, path: str, q: Any) -> None:
    if parse_quantity(q) < 0:
        raise ObjectError(obj, path, f"Invalid value: {str(q)!r}: must be greater than or equal to 0")


def _check_resource_name(obj: str, path: str, name: str) -> None:
    """``validateResourceName``: a qualified name."""
    err = label_key_error(name)
    if err:
        raise ObjectError(obj, path, f"Invalid value: {name!r}: {_detail(err)}")


def _check_container_resource_name(obj: str, path: str, name: str) -> None:
    """``validateContainerResourceName``: standard, native (``*kubernetes.io/``) or extended."""
    _check_resource_name(obj, path, name)
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            raise ObjectError(obj, path, f"Invalid value: {name!r}: must be a standard resource for containers")
    elif "kubernetes.io/" not in name and name.startswith("requests."):
        raise ObjectError(obj, path, f"Invalid value: {name!r}: doesn't follow extended resource name standard")


def _check_toleration(obj: str, path: str, t: Mapping[str, Any]) -> None:
    """``validateTolerations``."""
    key, operator, value, effect = (t.get(k) or "" for k in ("key", "operator", "value", "effect"))
    if key:
        err = label_key_error(key)
        if err:
            raise ObjectError(obj, f"{path}.key", f"Invalid value: {key!r}: {_detail(err)}")
    elif operator != "Exists":
        raise ObjectError(obj, f"{path}.operator",
                          f"Invalid value: {operator!r}: operator must be Exists when `key` is empty, which means \"match all values and all keys\"")
    if t.get("tolerationSeconds") is not None and effect != "NoExecute":
        raise ObjectError(obj, f"{path}.effect",
                          f"Invalid value: {effect!r}: effect must be 'NoExecute' when `tolerationSeconds` is set")
    if operator in ("", "Equal"):
        err = label_value_error(value)
        if err:
            raise ObjectError(obj, f"{path}.value", f"Invalid value: {value!r}: {_detail(err)}")
    elif operator == "Exists":
        if value:
            raise ObjectError(obj, f"{path}.operator", "Invalid value: \"Exists\": value must be empty when `operator` is 'Exists'")
    else:
        raise ObjectError(obj, f"{path}.operator", _unsupported(operator, TOLERATION_OPERATORS))
    if effect and effect not in TAINT_EFFECTS:
        raise ObjectError(obj, f"{path}.effect", _unsupported(effect, TAINT_EFFECTS))


def _check_affinity(obj: str, affinity: Mapping[str, Any]) -> None:
    base = "spec.affinity.nodeAffinity"
    node = affinity.get("nodeAffinity") or {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        path = f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = required.get("nodeSelectorTerms") or []
        if not terms:
            raise ObjectError(obj, path, "Required value: must have at least one node selector term")
        for i, term in enumerate(terms):
            _check_node_selector_term(obj, f"{path}[{i}]", term or {})
    for i, pref in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        pref = pref or {}  # a null item is the zero value, as Go decodes it
        path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        _check_weight(obj, f"{path}.weight", pref.get("weight"))
        _check_node_selector_term(obj, f"{path}.preference", pref.get("preference") or {})
    for kind in ("podAffinity", "podAntiAffinity"):
        pod_affinity = affinity.get(kind) or {}
        base = f"spec.affinity.{kind}"
        for i, term in enumerate(pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            _check_pod_affinity_term_selectors(obj, f"{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]",
                                               term or {})
        for i, weighted in enumerate(pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            weighted = weighted or {}
            path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            _check_weight(obj, f"{path}.weight", weighted.get("weight"))
            _check_pod_affinity_term_selectors(obj, f"{path}.podAffinityTerm", weighted.get("podAffinityTerm") or {})


def _check_pod_affinity_term_selectors(obj: str, path: str, term: Mapping[str, Any]) -> None:
    """``validatePodAffinityTerm``'s selectors, in its order: labelSelector, then namespaceSelector (1.21+)."""
    check_label_selector(obj, f"{path}.labelSelector", term.get("labelSelector"))
    check_label_selector(obj, f"{path}.namespaceSelector", term.get("namespaceSelector"))


WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
NOT_POSITIVE = "must be greater than zero"


def _check_topology_spread(obj: str, pod: Pod) -> None:
    """``validateTopologySpreadConstraints`` (``pkg/apis/core/validation``, 1.26), in its order: maxSkew,
    topologyKey, whenUnsatisfiable, a repeated {topologyKey, whenUnsatisfiable}, minDomains, the two
    node inclusion policies, matchLabelKeys, labelSelector. The first problem is reported."""
    constraints = pod.topology_spread
    for i, c in enumerate(constraints):
        path = f"spec.topologySpreadConstraints[{i}]"
        if c.max_skew <= 0:
            raise ObjectError(obj, f"{path}.maxSkew", f"Invalid value: {c.max_skew}: {NOT_POSITIVE}")
        if not c.topology_key:
            raise ObjectError(obj, f"{path}.topologyKey", "Required value: can not be empty")
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            raise ObjectError(obj, f"{path}.whenUnsatisfiable", f"Unsupported value: {c.when_unsatisfiable!r}: "
                              f"{supported(WHEN_UNSATISFIABLE)}")
        for other in constraints[i + 1:]:
            if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                raise ObjectError(obj, f"{path}.{{topologyKey, whenUnsatisfiable}}",
                                  f"Duplicate value: {'{' + c.topology_key + ', ' + c.when_unsatisfiable + '}'!r}")
        if c.min_domains_raw is not None:
            if c.min_domains_raw <= 0:
                raise ObjectError(obj, f"{path}.minDomains", f"Invalid value: {c.min_domains_raw}: {NOT_POSITIVE}")
            if c.when_unsatisfiable != "DoNotSchedule":
                raise ObjectError(obj, f"{path}.minDomains",
                                  f"Invalid value: {c.min_domains_raw}: can only use minDomains if "
                                  f"whenUnsatisfiable=DoNotSchedule, not {c.when_unsatisfiable}")
        for field_name, policy in (("nodeAffinityPolicy", c.node_affinity_policy_raw),
                                   ("nodeTaintsPolicy", c.node_taints_policy_raw)):
            if policy is not None and policy not in NODE_INCLUSION_POLICIES:
                raise ObjectError(obj, f"{path}.{field_name}", f"Unsupported value: {policy!r}: "
                                  f"{supported(NODE_INCLUSION_POLICIES)}")
        selector = c.label_selector or {}
        selector_keys = set(selector.get("matchLabels") or {})
        selector_keys.update((e or {}).get("key") or "" for e in selector.get("matchExpressions") or [])
        for j, key in enumerate(c.match_label_keys):
            err = label_key_error(key)
            if err:
                raise ObjectError(obj, f"{path}.matchLabelKeys[{j}]", f"Invalid value: {key!r}: {_detail(err)}")
            if key in selector_keys:
                raise ObjectError(obj, f"{path}.matchLabelKeys[{j}]",
                                  f"Invalid value: {key!r}: exists in both matchLabelKeys and labelSelector")
        check_label_selector(obj, f"{path}.labelSelector", c.label_selector)


def _check_weight(obj: str, path: str, weight: Any) -> None:
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        raise ObjectError(obj, path, f"Invalid value: {weight!r}: must be in the range 1-100")


def _check_requirements(obj: str, path: str, expressions: list[Any], operators: tuple[str, ...]) -> None:
    """``ValidateLabelSelectorRequirement`` / ``ValidateNodeSelectorRequirement``."""
    for i, expr in enumerate(expressions):
        expr = expr or {}
        here = f"{path}[{i}]"
        key, op, values = expr.get("key") or "", expr.get("operator") or "", expr.get("values") or []
        err = label_key_error(key)
        if err:
            raise ObjectError(obj, f"{here}.key", f"Invalid value: {key!r}: {_detail(err)}")
        if op in ("In", "NotIn"):
            if not values:
                raise ObjectError(obj, f"{here}.values", "Required value: must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise ObjectError(obj, f"{here}.values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        elif op in ("Gt", "Lt") and op in operators:
            if len(values) != 1:
                raise ObjectError(obj, f"{here}.values", "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'")
        else:
            raise ObjectError(obj, f"{here}.operator", _unsupported(op, operators))


def _unsupported(value: str, values: tuple[str, ...]) -> str:
    if not value:
        return "Required value"
    return f"Unsupported value: {value!r}: {supported(values)}"


def _detail(err: str) -> str:
    """label_key_error's text without its ``invalid label key 'x':`` lead (the caller names the value)."""
    head, sep, rest = err.partition(": ")
    if not sep or not head.startswith("invalid label"):
        return err
    return rest.partition(": ")[2] if head == "invalid label value" else rest
