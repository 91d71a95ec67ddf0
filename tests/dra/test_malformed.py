"""Malformed DRA objects never crash: every field of every object of the DRA example (``examples/dra``), schema
off, replaced by a value of a wrong type (or deleted), as ``tests/offline/test_malformed_manifests.py`` does for
the other bundled clusters: ``simulate`` either works or fails with one ``error:`` line naming the file and the
object."""

from __future__ import annotations

import pytest

from policy_scheduler.offline.examples import dra_cluster_path
from tests.offline.test_malformed_manifests import EVERY_FIELD_VALUES, check_cluster_mutant, cluster_targets

PARTS = 4


@pytest.mark.parametrize("part", range(PARTS), ids=lambda part: f"part-{part}")
def test_every_dra_field_of_a_wrong_type_never_crashes(part: int) -> None:
    crashes = []
    directory = dra_cluster_path()
    for i, target in enumerate(cluster_targets(directory)):
        if i % PARTS != part:
            continue
        new = EVERY_FIELD_VALUES[i % len(EVERY_FIELD_VALUES)]
        try:
            check_cluster_mutant(target, None if new == "DELETE" else new, new == "DELETE", False, False, directory)
        except AssertionError as e:
            crashes.append(f"{target} <- {new!r}: {str(e).splitlines()[0]}")
        except Exception as e:  # noqa: BLE001 - the point of the test: name every crash
            crashes.append(f"{target} <- {new!r}: {type(e).__name__}: {e}")
    assert not crashes, "\n".join(crashes)
