"""Property test: the vectorised path's incremental state decides as the reference over long histories.

The vectorised path keeps state between decisions (per-request classes of resource verdicts and scores
updated on the rows pods change, per-selector counts and their non-zero rows, term groups' rows, the
selectors matching a set of labels). Hypothesis draws histories that exercise it: runs of identical pods
(a ReplicaSet's: one template, names apart), deletions of placed pods, node additions, updates and
removals, and Services added, in any order; clusters are large enough (8 to 40 nodes) for the forms' sparse
paths to be taken. Every pod's host or error must agree with the reference path's, and on every pod each
form must equal its reference function, the priorities over a random subset of candidates as well.
"""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.core.fit_error import FitError
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.model.workloads import Service
from policy_scheduler.priorities.metadata import get_selectors

from .test_vectorized_equivalence import (
    build,
    build_cluster,
    check_forms_against_reference,
    check_priority_forms,
    node,
    nodes,
    outcome,
    pods,
)


@st.composite
def histories(draw):
    node_list = draw(nodes(min_count=8, max_count=40))
    names = [n["metadata"]["name"] for n in node_list]
    existing = [draw(pods(f"existing-{i}", bound_to=draw(st.sampled_from(names)))) for i in range(draw(st.integers(0, 12)))]
    templates = [draw(pods(f"template-{j}")) for j in range(2)]  # runs share them: one workload's pods return
    steps = []
    for s in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["run", "run", "run", "delete", "node", "remove-node", "service"]))
        if kind == "run":
            steps.append(("run", f"run-{s}", draw(st.sampled_from(templates)), draw(st.integers(2, 10))))
        elif kind == "delete":
            steps.append(("delete", draw(st.integers(1, 4))))
        elif kind == "node":  # a changed node, or a new one
            steps.append(("node", draw(node(draw(st.sampled_from([*names, f"node-new-{s}"]))))))
        elif kind == "remove-node":
            steps.append(("remove-node", draw(st.sampled_from(names))))
        else:
            meta = draw(st.sampled_from(templates))["metadata"]  # a Service over one of the runs' pods, or more
            app = meta["labels"]["app"]
            selector = draw(st.sampled_from([{"app": app}, {"tier": "web"}, {"app": app, "tier": "web"}]))
            steps.append(("service", selector, meta["namespace"]))
    return node_list, existing, steps, draw(st.randoms(use_true_random=False))


def replay(step, fast, reference):
    """Apply one non-scheduling step to both schedulers' clusters."""
    kind = step[0]
    for scheduler in (fast, reference):
        cluster = scheduler.cluster
        if kind == "delete":
            for pod in list(cluster.list_pods())[-step[1]:]:
                cluster.remove_pod(pod)
        elif kind == "node":
            cluster.add_node(Node(copy.deepcopy(step[1])))
        elif kind == "remove-node":
            cluster.remove_node(step[1])
        elif kind == "service":
            _, selector, namespace = step
            name = f"svc-{len(cluster.services[namespace])}"
            cluster.add_service(Service.from_dict({"metadata": {"name": name, "namespace": namespace},
                                                   "spec": {"selector": selector}}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories(), st.sampled_from(["DefaultProvider", "all"]))
def test_incremental_state_decides_as_the_reference(history, kind):
    node_list, existing, steps, rng = history
    fast = build(kind, build_cluster(node_list, existing), vectorized=True)
    reference = build(kind, build_cluster(node_list, existing), vectorized=False)
    for step in steps:
        if step[0] != "run":
            replay(step, fast, reference)
            continue
        _, run, template, count = step
        for k in range(count):
            raw = copy.deepcopy(template)
            raw["metadata"]["name"] = f"{run}-{k}"
            raw["metadata"]["uid"] = f"uid-{raw['metadata']['name']}"
            pod = Pod(raw)
            fast.fast_path.columns.refresh()
            check_forms_against_reference(fast, pod)
            rows = len(fast.fast_path.columns.names)
            if rows:
                candidates = np.array(sorted(rng.sample(range(rows), rng.randint(1, rows))), dtype=np.int64)
                check_priority_forms(fast, pod, candidates)
            meta = fast.priority_metadata_producer(pod, fast.cluster.node_infos)
            assert meta.pod_selectors == get_selectors(pod, fast.cluster)  # the cached ones are today's
            assert outcome(fast, pod) == outcome(reference, pod), pod.ref
            assert fast.last_node_index == reference.last_node_index


def test_the_first_pod_asking_for_an_extended_resource_is_counted_once():
    """An extended resource's column is built when a pod first asks for it, from the NodeInfos, which already
    count a pod the cache just took: that pod must not be added to the column a second time."""
    def node_with(name, foo):
        return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "4", "memory": str(2**33), "pods": "10", "example.com/foo": str(foo)}}}

    def pod_asking(name, node_name=None):
        spec = {"containers": [{"name": "c", "image": "nginx:1", "resources": {"requests": {"example.com/foo": "1"}}}]}
        return {"metadata": {"name": name, "namespace": "default"}, "spec": {**spec, "nodeName": node_name} if node_name else spec}

    for kind in ("DefaultProvider", "all"):
        fast = build(kind, build_cluster([node_with("node-0", 2), node_with("node-1", 0)], []), vectorized=True)
        reference = build(kind, build_cluster([node_with("node-0", 2), node_with("node-1", 0)], []), vectorized=False)
        for scheduler in (fast, reference):
            scheduler.cluster.add_pod(Pod(pod_asking("bound", "node-0")))
        assert outcome(fast, Pod(pod_asking("next"))) == outcome(reference, Pod(pod_asking("next"))) == ("node-0", None)


def test_a_fit_errors_reasons_are_those_of_the_moment_it_was_raised():
    """The vectorised path counts a FitError's reasons at once and lists them per node when first read: a read
    after the cluster changed still gives the reasons (numbers included) of the moment the pod failed."""
    def node_with(name):
        return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "2", "memory": str(2**32), "pods": "10"}}}

    def pod_asking(name, cpu, node_name=None):
        spec = {"containers": [{"name": "c", "image": "nginx:1", "resources": {"requests": {"cpu": cpu}}}]}
        if node_name:
            spec["nodeName"] = node_name
        return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}

    def reasons(error):
        return {n: [(str(r), getattr(r, "used", None), getattr(r, "capacity", None)) for r in rs]
                for n, rs in error.failed_predicates.items()}

    node_list = [node_with("node-0"), node_with("node-1")]
    existing = [pod_asking("a", "1500m", "node-0"), pod_asking("b", "1", "node-1")]
    errors = {}
    for vectorized in (True, False):
        scheduler = build("DefaultProvider", build_cluster(node_list, existing), vectorized=vectorized)
        try:
            scheduler.schedule(Pod(pod_asking("big", "1500m")))
        except FitError as e:
            errors[vectorized] = e
        scheduler.cluster.add_pod(Pod(pod_asking("later", "250m", "node-1")))  # after the error, before the read
    assert str(errors[True]) == str(errors[False]) == "0/2 nodes are available: 2 Insufficient cpu."
    assert reasons(errors[True]) == reasons(errors[False]) == {
        "node-0": [("Insufficient cpu", 1500, 2000)], "node-1": [("Insufficient cpu", 1000, 2000)]}


def test_a_term_group_that_comes_after_a_label_set_was_matched_counts_for_it():
    """The term groups a set of pod labels matches are found once and kept until a group comes or goes: a pod
    whose required anti-affinity (or preferred affinity) names labels already matched must count for the next pod
    carrying them, and must stop counting once it is gone."""
    def node_named(name):
        return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "4", "memory": str(2**33), "pods": "10"}}}

    def pod_named(name, labels, affinity=None):
        spec = {"containers": [{"name": "c", "image": "nginx:1"}]}
        if affinity:
            spec["affinity"] = affinity
        return Pod({"metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels}, "spec": spec})

    web = {"matchLabels": {"app": "web"}}
    guard = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": web, "topologyKey": "kubernetes.io/hostname"}]}}
    friend = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "podAffinityTerm": {"labelSelector": web, "topologyKey": "kubernetes.io/hostname"}}]}}
    for kind in ("DefaultProvider", "all"):
        nodes_ = [node_named(f"node-{i}") for i in range(3)]
        fast = build(kind, build_cluster(nodes_, []), vectorized=True)
        reference = build(kind, build_cluster(nodes_, []), vectorized=False)
        web_pods = (pod_named(f"web-{i}", {"app": "web"}) for i in range(4))
        for pod in (next(web_pods), pod_named("guard", {"app": "guard"}, guard), next(web_pods),
                    pod_named("friend", {"app": "friend"}, friend), next(web_pods)):
            check_forms_against_reference(fast, pod)  # the forms match the web pods' labels before each new group
            assert outcome(fast, pod) == outcome(reference, pod), pod.ref
        for scheduler in (fast, reference):
            for name in ("guard", "friend"):
                scheduler.cluster.remove_pod(scheduler.cluster.pods[name])  # keyed by uid: the name here
        pod = next(web_pods)
        check_forms_against_reference(fast, pod)
        assert outcome(fast, pod) == outcome(reference, pod), pod.ref
