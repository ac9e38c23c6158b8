"""Exercises in the lessons: each has a stub that says how long the answer is and raises
until written, a one-line check, and an answer in the lesson's solved copy that CI runs
(nbval runs the ``__SOLUTION`` copies) and the GPU run committed."""

import ast
import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parent.parent

import make_lessons  # noqa: E402

LESSONS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]__*.ipynb")
                 if "__SOLUTION" not in p.name)
# Lessons whose exercises are still to be written (issue 18): this list only shrinks.
PENDING: set = set()


def cells(path, tag=None):
    nb = json.loads(path.read_text())
    return [c for c in nb["cells"] if tag is None or tag in c.get("metadata", {}).get("tags", [])]


def source(cell):
    return "".join(cell["source"])


def stdout(cell):
    texts = [o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
    return "".join("".join(t) if isinstance(t, list) else t for t in texts)


def exercise_cells():
    return [pytest.param(p, i, id=f"{p.name[:2]}.{i}")
            for p in LESSONS for i, _ in enumerate(cells(p, "exercise"))]


def test_the_pending_list_only_names_lessons_without_exercises():
    for p in LESSONS:
        assert (p.name[:2] in PENDING) == (not cells(p, "exercise")), p.name


@pytest.mark.parametrize("path", [p for p in LESSONS if p.name[:2] not in PENDING],
                         ids=lambda p: p.name[:2])
def test_every_lesson_has_exercises_and_a_solved_copy(path):
    exercises = cells(path, "exercise")
    assert len(exercises) >= 2, "at least two exercises a lesson"
    solved = path.with_name(path.stem + "__SOLUTION.ipynb")
    assert solved.exists(), f"no solved copy {solved.name}"
    want = make_lessons.learner_copy(json.loads(solved.read_text()), solved.name)
    assert make_lessons.sources(json.loads(path.read_text())) == make_lessons.sources(want), \
        "the lesson is not what scripts/course/make_lessons.py writes from its solved copy"
    for n, (mine, theirs) in enumerate(zip(exercises, cells(solved, "exercise")), start=1):
        assert f"Exercise {n}: not done yet" in stdout(mine), \
            f"exercise {n}'s committed output does not say 'not done yet'"
        assert f"Exercise {n}: passed" in stdout(theirs), \
            f"the solved copy's exercise {n} did not pass in its committed run"


@pytest.mark.parametrize("path, i", exercise_cells())
def test_an_exercise_is_a_stub_and_a_one_line_check(path, i):
    src = source(cells(path, "exercise")[i])
    lines = [ln for ln in src.splitlines() if ln.strip()]
    assert lines[-1] == f"check_exercise{i + 1}({lines[-1].split('(', 1)[1]}", \
        f"the cell must end with its one-line check, check_exercise{i + 1}(...)"
    # a stub to write, or (a diagnose exercise) the program as given, to fix
    assert ("raise NotImplementedError(" in src and "your code here (about" in src) or \
        make_lessons.GIVEN_NOTE in src, src


@pytest.mark.parametrize("path, i", exercise_cells())
def test_an_unsolved_exercise_runs_alone_and_says_not_done_yet(path, i):
    """The cell imports what it needs itself, so the learner's copy runs to the end with
    every exercise unsolved."""
    import linecache

    namespace = {}
    out = io.StringIO()
    src, filename = source(cells(path, "exercise")[i]), f"{path.name}:exercise{i + 1}"
    # as IPython keeps a cell's source, which a diagnose exercise's check reads
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    with contextlib.redirect_stdout(out):
        exec(compile(src, filename, "exec"), namespace)
    assert f"Exercise {i + 1}: not done yet" in out.getvalue()


@pytest.mark.parametrize("path", [p for p in LESSONS if p.name[:2] not in PENDING],
                         ids=lambda p: p.name[:2])
def test_no_other_cell_needs_an_exercise_answer(path):
    """The lesson goes on the same whether or not an exercise is solved: no lesson cell
    uses a name an exercise cell defines or assigns, and no later lesson cell uses a name
    it imports (the import would change what the lesson's own name of that spelling
    means from there on), unless the lesson imports that name from the same module
    itself (``from numba import cuda``, which a diagnose exercise's program as given
    needs when its cell runs alone)."""
    all_cells = cells(path)
    own = set()  # (module, name, as): the lesson's own imports, outside its exercises
    for cell in all_cells:
        if cell["cell_type"] == "code" and "exercise" not in cell.get("metadata", {}).get(
                "tags", []):
            src = TransformerManager().transform_cell(source(cell))
            own |= {(top.module, a.name, a.asname) for top in ast.parse(src).body
                    if isinstance(top, ast.ImportFrom) for a in top.names}
    defined, imported = set(), {}  # imported: name -> index of the first cell importing it
    for at, cell in enumerate(all_cells):
        if "exercise" not in cell.get("metadata", {}).get("tags", []):
            continue
        for top in ast.parse(source(cell)).body:  # names inside a function stay there
            if isinstance(top, (ast.FunctionDef, ast.ClassDef)):
                defined.add(top.name)
            elif isinstance(top, (ast.Import, ast.ImportFrom)):
                for alias in top.names:
                    if isinstance(top, ast.ImportFrom) and \
                            (top.module, alias.name, alias.asname) in own:
                        continue  # the lesson's own name, bound to the same object
                    imported.setdefault((alias.asname or alias.name).split(".")[0], at)
            else:
                defined |= {n.id for n in ast.walk(top)
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for at, cell in enumerate(all_cells):
        if cell["cell_type"] != "code" or "exercise" in cell.get("metadata", {}).get("tags", []):
            continue
        src = TransformerManager().transform_cell(source(cell))  # magics as Python
        used = {n.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)}
        assert not used & defined, f"a lesson cell uses {sorted(used & defined)}, which an " \
                                   f"exercise defines"
        later = sorted(n for n in used if n in imported and imported[n] < at)
        assert not later, f"cell {at} uses {later}, which an exercise cell above imports " \
                          f"and so rebinds"


def test_make_lessons_writes_a_stub_and_refuses_bad_cells():
    cell = ("from x import check_exercise1\n\ndef f(a):\n    \"\"\"Doc.\"\"\"\n"
            "    ### BEGIN SOLUTION\n    a += 1\n    return a\n    ### END SOLUTION\n\n"
            "check_exercise1(f)\n")
    out = make_lessons.stub(cell, "t")
    assert "a += 1" not in out and "# your code here (about 2 lines)" in out
    assert 'raise NotImplementedError("Exercise 1: write f (about 2 lines)")' in out
    assert out.rstrip().endswith("check_exercise1(f)")
    with pytest.raises(make_lessons.LessonError, match="without"):
        make_lessons.stub(cell.replace("    ### END SOLUTION\n", ""), "t")
    with pytest.raises(make_lessons.LessonError, match="must end with its check"):
        make_lessons.stub(cell.replace("check_exercise1(f)", ""), "t")
    with pytest.raises(make_lessons.LessonError, match="no ### BEGIN"):
        make_lessons.stub("def f():\n    pass\ncheck_exercise1(f)\n", "t")


def test_the_learner_copy_drops_the_solution_note_and_the_solved_run():
    solved = {"cells": [
        {"cell_type": "markdown", "metadata": {"tags": ["solution-note"]}, "source": ["solved"]},
        {"cell_type": "code", "metadata": {"tags": ["exercise"]}, "execution_count": 3,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "Exercise 1: passed"}],
         "source": ["def f():\n", "    ### BEGIN SOLUTION\n", "    return 1\n",
                    "    ### END SOLUTION\n", "check_exercise1(f)\n"]}]}
    copy = make_lessons.learner_copy(solved, "t")
    assert [c["cell_type"] for c in copy["cells"]] == ["code"]
    cell = copy["cells"][0]
    assert cell["outputs"] == [] and cell["execution_count"] is None
    assert "return 1" not in "".join(cell["source"]) and solved["cells"][1]["execution_count"] == 3
    with pytest.raises(make_lessons.LessonError, match="not tagged 'exercise'"):
        make_lessons.learner_copy({"cells": [{"cell_type": "code", "metadata": {},
                                              "source": ["### BEGIN SOLUTION\n"]}]}, "t")


def test_the_learner_copy_does_not_carry_the_solved_copys_record_of_its_run():
    """The solved copy's provenance stamp hashes the solved code; the learner's copy runs
    other code, so it gets a stamp only from its own GPU run."""
    from streamlab import provenance

    solved = {"metadata": {provenance.KEY: {"code_sha256": "x", "package_sha256": "y",
                                            "device": "NVIDIA H200"}},
              "cells": [{"cell_type": "code", "metadata": {}, "source": ["x = 1\n"],
                         "outputs": [], "execution_count": 1}]}
    copy = make_lessons.learner_copy(solved, "t")
    assert provenance.KEY not in copy["metadata"]
    assert provenance.KEY in solved["metadata"], "the solved copy itself is left alone"
    assert make_lessons.RUN_KEY == provenance.KEY
