"""Label selectors as apimachinery 1.9 evaluates them.

Three kinds exist and each has its own quirks:

* a *set selector* (``map[string]string``: pod ``nodeSelector``, Service and RC selectors) — every key
  must be present with an equal value; an empty map matches everything; an invalid key or value makes
  the whole selector match everything (``labels.SelectorFromSet``);
* a *LabelSelector* (``matchLabels`` + ``matchExpressions``): null matches nothing, ``{}`` matches
  everything, invalid input is an error;
* a *node selector* (node affinity ``matchExpressions``, with ``Gt``/``Lt``): an empty list matches
  nothing, invalid input is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class SelectorError(ValueError):
    """A selector cannot be built (upstream returns an error from the selector constructor)."""


def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid qualified label key, or None."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return f"invalid label key {key!r}: prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return f"invalid label key {key!r}: prefix part must be a DNS-1123 subdomain"
    else:
        return f"invalid label key {key!r}: a qualified name must consist of an optional prefix and a name"
    if not name:
        return f"invalid label key {key!r}: name part must be non-empty"
    if len(name) > 63 or not _NAME.match(name):
        return (
            f"invalid label key {key!r}: name part must consist of alphanumeric characters, '-', '_' or '.',"
            " and must start and end with an alphanumeric character"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None."""
    if value == "":
        return None
    if len(value) > 63 or not _NAME.match(value):
        return (
            f"invalid label value: {value!r}: a valid label must be an empty string or consist of alphanumeric"
            " characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return None


# Requirement operators (apimachinery selection.Operator values, lower case like upstream's).
IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "in", "notin", "exists", "!", "gt", "lt"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str
    values: frozenset[str] = frozenset()
    number: int = 0

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == IN:
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == NOT_IN:
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        v = labels.get(self.key)
        if v is None:
            return False
        try:
            n = _parse_int64(v)
        except ValueError:
            return False
        return n > self.number if op == GT else n < self.number


def _parse_int64(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(text)
    n = int(text, 10)
    if not -(2**63) <= n < 2**63:
        raise ValueError(text)
    return n


def new_requirement(key: str, op: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement``: validate and build one requirement."""
    err = label_key_error(key)
    if err:
        raise SelectorError(err)
    if op in (IN, NOT_IN):
        if len(values) == 0:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
    elif op in (EXISTS, DOES_NOT_EXIST):
        if len(values) != 0:
            raise SelectorError("values set must be empty for exists and does not exist")
    elif op in (GT, LT):
        if len(values) != 1:
            raise SelectorError("for 'Gt', 'Lt' operators, exactly one value is required")
        try:
            number = _parse_int64(values[0])
        except ValueError:
            raise SelectorError("for 'Gt', 'Lt' operators, the value must be an integer") from None
        return Requirement(key, op, frozenset(values), number)
    else:
        raise SelectorError(f"operator '{op}' is not recognized")
    for v in values:
        err = label_value_error(v)
        if err:
            raise SelectorError(err)
    return Requirement(key, op, frozenset(values))


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector. ``requirements is None`` means *nothing* matches."""

    requirements: tuple[Requirement, ...] | None

    def matches(self, labels: Mapping[str, str]) -> bool:
        reqs = self.requirements
        if reqs is None:
            return False
        for r in reqs:
            if not r.matches(labels):
                return False
        return True

    @property
    def empty(self) -> bool:
        """True for the selector that matches everything."""
        return self.requirements == ()


EVERYTHING = Selector(())
NOTHING = Selector(None)


def selector_from_set(selector: Mapping[str, str] | None) -> Selector:
    """``labels.SelectorFromSet``: equality on every key; invalid input selects everything."""
    if not selector:
        return EVERYTHING
    reqs = []
    for key in sorted(selector):
        value = selector[key]
        if not isinstance(value, str) or label_key_error(key) or label_value_error(value):
            return EVERYTHING
        reqs.append(Requirement(key, IN, frozenset((value,))))
    return Selector(tuple(reqs))


def set_selector_matches(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    return selector_from_set(selector).matches(labels)


_LABEL_SELECTOR_OPS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
_NODE_SELECTOR_OPS = {**_LABEL_SELECTOR_OPS, "Gt": GT, "Lt": LT}


def label_selector(raw: Mapping | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: null → nothing, ``{}`` → everything; errors raise."""
    if raw is None:
        return NOTHING
    match_labels = raw.get("matchLabels") or {}
    match_expressions = raw.get("matchExpressions") or []
    if not match_labels and not match_expressions:
        return EVERYTHING
    reqs = []
    for key in match_labels:
        reqs.append(new_requirement(key, IN, [str(match_labels[key])]))
    for expr in match_expressions:
        op = _LABEL_SELECTOR_OPS.get(expr.get("operator"))
        if op is None:
            raise SelectorError(f'"{expr.get("operator")}" is not a valid pod selector operator')
        reqs.append(new_requirement(expr.get("key") or "", op, list(expr.get("values") or [])))
    reqs.sort(key=lambda r: r.key)
    return Selector(tuple(reqs))


def node_selector_requirements(expressions: list | None) -> Selector:
    """``NodeSelectorRequirementsAsSelector``: an empty list selects nothing; errors raise."""
    if not expressions:
        return NOTHING
    reqs = []
    for expr in expressions:
        op = _NODE_SELECTOR_OPS.get(expr.get("operator"))
        if op is None:
            raise SelectorError(f'"{expr.get("operator")}" is not a valid node selector operator')
        reqs.append(new_requirement(expr.get("key") or "", op, list(expr.get("values") or [])))
    reqs.sort(key=lambda r: r.key)
    return Selector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    """A selector compiled at parse time, or the error its construction gave (raised on use)."""

    selector: Selector | None
    error: str | None = None

    def get(self) -> Selector:
        if self.selector is None:
            raise SelectorError(self.error or "invalid selector")
        return self.selector


def compile_label_selector(raw: Mapping | None) -> CompiledSelector:
    try:
        return CompiledSelector(label_selector(raw))
    except SelectorError as e:
        return CompiledSelector(None, str(e))


def compile_node_selector_requirements(expressions: list | None) -> CompiledSelector:
    try:
        return CompiledSelector(node_selector_requirements(expressions))
    except SelectorError as e:
        return CompiledSelector(None, str(e))
