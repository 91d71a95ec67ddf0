"""The DRA tests' CEL: a test-local stand-in (tests/dra/fakecel.py) until the real environment is importable."""

from __future__ import annotations

import importlib.util

import pytest

from policy_scheduler.dra import allocator
from tests.dra.fakecel import fake_cel

#: Whether the real CEL environment (helper "cel") is on this branch.
REAL_CEL = importlib.util.find_spec("policy_scheduler.dra.cel") is not None


@pytest.fixture(autouse=True)
def cel_environment(monkeypatch):
    """Every allocator built by the engine (the predicate's) evaluates selectors with the stand-in unless the real
    environment is there; the counter of evaluations comes back."""
    environment, counter = fake_cel()
    if not REAL_CEL:
        monkeypatch.setattr(allocator, "default_environment", lambda: environment)
    return counter
