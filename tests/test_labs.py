"""The labs as learners get them: generated from solutions/ by nbgrader, one-line checks,
Run All reaching every part, a failing check's message shown alone; and the committed
solutions holding a GPU run in which every check passed.

The lab tests are in several files, so that pytest-xdist (--dist loadfile) can spread them:
this one, test_lab_answers.py and test_lab_answers_later.py (wrong answers fail, right
ones pass), test_lab_grading.py and test_lab_grading_later.py (nbgrader autograde, and
what learner code cannot do to it).
"""

import importlib
import re

import nbformat
import pytest
from labtools import LABS, ROOT, STUB, cells_of, comparable, course, filled, grade_id, meta, \
    notebook, stdout
from nbclient import NotebookClient

# --- the learner's copy ------------------------------------------------------------------
@pytest.mark.parametrize("lab", LABS)
def test_labs_are_what_nbgrader_generates_from_solutions(tmp_path, lab):
    course(tmp_path, lab)
    fresh = nbformat.read(tmp_path / "labs" / lab / f"{lab}.ipynb", as_version=4)
    assert comparable(notebook("labs", lab)) == comparable(fresh), (
        f"labs/{lab} is out of date: run `nbgrader generate_assignment {lab} --force` "
        f"from the repository root and commit labs/")


@pytest.mark.parametrize("lab", LABS)
def test_the_learners_copy_hides_solutions_and_hidden_tests_and_checks_in_one_line(lab):
    nb = notebook("labs", lab)
    text = "\n".join(c.source for c in nb.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert text.count(STUB) == len(cells_of(lab, "solution"))
    for cell in nb.cells:
        if meta(cell).get("grade"):
            lines = [ln for ln in cell.source.splitlines() if ln.strip()]
            assert len(lines) <= 3, f"{grade_id(cell)} shows {len(lines)} lines"


# --- Run All on an untouched lab -------------------------------------------------------------
@pytest.mark.parametrize("lab", LABS)
def test_run_all_on_a_fresh_lab_reaches_every_part(lab):
    nb = notebook("labs", lab)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "labs" / lab)}}).execute()
    for cell in nb.cells:
        if meta(cell).get("grade"):
            assert re.fullmatch(r"Part \d: not done yet: write your code in the cell above.*",
                                stdout(cell).strip()), stdout(cell)


# --- what a learner sees when a check fails ----------------------------------------------------
def test_a_failing_check_shows_its_message_alone():
    lab = "lab02__events"
    mod = importlib.import_module(f"wrong_solutions.{lab}")
    target, code, check_id, phrase = mod.WRONG["no wait at all"]
    nb = filled(notebook("labs", lab), dict(cells_of(lab, "solution"), **{target: code}))
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "labs" / lab)}}).execute()
    (cell,) = [c for c in nb.cells if grade_id(c) == check_id]
    (error,) = [o for o in cell.outputs if o.output_type == "error"]
    assert error.traceback == [f"CheckFailed: {error.evalue}"]
    assert error.evalue.startswith("Part 1: ") and phrase in error.evalue
    assert "streamlab" not in "".join(error.traceback).replace("streamlab.", "")


# --- the committed solutions ------------------------------------------------------------------
@pytest.mark.parametrize("lab", LABS)
def test_committed_solutions_hold_a_gpu_run_with_every_check_passed(lab):
    nb = notebook("solutions", lab)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"solutions/{lab} was not run once, top to bottom: execute it on a GPU with "
        f"scripts/gpu/gpu-check.sh and commit the result")
    setup = [c for c in code if grade_id(c) == "setup"][0]
    assert re.search(r"device: NVIDIA \S", stdout(setup)), (
        f"the setup cell shows {stdout(setup)!r}: execute the solution on a GPU")
    for c in code:
        errors = [o for o in c.outputs if o.get("output_type") == "error"]
        assert not errors, f"{grade_id(c)} failed: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    for c in code:
        if meta(c).get("grade"):
            text = stdout(c)
            assert text.rstrip().endswith("passed"), f"{grade_id(c)} printed {text!r}"
            assert "simulator" not in text, f"{grade_id(c)} ran on the simulator: {text!r}"


@pytest.mark.parametrize("lab", LABS)
def test_the_learners_copy_carries_no_record_of_a_gpu_run(lab):
    """The solution's outputs came from a GPU run, stamped (streamlab.provenance); the
    learner's copy has none, so nbgrader_config.py's DropRunStamp leaves the stamp out."""
    assert "streamlab_run" not in notebook("labs", lab).metadata


# --- overlap measured again when one run falls short -------------------------------------
def test_a_run_stretched_by_a_busy_host_is_measured_again_and_waiting_work_never_passes(
        capsys):
    """Lab 01 (and lesson 01's exercise 2) judge the best of up to three runs
    (check.best_concurrency_at_least): right code whose one run another program stretched
    passes on the next, and says it measured again; code that waits falls short every time
    and fails, on its best run, after three."""
    from streamlab import check
    from streamlab.trace import Span, Trace

    overlapped = Trace.from_spans([Span(f"k{i}", f"s{i}", "kernel", 0, 1) for i in range(8)])
    serial = Trace.from_spans([Span(f"k{i}", f"s{i}", "kernel", i, i + 1) for i in range(8)])
    runs = iter([serial, overlapped])
    calls = []

    def stretched_once():
        calls.append(1)
        return next(runs)

    check.best_concurrency_at_least(stretched_once, 5.2, "eight")
    out = capsys.readouterr().out
    assert len(calls) == 2
    assert "run 1 overlapped only 1.0-fold" in out and "measured again" in out
    assert "eight: overlapped 8.0-fold" in out

    calls.clear()

    def always_serial():
        calls.append(1)
        return serial

    with pytest.raises(check.CheckFailed, match="overlapped only 1.0-fold"):
        check.best_concurrency_at_least(always_serial, 5.2, "eight")
    assert len(calls) == 3

    calls.clear()
    check.best_concurrency_at_least(lambda: calls.append(1) or overlapped, 5.2, "eight")
    assert len(calls) == 1, "a run that overlaps is measured once"
