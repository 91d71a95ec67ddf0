"""Every command that prints a table, at a terminal's width (``COLUMNS``): no line wider than it, nothing a message
said lost (wrapped, not cut), the low-value columns dropped first; ``-o wide`` and a pipe (no width known) print
every column in full; ``-o json`` is the same whatever the width."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main

ROOT = Path(__file__).resolve().parents[2]
PRIORITY = "policy_scheduler/offline/examples/priority-cluster"
GATE = ("--feature-gates", "PodPriority=true")

#: Each command that prints a table, on the bundled examples (the sweep on one worker: in-process rows).
COMMANDS = {
    "simulate": ("simulate",),
    "explain unschedulable": ("explain", "default/needs-nvme"),
    "explain scheduled": ("explain", "shop/checkout-7"),
    "capacity": ("capacity", "examples/pods/web.yaml"),
    "compare": ("compare", "DefaultProvider", "ClusterAutoscalerProvider"),
    "simulate preemption": ("simulate", "--cluster", PRIORITY, *GATE),
    "explain preemption": ("explain", "payments/ledger-0", "--cluster", PRIORITY, *GATE),
    "compare preemption": ("compare", "DefaultProvider", "DefaultProvider", "--cluster", PRIORITY,
                           "--feature-gates-b", "PodPriority=true"),
    "simulate devices": ("simulate", "--cluster", "examples/dra"),
    "sweep": ("sweep", "examples/sweep/sweep.yaml", "--workers", "1"),
    "providers": ("providers",),
    "predicates": ("predicates",),
    "priorities": ("priorities",),
    "policy validate": ("policy", "validate", "policies/all-arguments.yaml"),
}


def run(args: tuple[str, ...], columns: int | None = None) -> str:
    env = {"COLUMNS": str(columns)} if columns else {}
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def without_timing(text: str) -> str:
    """The sweep's wall times (the SECONDS column, the summary's cell time) vary from run to run."""
    return re.sub(r"\d+\.\d\d( |$)|\d+\.\d s of cell time", "T", text, flags=re.M)


@pytest.fixture(scope="module", autouse=True)
def _in_the_repository(request):
    """The commands name the repository's examples by relative path, as the README does."""
    mp = pytest.MonkeyPatch()
    mp.chdir(ROOT)
    yield
    mp.undo()


@pytest.fixture(scope="module")
def full() -> dict[str, str]:
    """Each command's output with no width known (a pipe): every column, in full."""
    return {name: run(args) for name, args in COMMANDS.items()}


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("columns", [80, 120])
def test_every_line_fits_the_width_and_no_word_is_lost(name, columns, full):
    fitted = run(COMMANDS[name], columns)
    too_wide = [line for line in fitted.splitlines() if len(line) > columns]
    assert not too_wide, "\n".join(too_wide)
    if max(map(len, full[name].splitlines())) <= columns:
        assert without_timing(fitted) == without_timing(full[name])  # what fits is printed as it was
    # Wrapping moves words, it drops none: each FitError of a pod or of the explained pod is whole.
    if name.startswith(("simulate", "explain")):
        for message in re.findall(r"\d+/\d+ nodes are available: .*$", full[name], flags=re.M):
            assert "".join(message.split()) in "".join(fitted.split())  # a word longer than the column breaks


@pytest.mark.parametrize("name", COMMANDS)
def test_wide_prints_every_column_in_full_whatever_the_width(name, full):
    wide = run((*COMMANDS[name], "-o", "wide"), 80)
    assert without_timing(wide) == without_timing(full[name])


def test_the_low_value_columns_go_first():
    simulate = run(COMMANDS["simulate"], 80)
    usage_header = next(line for line in simulate.splitlines() if line.startswith("NODE "))
    assert usage_header.split() == ["NODE", "CPU", "BEFORE", "CPU", "AFTER", "MEM", "BEFORE", "MEM", "AFTER", "PODS"]
    assert simulate.splitlines()[0].split() == ["POD", "NODE", "REASON"]
    sweep = run(COMMANDS["sweep"], 80).splitlines()
    assert sweep[0].split() == ["SNAPSHOT", "ALGORITHM", "SCENARIO", "PLACED", "UNSCHED"]
    sweep_120 = run(COMMANDS["sweep"], 120).splitlines()
    assert sweep_120[0].split() == ["SNAPSHOT", "ALGORITHM", "SCENARIO", "PLACED", "UNSCHED", "CPU", "mean/p90/max",
                                    "MEM", "mean/p90/max", "NODES", "USED"]
    scores = run(COMMANDS["explain scheduled"], 80).split("Priority scores of the feasible nodes")[1].splitlines()
    assert scores[1].split()[0] == "NODE" and scores[1].split()[-1] == "TOTAL"
    assert len(scores[2].split()) < len(run(COMMANDS["explain scheduled"]).split("Priority scores")[1].splitlines()[2]
                                         .split())  # some priorities' scores went, the total stayed


@pytest.mark.parametrize("name", ["simulate", "explain unschedulable", "capacity", "compare", "explain preemption"])
def test_json_is_the_same_whatever_the_width(name):
    args = (*COMMANDS[name], "-o", "json")
    assert json.loads(run(args, 80)) == json.loads(run(args))


def test_a_terminal_without_columns_is_fitted_to_its_own_width():
    """The console script on a real terminal (a pseudo-terminal 90 columns wide), with no COLUMNS."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 90, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    process = subprocess.Popen([sys.executable, "-c", "from policy_scheduler.cli import main; main()", "simulate"],
                               stdout=terminal, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.wait(60) == 0
    lines = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    assert lines[0].split() == ["POD", "NODE", "REASON"] and len(lines) > 40
    assert max(map(len, lines)) <= 90 < max(map(len, run(COMMANDS["simulate"]).splitlines()))
