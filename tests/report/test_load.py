"""A saved result: its kind is detected, it is validated, and anything wrong is one line, exit 2."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.report import ReportInputError, detect_kind, load_result

KINDS = {"simulate": "SimulateResult", "explain": "ExplainResult", "capacity": "CapacityResult",
         "compare": "CompareResult", "migrate": "MigrateResult"}


@pytest.mark.parametrize("command", list(KINDS))
def test_each_output_carries_its_kind(example_results, command):
    assert example_results[command]["kind"] == KINDS[command]
    assert detect_kind(example_results[command]) == KINDS[command]


@pytest.mark.parametrize("command", list(KINDS))
def test_kind_is_inferred_for_results_saved_without_it(example_results, command):
    old = {k: v for k, v in example_results[command].items() if k != "kind"}
    assert detect_kind(old) == KINDS[command]


@pytest.mark.parametrize("command", list(KINDS))
def test_load_json_and_yaml(tmp_path, example_results, command):
    data = example_results[command]
    (tmp_path / "r.json").write_text(json.dumps(data))
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(data))
    assert load_result(str(tmp_path / "r.json")) == data
    assert load_result(str(tmp_path / "r.yaml")) == data


def _bad_files(example_results):
    sim = example_results["simulate"]
    wrong_type = json.loads(json.dumps(sim))
    wrong_type["placements"][3]["node"] = 5
    missing = {k: v for k, v in example_results["capacity"].items() if k != "replicas"}
    return {
        "garbage.json": ("{not json", "garbage.json: invalid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        "empty.json": ("", "empty file"),
        "list.json": ("[1, 2]", "not a policy-scheduler result: expected a JSON object, got an array"),
        "policy.json": (json.dumps({"kind": "Policy", "apiVersion": "v1"}),
                        'unknown kind "Policy" (expected one of SimulateResult, ExplainResult, CapacityResult, CompareResult, '
                        'MigrateResult, SweepResult)'),
        "other.json": (json.dumps({"hello": "world"}), 'not a policy-scheduler result: no "kind" field'),
        "wrong-type.json": (json.dumps(wrong_type), "not a valid simulate -o json result: placements[3].node: 5 is not of type"),
        "missing.json": (json.dumps(missing), "not a valid capacity -o json result: (top level): 'replicas' is a required property"),
        "text.txt": ("just some words", "text.txt: not a policy-scheduler result: expected a mapping, got \"just some words\""),
        "bad.yaml": ("kind: SimulateResult\nplacements:\n- pod: a\n  node: b\n node: c\n",
                     "bad.yaml: invalid YAML: bad indentation at line 5, column 2 (in the mapping that starts at "
                     "line 1, column 1)"),
    }


def test_bad_files_are_one_line_errors_exit_2(tmp_path, example_results):
    for name, (content, message) in _bad_files(example_results).items():
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(ReportInputError) as e:
            load_result(str(path))
        assert str(e.value).startswith(f"{path}: "), name
        assert message in str(e.value), (name, str(e.value))
        result = CliRunner().invoke(main, ["report", str(path), "-o", str(tmp_path / "out.html")])
        assert result.exit_code == 2, (name, result.output)
        lines = result.output.strip().splitlines()
        assert lines == [f"error: {e.value}"], (name, result.output)
        assert not (tmp_path / "out.html").exists()


def test_missing_file_and_directory(tmp_path):
    for path, message in ((tmp_path / "nope.json", "cannot read: No such file or directory"),
                          (tmp_path, "cannot read: Is a directory")):
        result = CliRunner().invoke(main, ["report", str(path)])
        assert result.exit_code == 2
        assert result.output.strip() == f"error: {path}: {message}"


def test_huge_schema_errors_stay_short(tmp_path, example_results):
    data = json.loads(json.dumps(example_results["simulate"]))
    data["nodes"] = {"not": "a list " * 1000}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportInputError) as e:
        load_result(str(path))
    assert len(str(e.value)) < 400 and "\n" not in str(e.value)


def test_unwritable_report_path_is_a_one_line_error(tmp_path, example_results):
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(example_results["capacity"]))
    target = tmp_path / "no-such-dir" / "r.html"
    result = CliRunner().invoke(main, ["report", str(saved), "-o", str(target)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {target}: cannot write the report: No such file or directory"


def test_report_flag_to_a_directory_is_a_one_line_error(tmp_path, web_pod):
    result = CliRunner().invoke(main, ["capacity", str(web_pod), "--max", "1", "--report", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {tmp_path}: cannot write the report: Is a directory"
