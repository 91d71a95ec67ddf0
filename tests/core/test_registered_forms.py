"""Every fast-path record registered (one :class:`~policy_scheduler.fastpath.forms.Forms` per predicate and priority
name, registered with the name) is checked against its reference: the Policy below names every registered record,
so a vectorised form, reasons form or preemption declaration added with its name is tested without being listed
here. The hand-written Policies of ``test_vectorized_equivalence.py`` keep their own checks."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.api import load_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.factory import create_from_policy, prepared_registry
from policy_scheduler.fastpath.forms import Forms
from policy_scheduler.features import FeatureGates, Rules
from policy_scheduler.model.disruption import PodDisruptionBudget
from policy_scheduler.model.pod import Pod
from tests.core.test_preemption_equivalence import attempt
from tests.core.test_preemption_equivalence import scenarios as preemption_scenarios
from tests.core.test_vectorized_equivalence import (
    build_cluster,
    check_forms_against_reference,
    outcome,
    spread_scenarios,
)

RULES = [Rules.CLUSTER, Rules.V1_9]


def gates(rules: Rules) -> FeatureGates:
    return FeatureGates(rules=rules)


def every_record_policy(rules: Rules) -> dict:
    """A Policy naming every predicate and priority that has a fast-path record, at its registered weight."""
    reg = prepared_registry(None, gates(rules))
    return {
        "kind": "Policy", "apiVersion": "v1",
        "predicates": [{"name": n} for n in sorted(reg.predicate_forms)],
        "priorities": [{"name": n, "weight": reg.priorities[n].weight} for n in sorted(reg.priority_forms)],
        "hardPodAffinitySymmetricWeight": 3,
    }


def build(rules: Rules, cluster: ClusterState, vectorized: bool):
    return create_from_policy(load_policy(json.dumps(every_record_policy(rules))), cluster=cluster,
                              feature_gates=gates(rules), vectorized=vectorized)


@pytest.mark.parametrize("rules", RULES, ids=lambda r: r.value)
def test_every_registered_record_is_bound_to_what_was_built(rules):
    """The enumeration is not vacuous: each registered name's record reaches the scheduler, bound to its reference,
    with the forms it was registered with."""
    reg = prepared_registry(None, gates(rules))
    assert {"GeneralPredicates", "PodFitsResources", "MatchInterPodAffinity"} <= reg.predicate_forms.keys()
    assert {"LeastRequestedPriority", "NodeAffinityPriority", "SelectorSpreadPriority"} <= reg.priority_forms.keys()
    scheduler = build(rules, ClusterState(), vectorized=True)
    fast = scheduler.fast_path
    for name, record in reg.predicate_forms.items():
        forms = fast.predicate_record(name, scheduler.predicates[name])
        assert forms is not None and forms.reference is scheduler.predicates[name], name
        assert forms.vectorized is not None or forms.preemption is not None, name
        if isinstance(record, Forms):
            assert (forms.vectorized, forms.reasons, forms.preemption) == (
                record.vectorized, record.reasons, record.preemption), name
    configs = {c.name: c for c in scheduler.prioritizers}
    for name, record in reg.priority_forms.items():
        forms = fast.priority_record(configs[name])
        assert forms is not None and forms.vectorized is not None, name
        assert forms.reduce is configs[name].reduce, name  # else the form would never be used
        if isinstance(record, Forms):
            assert forms.vectorized is record.vectorized, name


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spread_scenarios(), st.sampled_from(RULES))
def test_every_registered_form_matches_its_reference(scenario, rules):
    node_list, existing, pending = scenario
    fast = build(rules, build_cluster(node_list, existing), vectorized=True)
    reference = build(rules, build_cluster(node_list, existing), vectorized=False)
    for raw in pending:
        pod = Pod(raw, rules)
        check_forms_against_reference(fast, pod)
        assert outcome(fast, pod) == outcome(reference, pod), pod.ref
        assert fast.last_node_index == reference.last_node_index


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(preemption_scenarios(), st.sampled_from(RULES), st.booleans())
def test_every_registered_declaration_preempts_as_the_reference(scenario, rules, detail):
    """Preemption's arithmetic, which believes the records' declarations, against the reference."""
    node_list, existing, nominated, budgets, preemptor = scenario
    fast = build(rules, build_cluster(node_list, existing), vectorized=True)
    reference = build(rules, build_cluster(node_list, existing), vectorized=False)
    pdbs = [PodDisruptionBudget.from_dict(b) for b in budgets]
    pod = Pod(preemptor, rules)
    assert attempt(fast, pod, nominated, pdbs, detail) == attempt(reference, pod, nominated, pdbs, detail)
