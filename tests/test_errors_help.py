"""Errors that help (issue 47, part 4): an unknown name gets the closest registered ones, a short list of
valid names is given whole, a misspelt flag gets click's suggestion on every command, and a file that does
not parse is one line in the format it is in, with line and column. Each message is checked as the exact
line a user sees."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main
from policy_scheduler.errors import did_you_mean

ROOT = Path(__file__).resolve().parents[1]
PROVIDERS = "(valid: ClusterAutoscalerProvider, DefaultProvider)"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# -- did you mean ----------------------------------------------------------------------------------
def test_hint_texts():
    known = ["PodToleratesNodeTaints", "PodFitsHost", "NoDiskConflict", "GeneralPredicates", "PodFitsResources",
             "NoVolumeZoneConflict", "MatchNodeSelector", "HostName", "CheckNodeCondition"]
    assert did_you_mean("PodToleratesNodeTaint", known) == '; did you mean "PodToleratesNodeTaints"?'
    assert did_you_mean("generalpredicates", known) == '; did you mean "GeneralPredicates"?'
    assert did_you_mean("Zone", known) == ""
    assert did_you_mean("Foo", ["DefaultProvider", "ClusterAutoscalerProvider"]) == f" {PROVIDERS}"
    assert did_you_mean("DefaultProvidr", ["DefaultProvider", "ClusterAutoscalerProvider"]) == (
        f'; did you mean "DefaultProvider"? {PROVIDERS}')
    # Several equally close names are all offered (at most three).
    assert did_you_mean("Pod", ["PodA", "PodB", "PodC", "PodD", "X1", "X2", "X3", "X4", "X5"]) == (
        '; did you mean "PodA" or "PodB" or "PodC"?')


@pytest.fixture
def typo_policy(tmp_path: Path) -> Path:
    path = tmp_path / "typo.json"
    path.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1",
                                "predicates": [{"name": "PodToleratesNodeTaint"}],
                                "priorities": [{"name": "LeastRequestedPriorty", "weight": 1}]}))
    return path


def test_a_predicate_typo_keeps_upstreams_message_first(typo_policy):
    line = one_error_line(run("simulate", "--policy-config-file", str(typo_policy)))
    assert line == (f"error: {typo_policy}: couldn't create scheduler from policy: Invalid configuration: Predicate "
                    f'type not found for PodToleratesNodeTaint; did you mean "PodToleratesNodeTaints"?')


def test_policy_validate_names_every_unknown_entry(typo_policy):
    result = run("policy", "validate", str(typo_policy))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {typo_policy}: predicates[0].name: Invalid configuration: Predicate type not found for "
        f'PodToleratesNodeTaint; did you mean "PodToleratesNodeTaints"?',
        f"error: {typo_policy}: priorities[0].name: Invalid configuration: Priority type not found for "
        f'LeastRequestedPriorty; did you mean "LeastRequestedPriority"?',
    ]


@pytest.mark.parametrize(("args", "line"), [
    (["simulate", "--algorithm-provider", "DefaultProvidr"],
     'error: couldn\'t create scheduler using provider "DefaultProvidr": plugin "DefaultProvidr" has not been '
     f'registered; did you mean "DefaultProvider"? {PROVIDERS}'),
    (["simulate", "--algorithm-provider", "Spread"],
     f'error: couldn\'t create scheduler using provider "Spread": plugin "Spread" has not been registered {PROVIDERS}'),
    (["compare", "DefaultProvider", "clusterautoscalerprovider"],
     'error: couldn\'t create scheduler using provider "clusterautoscalerprovider": plugin "clusterautoscalerprovider" '
     f'has not been registered; did you mean "ClusterAutoscalerProvider"? {PROVIDERS}'),
    (["migrate", "--algorithm-provider", "ClusterAutoscaler"],
     'error: couldn\'t create scheduler using provider "ClusterAutoscaler": plugin "ClusterAutoscaler" has not been '
     f'registered; did you mean "ClusterAutoscalerProvider"? {PROVIDERS}'),
    (["simulate", "--feature-gates", "PodPriorty=true"],
     'error: unrecognized key: PodPriorty; did you mean "PodPriority"? (valid: EnableEquivalenceClassCache, HugePages, '
     "LocalStorageCapacityIsolation, PodPriority, ResourceLimitsPriorityFunction, TaintNodesByCondition, "
     "VolumeScheduling)"),
])
def test_unknown_provider_and_gate_names(args, line):
    assert one_error_line(run(*args)) == line


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


@pytest.mark.parametrize(("path", "command"), list(_commands(main)), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_command_suggests_the_flag_meant(path, command):
    """click suggests close options; ``run``'s flags (kube/config/flags.py) are click options too."""
    flag = next(o for p in command.params if isinstance(p, click.Option) for o in p.opts
                if o.startswith("--") and len(o) > 6 and o != "--help")
    result = run(*path, flag[:-1] + flag[-1] * 2)  # "--output" -> "--outputt"
    assert result.exit_code == 2
    assert f"Error: No such option '{flag[:-1] + flag[-1] * 2}'." in result.stderr
    assert f"'{flag}'" in result.stderr.splitlines()[-1] and "Did you mean" in result.stderr


def test_run_suggests_its_kube_scheduler_flags():
    result = run("run", "--leader-elct=false")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == ("Error: No such option '--leader-elct'. (Did you mean one of: "
                                              "'--leader-elect', '--leader-elect-resource-lock', "
                                              "'--leader-elect-retry-period'?)")


# -- files that do not parse -------------------------------------------------------------------------
BAD_YAML_POLICY = """\
kind: Policy
apiVersion: v1
predicates:
  - name: PodFitsResources
   - name: NoDiskConflict
"""


def test_a_badly_indented_yaml_policy_is_a_yaml_error(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(BAD_YAML_POLICY)
    assert one_error_line(run("simulate", "--policy-config-file", str(path))) == (
        f"error: {path}: invalid YAML: bad indentation at line 5, column 4 (in the list that starts at line 4, "
        "column 3)")


def test_a_broken_json_policy_keeps_upstreams_words(tmp_path):
    path = tmp_path / "policy.json"
    path.write_text('{"kind": "Policy", "apiVersion": "v1",\n "predicates": [{"name": "PodFitsResources"}}\n')
    assert one_error_line(run("simulate", "--policy-config-file", str(path))) == (
        f"error: {path}: couldn't get version/kind; json parse error: Expecting ',' delimiter at line 2, column 45")


def test_policy_validate_reports_a_yaml_error(tmp_path):
    path = tmp_path / "policy.yml"
    path.write_text("kind: Policy\npredicates:\n\t- name: PodFitsResources\n")
    assert one_error_line(run("policy", "validate", str(path))) == (
        f"error: {path}: invalid YAML: a tab character (YAML indents with spaces) at line 3, column 1")


@pytest.mark.parametrize(("name", "text", "problem"), [
    ("nodes.yaml", "kind: Node\nmetadata:\n  name: a\n labels: {}\n",
     "invalid YAML: bad indentation at line 4, column 2 (in the mapping that starts at line 1, column 1)"),
    ("nodes.yaml", "kind: Node\nmetadata: {name: [\n", "invalid YAML: unexpected end of the file at line 3, column 1"),
    ("nodes.yaml", "kind: Node\nmetadata:\n  name: a: b\n",
     "invalid YAML: unexpected ':' (check the indentation, or quote a value that contains ': ') at line 3, column 10"),
    ("nodes.json", '{"kind": "Node", "metadata": {"name": "a",}}',
     "invalid JSON: Expecting property name enclosed in double quotes at line 1, column 43"),
    ("nodes", '{"kind": "Node",\n "metadata": {"name": "a"]}',
     "invalid JSON: Expecting ',' delimiter at line 2, column 26"),
])
def test_a_manifest_that_does_not_parse(tmp_path, name, text, problem):
    path = tmp_path / name
    path.write_text(text)
    assert one_error_line(run("simulate", "--cluster", str(path))) == f"error: {path}: {problem}"


def test_no_parser_internals_in_any_message(tmp_path):
    for name, text in [("a.yaml", "a: [\n"), ("b.yaml", "a:\n  b: 1\n c: 2\n"), ("c.yaml", "a: *nope\n"),
                       ("d.yaml", "a: 'open\n")]:
        path = tmp_path / name
        path.write_text(text)
        line = one_error_line(run("simulate", "--cluster", str(path)))
        for internal in ('"<unicode string>"', "while parsing", "while scanning", "<block", "<stream"):
            assert internal not in line, line
        assert " at line " in line and ", column " in line, line
