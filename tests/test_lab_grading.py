"""`nbgrader autograde`, with the course's config: each part judged in a fresh process.
The solution gets full marks, the untouched lab zero; on lab 02 the cheats score nothing,
a hang that swallows KeyboardInterrupt costs its part alone, warnings and logging cost
nothing, and the feedback shows a failing check's message alone.
"""

import nbformat
import pytest
from labtools import FIRST_HALF, LABS, ROOT, at_call, cells_of, course, filled, grade_id, nbgrader, \
    needs_nbgrader, notebook, stdout

from test_grading_sandbox import BELOW_PYTHON, IN_PYTHON

from streamlab.grading import sandbox



def test_nbgrader_grades_in_fresh_processes_and_otherwise_as_it_would():
    needs_nbgrader()
    from nbgrader.converters.autograde import Autograde
    from nbgrader.preprocessors import Execute
    from traitlets.config import Config

    from streamlab.grading.preprocessor import GradeInFreshProcesses

    config = Config()
    namespace = {"get_config": lambda: config}
    exec((ROOT / "nbgrader_config.py").read_text(), namespace)  # noqa: S102
    ours = list(config.Autograde.autograde_preprocessors)
    default = list(Autograde.class_traits()["autograde_preprocessors"].default())
    assert ours == [GradeInFreshProcesses if p is Execute else p for p in default]


def test_the_grader_tells_a_teacher_how_to_grade():
    """Issue 56: ``python -m streamlab.grading --help`` was the grading child's, which read
    a task from stdin and died with a JSON traceback. It now says how to grade, with
    nbgrader and on Dask; an unknown command is refused, with the same help."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, STREAMLAB_QUIET="1")
    for args in ([], ["--help"]):
        r = subprocess.run([sys.executable, "-m", "streamlab.grading", *args], env=env,
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        assert "nbgrader autograde LAB" in r.stdout and "grading class LAB" in r.stdout
    r = subprocess.run([sys.executable, "-m", "streamlab.grading", "grade"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown command 'grade'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_an_untouched_copy_is_graded_without_checksum_warnings_and_an_edited_cell_is_not(
        tmp_path):
    """Issue 56: nbgrader warned "Attribute 'checksum' for cell check_part1 has changed!"
    for each graded cell of a learner's copy exactly as released (its gradebook keeps the
    checksum from before the hidden tests were cleared: nbgrader issue 1961), so a teacher
    could not tell a tampered cell from an untouched one. The course's OverwriteCells
    keeps the warning, and the restoring, for a cell that was changed. The feedback shows
    no hidden test (nbgrader's showed their seeds)."""
    lab = "lab02__events"
    db = course(tmp_path, lab)
    release = notebook("labs", lab)
    edited = nbformat.from_dict(release)
    cell = next(c for c in edited.cells if grade_id(c) == "check_part1")
    cell.source = "check_part1 = lambda *args, **kwargs: print('Part 1: passed')\n" + cell.source
    for student, nb in (("bo", release), ("cy", edited)):
        folder = tmp_path / "submitted" / student / lab
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{lab}.ipynb")
    r = nbgrader("autograde", lab, f"--db={db}", "--create", cwd=tmp_path)
    said = r.stdout + r.stderr
    # one warning, cy's edited cell's (bo's untouched copy gave three, one a graded cell)
    warnings = [line for line in said.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, said  # (nor a relative course root's any more)
    assert "Attribute 'checksum' for cell check_part1 has changed" in warnings[0], said
    graded = nbformat.read(tmp_path / "autograded" / "cy" / lab / f"{lab}.ipynb",
                           as_version=4)
    restored = next(c for c in graded.cells if grade_id(c) == "check_part1")
    assert "lambda" not in restored.source  # the teacher's cell, hidden tests and all
    assert "seed=7" in restored.source
    # and the learner's feedback shows the cell without its hidden tests (their seeds)
    nbgrader("generate_feedback", lab, f"--db={db}", cwd=tmp_path)
    page = (tmp_path / "feedback" / "bo" / lab / f"{lab}.html").read_text()
    assert "check_part1" in page and "hidden tests, not shown" in page
    assert "seed=7" not in page and "HIDDEN TESTS" not in page




# --- nbgrader autograde ------------------------------------------------------------------------
def autograde(tmp_path, lab, submissions, timeout=None):
    db = course(tmp_path, lab)
    for student, nb in submissions.items():
        folder = tmp_path / "submitted" / student / lab
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{lab}.ipynb")
    extra = [f"--GradeInFreshProcesses.timeout={timeout}"] if timeout else []
    nbgrader("autograde", lab, f"--db={db}", "--create", *extra, cwd=tmp_path)
    from nbgrader.api import Gradebook

    with Gradebook(db) as gb:
        total = gb.find_assignment(lab).max_score
        scores = {s: gb.find_submission(lab, s).score for s in submissions}
        parts = {s: {g.name: g.score for g in gb.find_submission_notebook(lab, lab, s).grades}
                 for s in submissions}
    return total, scores, parts


@pytest.mark.parametrize("lab", FIRST_HALF)
def test_autograde_gives_the_solution_full_marks_and_the_untouched_lab_zero(tmp_path, lab):
    """(The second half of the labs: test_lab_grading_later.py.)"""
    solution_full_marks_untouched_zero(tmp_path, lab)


def solution_full_marks_untouched_zero(tmp_path, lab):
    """The untouched lab is graded for the first lab only: its zero is the grader's
    (NotDoneYet scores nothing), the same for every lab, and test_labs.py runs every
    lab's untouched copy and sees each part say "not done yet". The first lab's run also
    grades the copies whose lab cells were deleted or rewritten (one autograde for both:
    see as_released_whatever_the_copy_did)."""
    release = notebook("labs", lab)
    submissions = {"ada": filled(release, cells_of(lab, "solution"))}
    if lab == LABS[0]:
        submissions["bo"] = release
        submissions.update(_copies_that_changed_the_labs_cells(lab))
    total, scores, parts = autograde(tmp_path, lab, submissions)
    if lab == LABS[0]:
        as_released_whatever_the_copy_did(tmp_path, lab, total, scores, parts)
        scores = {k: v for k, v in scores.items() if k in ("ada", "bo")}
    assert total > 0 and scores == {"ada": total, **({"bo": 0} if "bo" in submissions
                                                     else {})}
    # every cell of the solution ran without an error in the grader's plain Python (an
    # error in a cell that is not graded costs no points, but shows in the feedback)
    graded = nbformat.read(tmp_path / "autograded" / "ada" / lab / f"{lab}.ipynb",
                           as_version=4)
    shown = "".join(stdout(c) for c in graded.cells if c.cell_type == "code")
    assert "an earlier cell failed" not in shown, shown


CHEATS = {
    "replaces the check": '''
import streamlab.check
streamlab.check.fail = lambda *args, **kwargs: None
check_part1 = lambda *args, **kwargs: None

def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    pass
''',
    "empties the later cells": '''
get_ipython().input_transformers_cleanup.append(lambda lines: [])

def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    pass
''',
    "reads the solution": '''
import json, pathlib
here = pathlib.Path.cwd()
for up in [here, *here.parents]:
    for path in up.glob("solutions/lab02__events/*.ipynb"):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if "def produce_then_consume" in "".join(cell["source"]):
                exec("".join(cell["source"]))
''',
}

# the same replacement made from inside the answer, when the check calls it (a cell that
# does more than define is not run: issue 56): the guard's look after the check names it
CHEATS["replaces the check from inside the answer"] = at_call(CHEATS["replaces the check"],
                                                              "produce_then_consume")

WARNS = '''
import logging
import sys
import warnings

def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    warnings.warn("a warning from the learner's code")
    logging.warning("a log line from the learner's code")
    print("to stderr", file=sys.stderr)
    ready = cuda.event()
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    ready.wait(consumer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
'''

HANG = '''
import time

def add_in_two_streams(counter, s0, s1):
    while True:               # a hang that swallows the grader's KeyboardInterrupt
        try:
            time.sleep(0.1)
        except BaseException:
            pass
'''


def test_autograde_cheats_score_nothing_hangs_cost_their_part_warnings_cost_nothing(tmp_path):
    lab = "lab02__events"
    release, solution = notebook("labs", lab), cells_of(lab, "solution")
    submissions = {f"cheat{i}": filled(release, {"produce_then_consume": code})
                   for i, code in enumerate(CHEATS.values())}
    submissions["warns"] = filled(release, dict(solution, produce_then_consume=WARNS))
    submissions["hangs"] = filled(release, dict(solution, add_in_two_streams=HANG))
    # part 3's answer taken from the right answers the course's tests keep: in Python (the
    # audit hook refuses it), and through libc, where only the sandbox stops it
    submissions["tests"] = filled(release, {"add_in_two_streams": IN_PYTHON})
    sandboxed = sandbox.status()[0] is not None
    if sandboxed:
        submissions["libc"] = filled(release, {"add_in_two_streams": BELOW_PYTHON})
    total, scores, parts = autograde(tmp_path, lab, submissions, timeout=20)
    for i, name in enumerate(CHEATS):
        assert scores[f"cheat{i}"] == 0, (name, parts[f"cheat{i}"])
    assert scores["tests"] == 0, parts["tests"]
    if sandboxed:
        assert scores["libc"] == 0, parts["libc"]
    assert scores["warns"] == total, parts["warns"]
    assert parts["hangs"]["check_part3"] == 0
    assert scores["hangs"] == total - 2, parts["hangs"]
    # what the learner reads: one line, saying why
    for i, said in ((0, "produce_then_consume was not run (line 2: an assignment to more "
                        "than a name"),
                    (list(CHEATS).index("replaces the check from inside the answer"),
                     "your code replaced")):
        feedback = nbformat.read(tmp_path / "autograded" / f"cheat{i}" / lab / f"{lab}.ipynb",
                                 as_version=4)
        (cell,) = [c for c in feedback.cells if grade_id(c) == "check_part1"]
        (error,) = [o for o in cell.outputs if o.output_type == "error"]
        assert said in error.evalue and len(error.traceback) == 1, error.evalue





def _copies_that_changed_the_labs_cells(lab):
    """Issue 56, item 1: a copy whose setup cell was deleted (by mistake), and one whose
    setup cell lost its marks and was rewritten to define a check that passes everything,
    with a wrong answer to part 1."""
    release, answers = notebook("labs", lab), cells_of(lab, "solution")
    careless = filled(release, answers)
    careless.cells = [c for c in careless.cells if grade_id(c) != "setup"]
    forger = filled(release, dict(answers, launch_on_streams=(
        "def launch_on_streams(inputs, outputs, streams):\n    pass\n")))
    (setup,) = [c for c in forger.cells if grade_id(c) == "setup"]
    setup.metadata.pop("nbgrader")
    setup.source = "def check_part1(*args, **kwargs):\n    print('Part 1: passed')\n"
    return {"careless": careless, "forger": forger}


def as_released_whatever_the_copy_did(tmp_path, lab, total, scores, parts):
    """Under the real nbgrader autograde, the lab runs as released whatever the copy did
    to its cells: the careless copy is graded as any other, its feedback saying that the
    grader ran the lab's cell; the forger's wrong answer scores nothing."""
    assert scores["careless"] == total, parts["careless"]
    assert parts["forger"]["check_part1"] == 0 and scores["forger"] == total - 3, parts
    feedback = nbformat.read(tmp_path / "autograded" / "careless" / lab / f"{lab}.ipynb",
                             as_version=4)
    shown = "".join(stdout(c) for c in feedback.cells if grade_id(c) == "check_part1")
    assert "(the grader: the lab's cell 'setup' was not in your notebook" in shown, shown
