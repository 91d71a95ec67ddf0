"""Node selector terms as the modern kube-scheduler reads them: ``matchExpressions`` AND ``matchFields``.

Upstream ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity`` (1.26): ``newNodeSelectorTerm``,
``nodeSelectorTerm.match``, ``nodeSelectorRequirementsAsFieldSelector``, ``LazyErrorNodeSelector.Match``.
Shared by a pod's node affinity (under the cluster's rules) and a PersistentVolume's ``spec.nodeAffinity``.

* A term's ``matchExpressions`` are a node selector on the labels (an error if one cannot be built); its
  ``matchFields`` are field requirements (``In``/``NotIn`` with exactly one value, else an error), ANDed
  with the expressions. A term with neither selects nothing.
* A term that fails to parse matches nothing; the terms are ORed and the next one is tried.
* The fields are the node's ``metadata.name`` (``extractNodeFields``); a node without a name has no fields,
  and then a term's ``matchFields`` are not checked at all (``len(nodeFields) > 0``): that is how upstream
  evaluates a PV's node affinity, against a node made of the labels alone.

1.9 knew none of this: its ``MatchNodeSelector`` and ``NodeAffinityPriority`` read ``matchExpressions``
only (:mod:`..predicates.node_selector`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .fields import check_requirements
from .labels import IN, NOT_IN, CompiledSelector, compile_node_selector_requirements

#: ``metav1.ObjectNameField``: the only node field a term may name (the API server refuses others).
NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``matchFields`` requirement: ``fields.OneTermEqualSelector`` (``In``) or
    ``OneTermNotEqualSelector`` (``NotIn``) of ``key`` and its one value."""

    key: str
    op: str  # IN or NOT_IN
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        # fields.Set.Get: a field the node does not have is "".
        return (fields.get(self.key, "") == self.value) == (self.op == IN)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One ``NodeSelectorTerm``: ``expressions`` None when it has no ``matchExpressions``, ``fields`` None when
    it has no ``matchFields``; ``error`` when it cannot be parsed (then it matches nothing)."""

    expressions: CompiledSelector | None
    fields: tuple[FieldRequirement, ...] | None
    error: str | None = None

    @property
    def empty(self) -> bool:
        """Neither ``matchExpressions`` nor ``matchFields`` (``isEmptyNodeSelectorTerm``): selects nothing."""
        return self.expressions is None and self.fields is None and self.error is None

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.error is not None or self.empty:
            return False
        if self.expressions is not None and not self.expressions.get().matches(labels):
            return False
        if self.fields is not None and node_name:
            fields = {NODE_NAME_FIELD: node_name}
            return all(f.matches(fields) for f in self.fields)
        return True


def field_requirements(reqs: list[dict[str, Any]]) -> tuple[tuple[FieldRequirement, ...], str | None]:
    """``nodeSelectorRequirementsAsFieldSelector`` of a non-empty list: the requirements, or the error
    (1.26's wording; the key is not checked here, as upstream's parser does not)."""
    out = []
    for r in reqs:
        key, op, values = r.get("key") or "", r.get("operator") or "", r.get("values") or []
        if op not in ("In", "NotIn"):
            return (), f'"{op}" is not a valid node field selector operator'
        if len(values) != 1:
            return (), f'unexpected number of value ({len(values)}) for node field selector operator "{op}"'
        out.append(FieldRequirement(key, IN if op == "In" else NOT_IN, values[0]))
    return tuple(out), None


def parse_node_selector_term(obj: str, path: str, term: dict[str, Any]) -> NodeSelectorTerm:
    """``newNodeSelectorTerm`` of ``term`` (at ``path`` in ``obj``; wrong field types raise ``ObjectError``)."""
    exprs = check_requirements(obj, f"{path}.matchExpressions", term.get("matchExpressions"))
    raw_fields = check_requirements(obj, f"{path}.matchFields", term.get("matchFields"))
    expressions = compile_node_selector_requirements(exprs) if exprs else None
    if expressions is not None and expressions.selector is None:
        return NodeSelectorTerm(expressions, None, expressions.error)  # upstream stops at the first error
    if not raw_fields:
        return NodeSelectorTerm(expressions, None)
    requirements, error = field_requirements(raw_fields)
    return NodeSelectorTerm(expressions, requirements, error)


def match_node_selector_terms(terms: Iterable[NodeSelectorTerm], labels: Mapping[str, str], node_name: str) -> bool:
    """``LazyErrorNodeSelector.Match``: the terms ORed; an unparsable or empty term matches nothing and the
    next one is tried."""
    return any(term.matches(labels, node_name) for term in terms)


def has_match_fields(terms: Iterable[Mapping[str, Any]]) -> bool:
    """Some raw term carries a non-empty ``matchFields``."""
    return any(term.get("matchFields") for term in terms)
