"""``benchmarks/extender_throughput.py`` on a small cluster: it runs, and its checks hold."""

from __future__ import annotations

import json

from benchmarks.extender_throughput import main


def test_extender_benchmark_small(capsys):
    assert main(["--nodes", "40", "--pods", "30", "--seed", "3"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["nodeCacheCapable"] for line in lines] == [False, True]
    assert lines[0]["placementFNV64a"] == lines[1]["placementFNV64a"]
    assert lines[1]["bytes_sent_per_pod"] < lines[0]["bytes_sent_per_pod"]
    assert all(line["extender_errors"] == 0 and line["extender_calls"]["filter"] == 30 for line in lines)
