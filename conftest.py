"""Shared test set-up.

* ``import streamlab`` happens here first, so numba.cuda runs in the mode it chooses.
* Tests marked ``gpu`` need a real GPU. They are deselected by default (see
  pyproject.toml); asked for with ``-m gpu`` on a machine without one, they fail
  instead of skipping, so a GPU run can never pass by accident.
* Kernels started by the tests (nbval's, nbclient's) run with STREAMLAB_RACE_CHECK=1.
* ``figures``: GPU tests record what they measured; with STREAMLAB_RESULTS=path the
  figures are written there as JSON, for scripts/gpu_results.py to publish.
"""

import importlib.util
import json
import os

import pytest

# The worker processes of pytest-xdist inherit what this file sets below: this process
# itself must not run under the session-wide race check (tests make races on purpose).
if os.environ.pop("STREAMLAB_RACE_CHECK_FROM_TESTS", None):
    os.environ.pop("STREAMLAB_RACE_CHECK", None)

import streamlab  # noqa: E402

# Every notebook and lab solution that the tests execute (nbval on the simulator, in CI)
# runs under the session-wide race check: a race in their code fails the run. Set after
# streamlab's import: it applies to the kernels started from here, not to this process.
os.environ["STREAMLAB_RACE_CHECK"] = "1"
os.environ["STREAMLAB_RACE_CHECK_FROM_TESTS"] = "1"

# nbgrader's preprocessor needs nbgrader to import (CI has it; the GPU machine does not)
collect_ignore = [] if importlib.util.find_spec("nbgrader") else [
    "src/streamlab/grading/preprocessor.py"]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("gpu"):
            item.fixturenames.insert(0, "_require_gpu")


@pytest.fixture
def _require_gpu():
    if streamlab.on_simulator():
        pytest.fail(f"this test needs a real GPU, but {streamlab.describe()}", pytrace=False)


_figures = []


@pytest.fixture
def figures(request):
    """Record a measured figure: figures(name, value, unit, note="")."""

    def record(name, value, unit="", note=""):
        _figures.append({"test": request.node.nodeid, "name": name,
                         "value": value, "unit": unit, "note": note})

    return record


def pytest_unconfigure(config):
    path = os.environ.get("STREAMLAB_RESULTS")
    if path and _figures:
        with open(path, "w") as f:
            json.dump(_figures, f, indent=1)


@pytest.fixture
def sim_only():
    if not streamlab.on_simulator():
        pytest.skip("checks a simulator fill; the GPU path is never patched")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")




@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Mark a test that failed (``item.failed``), for fixtures that keep evidence of it
    (the browser test's screenshot)."""
    outcome = yield
    if outcome.get_result().failed:
        item.failed = True
