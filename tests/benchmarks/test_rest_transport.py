"""``benchmarks/rest_transport.py`` against a real API server: both paths write every Event, and it prints one
row of figures for each."""

from __future__ import annotations

import re

from benchmarks.harness.envtest import require_assets
from benchmarks.rest_transport import main


def test_both_paths_post_and_print_their_cpu_per_request(capsys) -> None:
    require_assets("1.26")
    assert main(["--requests", "20"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "ms" not in line]
    assert [r.split(" | ")[0] for r in rows] == ["| keep-alive transport (kube/transport.py)",
                                                 "| kubernetes client REST layer (urllib3)"]
    for row in rows:
        cpu, wall = re.findall(r"\| ([0-9.]+) ", row + " ")
        assert 0 < float(cpu) and 0 < float(wall)
