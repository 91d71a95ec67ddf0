"""Node declared features (1.35 alpha, 1.36 beta and on by default: ``NodeDeclaredFeatures``): what a node
says it supports (``status.declaredFeatures``) and what a pod needs of it (pure; no I/O).

Upstream: ``k8s.io/component-helpers/nodedeclaredfeatures`` (the Framework, ``features/registry.go`` and
each feature's package) and ``pkg/apis/core/validation`` (``validateNodeDeclaredFeatures``), 1.36.3.

* **The node side.** The kubelet publishes the names of the features it has, sorted; the API server refuses
  a name that is not ``UpperCamelCase`` segments joined by ``/`` (253 characters at most), a name twice, and
  a list out of order. The scheduler keeps the names it knows (``TryMap``: unknown ones are dropped, as
  they can never be required).
* **The pod side.** Each registered feature infers from the pod's spec whether *scheduling* the pod needs
  it (``InferForPodScheduling``), unless the scheduler's version is past the feature's ``MaxVersion`` (by
  then every node of a supported skew has it). 1.36 registers five features; two are inferred for
  scheduling (:data:`FEATURES`), the three others matter to pod updates only (in-place resize, kubelet
  websockets) and are never required here.

Only under :attr:`~..features.Rules.CLUSTER`: 1.9 knew neither field (:func:`required_features`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import total_ordering
from typing import Any

from ..errors import ObjectError
from ..features import Rules
from .fields import describe, list_field, obj_list_field, str_field

Spec = Mapping[str, Any]

# -- versions (``k8s.io/apimachinery/pkg/util/version``) --------------------------------------------------
_VERSION = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$")
_EXTRA = re.compile(r"^(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\s*$")


@total_ordering
@dataclass(frozen=True, slots=True, eq=False)
class Version:
    """A version as ``util/version.Parse`` reads it (semantic first, else generic) and compares it
    (``compareInternal``): components, then a semantic pre-release below its release."""

    components: tuple[int, ...]
    semver: bool = False
    pre_release: str = ""

    @classmethod
    def parse(cls, text: str) -> Version:
        """``Parse``: semantic (three components, pre-release and build metadata) or else generic (two or
        more components, the rest ignored)."""
        version = _parse(text, semantic=True) or _parse(text, semantic=False)
        if version is None:
            raise ValueError(f"could not parse {text!r} as version")
        return version

    def compare(self, other: Version) -> int:
        a, b = self.components, other.components
        for x, y in zip(a, b):
            if x != y:
                return 1 if x > y else -1
        if len(a) > len(b) and any(a[len(b):]):
            return 1
        if len(b) > len(a) and any(b[len(a):]):
            return -1
        if not self.semver or not other.semver or self.pre_release == other.pre_release:
            return 0
        if not self.pre_release or not other.pre_release:
            return 1 if not self.pre_release else -1
        mine, theirs = self.pre_release.split("."), other.pre_release.split(".")
        for x, y in zip(mine, theirs):
            if x.isdigit() and y.isdigit():
                if int(x) != int(y):
                    return 1 if int(x) > int(y) else -1
                continue
            if x != y:
                return 1 if x > y else -1
        return (len(mine) > len(theirs)) - (len(mine) < len(theirs))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.compare(other) == 0

    def __lt__(self, other: Version) -> bool:
        return self.compare(other) < 0


def _parse(text: str, semantic: bool) -> Version | None:
    """``util/version.parse``; None where it errs."""
    match = _VERSION.match(text)
    if match is None:
        return None
    parts, extra = match.group(1).split("."), match.group(2)
    if (len(parts) != 3) if semantic else (len(parts) < 2):
        return None
    if any((i == 0 or semantic) and p.startswith("0") and p != "0" for i, p in enumerate(parts)):
        return None
    pre_release = ""
    if semantic and extra:
        extra_match = _EXTRA.match(extra)
        if extra_match is None:
            return None
        pre_release = extra_match.group(1) or ""
        if any(p.isdigit() and p.startswith("0") and p != "0" for p in pre_release.split(".")):
            return None
    return Version(tuple(int(p) for p in parts), semantic, pre_release)


#: The version the scheduler infers for: ``version.Get()`` of the 1.36.3 kube-scheduler this one stands for.
SCHEDULER_VERSION = Version.parse("v1.36.3")


# -- the registered features ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Feature:
    """One registered feature: its name, whether scheduling a pod needs it, and the last version (inclusive)
    at which it still matters (None: no bound)."""

    name: str
    infer_for_scheduling: Callable[[Spec], bool]
    max_version: Version | None = None


RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
POD_LEVEL_RESOURCES_RESIZE = "InPlacePodLevelResourcesVerticalScaling"
INIT_CONTAINERS_RESIZE = "InPlacePodVerticalScalingInitContainers"
EXTEND_WEBSOCKETS_TO_KUBELET = "ExtendWebSocketsToKubelet"

#: ``v1.ContainerRestartRuleActionRestartAllContainers``.
ACTION_RESTART_ALL_CONTAINERS = "RestartAllContainers"
#: The actions a 1.36 API server accepts (``RestartAllContainersOnContainerExits`` is on by default).
RESTART_RULE_ACTIONS = ("Restart", ACTION_RESTART_ALL_CONTAINERS)


def _containers(spec: Spec, key: str) -> Iterable[Mapping[str, Any]]:
    return (c for c in spec.get(key) or () if isinstance(c, Mapping))


def needs_restart_all_containers(spec: Spec) -> bool:
    """``restartallcontainers``: a regular or init container with a restart rule whose action is
    ``RestartAllContainers`` (ephemeral containers have no rules)."""
    return any(isinstance(rule, Mapping) and rule.get("action") == ACTION_RESTART_ALL_CONTAINERS
               for key in ("containers", "initContainers") for c in _containers(spec, key)
               for rule in c.get("restartPolicyRules") or ())


def needs_user_namespaces_host_network(spec: Spec) -> bool:
    """``usernamespaceshostnetwork``: the host's network in a user namespace (``hostNetwork: true`` and
    ``hostUsers: false``; an absent ``hostUsers`` is not false)."""
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


def _update_only(spec: Spec) -> bool:
    return False


#: ``features.AllFeatures`` of 1.36.3, sorted by name as ``nodedeclaredfeatures.New`` sorts them. None has a
#: ``MaxVersion``. The resize features and ``ExtendWebSocketsToKubelet`` infer nothing for scheduling.
FEATURES: tuple[Feature, ...] = tuple(sorted((
    Feature(RESTART_ALL_CONTAINERS, needs_restart_all_containers),
    Feature(POD_LEVEL_RESOURCES_RESIZE, _update_only),
    Feature(EXTEND_WEBSOCKETS_TO_KUBELET, _update_only),
    Feature(INIT_CONTAINERS_RESIZE, _update_only),
    Feature(USER_NAMESPACES_HOST_NETWORK, needs_user_namespaces_host_network),
), key=lambda f: f.name))


def infer_for_pod_scheduling(spec: Spec, version: Version | None = SCHEDULER_VERSION,
                             features: Iterable[Feature] = FEATURES) -> frozenset[str]:
    """``Framework.InferForPodScheduling``: the features scheduling a pod of ``spec`` needs at ``version``
    (a feature past its ``MaxVersion`` is never required)."""
    if version is None:
        raise ValueError("target version cannot be nil")
    return frozenset(f.name for f in features
                     if (f.max_version is None or not version > f.max_version) and f.infer_for_scheduling(spec))


def required_features(pod: Any) -> frozenset[str]:
    """What the pod requires of a node's declared features under the cluster's rules (none under 1.9's)."""
    if pod.rules is not Rules.CLUSTER:
        return frozenset()
    spec = pod.raw.get("spec")
    return infer_for_pod_scheduling(spec) if isinstance(spec, Mapping) else frozenset()


def known(declared: Iterable[str], features: Iterable[Feature] = FEATURES) -> frozenset[str]:
    """``FeatureMapper.TryMap``: the declared names the registry knows (the others are dropped)."""
    names = {f.name for f in features}
    return frozenset(d for d in declared if d in names)


# -- parsing and the API server's checks ----------------------------------------------------------------
#: ``nodeDeclaredFeatureRegexp``.
FEATURE_NAME = re.compile(r"^[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*$")
FEATURE_NAME_MAX_LENGTH = 253  # validation.DNS1123SubdomainMaxLength


def _feature_name_error(name: str) -> str | None:
    """``validateNodeDeclaredFeatureName``."""
    if len(name) > FEATURE_NAME_MAX_LENGTH:
        return f"invalid feature name {json.dumps(name)}: must be no more than {FEATURE_NAME_MAX_LENGTH} characters"
    if not FEATURE_NAME.match(name):
        return (f"invalid feature name {json.dumps(name)}: must start with an UpperCamelCase segment, with "
                "subsequent segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain "
                "only alphanumeric characters and slashes")
    return None


def parse_declared_features(obj: str, raw: Any) -> tuple[str, ...]:
    """``status.declaredFeatures``: a list of names, checked as ``validateNodeDeclaredFeatures`` checks them
    (the first error: an invalid name, then a name equal to or sorting before its predecessor)."""
    path = "status.declaredFeatures"
    names = tuple(str_field(obj, f"{path}[{i}]", v) for i, v in enumerate(list_field(obj, path, raw)))
    for i, name in enumerate(names):
        err = _feature_name_error(name)
        if err:
            raise ObjectError(obj, f"{path}[{i}]", f"Invalid value: {json.dumps(name)}: {err}")
        if i + 1 < len(names):
            following = names[i + 1]
            if following == name:
                raise ObjectError(obj, f"{path}[{i + 1}]", f"Duplicate value: {json.dumps(following)}")
            if name > following:
                raise ObjectError(obj, f"{path}[{i + 1}]",
                                  f"Invalid value: {json.dumps(following)}: list must be sorted alphabetically")
    return names


def check_pod_feature_fields(obj: str, spec: Spec) -> None:
    """The fields the inference reads, typed as the API server's decoder and validation have them:
    ``hostNetwork`` and ``hostUsers`` booleans, each container's ``restartPolicyRules`` a list of rules whose
    ``action`` is one the server supports."""
    for key in ("hostNetwork", "hostUsers"):
        value = spec.get(key)
        if value is not None and not isinstance(value, bool):
            raise ObjectError(obj, f"spec.{key}", f"expected a boolean, got {describe(value)}")
    for key in ("containers", "initContainers"):
        for i, c in enumerate(list_field(obj, f"spec.{key}", spec.get(key))):
            if not isinstance(c, Mapping):
                continue  # the container parser names it
            path = f"spec.{key}[{i}].restartPolicyRules"
            for j, rule in enumerate(obj_list_field(obj, path, c.get("restartPolicyRules"))):
                action = str_field(obj, f"{path}[{j}].action", rule.get("action"))
                if action not in RESTART_RULE_ACTIONS:
                    supported = ", ".join(json.dumps(a) for a in RESTART_RULE_ACTIONS)
                    raise ObjectError(obj, f"{path}[{j}].action",
                                      f"Unsupported value: {json.dumps(action)}: supported values: {supported}")
