"""``benchmarks/churn.py``: its pods and figures on made-up inputs, its argument errors, and the script itself at
a size CI affords against the real API server (envtest 1.26), for ours: every pod bound, none lost, every bound
pod with its ``Scheduled`` event, latency under a generous bound."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from benchmarks.churn import (
    REPLICASETS,
    churn_pods,
    event_metrics,
    main,
    per_minute,
    replicaset_name,
    rss_figures,
)
from benchmarks.faults import Bind
from benchmarks.harness.envtest import require_assets


def test_pods_a_third_owned_a_tenth_with_anti_affinity() -> None:
    owners = {replicaset_name(k): f"uid-{k}" for k in range(REPLICASETS)}
    pods = churn_pods(300, "s", owners, seed=1)
    assert [p["metadata"]["name"] for p in pods[:2]] == ["pod-000000", "pod-000001"]
    assert pods == churn_pods(300, "s", owners, seed=1) and pods != churn_pods(300, "s", owners, seed=2)
    kinds = Counter()
    for pod in pods:
        refs = pod["metadata"].get("ownerReferences")
        affinity = pod["spec"].get("affinity")
        if refs:
            (ref,) = refs
            assert ref["kind"] == "ReplicaSet" and ref["controller"] is True and ref["uid"] == owners[ref["name"]]
            assert pod["metadata"]["labels"] == {"app": ref["name"]}
            kinds["rs"] += 1
        elif affinity:
            (term,) = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            assert term["weight"] == 100 and term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
            assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == pod["metadata"]["labels"]
            kinds["anti"] += 1
        else:
            kinds["plain"] += 1
        requests = pod["spec"]["containers"][0]["resources"]["requests"]
        assert requests == {"cpu": "100m", "memory": "100Mi"} and pod["spec"]["schedulerName"] == "s"
    assert kinds == {"rs": 100, "anti": 30, "plain": 170}


def test_per_minute_and_rss_figures() -> None:
    created = {"a": 100.0, "b": 130.0, "c": 170.0, "d": 175.0}
    binds = {"a": Bind(100.004, 0, 1, "n", True), "b": Bind(130.010, 0, 2, "n", True),
             "c": Bind(225.0, 0, 3, "n", True)}  # d never bound; c bound in a minute without creates
    assert per_minute(created, binds, 100.0, 1.5) == [
        {"minute": 1, "created": 2, "bound": 2, "p50_ms": 4.0, "p99_ms": 10.0},
        {"minute": 2, "created": 2, "bound": 0, "p50_ms": 55000.0, "p99_ms": 55000.0},
        {"minute": 3, "created": 0, "bound": 1, "p50_ms": None, "p99_ms": None}]
    samples = [(0.0, 80.0, 1.0), (60.0, 85.0, 2.0), (120.0, 90.0, 3.0), (130.0, 99.0, 4.0)]
    assert rss_figures(samples)["rss_mb_minute2"] == 90.0 and rss_figures(samples)["rss_growth_pct"] == 10.0
    assert rss_figures(samples[:3])["rss_mb_minute2"] is None  # (the end itself is no minute-2 sample)


def test_event_metrics_picks_names_with_event() -> None:
    text = ('# HELP scheduler_events_total x\nscheduler_events_total{result="created"} 5\n'
            'scheduler_pending_pods{queue="active"} 0\nprevent_x 1\n')
    assert event_metrics(text) == {'scheduler_events_total{result="created"}': 5.0, "prevent_x": 1.0}


@pytest.mark.parametrize("argv", [["--rate", "0"], ["--minutes", "-1"], ["--nodes", "x"], ["--scheduler", "old"]])
def test_argument_errors_are_one_line(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("churn.py: error: argument " + argv[0]), err


def test_churn_small(capsys) -> None:
    """Ours at 10 pods/s on 10 nodes for 24 s, each pod deleted 5 s after its bind."""
    require_assets("1.26")
    assert main(["--scheduler", "ours", "--nodes", "10", "--rate", "10", "--minutes", "0.4", "--lifetime", "5"]) == 0
    (r,) = [json.loads(s) for s in capsys.readouterr().out.splitlines() if s.startswith("{")]
    assert "error" not in r, r
    assert r["created"] == r["pods"] == 240 and r["create_failures"] == 0, r
    assert r["bound"] == r["created"] and r["lost"] == 0 and r["overcommitted_nodes"] == 0, r
    assert r["bound_without_scheduled_event"] == 0, r
    assert r["p99_ms"] < 1500, r
    assert r["deleted"] > 0 and r["heartbeats"] > 0 and r["heartbeat_failures"] == 0, r
    assert r["cpu_seconds_per_1000_pods"] and r["rss_mb_end"], r
    assert r["scheduler_event_metrics"], r  # ours' /metrics names its events
    assert "--kube-api-qps" not in r["scheduler_command"], r  # its default client limits
