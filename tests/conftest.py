"""What every test directory shares: how the whole pytest runs of the suite start."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import llmcassette

# pytester forgets, when a test that uses it ends, every module first imported during that
# test; imported again later, a module makes new classes, and an ``except`` or isinstance
# holding the old one misses (a CassetteMismatch not caught, an SDK error not retried).
# Everything of llmcassette's (vcrpy's layer included) is imported before any test runs.
for _module in pkgutil.walk_packages(llmcassette.__path__, "llmcassette."):
    if not _module.name.endswith(("__main__", ".demo")):
        importlib.import_module(_module.name)


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
