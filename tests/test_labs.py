"""The labs: generated from solutions/ by nbgrader, graded by checks that reject wrong work.

* labs/ is exactly what `nbgrader generate_assignment` makes from solutions/;
* every wrong solution in tests/wrong_solutions/ fails its part, with the feedback named,
  and no other part (except parts declared to build on it);
* `nbgrader autograde` gives the solution full marks, the unsolved lab zero (no crash),
  and a submission that hangs a score too (a timeout per cell);
* the committed solutions hold the outputs of a GPU run in which every check passed.

On the GPU machine (scripts/gpu-check.sh), which has no package index and so no nbgrader,
the two tests that call nbgrader are skipped; the wrong solutions run there on the GPU.
"""

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import streamlab
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
LABS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()
              and p.name.startswith("lab"))
MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", re.M)


def needs_nbgrader():
    if importlib.util.find_spec("nbgrader") is None:
        if streamlab.on_simulator():
            pytest.fail("nbgrader is not installed: pip install -e '.[test]'", pytrace=False)
        pytest.skip("nbgrader is not installed on this GPU machine (no package index); "
                    "CI runs this test")


def nbgrader(*args, cwd):
    needs_nbgrader()
    env = dict(os.environ, STREAMLAB_QUIET="1")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    r = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def course(tmp_path, lab):
    """A throwaway course folder with the lab generated in it, and its gradebook."""
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    shutil.copytree(ROOT / "solutions" / lab, tmp_path / "solutions" / lab)
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    nbgrader("generate_assignment", lab, "--force", f"--db={db}", cwd=tmp_path)
    return db


def notebook(kind, lab):
    return nbformat.read(ROOT / kind / lab / f"{lab}.ipynb", as_version=4)


def grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def solution_code(lab):
    """The solution of each solution cell, without the markers."""
    return {grade_id(c): MARKERS.sub("", c.source) for c in notebook("solutions", lab).cells
            if c.get("metadata", {}).get("nbgrader", {}).get("solution")}


def filled(nb, code):
    """``nb`` with the solution cells named in ``code`` replaced."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if grade_id(cell) in code:
            cell.source = code[grade_id(cell)]
    return nb


def comparable(nb):
    return [(c.cell_type, c.source, c.get("metadata", {}).get("nbgrader")) for c in nb.cells]


@pytest.mark.parametrize("lab", LABS)
def test_labs_are_what_nbgrader_generates_from_solutions(tmp_path, lab):
    course(tmp_path, lab)
    fresh = nbformat.read(tmp_path / "labs" / lab / f"{lab}.ipynb", as_version=4)
    committed = notebook("labs", lab)
    assert comparable(committed) == comparable(fresh), (
        f"labs/{lab} is out of date: run `nbgrader generate_assignment {lab} --force` "
        f"from the repository root and commit labs/")


@pytest.mark.parametrize("lab", LABS)
def test_the_learners_copy_hides_solutions_and_hidden_tests(lab):
    text = "\n".join(c.source for c in notebook("labs", lab).cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert text.count("raise NotImplementedError()") == len(solution_code(lab))


def wrong_cases():
    for lab in LABS:
        mod = importlib.import_module(f"wrong_solutions.{lab}")
        for name, case in mod.WRONG.items():
            also = case[4] if len(case) > 4 else ()
            yield pytest.param(lab, *case[:4], also, id=f"{lab}: {name}")


def run(nb, lab):
    """Execute ``nb`` (errors allowed); return {check grade_id: error text or None}."""
    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(ROOT / "solutions" / lab)}})
    client.execute()
    out = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            errors = [o for o in cell.outputs if o.output_type == "error"]
            out[meta["grade_id"]] = (f"{errors[0].ename}: {errors[0].evalue}" if errors
                                     else None)
    return out


@pytest.mark.parametrize("lab, target, code, check_id, phrase, also", list(wrong_cases()))
def test_a_wrong_solution_fails_its_part_with_useful_feedback(lab, target, code, check_id,
                                                              phrase, also):
    assert len(importlib.import_module(f"wrong_solutions.{lab}").WRONG) >= 3
    answers = solution_code(lab)
    answers[target] = code.strip("\n")
    results = run(filled(notebook("solutions", lab), answers), lab)  # hidden tests included
    assert results[check_id] is not None, f"the check passed a wrong solution: {code}"
    assert phrase in results[check_id], results[check_id]
    # parts that build on the wrong one may fail too (declared); every other part passes
    others = {k: v for k, v in results.items() if k != check_id and k not in also}
    assert all(v is None for v in others.values()), others


@pytest.mark.parametrize("lab", LABS)
def test_autograde_full_marks_zero_and_a_score_for_a_hang(tmp_path, lab):
    db = course(tmp_path, lab)
    release = nbformat.read(tmp_path / "labs" / lab / f"{lab}.ipynb", as_version=4)
    answers = solution_code(lab)
    last = list(answers)[-1]            # the last part: the parts before it still score
    hang = dict(answers)
    hang[last] = answers[last].split("\n")[0] + "\n    while True:\n        pass\n"
    submissions = {"ada": filled(release, answers), "bo": release,
                   "cy": filled(release, hang)}
    for student, nb in submissions.items():
        folder = tmp_path / "submitted" / student / lab
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{lab}.ipynb")
    # A short grading limit, but above the 30 s limit that a lab's own check may set for
    # code that runs in a thread of its own (lab 05): as with the real 300 s limit, the
    # check then reports the hang itself, and nbgrader's interrupt is for plain hangs.
    nbgrader("autograde", lab, f"--db={db}", "--create", "--Execute.timeout=40",
             "--ExecutePreprocessor.timeout=40", cwd=tmp_path)

    from nbgrader.api import Gradebook

    with Gradebook(db) as gb:
        total = gb.find_assignment(lab).max_score
        scores = {s: gb.find_submission(lab, s).score for s in submissions}
    assert total > 0 and scores["ada"] == total
    assert scores["bo"] == 0
    # the hang costs its part's points (a timeout per cell), not the grader or the rest
    assert 0 < scores["cy"] < total


def stdout(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


@pytest.mark.parametrize("lab", LABS)
def test_committed_solutions_hold_a_gpu_run_with_every_check_passed(lab):
    nb = notebook("solutions", lab)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"solutions/{lab} was not run once, top to bottom: execute it on a GPU with "
        f"scripts/gpu-check.sh and commit the result")
    setup = [c for c in code if grade_id(c) == "setup"][0]
    assert re.search(r"device: NVIDIA \S", stdout(setup)), (
        f"the setup cell shows {stdout(setup)!r}: execute the solution on a GPU")
    for c in code:
        errors = [o for o in c.outputs if o.get("output_type") == "error"]
        assert not errors, f"{grade_id(c)} failed: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    for c in code:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade"):
            text = stdout(c)
            assert text.rstrip().endswith("passed"), f"{grade_id(c)} printed {text!r}"
            assert "simulator" not in text, f"{grade_id(c)} ran on the simulator: {text!r}"
