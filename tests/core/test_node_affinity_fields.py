"""The vectorised path and the per-node reference agree on pods carrying node-affinity ``matchFields``
under ``--rules 1.9`` too (``test_vectorized_equivalence.py`` draws such pods under the cluster's rules, and
``test_preemption_equivalence.py`` preempts for them)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from tests.core.test_vectorized_equivalence import (
    build,
    build_cluster,
    check_forms_against_reference,
    outcome,
    scenarios,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios(), st.sampled_from(["DefaultProvider", "all"]))
def test_vectorized_path_matches_reference_under_1_9_rules(scenario, kind):
    node_list, existing, pending = scenario
    fast = build(kind, build_cluster(node_list, existing), vectorized=True)
    reference = build(kind, build_cluster(node_list, existing), vectorized=False)
    for raw in pending:
        pod = Pod(raw, Rules.V1_9)
        check_forms_against_reference(fast, pod)
        assert outcome(fast, pod) == outcome(reference, pod), pod.ref
        assert fast.last_node_index == reference.last_node_index
