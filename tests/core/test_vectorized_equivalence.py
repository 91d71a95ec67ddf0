"""Property test: the vectorised path and the per-node reference give identical decisions.

Hypothesis generates random clusters (labels, zones, taints, conditions, allocatable, preferAvoidPods,
services and controllers, Namespace objects with labels, existing pods with requests, host ports and
inter-pod (anti-)affinity, some terms with a namespaceSelector) and random pending queues. Each queue is scheduled twice, once on each path, assuming every placed pod; every
pod's host or error must agree, and on every pod the vectorised filter mask and each vectorised priority
score must equal what the reference functions compute node by node.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.api import load_policy
from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.core.fit_error import FitError
from policy_scheduler.errors import PredicateError, PriorityError, SchedulingError
from policy_scheduler.factory import create_from_policy, create_from_provider
from policy_scheduler.fastpath import priority_form
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.workloads import LabelSelectedController, ReplicationController, Service

ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "failure-domain.beta.kubernetes.io/region"
GA_ZONE = "topology.kubernetes.io/zone"  # read before the beta label by zone spreading under the cluster's rules
HOSTNAME = "kubernetes.io/hostname"
APPS = ["a", "b", "c"]
TOPOLOGY_KEYS = [HOSTNAME, ZONE, REGION, "rack"]

ALL_ALGORITHMS = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [{"name": n} for n in (
        "GeneralPredicates", "PodFitsResources", "HostName", "PodFitsHostPorts", "MatchNodeSelector",
        "PodToleratesNodeTaints", "CheckNodeMemoryPressure", "CheckNodeDiskPressure", "MatchInterPodAffinity",
        "NoDiskConflict", "NoVolumeZoneConflict", "MaxEBSVolumeCount", "MaxGCEPDVolumeCount",
        "MaxAzureDiskVolumeCount", "CheckVolumeBinding")],
    "priorities": [{"name": n, "weight": w} for n, w in (
        ("LeastRequestedPriority", 1), ("MostRequestedPriority", 2), ("BalancedResourceAllocation", 1),
        ("SelectorSpreadPriority", 3), ("ServiceSpreadingPriority", 1), ("InterPodAffinityPriority", 2),
        ("NodeAffinityPriority", 1), ("TaintTolerationPriority", 1), ("NodePreferAvoidPodsPriority", 10000),
        ("ImageLocalityPriority", 1), ("EqualPriority", 1))],
    "hardPodAffinitySymmetricWeight": 3,
}


@st.composite
def nodes(draw, min_count=1, max_count=7):
    return [draw(node(f"node-{i}")) for i in range(draw(st.integers(min_count, max_count)))]


@st.composite
def node(draw, name):
    labels = {HOSTNAME: name}
    if draw(st.booleans()):
        labels[ZONE] = draw(st.sampled_from(["z1", "z2", "z3"]))
    if draw(st.booleans()):
        labels[REGION] = draw(st.sampled_from(["r1", "r2"]))
    if draw(st.integers(0, 2)) == 0:
        labels[GA_ZONE] = draw(st.sampled_from(["z1", "z2", "z4"]))
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(["k1", "k2"]))
    if draw(st.booleans()):
        labels["disktype"] = draw(st.sampled_from(["ssd", "hdd"]))
    taints = draw(st.lists(st.fixed_dictionaries({
        "key": st.sampled_from(["dedicated", "flaky"]), "value": st.sampled_from(["x", "y"]),
        "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])}), max_size=2))
    conditions = [{"type": "Ready", "status": draw(st.sampled_from(["True", "True", "True", "False"]))}]
    for ctype in ("MemoryPressure", "DiskPressure"):
        if draw(st.integers(0, 4)) == 0:
            conditions.append({"type": ctype, "status": "True"})
    annotations = {}
    if draw(st.integers(0, 3)) == 0:
        annotations["scheduler.alpha.kubernetes.io/preferAvoidPods"] = json.dumps({"preferAvoidPods": [
            {"podSignature": {"podController": {"kind": "ReplicaSet", "uid": "rs-a", "name": "rs-a"}}}]})
    return {
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"taints": taints, "unschedulable": draw(st.integers(0, 9)) == 0},
        "status": {
            "allocatable": {"cpu": f"{draw(st.integers(0, 8)) * 500}m", "memory": str(draw(st.integers(0, 8)) * 2**29),
                            "pods": str(draw(st.integers(0, 6))), "example.com/foo": str(draw(st.integers(0, 2)))},
            "conditions": conditions,
            "images": [{"names": ["nginx:1"], "sizeBytes": draw(st.integers(0, 2000)) * 2**20}],
        },
    }


def _term(draw):
    selector = draw(st.sampled_from([
        {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": draw(st.lists(st.sampled_from(APPS), min_size=1, max_size=2))}]},
        {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        {},
    ]))
    term = {"labelSelector": selector, "topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS))}
    if draw(st.integers(0, 4)) == 0:
        term["namespaces"] = ["default", "other"]
    if draw(st.integers(0, 3)) == 0:  # over the Namespace objects of build_cluster (NAMESPACE_LABELS)
        term["namespaceSelector"] = draw(st.sampled_from([
            {"matchLabels": {"team": "b"}}, {},
            {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]},
            {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "c"]}]}]))
    return term


# Namespace objects (their labels); pods also run in "ghost", which has none.
NAMESPACE_LABELS = {"default": {"team": "a"}, "other": {"team": "b"}, "team-c": {"team": "c"}, "plain": {}}
POD_NAMESPACES = ["default", "default", "other", "team-c", "ghost"]


NODE_NAMES = [f"node-{i}" for i in range(8)]  # node-7 is never a node


def _match_fields(draw, node_affinity):
    """Node-affinity ``matchFields`` (a DaemonSet pod's ``metadata.name In [<node>]``, and variants): required
    terms (alone or with expressions; now and then one that cannot be parsed) and a preferred term."""
    def fields():
        out = [{"key": "metadata.name", "operator": draw(st.sampled_from(["In", "In", "NotIn"])),
                "values": [draw(st.sampled_from(NODE_NAMES))]} for _ in range(draw(st.integers(1, 2)))]
        if draw(st.integers(0, 9)) == 0:
            out[0]["values"] = NODE_NAMES[:2]  # unparsable: a field requirement takes exactly one value
        return out

    if draw(st.booleans()):
        terms = []
        for _ in range(draw(st.integers(1, 2))):
            term = {"matchFields": fields()}
            if draw(st.integers(0, 2)) == 0:
                term["matchExpressions"] = [{"key": "disktype", "operator": "In", "values": ["ssd"]}]
            terms.append(term)
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if draw(st.booleans()):
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"].append(
            {"weight": draw(st.integers(1, 50)), "preference": {"matchFields": fields()}})


@st.composite
def pods(draw, prefix, bound_to=None):
    app = draw(st.sampled_from(APPS))
    labels = {"app": app}
    if draw(st.booleans()):
        labels["tier"] = "web"
    resources = {}
    if draw(st.booleans()):
        resources["cpu"] = f"{draw(st.integers(0, 6)) * 250}m"
    if draw(st.booleans()):
        resources["memory"] = str(draw(st.integers(0, 6)) * 2**28)
    if draw(st.integers(0, 5)) == 0:
        resources["example.com/foo"] = "1"
    container = {"name": "c", "image": "nginx:1", "resources": {"requests": resources}}
    if draw(st.integers(0, 5)) == 0:
        container["ports"] = [{"containerPort": 80, "hostPort": draw(st.sampled_from([80, 8080]))}]
    spec = {"containers": [container]}
    affinity = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if draw(st.integers(0, 2)) == 0:
            section = {}
            if draw(st.booleans()):
                section["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(draw)]
            if draw(st.booleans()):
                section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": draw(st.integers(1, 100)), "podAffinityTerm": _term(draw)}]
            affinity[kind] = section
    if draw(st.integers(0, 2)) == 0:
        affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": draw(st.integers(1, 50)), "preference": {"matchExpressions": [
                {"key": "disktype", "operator": draw(st.sampled_from(["In", "NotIn"])), "values": ["ssd"]}]}}]}
        if draw(st.booleans()):
            affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1", "z2"]}]}]}
        if draw(st.integers(0, 2)) == 0:
            _match_fields(draw, affinity["nodeAffinity"])
    if affinity:
        spec["affinity"] = affinity
    if draw(st.integers(0, 4)) == 0:
        spec["nodeSelector"] = {"disktype": "ssd"}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": draw(st.sampled_from(["dedicated", "flaky", ""])), "operator": "Exists",
                                "effect": draw(st.sampled_from(["", "NoSchedule", "PreferNoSchedule"]))}]
    meta = {"name": prefix, "namespace": draw(st.sampled_from(POD_NAMESPACES)), "labels": labels,
            "uid": f"uid-{prefix}"}
    if draw(st.integers(0, 3)) == 0:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs-a", "uid": "rs-a", "controller": True}]
    if bound_to is not None:
        spec["nodeName"] = bound_to
    return {"metadata": meta, "spec": spec}


@st.composite
def scenarios(draw):
    node_list = draw(nodes())
    names = [n["metadata"]["name"] for n in node_list]
    existing = [draw(pods(f"existing-{i}", bound_to=draw(st.sampled_from(names)))) for i in range(draw(st.integers(0, 8)))]
    pending = [draw(pods(f"pending-{i}")) for i in range(draw(st.integers(1, 6)))]
    return node_list, existing, pending


def build_cluster(node_list, existing):
    cluster = ClusterState()
    for raw in node_list:
        cluster.add_node(Node(raw))
    for raw in existing:
        cluster.add_pod(Pod(raw))
    for ns in ("default", "other"):
        cluster.add_service(Service.from_dict({"metadata": {"name": "svc-a", "namespace": ns}, "spec": {"selector": {"app": "a"}}}))
        cluster.add_replication_controller(ReplicationController.from_dict(
            {"metadata": {"name": "rc-b", "namespace": ns}, "spec": {"selector": {"app": "b"}}}))
        cluster.add_replica_set(LabelSelectedController.from_dict("ReplicaSet", {
            "metadata": {"name": "rs-c", "namespace": ns},
            "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["c", "a"]}]}}}))
    for ns, labels in NAMESPACE_LABELS.items():
        cluster.put_namespace(ns, labels)
    return cluster


def build(kind, cluster, vectorized):
    if kind == "all":
        return create_from_policy(load_policy(json.dumps(ALL_ALGORITHMS)), cluster=cluster, vectorized=vectorized)
    return create_from_provider(kind, cluster=cluster, vectorized=vectorized)


def outcome(scheduler, pod):
    try:
        host = scheduler.schedule(pod)
    except FitError as e:  # every node's reasons, in order (the vectorised path asks only failed predicates)
        return None, (str(e), {n: [str(r) for r in rs] for n, rs in e.failed_predicates.items()})
    except SchedulingError as e:
        return None, str(e)
    scheduler.cluster.assume(pod, host)
    return host, None


def _reason(r):
    """A reason and the numbers an InsufficientResource carries."""
    return (str(r), type(r).__name__, *(getattr(r, a, None) for a in ("resource_name", "requested", "used", "capacity")))


def check_forms_against_reference(scheduler, pod):
    """Every vectorised form equals its reference function on every node (candidates for priorities): the forms of
    the records registered with the scheduler's predicates and priorities."""
    cols = scheduler.fast_path.columns
    infos = scheduler.cluster.node_infos
    meta = scheduler.predicate_metadata_producer(pod, infos)
    algorithms = scheduler.algorithms_for(pod)
    for name, predicate in algorithms.ordered_predicates:
        forms = scheduler.fast_path.predicate_record(name, predicate)
        form = forms.vectorized if forms is not None else None
        mask = form(pod, meta, cols) if form else None
        if mask is None:
            continue
        for i, info in enumerate(cols.infos):
            try:
                want = predicate(pod, meta, info)[0]
            except PredicateError:
                raise AssertionError(f"{name}: form answered where the reference errors") from None
            assert bool(mask[i]) == want, (name, cols.names[i])
        explain = forms.reasons
        if explain is not None:
            rows = np.flatnonzero(~mask)
            got = explain(pod, meta, cols, rows)  # counted at once, listed on demand: both must be the reference's
            expected_lists = [predicate(pod, meta, cols.infos[i])[1] for i in rows.tolist()]
            for i, reasons, expected in zip(rows.tolist(), got.lists(), expected_lists):
                assert [_reason(r) for r in reasons] == [_reason(r) for r in expected], (name, cols.names[i])
            assert got.counts() == Counter(str(r) for reasons in expected_lists for r in reasons), name
            assert got.nonempty().tolist() == [bool(reasons) for reasons in expected_lists], name
    check_priority_forms(scheduler, pod, np.arange(len(cols.names)))


def check_priority_forms(scheduler, pod, candidates):
    """Each priority form over ``candidates`` (rows) equals the reference map and reduce over those nodes."""
    cols = scheduler.fast_path.columns
    subset = [cols.nodes[int(i)] for i in candidates]
    pmeta = scheduler.priority_metadata_producer(pod, scheduler.cluster.node_infos)
    for config in scheduler.algorithms_for(pod).prioritizers:
        form = priority_form(config, scheduler.fast_path.priority_record(config))
        scores = form(pod, pmeta, cols, candidates) if form else None
        if scores is None:
            continue
        try:
            want = [hp.score for hp in scheduler.run_priority(config, pod, pmeta, subset)]
        except PriorityError:
            raise AssertionError(f"{config.name}: form answered where the reference errors") from None
        scores = np.broadcast_to(scores, candidates.shape).tolist()  # an int: every candidate's score
        assert scores == want, (config.name, candidates.tolist(), scores, want)
    for step in scheduler.fast_path.plan(scheduler.algorithms_for(pod)).priorities:
        if len(step.configs) == 1:
            continue  # checked above
        # Merged forms (the request-based scores): their one array is the weighted sum of the references'.
        want = np.zeros(candidates.size, dtype=np.int64)
        for config in step.configs:
            want += config.weight * np.array([hp.score for hp in scheduler.run_priority(config, pod, pmeta, subset)])
        scores = step.form(pod, pmeta, cols, candidates)
        assert scores.tolist() == want.tolist(), ([c.name for c in step.configs], candidates.tolist())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios(), st.sampled_from(["DefaultProvider", "ClusterAutoscalerProvider", "all"]))
def test_vectorized_path_matches_reference(scenario, kind):
    node_list, existing, pending = scenario
    fast = build(kind, build_cluster(node_list, existing), vectorized=True)
    reference = build(kind, build_cluster(node_list, existing), vectorized=False)
    assert fast.fast_path is not None and reference.fast_path is None
    for raw in pending:
        pod = Pod(raw)
        check_forms_against_reference(fast, pod)
        assert outcome(fast, pod) == outcome(reference, pod), pod.ref
        assert fast.last_node_index == reference.last_node_index


# -- pods with topologySpreadConstraints (PodTopologySpread, applied under the cluster rules) ----------
SPREAD_NAMED = dict(ALL_ALGORITHMS, predicates=[*ALL_ALGORITHMS["predicates"], {"name": "PodTopologySpread"}],
                    priorities=[*ALL_ALGORITHMS["priorities"], {"name": "PodTopologySpread", "weight": 3}])


def _spread_constraints(draw):
    out = []
    for key in draw(st.lists(st.sampled_from(TOPOLOGY_KEYS + ["node-type"]), min_size=1, max_size=3, unique=True)):
        when = draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))
        c = {"maxSkew": draw(st.integers(1, 3)), "topologyKey": key, "whenUnsatisfiable": when}
        selector = draw(st.sampled_from([
            {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
            {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {}, None]))
        if selector is not None:
            c["labelSelector"] = selector
        if when == "DoNotSchedule" and draw(st.integers(0, 2)) == 0:
            c["minDomains"] = draw(st.integers(1, 4))
        if draw(st.integers(0, 2)) == 0:
            c["nodeAffinityPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
        if draw(st.integers(0, 2)) == 0:
            c["nodeTaintsPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
        if draw(st.integers(0, 3)) == 0 and "tier" not in json.dumps(selector):
            c["matchLabelKeys"] = ["tier"]
        out.append(c)
    return out


@st.composite
def spread_pods(draw, prefix, bound_to=None):
    raw = draw(pods(prefix, bound_to))
    if bound_to is not None and draw(st.integers(0, 5)) == 0:
        raw["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"  # terminating: never counted
    if bound_to is None and draw(st.integers(0, 5)) != 0:
        raw["spec"]["topologySpreadConstraints"] = _spread_constraints(draw)
    return raw


@st.composite
def spread_scenarios(draw):
    node_list = draw(nodes())
    for node in node_list:
        if draw(st.booleans()):
            node["metadata"]["labels"]["node-type"] = draw(st.sampled_from(["small", "large"]))
    names = [n["metadata"]["name"] for n in node_list]
    existing = [draw(spread_pods(f"existing-{i}", bound_to=draw(st.sampled_from(names))))
                for i in range(draw(st.integers(0, 10)))]
    pending = [draw(spread_pods(f"pending-{i}")) for i in range(draw(st.integers(1, 6)))]
    return node_list, existing, pending


def build_spread(kind, cluster, vectorized):
    if kind == "named":
        return create_from_policy(load_policy(json.dumps(SPREAD_NAMED)), cluster=cluster, vectorized=vectorized)
    return build(kind, cluster, vectorized)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spread_scenarios(), st.sampled_from(["DefaultProvider", "all", "named"]))
def test_vectorized_path_matches_reference_for_topology_spread(scenario, kind):
    node_list, existing, pending = scenario
    fast = build_spread(kind, build_cluster(node_list, existing), vectorized=True)
    reference = build_spread(kind, build_cluster(node_list, existing), vectorized=False)
    for raw in pending:
        pod = Pod(raw)
        check_forms_against_reference(fast, pod)
        assert outcome(fast, pod) == outcome(reference, pod), pod.ref
        assert fast.last_node_index == reference.last_node_index
