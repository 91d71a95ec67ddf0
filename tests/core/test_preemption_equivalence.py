"""Property test: preemption by arithmetic (the vectorised path) decides exactly as the reference.

On the vectorised path, ``selectVictimsOnNode`` adds up requests wherever the preemptor's predicates
allow it (:mod:`policy_scheduler.fastpath.preemption`), and a pod that fits nowhere gets its FitError
reasons from only the predicates that failed. Hypothesis draws clusters with pods of mixed priorities
(some with host ports, volumes, inter-pod (anti-)affinity), PodDisruptionBudgets and nominated pods,
and a preemptor; the scheduling error and the whole preemption result (node, victims, budgets violated,
nominations to clear, every node's outcome and reasons) must equal the reference's.

Without ``detail`` (the daemon's call), the vectorised path picks from victim tables kept per class of
preemptors and brought up to date as pods come and go (:class:`~policy_scheduler.fastpath.preemption.VictimTable`);
its decision must be the same, for one preemptor and along histories of preemptions, pods added and removed,
nominations and budgets changing, with preemptors of a few templates (so that tables are reused).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.core.fit_error import FitError
from policy_scheduler.core.nominated import NominatedPods
from policy_scheduler.errors import SchedulingError
from policy_scheduler.model.disruption import PodDisruptionBudget
from policy_scheduler.model.pod import Pod
from tests.core.test_vectorized_equivalence import APPS, build, build_cluster, nodes, pods
from tests.core.test_vectorized_equivalence import node as node_raw

PRIORITIES = [-10, 0, 0, 5, 10, 100]


@st.composite
def prioritised(draw, prefix, bound_to=None, plain=3):
    raw = draw(pods(prefix, bound_to=bound_to))
    raw["spec"]["priority"] = draw(st.sampled_from(PRIORITIES))
    affinity = raw["spec"].get("affinity") or {}
    if draw(st.integers(0, plain)) > 0:  # most pods without inter-pod terms: those leave it to the reference
        affinity.pop("podAffinity", None)
        affinity.pop("podAntiAffinity", None)
    if draw(st.integers(0, 6)) == 0:
        raw["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return raw


@st.composite
def scenarios(draw):
    node_list = draw(nodes())
    plain = draw(st.booleans())  # half the clusters: Ready, untainted, schedulable nodes (preemption may help on all)
    for raw in node_list:
        if plain:
            raw["spec"] = {}
            raw["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        if draw(st.booleans()):  # roomy enough for evictions to make room
            raw["status"]["allocatable"].update({"cpu": "3", "memory": str(3 * 2**30), "pods": "12"})
    names = [n["metadata"]["name"] for n in node_list]
    existing = [draw(prioritised(f"existing-{i}", bound_to=draw(st.sampled_from(names))))
                for i in range(draw(st.integers(0, 12)))]
    nominated = [(draw(prioritised(f"nominated-{i}")), draw(st.sampled_from(names)))
                 for i in range(draw(st.integers(0, 3)))]
    budgets = [{"metadata": {"name": f"pdb-{app}", "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": app}}},
                "status": {"disruptionsAllowed": draw(st.integers(0, 1))}}
               for app in draw(st.lists(st.sampled_from(APPS), unique=True, max_size=2))]
    preemptor = draw(prioritised("preemptor", plain=1))
    preemptor["spec"]["priority"] = draw(st.sampled_from([5, 10, 1000]))
    if draw(st.integers(0, 3)) > 0:  # mostly one that tolerates every taint, so that nodes remain to preempt on
        preemptor["spec"]["tolerations"] = [{"operator": "Exists"}]
    return node_list, existing, nominated, budgets, preemptor


def attempt(scheduler, pod, nominated, budgets, detail=True):
    """The scheduling error, and (for a FitError) the preemption result in comparable form: the decision, and
    with ``detail`` every node's outcome."""
    lister = NominatedPods()
    for raw, node in nominated:
        lister.nominate(Pod(raw), node)
    scheduler.nominated_pods = lister
    return attempt_with(scheduler, pod, budgets, detail)


def attempt_with(scheduler, pod, budgets, detail=True):
    try:
        host = scheduler.schedule(pod)
    except FitError as e:
        error = (str(e), {n: [str(r) for r in rs] for n, rs in e.failed_predicates.items()})
        result = scheduler.preempt(pod, e, pdbs=budgets, detail=detail)
        decision = (result.node, [p.key for p in result.victims], [p.key for p in result.nominated_pods_to_clear],
                    result.num_pdb_violations, sorted(result.violated_pdbs), result.eligible, result.message)
        if not detail:
            return error, decision
        nodes = {n: (o.outcome, [str(r) for r in o.reasons], o.detail,
                     None if o.victims is None else ([p.key for p in o.victims.pods], o.victims.num_pdb_violations))
                 for n, o in result.nodes.items()}
        return error, (*decision, nodes)
    except SchedulingError as e:
        return str(e), None
    return host, None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios(), st.sampled_from(["DefaultProvider", "all"]))
def test_preemption_by_arithmetic_matches_reference(scenario, kind):
    node_list, existing, nominated, budgets, preemptor = scenario
    fast = build(kind, build_cluster(node_list, existing), vectorized=True)
    reference = build(kind, build_cluster(node_list, existing), vectorized=False)
    pdbs = [PodDisruptionBudget.from_dict(b) for b in budgets]
    pod = Pod(preemptor)
    expected = attempt(reference, pod, nominated, pdbs)
    assert attempt(fast, pod, nominated, pdbs) == expected
    error, result = expected
    decision = None if result is None else result[:-1]
    daemon = build(kind, build_cluster(node_list, existing), vectorized=True)  # its own tie rotation
    assert attempt(daemon, pod, nominated, pdbs, detail=False) == (error, decision)


TEMPLATES = 3  # preemptor templates per history: each is one class of victim table


def _crowding(raw, cpu):
    """A pod the arithmetic answers for (no inter-pod terms, host ports, volumes or node selector), asking ``cpu``."""
    spec = raw["spec"]
    (spec.get("affinity") or {}).pop("podAffinity", None)
    (spec.get("affinity") or {}).pop("podAntiAffinity", None)
    for key in ("volumes", "nodeSelector"):
        spec.pop(key, None)
    container = spec["containers"][0]
    container.pop("ports", None)
    container["resources"]["requests"]["cpu"] = f"{cpu}m"
    return raw


@st.composite
def histories(draw):
    node_list, existing, nominated, budgets, _ = draw(scenarios())
    crowded = draw(st.booleans())
    if crowded:
        node_list += [draw(node_raw(f"node-{i}")) for i in range(len(node_list), draw(st.integers(len(node_list), 12)))]
    names = [n["metadata"]["name"] for n in node_list]  # half the histories: full nodes, preemptors that evict, tables reused
    if crowded:
        for raw in node_list:
            raw["spec"] = {}
            raw["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            if draw(st.integers(0, 3)) == 0:  # a check fails there, but evicting could help as far as 1.9 knows
                raw["status"]["conditions"].append({"type": "DiskPressure", "status": "True"})
            raw["status"]["allocatable"].update({"cpu": "2", "memory": str(4 * 2**30), "pods": "6"})
        for name in names:
            for i in range(draw(st.integers(2, 4))):
                raw = _crowding(draw(prioritised(f"crowd-{name}-{i}", bound_to=name)), draw(st.sampled_from([400, 500, 600])))
                raw["spec"]["priority"] = draw(st.sampled_from([-10, 0, 5]))
                existing.append(raw)
    templates = []
    for t in range(TEMPLATES):
        raw = draw(prioritised(f"template-{t}", plain=6))
        raw["spec"]["priority"] = draw(st.sampled_from([5, 10, 1000]))
        if crowded:
            raw = _crowding(raw, draw(st.sampled_from([1000, 1500, 2000])))
            raw["spec"].pop("affinity", None)
            raw["spec"]["priority"] = draw(st.sampled_from([10, 1000]))
        raw["spec"]["tolerations"] = [{"operator": "Exists"}]
        templates.append(raw)
    steps = []
    for i in range(draw(st.integers(4, 14))):
        kind = draw(st.sampled_from(["preempt", "preempt", "preempt", "add", "remove", "budget"]))
        if kind == "preempt":
            steps.append(("preempt", _named(templates[draw(st.integers(0, TEMPLATES - 1))], f"preemptor-{i}")))
        elif kind == "add":
            steps.append(("add", draw(prioritised(f"added-{i}", bound_to=draw(st.sampled_from(names))))))
        elif kind == "remove":
            steps.append(("remove", draw(st.integers(0, 10**6))))
        else:
            steps.append(("budget", (draw(st.sampled_from(APPS)), draw(st.integers(0, 1)))))
    return node_list, existing, nominated, budgets, steps


def _named(raw, name):
    return {**raw, "metadata": {**raw["metadata"], "name": name, "uid": f"uid-{name}"}}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories(), st.sampled_from(["DefaultProvider", "all"]))
def test_victim_tables_along_a_history_decide_as_the_reference(history, kind):
    """Each preemptor's decision, the vectorised path without detail against the reference; each decision is then
    carried out on both (victims deleted, the preemptor nominated, nominations cleared), as the daemon does."""
    node_list, existing, nominated, budgets, steps = history
    fast = build(kind, build_cluster(node_list, existing), vectorized=True)
    reference = build(kind, build_cluster(node_list, existing), vectorized=False)
    listers = {id(fast): NominatedPods(), id(reference): NominatedPods()}
    for scheduler in (fast, reference):
        scheduler.nominated_pods = listers[id(scheduler)]
        for raw, node in nominated:
            listers[id(scheduler)].nominate(Pod(raw), node)
    budgets = {b["metadata"]["name"]: b for b in budgets}
    for kind_of_step, value in steps:
        pdbs = [PodDisruptionBudget.from_dict(b) for b in budgets.values()]
        if kind_of_step == "preempt":
            pod = Pod(value)
            outcome = attempt_with(fast, pod, pdbs, detail=False)
            expected = attempt_with(reference, pod, pdbs)
            assert outcome == (expected[0], None if expected[1] is None else expected[1][:-1])
            if expected[1] is None:
                if isinstance(expected[0], str) and expected[0] in fast.cluster.node_infos:  # it fits: it is bound
                    for scheduler in (fast, reference):
                        scheduler.cluster.assume(pod, expected[0])
                continue
            if expected[1][0] is None:
                continue
            node, victims, cleared = expected[1][:3]
            for scheduler in (fast, reference):
                for key in victims:
                    scheduler.cluster.remove_pod(scheduler.cluster.pods[key])
                lister = listers[id(scheduler)]
                waiting = {p.key: p for p, _ in lister}
                for key in cleared:
                    lister.remove(waiting[key])
                lister.nominate(pod, node)
        elif kind_of_step == "add":
            pod = Pod(value)
            if pod.key not in fast.cluster.pods:
                fast.cluster.add_pod(pod)
                reference.cluster.add_pod(pod)
        elif kind_of_step == "remove" and fast.cluster.pods:
            key = sorted(fast.cluster.pods)[value % len(fast.cluster.pods)]
            for scheduler in (fast, reference):
                scheduler.cluster.remove_pod(scheduler.cluster.pods[key])
        elif kind_of_step == "budget":
            app, allowed = value
            budgets[f"pdb-{app}"] = {"metadata": {"name": f"pdb-{app}", "namespace": "default"},
                                    "spec": {"selector": {"matchLabels": {"app": app}}},
                                    "status": {"disruptionsAllowed": allowed}}


def test_a_node_a_check_rejects_is_no_candidate_of_the_victim_table():
    """DiskPressure is no reason 1.9 gives up on a node for, but the preemptor fits there with no eviction: the
    table's arithmetic (which takes the pod-independent checks as passed) must not offer it. Both nodes tie on every
    key, so the first, under pressure, would win."""
    def node_with(name, pressure):
        conditions = [{"type": "Ready", "status": "True"}]
        if pressure:
            conditions.append({"type": "DiskPressure", "status": "True"})
        return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "2", "memory": str(2**32), "pods": "10"}, "conditions": conditions}}

    def pod_raw(name, cpu, priority, node_name=None):
        spec = {"priority": priority, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
        if node_name:
            spec["nodeName"] = node_name
        return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}

    node_list = [node_with("node-0", True), node_with("node-1", False)]
    existing = [pod_raw("a", "1500m", 0, "node-0"), pod_raw("b", "1900m", 0, "node-1")]
    preemptor = Pod(pod_raw("p", "1", 10))
    for kind in ("DefaultProvider", "all"):
        reference = attempt(build(kind, build_cluster(node_list, existing), vectorized=False), preemptor, [], [])
        assert reference[1][:2] == ("node-1", ["b"])  # victims by key: the uid
        daemon = attempt(build(kind, build_cluster(node_list, existing), vectorized=True), preemptor, [], [], detail=False)
        assert daemon == (reference[0], reference[1][:-1])
