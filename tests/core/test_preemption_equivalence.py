"""Property test: preemption by arithmetic (the vectorised path) decides exactly as the reference.

On the vectorised path, ``selectVictimsOnNode`` adds up requests wherever the preemptor's predicates
allow it (:mod:`policy_scheduler.fastpath.preemption`), and a pod that fits nowhere gets its FitError
reasons from only the predicates that failed. Hypothesis draws clusters with pods of mixed priorities
(some with host ports, volumes, inter-pod (anti-)affinity), PodDisruptionBudgets and nominated pods,
and a preemptor; the scheduling error and the whole preemption result (node, victims, budgets violated,
nominations to clear, every node's outcome and reasons) must equal the reference's.
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


def attempt(scheduler, pod, nominated, budgets):
    """The scheduling error, and (for a FitError) the whole preemption result, in comparable form."""
    lister = NominatedPods()
    for raw, node in nominated:
        lister.nominate(Pod(raw), node)
    scheduler.nominated_pods = lister
    try:
        host = scheduler.schedule(pod)
    except FitError as e:
        error = (str(e), {n: [str(r) for r in rs] for n, rs in e.failed_predicates.items()})
        result = scheduler.preempt(pod, e, pdbs=budgets)
        nodes = {n: (o.outcome, [str(r) for r in o.reasons], o.detail,
                     None if o.victims is None else ([p.key for p in o.victims.pods], o.victims.num_pdb_violations))
                 for n, o in result.nodes.items()}
        return error, (result.node, [p.key for p in result.victims], [p.key for p in result.nominated_pods_to_clear],
                       result.num_pdb_violations, sorted(result.violated_pdbs), result.eligible, result.message, nodes)
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
    assert attempt(fast, pod, nominated, pdbs) == attempt(reference, pod, nominated, pdbs)
