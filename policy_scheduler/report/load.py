"""Reading a saved result: which command produced it (its ``kind``) and whether it matches that schema.

Everything wrong with the file is a :class:`ReportInputError` with one line naming the file and what is
wrong; the CLI prints it and exits 2.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import jsonschema
import yaml

from ..errors import UserError
from ..migration.migrate import MIGRATE_KIND
from ..model.fields import describe
from ..offline.report import (
    CAPACITY_KIND,
    COMPARE_KIND,
    EXPLAIN_KIND,
    SIMULATE_KIND,
    SWEEP_KIND,
    result_schema,
)
from ..syntax import JSON, format_of, syntax_problem, yaml_problem

# kind -> the command whose -o json prints it
COMMANDS = {SIMULATE_KIND: "simulate", EXPLAIN_KIND: "explain", CAPACITY_KIND: "capacity", COMPARE_KIND: "compare",
            MIGRATE_KIND: "migrate", SWEEP_KIND: "sweep"}
#: The commands, as the messages list them.
COMMAND_NAMES = ", ".join(list(COMMANDS.values())[:-1]) + f" or {list(COMMANDS.values())[-1]}"


class ReportInputError(UserError):
    """A file given to ``policy-scheduler report`` is not a result it can render."""


def _shape_kind(data: dict[str, Any]) -> str | None:
    """The kind of a result saved before results carried one, from its required keys."""
    if isinstance(data.get("placements"), list) and isinstance(data.get("nodes"), list):
        return SIMULATE_KIND
    if {"pod", "host", "nodes"} <= data.keys() and isinstance(data.get("nodes"), dict):
        return EXPLAIN_KIND
    if {"replicas", "placements", "stopReason"} <= data.keys():
        return CAPACITY_KIND
    if {"a", "b", "differences"} <= data.keys():
        return COMPARE_KIND
    if {"source", "target", "configuration", "mapping"} <= data.keys():
        return MIGRATE_KIND
    return None


def detect_kind(data: Any, source: str = "result") -> str:
    """``SimulateResult``, ``ExplainResult``, ``CapacityResult``, ``CompareResult``, ``MigrateResult`` or
    ``SweepResult``."""
    if not isinstance(data, dict):
        raise ReportInputError(
            f"{source}: not a policy-scheduler result: expected a JSON object, got {_json_type(data)}")
    kind = data.get("kind")
    if kind is None:
        kind = _shape_kind(data)
        if kind is None:
            raise ReportInputError(
                f"{source}: not a policy-scheduler result: no \"kind\" field and not shaped like the -o json "
                f"output of {COMMAND_NAMES}")
    elif kind not in COMMANDS:
        raise ReportInputError(
            f"{source}: unknown kind {json.dumps(kind)} (expected one of {', '.join(COMMANDS)})")
    return kind


def validate(data: dict[str, Any], kind: str, source: str = "result") -> None:
    """Raise ReportInputError naming the first place where ``data`` breaks the command's schema."""
    command = COMMANDS[kind]
    validator = jsonschema.Draft202012Validator(result_schema(command))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        raise ReportInputError(
            f"{source}: not a valid {command} -o json result: {where or '(top level)'}: {_short(error.message)}")


def parse(text: str, source: str) -> Any:
    """JSON, or YAML (what ``-o yaml`` prints); a syntax error in the format the file is in."""
    try:
        return json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as yaml_error:
            problem = syntax_problem(text, source) or f"invalid YAML: {yaml_problem(yaml_error, text)}"
            raise ReportInputError(f"{source}: {problem}") from None
        if isinstance(data, dict):
            return data
        problem = syntax_problem(text, source) if format_of(text, source) == JSON else None
        raise ReportInputError(
            f"{source}: {problem or f'not a policy-scheduler result: expected a mapping, got {describe(data)}'}"
        ) from None


def load_result(path: str) -> dict[str, Any]:
    """Read, parse, identify and validate a saved ``-o json`` (or ``-o yaml``) result; ``-`` is standard input."""
    source = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        raise ReportInputError(f"{source}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ReportInputError(f"{source}: not JSON: not UTF-8 text") from None
    if not text.strip():
        raise ReportInputError(f"{source}: empty file, expected the -o json output of {COMMAND_NAMES}")
    data = parse(text, source)
    kind = detect_kind(data, source)
    validate(data, kind, source)
    return data


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def _short(message: str, limit: int = 160) -> str:
    one_line = " ".join(message.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"
