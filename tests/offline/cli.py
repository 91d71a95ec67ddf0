"""Running the offline commands in tests: a snapshot written to a file, the CLI invoked in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from policy_scheduler.cli import main


def write(tmp_path: Path, *objects: dict[str, Any], name: str = "cluster.yaml") -> str:
    """``objects`` as a multi-document YAML file in ``tmp_path``; its path."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return str(path)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def run_json(*args: str) -> dict[str, Any]:
    """The command with ``-o json``, which must succeed; its output."""
    result = run(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
