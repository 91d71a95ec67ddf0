"""NodeAffinityPriority with preferred terms carrying ``matchFields``: upstream's
``TestPreferredSchedulingTermsScore`` (``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``), which is
the 1.26 NodeAffinity plugin's Score, under the cluster's rules; 1.9's scoring under ``Rules.V1_9``."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PriorityError
from policy_scheduler.features import Rules
from policy_scheduler.model.pod import Pod
from policy_scheduler.priorities import (
    PriorityMetadataFactory,
    calculate_node_affinity_priority_map,
    calculate_node_affinity_priority_reduce,
)

from .conftest import make_cluster, make_node, prioritize


def fields(op: str, *values: str) -> list[dict]:
    return [{"key": "metadata.name", "operator": op, "values": list(values)}]


def expressions(key: str, *values: str) -> list[dict]:
    return [{"key": key, "operator": "In", "values": list(values)}]


def pod(*preferred: tuple[int, dict], rules: Rules = Rules.CLUSTER) -> Pod:
    terms = [{"weight": w, "preference": t} for w, t in preferred]
    return Pod({"metadata": {"name": "p", "namespace": "ns"},
                "spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}}, rules)


def score(p: Pod, name: str = "host_1", labels: dict | None = None) -> int:
    node = make_node(name, labels=labels)
    return calculate_node_affinity_priority_map(p, None, make_cluster([node]).node_infos[name])


FIRST_AND_THIRD = (
    (5, {"matchFields": fields("In", "host_1")}),
    (7, {"matchExpressions": expressions("unknown_label", "unknown_label_val")}),
    (11, {"matchExpressions": expressions("label_1", "label_1_val")}),
)


def test_first_and_third_term_match() -> None:
    assert score(pod(*FIRST_AND_THIRD), labels={"label_1": "label_1_val"}) == 16
    # 1.9 read the preference's matchExpressions only: the first term selects nothing.
    assert score(pod(*FIRST_AND_THIRD, rules=Rules.V1_9), labels={"label_1": "label_1_val"}) == 11


def test_invalid_field_selector_but_no_weight_error_not_reported() -> None:
    assert score(pod((0, {"matchFields": fields("In", "host_1", "host_2")}))) == 0


def test_invalid_field_selector_and_label_selector_fail_the_pod() -> None:
    """``NewPreferredSchedulingTerms``: every parse error, aggregated (1.26's wording)."""
    p = pod((1, {"matchFields": fields("In", "host_1", "host_2")}),
            (1, {"matchExpressions": expressions("label_1", "label_1_val"), "matchFields": fields("In", "host_1")}),
            (1, {"matchExpressions": expressions("invalid key", "label_value")}))
    with pytest.raises(PriorityError, match=r'^\[unexpected number of value \(2\) for node field selector operator "In", '
                                            r"invalid label key .invalid key.: "):
        score(p)
    one = pod((1, {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}))
    with pytest.raises(PriorityError, match='^"Exists" is not a valid node field selector operator$'):
        score(one)
    # 1.9 built the selector of the expressions only, term by term: the first has none, the third fails.
    with pytest.raises(PriorityError, match="^invalid label key"):
        score(pod((1, {"matchFields": fields("In", "host_1", "host_2")}),
                  (1, {"matchExpressions": expressions("invalid key", "label_value")}), rules=Rules.V1_9))


def test_not_in_and_empty_terms() -> None:
    p = pod((3, {"matchFields": fields("NotIn", "host_1")}), (4, {}), (5, {"matchFields": fields("In", "host_2")}))
    assert score(p, "host_1") == 0
    assert score(p, "host_2") == 8
    assert score(p, "host_3") == 3


@pytest.mark.parametrize("with_metadata", [False, True], ids=["meta=nil", "meta"])
def test_reduce_over_nodes(with_metadata: bool) -> None:
    nodes = [make_node(n) for n in ("node1", "node2", "node3")]
    cluster = make_cluster(nodes)
    p = pod((2, {"matchFields": fields("In", "node2")}), (6, {"matchFields": fields("NotIn", "node1")}))
    meta = PriorityMetadataFactory(cluster).get_metadata(p) if with_metadata else None
    got = prioritize(calculate_node_affinity_priority_map, calculate_node_affinity_priority_reduce, p, meta,
                     cluster.node_infos, nodes)
    assert got == [("node1", 0), ("node2", 10), ("node3", 7)]
