"""Shared test set-up.

* ``import streamlab`` happens here first, so numba.cuda runs in the mode it chooses.
* Tests marked ``gpu`` need a real GPU. They are deselected by default (see
  pyproject.toml); asked for with ``-m gpu`` on a machine without one, they fail
  instead of skipping, so a GPU run can never pass by accident.
* Kernels started by the tests (nbval's, nbclient's) run with STREAMLAB_RACE_CHECK=1.
* ``figures``: GPU tests record what they measured; with STREAMLAB_RESULTS=path the
  figures are written there as JSON, for scripts/gpu/gpu_results.py to publish.
"""

import importlib.util
import json
import os
import re

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


# Notebooks whose committed outputs are owed a GPU run: the code they ran changed after it
# (docs/owed.json, written by scripts/gpu/owed.py; tests/test_owed.py holds it to the code).
# The tests below read a GPU run's outputs: for an owed notebook a failure is excused (its
# outputs are an older code's, and say so), a pass is not needed. A notebook whose outputs
# were cleared (a learner copy whose code changed) has none to read.
def _owed() -> dict[str, str]:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "docs", "owed.json")
    try:
        with open(path) as f:
            entries = json.load(f)["owed"]
    except FileNotFoundError:
        return {}
    return {e["notebook"]: ", ".join(e["changed"][:3]) for e in entries}


OWED = _owed()
READS_A_GPU_RUN = {
    "test_committed_outputs_come_from_a_gpu_run",
    "test_every_lesson_states_its_claims_and_its_gpu_run_bears_them_out",
    "test_every_figure_of_a_lesson_can_break_one_of_its_claims",
    "test_every_claim_can_fail",
    "test_every_lesson_has_exercises_and_a_solved_copy",
    "test_committed_solutions_hold_a_gpu_run_with_every_check_passed",
}
_ROOT = os.path.dirname(os.path.abspath(__file__))


def _awaiting(item):
    params = getattr(getattr(item, "callspec", None), "params", {})
    path = params.get("path")
    if path is None and "lab" in params:  # the lab tests name a solution by its lab
        path = os.path.join(_ROOT, "solutions", params["lab"], f"{params['lab']}.ipynb")
    if path is None or item.originalname not in READS_A_GPU_RUN:
        return None
    return OWED.get(os.path.relpath(str(path), _ROOT).replace(os.sep, "/"))


#: test files that take longest whole, slowest first (measured on two cores: the browser
#: tests about 2 minutes, mostly waiting on JupyterLab; the nbgrader autograde runs 1.5 to
#: 2 minutes a file; the class graded on Dask and again serially about 1.5 minutes; the
#: capstone's solved copy under nbval a little over a minute, since its simulator sizes
#: shrank (3 minutes before); nbval does not run the learner copies, see
#: pytest_ignore_collect): started first, so that the other workers run the rest of the suite meanwhile, instead of one worker
#: finishing a long file alone at the end (a file with few but slow tests came last when
#: the files went by their number of tests, and the run's last two minutes were its tail).
#: Under --dist loadfile a file goes whole to one worker; with --no-loadscope-reorder
#: (pyproject.toml) in the order collected, which is set here: these files, then the others
#: by their number of tests, most first (xdist's own reordering)
_FIRST = ("tests/test_browser.py", "tests/test_lab_grading.py", "tests/test_classroom.py",
          "notebooks/10__capstone__streamed_pipeline__SOLUTION.ipynb",
          "tests/test_lab_grading_later.py")


def _file(item) -> str:
    return item.nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    counts = {}
    for item in items:
        counts[_file(item)] = counts.get(_file(item), 0) + 1
    first = {name: rank for rank, name in enumerate(_FIRST)}
    items.sort(key=lambda item: (first.get(_file(item), len(first)),  # stable
                                 -counts[_file(item)]))
    for item in items:
        if item.get_closest_marker("gpu"):
            item.fixturenames.insert(0, "_require_gpu")
        why = _awaiting(item)
        if why:
            item.add_marker(pytest.mark.xfail(strict=False, reason=f"owed a GPU run "
                                              f"(docs/owed.json): {why} changed"))


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


def pytest_configure(config):
    """Once, before the workers start: streamlab compiled to bytecode. The tests start
    hundreds of Python processes (each graded part, each notebook's kernel), and where
    PYTHONDONTWRITEBYTECODE is set (CI's machine sets it) none of them keeps what it
    compiled: each compiled the package again (the class test ran 11 % faster compiled)."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the main process did it
        return
    import compileall

    compileall.compile_dir(os.path.join(_ROOT, "src", "streamlab"), quiet=1)


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






# What a simulator run of a lesson must never print: a warning, or a size or a rate of
# zero (a figure scaled for the GPU and printed at the simulator's size reads as wrong).
_ZERO = re.compile(r"(?<![\d.])0(?:\.0+)? ?(?:bytes|B|KB|MB|GB|TB|kB|KiB|MiB|GiB)(?:/s)?\b")


def sim_output_problems(outputs) -> list[str]:
    """What is wrong with a cell's outputs from a simulator run (see above)."""
    problems = []
    for out in outputs or ():
        text = out.get("text", "") if out.get("output_type") == "stream" else \
            out.get("data", {}).get("text/plain", "")
        text = "".join(text) if isinstance(text, list) else text
        if out.get("output_type") == "stream" and out.get("name") == "stderr" \
                and re.search(r"warning", text, re.I):
            problems.append(f"a warning: {text.strip()[:300]}")
        for line in text.splitlines():
            for m in _ZERO.finditer(line):
                problems.append(f"a zero size or rate, {m.group(0)!r}, in: {line.strip()[:200]}")
    return problems


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A lesson's cell run by nbval on the simulator fails if it printed a warning or a zero
    size or rate: the simulator must still show what a GPU would. And a test that failed is
    marked (``item.failed``), for fixtures that keep evidence of it (the browser test's
    screenshot)."""
    outcome = yield
    report = outcome.get_result()
    outputs = getattr(item, "test_outputs", None)
    if (call.when == "call" and report.passed and outputs is not None
            and streamlab.on_simulator()
            and item.path.parent.name == "notebooks"):
        problems = sim_output_problems(outputs)
        if problems:
            report.outcome = "failed"
            report.longrepr = (f"{item.path.name}, cell {item.name}: on the simulator it printed "
                               + "; ".join(problems))
    if report.failed:
        item.failed = True


def pytest_ignore_collect(collection_path, config):
    """nbval runs a lesson's solved copy (``__SOLUTION``), not its learner copy: the
    learner copy is the solved one with each answer replaced by a stub
    (scripts/course/make_lessons.py --check holds them together), and its GPU run is committed.
    tests/test_lessons.py runs each stub on its own."""
    p = collection_path
    if p.suffix == ".ipynb" and p.parent.name == "notebooks" and "__SOLUTION" not in p.name:
        if p.with_name(p.stem + "__SOLUTION.ipynb").exists():
            return True
    return None
