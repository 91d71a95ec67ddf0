"""Scheduler Policy (v1) types, as Kubernetes 1.9 defines them (``plugin/pkg/scheduler/api``).

Each type mirrors one upstream struct. ``to_dict()`` gives the canonical v1 JSON form (camelCase keys,
``kind``/``apiVersion`` on the Policy, ``None`` fields omitted), so that
``load_policy(json.dumps(policy.to_dict())) == policy``.

``None`` versus ``[]`` for the Policy lists is kept: ``None`` means the key was absent or ``null``,
``[]`` an explicit empty list. Kubernetes 1.9 treats both the same; 1.10 does not (``policy.md`` §5.1).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

#: Highest score a priority function gives a node.
MAX_PRIORITY = 10
#: Largest Go ``int`` on a 64-bit platform.
MAX_INT = 2**63 - 1
#: Upper bound for the sum of ``weight * MAX_PRIORITY`` over all priorities.
MAX_TOTAL_PRIORITY = MAX_INT
#: A priority weight must be below this (``922337203685477580``).
MAX_WEIGHT = MAX_INT // MAX_PRIORITY
#: The ConfigMap data key holding the policy.
SCHEDULER_POLICY_CONFIG_MAP_KEY = "policy.cfg"

POLICY_KIND = "Policy"
POLICY_API_VERSION = "v1"


@dataclass(frozen=True)
class ServiceAffinityArgs:
    """``serviceAffinity``: pods of a service are placed on nodes with the same values of ``labels``."""

    labels: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"labels": list(self.labels)}


@dataclass(frozen=True)
class LabelsPresenceArgs:
    """``labelsPresence``: a node fits if all ``labels`` are present (``presence``) or all absent."""

    labels: list[str] = field(default_factory=list)
    presence: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "presence": self.presence}


@dataclass(frozen=True)
class PredicateArgument:
    """Makes a predicate entry a custom, parameterised predicate; exactly one member must be set."""

    service_affinity: ServiceAffinityArgs | None = None
    labels_presence: LabelsPresenceArgs | None = None

    def num_args(self) -> int:
        """How many members are set (upstream requires exactly one)."""
        return sum(arg is not None for arg in (self.service_affinity, self.labels_presence))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.service_affinity is not None:
            out["serviceAffinity"] = self.service_affinity.to_dict()
        if self.labels_presence is not None:
            out["labelsPresence"] = self.labels_presence.to_dict()
        return out


@dataclass(frozen=True)
class PredicatePolicy:
    """One ``predicates[]`` entry: a registered name, or a user-chosen name with an ``argument``."""

    name: str
    argument: PredicateArgument | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.argument is not None:
            out["argument"] = self.argument.to_dict()
        return out


@dataclass(frozen=True)
class ServiceAntiAffinityArgs:
    """``serviceAntiAffinity``: spread a service's pods over the values of node label ``label``."""

    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label}


@dataclass(frozen=True)
class LabelPreferenceArgs:
    """``labelPreference``: prefer nodes that have (``presence``) or lack node label ``label``."""

    label: str = ""
    presence: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "presence": self.presence}


@dataclass(frozen=True)
class PriorityArgument:
    """Makes a priority entry a custom, parameterised priority; exactly one member must be set."""

    service_anti_affinity: ServiceAntiAffinityArgs | None = None
    label_preference: LabelPreferenceArgs | None = None

    def num_args(self) -> int:
        """How many members are set (upstream requires exactly one)."""
        return sum(arg is not None for arg in (self.service_anti_affinity, self.label_preference))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.service_anti_affinity is not None:
            out["serviceAntiAffinity"] = self.service_anti_affinity.to_dict()
        if self.label_preference is not None:
            out["labelPreference"] = self.label_preference.to_dict()
        return out


@dataclass(frozen=True)
class PriorityPolicy:
    """One ``priorities[]`` entry. ``weight`` must be in ``1 .. MAX_WEIGHT - 1`` (``validate_policy``)."""

    name: str
    weight: int
    argument: PriorityArgument | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "weight": self.weight}
        if self.argument is not None:
            out["argument"] = self.argument.to_dict()
        return out


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class TLSConfig:
    """An extender's ``tlsConfig`` (upstream ``restclient.TLSClientConfig``; JSON keys are Go names)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""

    def to_dict(self) -> dict[str, Any]:
        """The set fields only, under their Go names; byte fields base64-encoded."""
        values: dict[str, Any] = {
            "Insecure": self.insecure,
            "ServerName": self.server_name,
            "CertFile": self.cert_file,
            "KeyFile": self.key_file,
            "CAFile": self.ca_file,
            "CertData": _b64(self.cert_data) if self.cert_data else "",
            "KeyData": _b64(self.key_data) if self.key_data else "",
            "CAData": _b64(self.ca_data) if self.ca_data else "",
        }
        return {key: value for key, value in values.items() if value}


@dataclass(frozen=True)
class ExtenderManagedResource:
    """One ``managedResources[]`` entry (1.10; not in 1.9): an extended resource the extender manages."""

    name: str
    ignored_by_scheduler: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.ignored_by_scheduler:
            out["ignoredByScheduler"] = True
        return out


@dataclass(frozen=True)
class ExtenderConfig:
    """One HTTP extender (``extender.md`` §1). ``http_timeout_ns`` 0 means the 5 s default.

    Two opt-in fields come from later releases: ``managed_resources`` (1.10: call the extender only for
    pods requesting one of these extended resources; ``None`` or empty: every pod) and ``ignorable``
    (later: a failing filter call is skipped with a warning instead of failing the pod).
    """

    url_prefix: str = ""
    filter_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: TLSConfig | None = None
    http_timeout_ns: int = 0
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] | None = None
    ignorable: bool = False

    @property
    def name(self) -> str:
        """How messages, explanations and metrics name the extender: its ``urlPrefix``."""
        return self.url_prefix

    def to_dict(self) -> dict[str, Any]:
        """``urlPrefix`` always; other fields when set (Go's ``omitempty``). Bind verb as ``bindVerb``."""
        values: dict[str, Any] = {
            "urlPrefix": self.url_prefix,
            "filterVerb": self.filter_verb,
            "prioritizeVerb": self.prioritize_verb,
            "weight": self.weight,
            "bindVerb": self.bind_verb,
            "enableHttps": self.enable_https,
            "tlsConfig": self.tls_config.to_dict() if self.tls_config is not None else None,
            "httpTimeout": self.http_timeout_ns,
            "nodeCacheCapable": self.node_cache_capable,
            "managedResources": (
                [r.to_dict() for r in self.managed_resources] if self.managed_resources is not None else None
            ),
            "ignorable": self.ignorable,
        }
        keep_empty = {"urlPrefix", "tlsConfig", "managedResources"}  # an empty object or list is still "set"
        return {key: value for key, value in values.items() if value or (key in keep_empty and value is not None)}


@dataclass(frozen=True)
class Policy:
    """A scheduler Policy.

    ``source`` names where it was loaded from (for messages). ``ignored_keys`` lists the JSON paths of
    keys the decoder ignored (unknown keys; upstream ignores them silently, ``lint_policy`` reports
    them). Neither takes part in equality.
    """

    predicates: list[PredicatePolicy] | None = None
    priorities: list[PriorityPolicy] | None = None
    extenders: list[ExtenderConfig] | None = None
    hard_pod_affinity_symmetric_weight: int = 0
    source: str | None = field(default=None, compare=False)
    ignored_keys: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Canonical v1 form; ``None`` lists and a zero ``hardPodAffinitySymmetricWeight`` are omitted."""
        out: dict[str, Any] = {"kind": POLICY_KIND, "apiVersion": POLICY_API_VERSION}
        if self.predicates is not None:
            out["predicates"] = [entry.to_dict() for entry in self.predicates]
        if self.priorities is not None:
            out["priorities"] = [entry.to_dict() for entry in self.priorities]
        if self.extenders is not None:
            out["extenders"] = [entry.to_dict() for entry in self.extenders]
        if self.hard_pod_affinity_symmetric_weight:
            out["hardPodAffinitySymmetricWeight"] = self.hard_pod_affinity_symmetric_weight
        return out

    def predicate_names(self) -> list[str]:
        """Predicate names in document order (duplicates kept)."""
        return [entry.name for entry in self.predicates or []]

    def priority_weights(self) -> dict[str, int]:
        """Priority name → weight; for duplicate names the last entry wins, as upstream."""
        return {entry.name: entry.weight for entry in self.priorities or []}
