"""Every case of the upstream-derived conformance corpus, run through the engine."""

from __future__ import annotations

import pytest

from .harness import load_cases, run_case

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_conformance_case(case, monkeypatch):
    for key, value in (case.get("env") or {}).items():
        monkeypatch.setenv(key, value)
    run_case(case)


def test_corpus_is_complete():
    """The corpus README promises 170 cases; a lost file must not silently shrink the run."""
    assert len(CASES) == 170
