"""The README says what is true: its two commands come first, and every sample output it shows (a ``$
policy-scheduler ...`` line in a fenced block, then what it prints) is what the command prints today, at the
terminal width the samples were taken at (``COLUMNS`` = :data:`README_COLUMNS`). A ``...`` line in a sample stands
for any number of lines the README leaves out; nothing else is normalised (the sampled commands print no timing
and no absolute path). The workstation ``run`` example is run by tests/kube/test_readme_run.py."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_scheduler.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The terminal width the README's samples show (the tables fitted to it, as in a terminal of that width).
README_COLUMNS = 100
ELIDED = "..."


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Every fenced block: its info string (``sh``, ``text`` or empty) and its lines."""
    return [(info, body.split("\n")[:-1]) for info, body in re.findall(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]


def variables(text: str) -> dict[str, str]:
    """The shell variables the README's sh blocks set (``EX=...``), for the samples that use them."""
    return {name: value for info, lines in fenced_blocks(text) if info == "sh"
            for name, value in (re.fullmatch(r"(\w+)=(\S+)", line).groups() for line in lines
                                if re.fullmatch(r"\w+=\S+", line))}


def samples(text: str) -> list[tuple[str, list[str]]]:
    """Each sample: the command after ``$ `` and the lines the README shows it printing."""
    out: list[tuple[str, list[str]]] = []
    for _, lines in fenced_blocks(text):
        if not lines or not lines[0].startswith("$ policy-scheduler "):
            continue
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line)
    return out


def shown(expected: list[str]) -> re.Pattern[str]:
    """The sample as a pattern of the whole output: its lines as they are, ``...`` any run of lines."""
    parts = ["(?:.*\n)*?" if line == ELIDED else re.escape(line.rstrip()) + "\n" for line in expected]
    return re.compile("".join(parts))


def printed(command: str, env: dict[str, str]) -> str:
    words = shlex.split(command, comments=True)
    assert words[0] == "policy-scheduler", command
    words = [re.sub(r"\$(\w+)", lambda m: env[m.group(1)], w) for w in words[1:]]
    result = CliRunner().invoke(main, words, env={"COLUMNS": str(README_COLUMNS)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return "".join(line.rstrip() + "\n" for line in result.stdout.splitlines())


TEXT = README.read_text()
SAMPLES = samples(TEXT)


def test_the_readme_shows_samples_of_the_offline_commands():
    commands = [shlex.split(c)[1] for c, _ in SAMPLES]
    assert {"simulate", "explain", "capacity"} <= set(commands), commands


@pytest.mark.parametrize("command, expected", SAMPLES, ids=[c for c, _ in SAMPLES])
def test_each_sample_output_is_what_the_command_prints(command, expected, monkeypatch):
    monkeypatch.chdir(ROOT)  # the README's paths are relative to a checkout
    output = printed(command, variables(TEXT))
    assert shown(expected).fullmatch(output), (
        f"README.md's sample of `{command}` is not what it prints at COLUMNS={README_COLUMNS}:\n{output}")
    assert all(len(line) <= README_COLUMNS for line in expected)


def test_the_two_commands_come_first_and_the_tour_shows_what_the_first_prints():
    sh_blocks = [lines for info, lines in fenced_blocks(TEXT) if info == "sh"]
    assert sh_blocks[:3] == [["python3 -m venv .venv && . .venv/bin/activate"],
                             ["python3 -m pip install . && policy-scheduler simulate"],
                             ["python3 -m pip install -e '.[test]' && python3 -m pytest"]]
    assert TEXT.index("## Two commands") < TEXT.index("```")
    assert "policy-scheduler simulate" in [c for c, _ in SAMPLES]  # the main job's output, checked above
