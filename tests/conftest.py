"""What every test directory shares: how the whole pytest runs of the suite start."""

from __future__ import annotations

import pytest


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose pytest runs (and the runs they start) leave Hypothesis's plugin out.

    No project a test writes uses Hypothesis, and its plugin imports all of Hypothesis at
    the end of every run, for its summary: a quarter of a second of CPU for each of the
    suite's hundred-odd whole pytest runs. pytester clears PYTEST_ADDOPTS when it starts;
    this sets it afterwards.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester
