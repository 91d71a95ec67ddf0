"""The table of modern fields (what is refused, when) and the engine's refusals, gates and preemptionPolicy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.generic_scheduler import FitError
from policy_scheduler.core.modern_pods import (
    MODERN_FIELDS,
    NOT_ELIGIBLE_PREEMPTION_NEVER,
    PodGatedError,
    UnsupportedFieldError,
    fields_table,
    gates_message,
    refusal_message,
    refused_fields,
)
from policy_scheduler.factory import create_from_keys
from policy_scheduler.features import Rules
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod

DOC = Path(__file__).resolve().parents[2] / "docs" / "modern-clusters.md"


def raw_pod(name: str = "p", cpu: str = "1", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}}


def refused(raw: dict[str, Any], rules: Rules = Rules.CLUSTER) -> list[str]:
    return [f.field for f in refused_fields(Pod(raw, rules))]


def term(**extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname", **extra}


def test_the_docs_carry_the_table_of_the_code():
    assert fields_table() in DOC.read_text()
    for section in ("## Scheduling gates", "## preemptionPolicy", "## Refused fields"):
        assert section in DOC.read_text()


def test_every_refused_field_has_a_message_naming_a_field_and_a_check():
    for f in MODERN_FIELDS:
        assert f.present is not None and f.why
        if f.refused:
            assert f.message.startswith("spec.") and "not supported by this scheduler" in f.message


@pytest.mark.parametrize("claims", [
    [{"name": "gpu", "source": {"resourceClaimName": "c"}}],
    [{"name": "gpu", "source": {"resourceClaimTemplateName": "t"}}],
])
def test_resource_claims_in_the_classic_shape_are_refused(claims):
    assert refused(raw_pod(resourceClaims=claims)) == ["spec.resourceClaims"]
    assert refused(raw_pod(resourceClaims=claims), Rules.V1_9) == []
    assert refused(raw_pod(resourceClaims=[])) == []


@pytest.mark.parametrize("claims", [
    [{"name": "gpu", "resourceClaimName": "c"}],
    [{"name": "gpu", "resourceClaimTemplateName": "t"}],
])
def test_resource_claims_in_the_structured_shape_are_allocated_not_refused(claims):
    """DynamicResources decides for them (tests/dra); the table's last row says so."""
    assert refused(raw_pod(resourceClaims=claims)) == []
    assert not MODERN_FIELDS[-1].refused and "DynamicResources" in MODERN_FIELDS[-1].why


@pytest.mark.parametrize("kind", ["podAffinity", "podAntiAffinity"])
def test_a_namespace_selector_in_any_pod_affinity_term_is_not_refused(kind):
    """Implemented (``model/topology.py``): the row stays in the table, never present."""
    (row,) = [f for f in MODERN_FIELDS if "namespaceSelector" in f.field]
    assert not row.refused and not row.message and "Not refused" in row.why
    required = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term(namespaceSelector={})]}}
    preferred = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": term(namespaceSelector={"matchLabels": {"team": "a"}})}]}}
    for affinity in (required, preferred):
        assert refused(raw_pod(affinity=affinity)) == []
        assert refusal_message(Pod(raw_pod(affinity=affinity))) is None
        assert scheduler().schedule(Pod(raw_pod(affinity=affinity))) == "n1"  # decided, not refused


def test_match_fields_in_node_affinity_are_not_refused():
    """Implemented (``predicates/node_selector.py``, ``priorities/node_affinity.py``): the row stays, to say so."""
    daemonset = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}}]}}
    assert "matchFields" in MODERN_FIELDS[2].field and not MODERN_FIELDS[2].refused
    for affinity in (daemonset, preferred):
        assert refused(raw_pod(affinity=affinity)) == []
        assert refusal_message(Pod(raw_pod(affinity=affinity))) is None


def test_a_daemonset_pod_is_bound_to_its_node_only():
    nodes = [{"metadata": {"name": name, "labels": {}},
              "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"},
                         "conditions": [{"type": "Ready", "status": "True"}]}} for name in ("n1", "n2", "n3")]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}
    for rules, expected in ((Rules.CLUSTER, {"n2"}), (Rules.V1_9, set())):
        cluster = ClusterState()
        for raw in nodes:
            cluster.add_node(Node(raw))
        engine = create_from_keys({"MatchNodeSelector"}, {"EqualPriority"}, cluster=cluster)
        fits = {name for name, r in engine.explain(Pod(raw_pod(affinity=affinity), rules)).nodes.items() if r.fit}
        assert fits == expected, rules


def test_match_label_keys_are_refused_only_until_the_api_server_has_merged_them():
    labels = {"app": "web", "pod-template-hash": "abc"}
    unmerged = term(matchLabelKeys=["pod-template-hash"])
    merged = term(matchLabelKeys=["pod-template-hash"], labelSelector={
        "matchLabels": {"app": "db"},
        "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]})
    mismatch_merged = term(mismatchLabelKeys=["app"], labelSelector={
        "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]})
    for t, expected in ((unmerged, [MODERN_FIELDS[3].field]), (merged, []), (mismatch_merged, []),
                        (term(mismatchLabelKeys=["app"]), [MODERN_FIELDS[3].field]),
                        (term(matchLabelKeys=["not-a-label-of-the-pod"]), [])):
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}
        assert refused(raw_pod(labels=labels, affinity=affinity)) == expected, t


def test_generic_ephemeral_volumes_csi_and_os_are_not_refused():
    ephemeral = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}]
    assert refused(raw_pod(volumes=ephemeral)) == []
    csi = [{"name": "v", "csi": {"driver": "ebs.csi.aws.com"}}]
    assert refused(raw_pod(volumes=csi, os={"name": "windows"}, hostUsers=False)) == []


def test_refusal_message_joins_every_refused_field():
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(matchLabelKeys=["app"])]}}
    raw = raw_pod(resourceClaims=[{"name": "g", "source": {"resourceClaimName": "c"}}], affinity=affinity)
    assert refusal_message(Pod(raw)) == f"{MODERN_FIELDS[0].message}; {MODERN_FIELDS[3].message}"
    assert refusal_message(Pod(raw_pod())) is None


# -- the engine --------------------------------------------------------------------------------------
def scheduler(cpu: str = "2"):
    cluster = ClusterState()
    capacity = {"cpu": cpu, "memory": "4Gi", "pods": "10"}
    cluster.add_node(Node({"metadata": {"name": "n1", "labels": {}},
                           "status": {"capacity": capacity, "allocatable": capacity,
                                      "conditions": [{"type": "Ready", "status": "True"}]}}))
    return create_from_keys({"PodFitsResources"}, {"LeastRequestedPriority"}, cluster=cluster)


def test_the_engine_never_decides_for_a_gated_pod_and_1_9_rules_do():
    raw = raw_pod(schedulingGates=[{"name": "a"}, {"name": "b"}])
    with pytest.raises(PodGatedError, match=r"^waiting for scheduling gates: \[a b\]$"):
        scheduler().schedule(Pod(raw))
    explanation = scheduler().explain(Pod(raw))
    assert (explanation.host, explanation.gates, explanation.nodes) == (None, ("a", "b"), {})
    assert scheduler().schedule(Pod(raw, Rules.V1_9)) == "n1"
    assert gates_message(("example.com/x",)) == "waiting for scheduling gates: [example.com/x]"


def test_the_engine_refuses_a_pod_with_a_refused_field_before_looking_at_nodes():
    raw = raw_pod(cpu="64", resourceClaims=[{"name": "g", "source": {"resourceClaimName": "c"}}])
    with pytest.raises(UnsupportedFieldError) as e:
        scheduler().schedule(Pod(raw))
    assert str(e.value) == MODERN_FIELDS[0].message and not isinstance(e.value, FitError)
    with pytest.raises(FitError):  # 1.9 rules: the claim is ignored, the cpu request decides
        scheduler().schedule(Pod(raw, Rules.V1_9))


def test_a_never_pod_is_not_eligible_to_preempt_under_cluster_rules_only():
    for policy, rules, eligible in (("Never", Rules.CLUSTER, False), ("Never", Rules.V1_9, True),
                                    ("PreemptLowerPriority", Rules.CLUSTER, True)):
        s = scheduler()
        s.cluster.add_pod(Pod({**raw_pod("low", cpu="2"), "spec": {**raw_pod("low", cpu="2")["spec"], "nodeName": "n1"}}))
        pod = Pod(raw_pod("high", priority=1000, preemptionPolicy=policy), rules)
        with pytest.raises(FitError) as e:
            s.schedule(pod)
        result = s.preempt(pod, e.value)
        assert result.eligible is eligible
        if eligible:
            assert result.node == "n1" and [v.name for v in result.victims] == ["low"] and not result.post_filter_message
        else:
            assert result.node is None and result.victims == []
            assert result.message == NOT_ELIGIBLE_PREEMPTION_NEVER
            result.annotate(e.value)  # the cluster's line: the newest unless told
            assert str(e.value) == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
                                    "preemption: not eligible due to preemptionPolicy=Never.")


@pytest.mark.parametrize("line, message", [
    ((1, 26), "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.."),
    ((1, 32), "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."),
    ((1, 36), "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
              "preemption: not eligible due to preemptionPolicy=Never."),
], ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else "")
def test_a_never_pods_message_is_worded_as_the_clusters_line_words_it(line, message):
    """``FitError.Error()``: the PostFilter message with ``" %v."`` up to 1.28, ``" %v"`` after; from 1.34 the
    default profile's DynamicResources PostFilter answers first (the real schedulers: tests/kube)."""
    s = scheduler()
    s.cluster.kubernetes_line = line
    s.cluster.add_pod(Pod({**raw_pod("low", cpu="2"), "spec": {**raw_pod("low", cpu="2")["spec"], "nodeName": "n1"}}))
    pod = Pod(raw_pod("high", priority=1000, preemptionPolicy="Never"))
    with pytest.raises(FitError) as e:
        s.schedule(pod)
    s.preempt(pod, e.value).annotate(e.value)
    assert str(e.value) == message
