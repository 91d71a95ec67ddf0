"""``run --config``: a KubeSchedulerConfiguration file with any field replaced by a value of a wrong type,
or deleted, loads or fails with one :class:`UserError` line naming the file, never an exception."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from policy_scheduler.errors import UserError
from policy_scheduler.kube.config.options import load_config_file, validate_configuration
from tests.kube.test_options import EXAMPLE
from tests.mutants import draw, field_paths, mutate

DOCUMENT = yaml.safe_load(EXAMPLE)


@pytest.mark.parametrize("seed", range(200))
def test_mutated_config_file_never_crashes(seed: int) -> None:
    _, path, new, delete = draw(seed, field_paths(DOCUMENT))
    mutant = mutate(DOCUMENT, path, new, delete)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "sched.yaml"
        file.write_text(yaml.safe_dump(mutant), encoding="utf-8")
        try:
            validate_configuration(load_config_file(str(file)))
        except UserError as e:
            message = str(e)
            assert "\n" not in message, message
            assert str(file) in message or "--" in message, message
