"""The switches that change scheduling: 1.9's feature gates (all alpha, all off by default), and which
rules apply to the pod fields 1.9 never knew (:class:`Rules`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum

from .errors import UserError, did_you_mean

# name -> default
KNOWN_GATES: dict[str, bool] = {
    "PodPriority": False,
    "VolumeScheduling": False,
    "TaintNodesByCondition": False,
    "EnableEquivalenceClassCache": False,
    "ResourceLimitsPriorityFunction": False,
    "LocalStorageCapacityIsolation": False,
    "HugePages": False,
}


class Rules(str, Enum):
    """Which rules decide for what a pod carries that 1.9 never knew (overhead, native sidecars, init
    containers in node accounting, topology spread, scheduling gates, ``preemptionPolicy``, late-bound
    volumes, fields we refuse). ``CLUSTER`` (the default): the server's rules, as the modern
    kube-scheduler keeps them. ``V1_9``: pure 1.9, those fields ignored as upstream 1.9 ignored them
    (to replay what 1.9 would have done, or to ``compare`` against it). Pods that carry none of those
    fields get 1.9's decisions under both."""

    CLUSTER = "cluster"
    V1_9 = "1.9"


class FeatureGates:
    """An immutable set of gate values, and the :class:`Rules` for fields 1.9 never knew (carried with
    the gates because everything that builds or drives a scheduler receives them); unknown gate names
    are rejected like upstream's flag parser."""

    def __init__(self, values: Mapping[str, bool] | None = None, rules: Rules = Rules.CLUSTER) -> None:
        merged = dict(KNOWN_GATES)
        for name, on in (values or {}).items():
            if name not in KNOWN_GATES:
                raise UserError(f"unrecognized key: {name}" + did_you_mean(name, KNOWN_GATES))
            if not isinstance(on, bool):
                raise UserError(f"invalid value of {name}: {on!r}, err: expected true or false")
            merged[name] = on
        self._values = merged
        self.rules = Rules(rules)

    @property
    def cluster_rules(self) -> bool:
        """True when the server's rules apply to the fields 1.9 never knew."""
        return self.rules is Rules.CLUSTER

    def with_rules(self, rules: Rules | str) -> FeatureGates:
        return FeatureGates(self._values, Rules(rules))

    @classmethod
    def parse(cls, text: str | None, rules: Rules | str = Rules.CLUSTER) -> FeatureGates:
        """Parse ``Key=true,Key2=false`` (the ``--feature-gates`` flag syntax)."""
        values: dict[str, bool] = {}
        for item in (text or "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, raw = item.partition("=")
            if not sep:
                raise UserError(f"missing bool value for {name}")
            raw = raw.strip().lower()
            if raw not in ("true", "false", "1", "0", "t", "f"):
                raise UserError(f"invalid value of {name.strip()}: {raw}, err: strconv.ParseBool: parsing {raw!r}: invalid syntax")
            values[name.strip()] = raw in ("true", "1", "t")
        return cls(values, Rules(rules))

    def enabled(self, name: str) -> bool:
        return self._values[name]

    def as_dict(self) -> dict[str, bool]:
        return dict(self._values)

    def __repr__(self) -> str:
        on = ",".join(f"{k}=true" for k, v in sorted(self._values.items()) if v)
        return f"FeatureGates({on})" if self.cluster_rules else f"FeatureGates({on}; rules={self.rules.value})"


DEFAULT_FEATURE_GATES = FeatureGates()


# -- the cluster's Kubernetes line ------------------------------------------------------------------------
KubernetesLine = tuple[int, int]
"""A Kubernetes minor release, ``(1, 36)``: the upstream release whose wording (and, where releases differ,
whose rules) the cluster's rules follow. The daemon reads it from the API server once at start
(``ClusterState.kubernetes_line``); offline commands take the server's with ``--from-cluster``, else
:data:`NEWEST_LINE`. Under ``--rules 1.9`` it is never read."""

#: The newest line this scheduler follows (upstream 1.36.3): the line of a snapshot that names none.
NEWEST_LINE: KubernetesLine = (1, 36)

_LINE = re.compile(r"^v?(\d+)\.(\d+)")


def parse_line(major: object, minor: object = None) -> KubernetesLine | None:
    """The line of ``/version``'s ``major`` and ``minor`` (``"1"``, ``"36+"``: providers append ``+``), or of
    one text such as ``1.36`` or ``v1.36.3`` (``minor`` None); None when unreadable."""
    text = f"{major}.{''.join(ch for ch in str(minor) if ch.isdigit())}" if minor is not None else str(major)
    m = _LINE.match(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def by_line(line: KubernetesLine, texts: Mapping[KubernetesLine, str]) -> str:
    """The text of ``line`` among ``texts`` (each keyed by the first line that words it so): the one of the
    newest key at or before ``line``; the oldest for a line older than every key."""
    keys = sorted(texts)
    chosen = keys[0]
    for key in keys:
        if key <= line:
            chosen = key
    return texts[chosen]
