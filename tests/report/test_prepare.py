"""The data preparation behind each report: what is aggregated, ordered, cut and packed for the page."""

from __future__ import annotations

import pytest

from policy_scheduler.report import capacity, compare, explain, simulate
from policy_scheduler.report.common import fit_error_histogram, reason_histogram
from policy_scheduler.report.units import (
    binary_bytes,
    cores,
    cores_text,
    fixed,
    millicores,
    pct_text,
    seconds_text,
)


def usage(cpu: int, memory: int, pods: int) -> dict:
    return {"cpu": f"{cpu}m", "memory": memory, "pods": pods}


def sim_node(name, zone, alloc, before_ns, after_ns, wb=None, wa=None):
    def total(by):
        return usage(sum(v[0] for v in by.values()), sum(v[1] for v in by.values()), sum(v[2] for v in by.values()))

    return {
        "node": name, "zone": zone, "allocatable": usage(*alloc),
        "requestedBefore": total(before_ns), "requestedAfter": total(after_ns),
        "requestedBeforeByNamespace": {k: usage(*v) for k, v in before_ns.items()},
        "requestedAfterByNamespace": {k: usage(*v) for k, v in after_ns.items()},
        "workloadsBefore": wb or {}, "workloadsAfter": wa or {},
    }


GI = 2**30
SIM = {
    "kind": "SimulateResult", "algorithm": "DefaultProvider",
    "placements": [
        {"pod": "shop/web-1", "node": "n1", "error": None, "requests": {"cpu": "500m", "memory": GI},
         "workload": "ReplicaSet shop/web"},
        {"pod": "shop/web-2", "node": "n2", "error": None, "requests": {"cpu": "500m", "memory": GI},
         "workload": "ReplicaSet shop/web"},
        {"pod": "default/huge", "node": None, "requests": {"cpu": "64000m", "memory": GI}, "workload": None,
         "error": "0/3 nodes are available: 1 NodeNotReady, 3 Insufficient cpu.",
         "reasons": {"Insufficient cpu": 3, "NodeNotReady": 1}},
        {"pod": "default/huge-2", "node": None, "requests": {"cpu": "64000m", "memory": GI}, "workload": None,
         "error": "0/3 nodes are available: 3 Insufficient cpu."},  # no "reasons": read from the message
    ],
    "nodes": [
        sim_node("n1", "z-a", (4000, 8 * GI, 110), {"shop": (1000, GI, 1)}, {"shop": (1500, 2 * GI, 2)},
                 {"ReplicaSet shop/web": 1}, {"ReplicaSet shop/web": 2}),
        sim_node("n2", "z-b", (4000, 8 * GI, 110), {"kube-system": (100, 0, 1)},
                 {"kube-system": (100, 0, 1), "shop": (500, GI, 1)}, {}, {"ReplicaSet shop/web": 1}),
        sim_node("n3", None, (2000, 4 * GI, 110), {}, {}),
    ],
}


def test_units():
    assert millicores("500m") == 500 and millicores("2") == 2000 and millicores(None) == 0


def test_one_precision_per_quantity_with_its_unit():
    """Cores with two decimals, memory with one in a binary unit, percentages with one, seconds with three."""
    assert [cores(m) for m in (1500, 250, 0, 5, 108_790, 1_234_567)] == ["1.50", "0.25", "0.00", "0.01", "108.79", "1,234.57"]
    assert cores_text(27_800) == "27.80 cores"
    assert [binary_bytes(b) for b in (GI, 1536 * 2**20, 256 * 2**20, 100, 0, 1024, 5 * 2**40)] == [
        "1.0 GiB", "1.5 GiB", "256.0 MiB", "100 B", "0 B", "1.0 KiB", "5.0 TiB"]
    assert [pct_text(v) for v in (6, 16.2, 100, None)] == ["6.0%", "16.2%", "100.0%", "-"]
    assert [seconds_text(v) for v in (0.025, 0.0025, 1234.5)] == ["0.025 s", "0.003 s", "1,234.500 s"]


def test_rounding_is_the_scripts():
    """Half away from zero from the shortest decimal form, as toLocaleString rounds (not Python's half to even
    on the binary value): the tables (formatted by the script) and the cards and charts (here) agree."""
    assert [fixed(v, 2) for v in (0.125, 0.375, 1.005, -0.125, 2.675)] == ["0.13", "0.38", "1.01", "-0.13", "2.68"]
    assert fixed(0.05, 1) == "0.1" and fixed(12345.25, 1) == "12,345.3"


def test_fit_error_histogram_reads_the_19_message():
    assert fit_error_histogram("0/12 nodes are available: 1 NodeNotReady, 12 Insufficient cpu, "
                               "3 node(s) had taints that the pod didn't tolerate.") == {
        "NodeNotReady": 1, "Insufficient cpu": 12, "node(s) had taints that the pod didn't tolerate": 3}
    assert fit_error_histogram("no nodes available to schedule pods") == {"no nodes available to schedule pods": 1}
    assert reason_histogram({"reasons": {"A": 2}, "error": "0/2 nodes are available: 9 B."}) == {"A": 2}


def test_simulate_model():
    m = simulate.prepare(SIM)
    assert (m.scheduled, m.unschedulable) == (2, 2)
    assert [n.name for n in m.nodes] == ["n1", "n2", "n3"]
    assert m.nodes[0].pods_added == 1 and m.nodes[0].pct("after", 0) == 37.5
    # stacking order: by cpu requested after
    assert m.namespaces == ["shop", "kube-system"]
    zones = {z.name: z for z in m.zones}
    assert list(zones) == ["z-a", "z-b", "(no zone)"]
    assert zones["z-a"].placed == 1 and zones["z-b"].after == (600, GI, 2)
    assert m.spread == [("ReplicaSet shop/web", {"z-a": (1, 2), "z-b": (0, 1)})]
    assert m.reasons == [("Insufficient cpu", 2, 6), ("NodeNotReady", 1, 1)]


def test_simulate_namespaces_beyond_the_top_are_other():
    nodes = [simulate.NodeModel(f"n{i}", None, (1000, 1, 1), (0, 0, 0), (0, 0, 0), {},
                                {f"ns{i}": (100 + i, 0, 1)}) for i in range(12)]
    order = simulate.namespace_order(nodes, top=8)
    assert order[:8] == [f"ns{i}" for i in range(11, 3, -1)] and order[-1] == "other"


def test_simulate_top_nodes_are_the_fullest_when_there_are_many():
    nodes = [simulate.NodeModel(f"n{i:02d}", None, (1000, 100, 10), (0, 0, 0), (i * 10, 0, 1)) for i in range(50)]
    shown = simulate.top_nodes(nodes, n=5)
    assert [n.name for n in shown] == ["n49", "n48", "n47", "n46", "n45"]
    assert simulate.top_nodes(nodes[:5], n=5) == nodes[:5]


def test_simulate_tables_pack_rows_and_pool_strings():
    m = simulate.prepare(SIM)
    q = simulate.queue_table(m)
    assert [c.label for c in q.columns][:7] == ["#", "Pod", "Workload", "CPU (cores)", "Memory", "Node", "Reason"]
    assert q.rows[0][:6] == [1, "shop/web-1", "ReplicaSet shop/web", 500, GI, "n1"]
    assert q.rows[2][5] == "unschedulable" and q.rows[2][-1] == "fail"
    assert q.pool.strings[q.rows[2][6]] == SIM["placements"][2]["error"]
    assert q.rows[0][6] == q.rows[1][6]  # the empty reason is pooled once
    nodes = simulate.node_table(m)
    assert nodes.rows[2] == ["n3", "", 0.0, 0.0, 0.0, 0.0, 0, 0, 0, 2000, 4 * GI, 110, ""]


def test_simulate_extra_keys_become_columns_and_sections():
    data = {**SIM, "preemptions": [{"pod": "default/huge", "victims": ["default/low-1"], "node": "n1"}]}
    data["placements"] = [dict(p) for p in SIM["placements"]]
    data["placements"][2]["nominatedNode"] = "n1"
    ctx = simulate.context(data)
    page = ctx["page"]
    assert [e.name for e in page.extras] == ["preemptions"]
    extra = page.tables[page.extras[0].table_id]
    assert [c.label for c in extra.columns] == ["pod", "victims", "node"]
    assert extra.rows == [["default/huge", '["default/low-1"]', "n1"]]
    q = page.tables["queue"]
    col = [c.label for c in q.columns].index("nominatedNode")
    assert [r[col] for r in q.rows] == ["", "", "n1", ""]


def test_simulate_result_without_the_breakdown_still_renders():
    old = {"placements": [{"pod": "a/b", "node": "n1", "error": None}],
           "nodes": [{"node": "n1", "allocatable": usage(1000, GI, 10), "requestedBefore": usage(0, 0, 0),
                      "requestedAfter": usage(100, 0, 1)}]}
    ctx = simulate.context(old)
    assert ctx["model"].namespaces == [simulate.ALL_NAMESPACES]
    assert "n1" in str(ctx["usage_chart"]) and ctx["spread"] == []


EXPLAIN = {
    "kind": "ExplainResult", "pod": "shop/p", "host": "b", "error": None, "extenders": [],
    "nodes": {
        "a": {"fit": True, "predicates": {"P1": {"fit": True, "reasons": []}},
              "priorities": {"Least": {"score": 5, "weight": 1}, "Spread": {"score": 10, "weight": 2}},
              "extenders": {}, "total": 25},
        "b": {"fit": True, "predicates": {"P1": {"fit": True, "reasons": []}},
              "priorities": {"Least": {"score": 5, "weight": 1}, "Spread": {"score": 10, "weight": 2}},
              "extenders": {}, "total": 25},
        "c": {"fit": True, "predicates": {"P1": {"fit": True, "reasons": []}},
              "priorities": {"Least": {"score": 9, "weight": 1}, "Spread": {"score": 0, "weight": 2}},
              "extenders": {}, "total": 9},
        "d": {"fit": False, "predicates": {"P1": {"fit": False, "reasons": ["MatchNodeSelector"]}},
              "priorities": {}, "extenders": {}, "total": None},
    },
}


def test_explain_host_tie_set_and_order():
    m = explain.prepare(EXPLAIN)
    assert [n.name for n in m.nodes] == ["b", "a", "c", "d"]
    assert m.tie_set == ["b", "a"]
    assert m.priorities == ["Least", "Spread"] and m.weights == {"Least": 1, "Spread": 2}
    assert explain.failure_counts(m) == [("P1", ["d"])]


def test_explain_grid_cells():
    m = explain.prepare(EXPLAIN)
    grid = explain.grid_table(m)
    assert grid.rows[0] == ["b", "yes", 25, 0, "host tie fit"]
    assert grid.rows[3][:3] == ["d", "no", None] and grid.rows[3][-1] == "nofit"
    assert grid.pool.strings[grid.rows[3][3] - 1] == "MatchNodeSelector (node(s) didn't match node selector)"
    scores = explain.score_table(m)
    assert scores.rows == [["b", 5, 10, 25, "host tie fit"], ["a", 5, 10, 25, "tie fit"], ["c", 9, 0, 9, "fit"]]
    assert [c.weight for c in scores.columns[1:3]] == [1, 2]


def test_explain_single_feasible_node_is_its_own_tie_set():
    data = {**EXPLAIN, "host": "d", "nodes": {"d": {"fit": True, "predicates": {}, "priorities": {}, "extenders": {},
                                                   "total": None}, "e": EXPLAIN["nodes"]["d"]}}
    m = explain.prepare(data)
    assert m.tie_set == ["d"]
    ctx = explain.context(data)
    assert ctx["heatmap"] is None and ctx["feasible"] == 1


def test_explain_extender_verdicts_and_scores():
    data = {**EXPLAIN, "nodes": {**EXPLAIN["nodes"]}}
    data["nodes"]["a"] = {**EXPLAIN["nodes"]["a"], "extenders": {"http://x": {"fit": True, "reasons": [], "score": 3,
                                                                            "weight": 2}}}
    data["nodes"]["d"] = {**EXPLAIN["nodes"]["d"], "extenders": {"http://x": {"fit": False, "reasons": ["maintenance"],
                                                                            "score": None, "weight": None}}}
    m = explain.prepare(data)
    assert m.extenders == ["http://x"] and "extender http://x" in m.priorities
    grid = explain.grid_table(m)
    d = next(r for r in grid.rows if r[0] == "d")
    assert grid.pool.strings[d[4] - 1] == "maintenance"
    assert ("extender http://x", ["d"]) in explain.failure_counts(m)


def test_explain_unschedulable():
    data = {**EXPLAIN, "host": None, "error": "0/1 nodes are available: 1 MatchNodeSelector.",
            "nodes": {"d": EXPLAIN["nodes"]["d"]}}
    ctx = explain.context(data)
    assert ctx["model"].tie_set == [] and ctx["reason_chart"] is not None and ctx["heatmap"] is None


CAPACITY = {
    "kind": "CapacityResult", "replicas": 5, "placements": {"n1": 3, "n2": 2},
    "stopReason": "0/3 nodes are available: 1 MatchNodeSelector, 2 Insufficient cpu.",
    "pod": "default/web", "requests": {"cpu": "500m", "memory": GI}, "max": None,
    "stopReasons": {"Insufficient cpu": 2, "MatchNodeSelector": 1},
    "nodes": [{"node": "n1", "zone": "z-a", "replicas": 3, "reasons": ["Insufficient cpu"]},
              {"node": "n2", "zone": "z-b", "replicas": 2, "reasons": ["Insufficient cpu"]},
              {"node": "n3", "zone": "z-b", "replicas": 0, "reasons": ["MatchNodeSelector"]}],
}


def test_capacity_model_and_table():
    m = capacity.prepare(CAPACITY)
    assert m.zones == {"z-a": 3, "z-b": 2}
    t = capacity.node_table(m)
    assert [r[:3] for r in t.rows] == [["n1", "z-a", 3], ["n2", "z-b", 2], ["n3", "z-b", 0]]
    assert t.pool.strings[t.rows[2][3]] == "MatchNodeSelector (node(s) didn't match node selector)"


def test_capacity_old_result_and_max():
    m = capacity.prepare({"replicas": 3, "placements": {"n1": 3}, "stopReason": None})
    assert [(n.name, n.replicas) for n in m.nodes] == [("n1", 3)] and m.stop_reasons == {}
    old = capacity.prepare({"replicas": 1, "placements": {"n1": 1}, "stopReason": "0/1 nodes are available: 1 Insufficient cpu."})
    assert old.stop_reasons == {"Insufficient cpu": 1}
    capped = capacity.prepare({**CAPACITY, "stopReason": None, "stopReasons": {}, "max": 5,
                               "nodes": [{**n, "reasons": []} for n in CAPACITY["nodes"]]})
    t = capacity.node_table(capped)
    assert t.pool.strings[t.rows[0][3]] == "stopped at --max 5"


def move(pod, a, b, ea=None, eb=None):
    return {"pod": pod, "a": {"node": a, "error": ea}, "b": {"node": b, "error": eb}}


def test_compare_flows_group_moves_and_cut_to_the_busiest_nodes():
    moves = [compare.Move(f"p{i}", f"a{i % 20}", None, "b1", None) for i in range(40)]
    moves.append(compare.Move("lost", "a0", None, None, "0/3 nodes are available: 3 Insufficient cpu."))
    flows, left, right = compare.flows(moves, top=5)
    assert len(left) == 6 and left[-1] == ("15 other nodes", 30)
    assert right == [("b1", 40), ("unschedulable", 1)]
    assert sum(f.count for f in flows) == 41
    lost = next(f for f in flows if f.target == "unschedulable")
    assert lost.source == "a0" and "lost" in lost.tooltip


def test_compare_model_tables_and_top_nodes():
    data = {"kind": "CompareResult", "a": "A", "b": "B", "pods": 3,
            "differences": [move("x/1", "n1", "n2"), move("x/2", "n1", None, None, "0/2 nodes are available: 2 X.")],
            "scheduled": {"a": 3, "b": 2},
            "nodes": [{"node": "n1", "zone": None, "allocatable": usage(1000, GI, 10), "requestedBefore": usage(0, 0, 0),
                       "requestedA": usage(500, 0, 2), "requestedB": usage(0, 0, 0)},
                      {"node": "n2", "zone": "z", "allocatable": usage(1000, GI, 10), "requestedBefore": usage(0, 0, 0),
                       "requestedA": usage(0, 0, 0), "requestedB": usage(250, 0, 1)}]}
    m = compare.prepare(data)
    assert [mv.kind for mv in m.moves] == ["moved", "lost"]
    t = compare.moves_table(m)
    assert t.rows[1][3] == "unschedulable" and t.pool.strings[t.rows[1][4]] == "0/2 nodes are available: 2 X."
    assert [n.name for n in compare.top_nodes(m, n=1)] == ["n1"]
    nodes = compare.node_table(m)
    assert nodes.rows[0] == ["n1", "", 50.0, 0.0, 0.0, 0.0, 2, 0, -2, "diff"]


@pytest.mark.parametrize("module", [simulate, explain, capacity, compare])
def test_every_context_has_a_page_with_tables(module, example_results):
    name = module.__name__.rsplit(".", 1)[-1]
    ctx = module.context(example_results[name])
    assert ctx["page"].kind == name and ctx["page"].tables and ctx["page"].cards
