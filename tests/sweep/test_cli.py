"""``policy-scheduler sweep`` end to end on this machine: the example, its outputs, the same rows however the cells
are run, a failed cell, --save and --resume, and Ctrl-C."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import yaml
from click.testing import CliRunner

from benchmarks.sweep import write_snapshot
from policy_scheduler.cli import main
from policy_scheduler.offline.report import result_schema
from policy_scheduler.sweep.cells import plan, run_cell
from policy_scheduler.sweep.results import csv_text, table
from policy_scheduler.sweep.spec import load_spec

from .conftest import (
    DEFAULT_CLUSTER,
    EXAMPLE,
    MODERN_CLUSTER,
    ROOT,
    sweep,
    sweep_json,
    without_time,
    write_spec,
)


def test_the_example(example_local):
    data = example_local
    jsonschema.Draft202012Validator(result_schema("sweep")).validate(data)
    assert (data["kind"], data["cells"], data["finished"], data["failed"], data["interrupted"], data["executor"]) == (
        "SweepResult", 18, 18, 0, False, "local")
    names = [(r["snapshot"], r["algorithm"], r["scenario"]) for r in data["rows"]]
    assert names == [(s, a, c) for s in ("default-cluster", "modern-cluster")
                     for a in ("default", "autoscaler", "upstream-example")
                     for c in ("as-is", "scale x1.5", "capacity web.yaml")]
    by_name = {n: r for n, r in zip(names, data["rows"])}
    # the bundled example's README: 24 of 32 queued pods scheduled under the DefaultProvider; 85 web pods fit
    assert by_name["default-cluster", "default", "as-is"]["placed"] == 24
    assert by_name["default-cluster", "default", "capacity web.yaml"]["capacity"]["replicas"] == 85
    assert sum(r["wallSeconds"] for r in data["rows"]) < 60


def test_the_same_rows_however_the_cells_run(example_local):
    one_worker = sweep_json(str(EXAMPLE), "--workers", "1")
    in_process = [run_cell(c) for c in plan(load_spec(EXAMPLE))]
    again = [run_cell(c) for c in plan(load_spec(EXAMPLE))]  # this process's cached snapshots
    reference = without_time(example_local["rows"])
    assert without_time(one_worker["rows"]) == reference
    assert without_time(in_process) == reference and without_time(again) == reference


def test_table_csv_and_yaml(example_local, tmp_path):
    lines = table(example_local).splitlines()
    assert lines[0].split() == ["SNAPSHOT", "ALGORITHM", "SCENARIO", "PLACED", "UNSCHED", "CPU", "mean/p90/max", "MEM",
                                "mean/p90/max", "NODES", "USED", "FREE", "cpu,mem", "SKEW", "PREEMPT", "SECONDS"]
    assert lines[1].split()[:5] == ["default-cluster", "default", "as-is", "24/32", "8"]
    assert lines[3].split()[3:6] == ["web.yaml", "85", "fit"]
    assert lines[-1].startswith("18 of 18 cells; ") and len(lines) == 21
    rows = list(csv.DictReader(io.StringIO(csv_text(example_local))))
    assert len(rows) == 18 and rows[0]["cpuP90"] == str(example_local["rows"][0]["cpu"]["p90"])
    assert json.loads(rows[0]["unschedulableByReason"]) == example_local["rows"][0]["unschedulable"]["byReason"]
    assert rows[2]["capacityReplicas"] == "85" and rows[0]["capacityReplicas"] == ""
    spec = write_spec(tmp_path, {"snapshots": [MODERN_CLUSTER], "algorithms": [{"provider": "DefaultProvider"}],
                                 "scenarios": ["as-is"], "metrics": ["placed", "zoneSkew"]})
    as_yaml = sweep(str(spec), "--workers", "1", "-o", "yaml")
    assert as_yaml.exit_code == 0
    (row,) = yaml.safe_load(as_yaml.stdout)["rows"]
    assert set(row) == {"snapshot", "algorithm", "scenario", "cell", "error", "pending", "placed", "gated", "zoneSkew"}
    as_csv = sweep(str(spec), "--workers", "1", "-o", "csv")
    assert as_csv.stdout.splitlines()[0] == "snapshot,algorithm,scenario,cell,error,pending,placed,gated,zoneSkewMax,zoneSkewWorkloads"


def test_a_failed_cell_is_reported_and_the_sweep_goes_on(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "nodes.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {unschedulable: maybe}\n")
    spec = write_spec(tmp_path, {"snapshots": [MODERN_CLUSTER, "broken"], "algorithms": [{"provider": "DefaultProvider"}],
                                 "scenarios": ["as-is", {"drain": {"nodes": ["a-1"]}}], "metrics": ["placed"]})
    result = sweep(str(spec), "--workers", "1", "-o", "json")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == "error: 2 of 4 cells failed (their rows say why)"
    errors = [r["error"] for r in json.loads(result.stdout)["rows"]]
    assert errors[:2] == [None, None]
    assert errors[2] == errors[3] == (f"{broken / 'nodes.yaml'}: document 0: Node n1: spec.unschedulable: "
                                      "expected a boolean, got \"maybe\"")
    text = sweep(str(spec), "--workers", "1")
    assert text.stdout.splitlines()[0].split()[-1] == "ERROR" and errors[2] in text.stdout


def test_save_and_resume(tmp_path):
    spec = write_spec(tmp_path, {"snapshots": [DEFAULT_CLUSTER, MODERN_CLUSTER], "metrics": ["placed", "cpu"],
                                 "algorithms": [{"provider": "DefaultProvider"}, {"provider": "ClusterAutoscalerProvider"}],
                                 "scenarios": ["as-is", {"scale": {"factor": 2}}]})
    saved = tmp_path / "results.json"
    first = sweep(str(spec), "--workers", "2", "--save", str(saved), "-o", "json")
    assert first.exit_code == 0 and json.loads(saved.read_text()) == json.loads(first.stdout)
    # a result cut short: one cell missing, one failed
    data = json.loads(saved.read_text())
    rows = data["rows"]
    data["rows"] = [rows[0], {**rows[1], "error": "worker lost: KilledWorker"}, *rows[3:]]
    saved.write_text(json.dumps(data))
    again = sweep(str(spec), "--workers", "1", "--resume", str(saved), "--save", str(saved), "-o", "json")
    assert again.exit_code == 0
    assert "8 cells (2 snapshots x 2 algorithms x 2 scenarios), 6 already in" in again.stderr
    assert again.stderr.count("] ") == 2  # two progress lines: the failed cell and the missing one
    assert without_time(json.loads(again.stdout)["rows"]) == without_time(rows)
    assert json.loads(saved.read_text()) == json.loads(again.stdout)
    # another scale factor is another cell: its rows are made again, the rest are kept
    spec.write_text(spec.read_text().replace("factor: 2", "factor: 3"))
    changed = sweep(str(spec), "--workers", "1", "--resume", str(saved), "-o", "json")
    assert "4 already in" in changed.stderr and changed.stderr.count("] ") == 4


def test_ctrl_c_prints_what_finished_and_leaves_no_process(tmp_path):
    for seed in (1, 2):
        write_snapshot(tmp_path / f"cluster-{seed}.json", 300, 1200, seed)
    spec = write_spec(tmp_path, {"snapshots": ["cluster-*.json"], "algorithms": [{"provider": "DefaultProvider"}],
                                 "scenarios": ["as-is", {"scale": {"factor": 1.5}}, {"scale": {"factor": 2}}],
                                 "metrics": ["placed", "wallTime"]})
    saved = tmp_path / "saved.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # As a shell starts a foreground job: SIGINT at its default and not blocked, whatever this test process (an
    # xdist worker that ran other tests before) has inherited or set; both pass through exec to the child.
    process = subprocess.Popen([sys.executable, "-m", "benchmarks.harness.foreground", "-m", "policy_scheduler.cli",
                                "sweep", str(spec), "--workers", "2", "-o", "json", "--save", str(saved)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        assert process.stderr.readline().startswith("sweep: 6 cells")
        assert process.stderr.readline().startswith("[1/6] ")
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        stopped = time.monotonic()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert time.monotonic() - stopped < 15
    assert process.returncode == 130, err
    data = json.loads(out)
    assert data["interrupted"] is True and 1 <= data["finished"] < 6 and len(data["rows"]) == data["finished"]
    assert err.splitlines()[-1] == f"interrupted: {data['finished']} of 6 cells finished"
    assert json.loads(saved.read_text()) == data
    deadline = time.monotonic() + 10  # the fork server and the resource tracker see their parent go, and go
    while _running_in_group(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running_in_group(process.pid) == []  # no worker left behind in the sweep's process group


def _running_in_group(pgid: int) -> list[str]:
    """The command lines of the processes of process group ``pgid`` that are not dead (a zombie waits for init)."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                running.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return running


def test_a_saved_result_is_a_report(example_local, tmp_path):
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(example_local))
    result = CliRunner().invoke(main, ["report", str(saved)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    html = (tmp_path / "saved.html").read_text()
    assert "policy-scheduler · sweep report" in html and "2 snapshots × 3 algorithms × 3 scenarios" in html
    broken = {**example_local, "rows": [{**example_local["rows"][0], "placed": "many"}]}
    saved.write_text(json.dumps(broken))
    result = CliRunner().invoke(main, ["report", str(saved)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.output == (f"error: {saved}: not a valid sweep -o json result: rows[0].placed: 'many' is not of "
                             "type 'integer'\n")
