"""Shared by the lab tests: the labs, their cells, filling them in, grading them.

(See test_labs.py, test_lab_answers.py and test_lab_grading.py.)
"""

import functools
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import streamlab

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
LABS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()
              and p.name.startswith("lab"))
MARKERS = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$\n?", re.M)
STUB = 'raise NotImplementedError("write this part, then run the check below")'


def needs_nbgrader():
    if importlib.util.find_spec("nbgrader") is None:
        if streamlab.on_simulator():
            pytest.fail("nbgrader is not installed: pip install -e '.[test]'", pytrace=False)
        pytest.skip("nbgrader is not installed on this GPU machine (no package index); "
                    "CI runs this test")


def nbgrader(*args, cwd):
    needs_nbgrader()
    env = dict(os.environ, STREAMLAB_QUIET="1")
    env.pop("STREAMLAB_RACE_CHECK", None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    r = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@functools.cache
def generated():
    """A course folder where `nbgrader generate_assignment` made every lab from solutions/,
    with its gradebook: made once per test process (one nbgrader run for all the labs, not
    one per test; each run costs seconds to start) and copied by :func:`course`."""
    import atexit
    import tempfile

    # inside the course (which the grader hides from every part), not in /tmp: where no
    # sandbox can be made, a part's cheat reads /tmp, and this copy holds the solutions
    (ROOT / "build").mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="streamlab-generated-", dir=ROOT / "build"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    shutil.copy(ROOT / "nbgrader_config.py", folder)
    shutil.copytree(ROOT / "solutions", folder / "solutions",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    nbgrader("generate_assignment", "*", "--force",
             f"--db=sqlite:///{folder / 'gradebook.db'}", cwd=folder)
    missing = [lab for lab in LABS if not (folder / "labs" / lab / f"{lab}.ipynb").exists()]
    assert not missing, f"nbgrader generated no learner copy of {missing}"
    return folder


def course(tmp_path, lab):
    """A throwaway course folder with the lab generated in it (by nbgrader, from
    solutions/), and its gradebook; return the gradebook's URL."""
    made = generated()
    shutil.copy(made / "nbgrader_config.py", tmp_path)
    for kind in ("solutions", "labs"):
        shutil.copytree(made / kind / lab, tmp_path / kind / lab)
    shutil.copy(made / "gradebook.db", tmp_path / "gradebook.db")
    return f"sqlite:///{tmp_path / 'gradebook.db'}"


def notebook(kind, lab):
    return nbformat.read(ROOT / kind / lab / f"{lab}.ipynb", as_version=4)


def meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell):
    return meta(cell).get("grade_id")


def cells_of(lab, which):
    """{grade_id: source without markers} for the solution or graded cells of a lab."""
    return {grade_id(c): MARKERS.sub("", c.source) for c in notebook("solutions", lab).cells
            if meta(c).get(which)}


def filled(nb, code):
    """``nb`` with the cells named in ``code`` replaced."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for cell in nb.cells:
        if grade_id(cell) in code:
            cell.source = code[grade_id(cell)]
    return nb


def submission(lab, code):
    """The learner's copy with ``code`` in its solution cells and the graded cells as
    nbgrader's autograde restores them (hidden tests included)."""
    nb = filled(notebook("labs", lab), code)
    graded = {grade_id(c): c.source for c in notebook("solutions", lab).cells
              if meta(c).get("grade")}
    return filled(nb, graded)


def at_call(source, name):
    """An answer cell that runs ``source`` (an attack written at the top of a cell) when a
    check calls ``name``, not when the cell runs: the grader refuses a cell that does more
    than define (issue 56), so a test of what lies deeper (the guard, the audit hook, the
    sandbox, the verdict's writing) attacks from inside the answer, as a learner now
    must. ``source`` defines ``name`` as well (else the call returns None)."""
    run = "await " if f"async def {name}(" in source else ""
    return (f"{'async ' if run else ''}def {name}(*args, **kwargs):\n"
            f"    g = globals()\n"
            f"    me = g[{name!r}]\n"
            f"    exec({source!r}, g)\n"
            f"    if g[{name!r}] is me:\n"
            f"        return None\n"
            f"    return {run}g[{name!r}](*args, **kwargs)\n")


def prepended(source, code):
    """``source`` with ``code`` run first in its first function's body: a probe or a cheat
    that runs when a check calls the answer (the grader refuses top-level code)."""
    import ast

    tree = ast.parse(source)
    first = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    first.body[:0] = ast.parse(code).body
    return ast.unparse(tree)


def comparable(nb):
    return [(c.cell_type, c.source, meta(c) or None) for c in nb.cells]


def stdout(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def cases(attribute, labs=None):
    """The answers of ``attribute`` (WRONG, WRONG_ON_GPU or RIGHT) of ``labs`` (default:
    every lab; a lab without that attribute has none)."""
    if attribute not in ("WRONG", "WRONG_ON_GPU", "RIGHT"):
        raise ValueError(f"no kept answers are called {attribute!r}")
    for lab in LABS if labs is None else labs:
        mod = importlib.import_module(f"wrong_solutions.{lab}")
        for name, case in getattr(mod, attribute, {}).items():
            if attribute.startswith("WRONG") and len(case) == 4:
                case = (*case, ())  # no later part builds on this one
            yield pytest.param(lab, *case, id=f"{lab}: {name}")


# test_lab_answers.py takes the first half of the labs' wrong answers and
# test_lab_answers_later.py the rest: pytest-xdist gives each file to one worker, and one
# file of every lab's answers kept a worker busy for minutes while the other sat idle
FIRST_HALF = LABS[: len(LABS) // 2]
SECOND_HALF = LABS[len(LABS) // 2:]


def setup_code(lab):
    (cell,) = [c for c in notebook("solutions", lab).cells if grade_id(c) == "setup"]
    return cell.source
