"""``run --config``: a KubeSchedulerConfiguration file with any field replaced by a value of a wrong type,
or deleted, loads or fails with one :class:`UserError` line naming the file, never an exception."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from policy_scheduler.errors import UserError
from policy_scheduler.kube.options import load_config_file, validate_configuration
from tests.kube.test_options import EXAMPLE
from tests.offline.test_malformed_manifests import WRONG_VALUES, field_paths, mutate

DOCUMENT = yaml.safe_load(EXAMPLE)


@settings(
    max_examples=200, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow], phases=[Phase.explicit, Phase.generate],
)
@given(path=st.sampled_from(field_paths(DOCUMENT)), new=WRONG_VALUES, delete=st.integers(0, 5).map(lambda n: n == 0))
def test_mutated_config_file_never_crashes(path: tuple, new: Any, delete: bool) -> None:
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
