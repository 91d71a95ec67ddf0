"""Feature gates that change scheduling in 1.9 (all alpha, all off by default)."""

from __future__ import annotations

from collections.abc import Mapping

from .errors import UserError

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


class FeatureGates:
    """An immutable set of gate values; unknown names are rejected like upstream's flag parser."""

    def __init__(self, values: Mapping[str, bool] | None = None) -> None:
        merged = dict(KNOWN_GATES)
        for name, on in (values or {}).items():
            if name not in KNOWN_GATES:
                raise UserError(f"unrecognized key: {name}")
            if not isinstance(on, bool):
                raise UserError(f"invalid value of {name}: {on!r}, err: expected true or false")
            merged[name] = on
        self._values = merged

    @classmethod
    def parse(cls, text: str | None) -> FeatureGates:
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
        return cls(values)

    def enabled(self, name: str) -> bool:
        return self._values[name]

    def as_dict(self) -> dict[str, bool]:
        return dict(self._values)

    def __repr__(self) -> str:
        on = ",".join(f"{k}=true" for k, v in sorted(self._values.items()) if v)
        return f"FeatureGates({on})"


DEFAULT_FEATURE_GATES = FeatureGates()
