"""Make a synthetic class to grade: N submissions of each lab, each with a known grade.

    python scripts/course/make_class.py N LAB [LAB ...] --out FOLDER [--seed S]
    python scripts/course/make_class.py --check FOLDER LAB    # the grades against expected.csv
    python scripts/course/make_class.py 12 lab02__events --out /tmp/class --grade
                                                       # make, grade and check: a first try
    python scripts/course/make_class.py 12 lab05__host_functions --attacks --out /tmp/c
                                                       # and every known attack on the grader

FOLDER becomes a course folder as nbgrader autograde wants one (nbgrader_config.py,
solutions/, labs/, a gradebook with the labs in it, and submitted/<learner>/<lab>/), and
gets expected.csv: learner, lab, part, the score it must get. The submissions come from
the answers the course's tests keep (tests/wrong_solutions/), cycled through in order:

* the solution (full marks), and the learner's copy untouched (nothing);
* each right answer in other words (full marks);
* each wrong answer whose function no other part's check uses (its part scores nothing,
  the others full marks);
* cheats: the lab's check cells rewritten to pass (nothing: the grader restores them), a
  replaced check, from inside an answer (its part nothing: the guard sees it after the
  check), a
  part's answer read from the course's solutions (that part nothing), an escape that
  looks for the other learners' submissions and the gradebook around its folder and runs
  any answer it finds (that part nothing);
* a part that hangs, swallowing KeyboardInterrupt (that part nothing, after the time
  limit), and a part that ends its process (os._exit; that part nothing).

With --attacks, besides: each of the grader's known attacks (ATTACKS: a function's code
swapped, the guard turned off, IPython's transformer replaced, the verdict pipe found in
memory, check.fail silenced or jumped over by a tracer, the sandbox undone as root, the
solutions linked in and the gradebook written through SQLite, other learners' answers
looked for, a check's secret read, a result equal to anything, the setup cell deleted or
stripped of its marks with the graded cells rewritten), each in one part with that
part's answer gutted: each attacked part scores nothing.

Needs nbgrader (the test tools). Used by tests/test_classroom.py and
benchmarks/class_grading.py.
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from attacks import (CHECKSUM_FROM_THE_SEED, FINDS_THE_PIPE_IN_MEMORY,  # noqa: E402
                     SILENCED_WHILE_CHECKED)

#: cheats, each (kind, the cheat's code, which parts score nothing: "all" or "part"): the
#: part's cell defines its functions with empty bodies, and the first function runs the
#: cheat when a check calls it (the grader refuses a cell that does more than define:
#: issue 56), which would score if it worked
CHEATS = {
    "cheat: replaces the check": ('''
import streamlab.check
streamlab.check.fail = lambda *args, **kwargs: None
''', "part"),
    "cheat: reads the solution": ('''
import json, pathlib
for up in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]:
    try:
        found = list(up.glob("solutions/{lab}/*.ipynb"))
    except OSError:
        found = []
    for path in found:
        try:
            for cell in json.loads(path.read_text())["cells"]:
                if "def {function}" in "".join(cell["source"]):
                    exec("".join(cell["source"]))
        except OSError:
            pass
''', "part"),
    "cheat: looks for the other learners' answers": ('''
import glob, json, os
seen = []
for pattern in ("../*/*.ipynb", "../../*/*.ipynb", "/tmp/*.ipynb", "/tmp/*/*.ipynb",
                "/tmp/*/*/*.ipynb", "/tmp/*/*/*/*.ipynb",
                "../../../submitted/*/*/*.ipynb", "../../../gradebook.db"):
    try:
        seen += glob.glob(pattern)
    except OSError:
        pass
def looks_right(text):  # an answer, not a stub, an empty body, a hang or a crash
    return "def {function}" in text and not any(
        bad in text for bad in ("NotImplementedError", "while True", "_exit", "    pass"))
for path in seen:
    try:
        for cell in json.loads(open(path).read())["cells"]:
            text = "".join(cell.get("source", ""))
            if looks_right(text):
                exec(text)
    except Exception:
        pass
''', "part"),
}
#: issue 56's attacks on the grader, by mechanism, each written into one part's function
#: with that function's body gutted (so only an attack that worked could pass it): (kind,
#: the attack's code, the function it goes in: None for the first function of any part).
#: ``{course}`` is the course folder (a learner on a shared server may know it);
#: ``{function}`` the function it is written in. Each scores nothing for its part, under
#: nbgrader autograde and through the class grader alike (tests/test_classroom.py); the
#: table in labs/README.md says what each attack gets, and tests/test_grading_sandbox.py
#: and tests/test_transcript.py keep each one alone.
ATTACKS = [
    ("attack: check.fail's __code__ swapped", """
import streamlab.check as k
k.fail.__code__ = (lambda *a, **kw: None).__code__
""", None),
    ("attack: the guard turned off through itself", """
import streamlab.grading._child as c
import streamlab.check as k
c.Guard.problems.__code__ = (lambda self, ns: []).__code__
k.fail.__code__ = (lambda *a, **kw: None).__code__
""", None),
    ("attack: IPython's input transformer replaced and planted", """
import sys, types
from IPython.core import inputtransformer2 as t
t.TransformerManager.transform_cell = lambda self, cell: 'pass'
sys.modules['IPython.core.inputtransformer2'] = types.ModuleType('planted')
""", None),
    ("attack: the verdict pipe found in memory, a pass written through it",
     FINDS_THE_PIPE_IN_MEMORY, None),
    ("attack: check.fail silenced while the check runs, put back by a tracer",
     SILENCED_WHILE_CHECKED, None),
    ("attack: a tracer that jumps over each fail(...) line", """
import linecache, sys, threading
def jump(frame, event, arg):
    if event == "line" and "streamlab" in frame.f_code.co_filename:
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
        if "fail(" in line or "raise " in line:
            try:
                frame.f_lineno = frame.f_lineno + 1
            except ValueError:
                pass
    return jump
f = sys._getframe(1)
while f is not None:
    f.f_trace = jump
    f = f.f_back
sys.settrace(jump)
threading.settrace(jump)
""", None),
    ("attack: the sandbox undone as root, its own grade set in the gradebook", """
import ctypes, os, sqlite3
course = {course!r}
if not os.path.exists(os.path.join(course, "gradebook.db")):  # hidden: in a sandbox's
    libc = ctypes.CDLL(None, use_errno=True)                  # mounts (only there)
    libc.umount2(course.encode(), 2)
    libc.mount(b"none", b"/", None, 32 | 4096, None)
try:
    db = sqlite3.connect(os.path.join(course, "gradebook.db"))
    db.execute("update grade set manual_score = 100")
    db.commit()
except Exception:
    pass
""", None),
    ("attack: the solutions hard-linked or copied in, SQLite on the gradebook", """
import glob, json, os, shutil, sqlite3
course = {course!r}
for path in glob.glob(os.path.join(course, "solutions", "*", "*.ipynb")):
    for how in (os.link, shutil.copyfile):
        try:
            how(path, "leak.ipynb")
            break
        except Exception:
            pass
try:
    for cell in json.load(open("leak.ipynb"))["cells"]:
        if "def {function}" in "".join(cell["source"]):
            exec("".join(cell["source"]), globals())
except Exception:
    pass
try:
    db = sqlite3.connect("file:" + os.path.join(course, "gradebook.db") + "?mode=rw", uri=True)
    db.execute("update grade set manual_score = 100")
    db.commit()
except Exception:
    pass
""", None),
    # the cheat of kinds() that finds other submissions and the gradebook around its
    # folder (a class's long-standing cheat: in the attacks, the class test needs no
    # cycle of kinds() long enough to reach it)
    ("attack: " + "looks for the other learners' answers", CHEATS[
        "cheat: looks for the other learners' answers"][0], None),
    # lab 05's own: a secret read from a check's frames, and an object equal to anything
    ("attack: the checksum made from the seed read in the check's frames",
     CHECKSUM_FROM_THE_SEED, "checksum_when_done"),
    ("attack: a checksum that says it equals anything", """
class Anything(float):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = float.__hash__

async def checksum_when_done(stream, h_out):
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    @HOST_FN
    def resolve(_user_data):
        loop.call_soon_threadsafe(done.set_result, None)

    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(resolve, ctypes.c_void_p).value, 0)
    await done
    h_out.copy()
    return Anything(0.0)
""", "checksum_when_done"),
]
#: the locked setup cell deleted, or stripped of its marks, and a cell of one's own that
#: defines checks that pass put in its place; and the graded cells rewritten to pass (the
#: answers gutted: either attack alone would pass every part if its defence failed)
STRUCTURE = ["attack: the setup cell deleted, checks of one's own in its place; "
             "rewrites the checks (the graded cells, to pass)",
             "attack: the setup cell's marks removed, rewritten to define passing checks; "
             "rewrites the checks (the graded cells, to pass)"]
HANG = '''
import time
while True:               # a hang that swallows the grader's KeyboardInterrupt
    try:
        time.sleep(0.1)
    except BaseException:
        pass
'''
CRASH = '''
import os
os._exit(3)
'''


def gutted(source: str, body: str = "pass") -> str:
    """``source`` with every top-level function's body replaced by ``body``."""
    tree = ast.parse(source)
    stub = ast.parse(body).body
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = stub
    return ast.unparse(tree)


def kinds(lab: str) -> list[tuple[str, dict, dict]]:
    """(kind, the cells to fill, the score of each part) for every kept answer of ``lab``,
    in a fixed order: the solution and the untouched copy, then a wrong answer, a cheat, a
    right answer in other words and a hang or a crash in turn, so that a small class (a
    teacher's first try) has a little of each (it had only cheats and failures before)."""
    from labtools import at_call, cells_of, grade_id, meta, notebook

    solution = cells_of(lab, "solution")
    checks = [c for c in notebook("solutions", lab).cells if meta(c).get("grade")]
    points = {grade_id(c): float(meta(c)["points"]) for c in checks}
    uses = {grade_id(c): c.source for c in checks}  # the functions each check is given
    full = dict(points)
    kept = importlib.import_module(f"wrong_solutions.{lab}")
    front = [("solution", dict(solution), full),
             ("untouched", {}, dict.fromkeys(points, 0.0))]
    out: list = []  # the cheats, then the hang and the crash
    first = next(iter(solution))
    part_of_first = next(p for p, src in uses.items() if first in src)
    for name, (code, scope) in CHEATS.items():
        # the empty answer first: a cheat that worked would then replace it
        cell = gutted(solution[first]) + "\n" + at_call(
            code.replace("{lab}", lab).replace("{function}", first), first)
        scores = dict.fromkeys(points, 0.0) if scope == "all" else \
            dict(full, **{part_of_first: 0.0})
        out.append((name, dict(solution, **{first: cell}), scores))
    # the lab's own checks rewritten to pass, over the untouched copy: the grader restores
    # them (hidden tests included), as nbgrader does
    out.append(("cheat: rewrites the checks",
                {part: f"print('Part {part[-1]}: passed')" for part in points},
                dict.fromkeys(points, 0.0)))
    for name, body in (("hangs", HANG), ("ends its process", CRASH)):
        out.append((name, dict(solution, **{first: gutted(solution[first], body)}),
                    dict(full, **{part_of_first: 0.0})))
    rights = [(f"right: {name}", dict(solution, **{target: code}), full)
              for name, (target, code, *_) in getattr(kept, "RIGHT", {}).items()]
    wrongs = []
    for name, entry in kept.WRONG.items():
        target, code, part = entry[:3]
        others = [p for p, src in uses.items() if p != part and target in src]
        if len(entry) > 4 or others:  # a later part may fail too: no known grade
            continue
        wrongs.append((f"wrong: {name}", dict(solution, **{target: code}),
                       dict(full, **{part: 0.0})))
    cheats, failures = out[:-2], out[-2:]
    queues = [wrongs, cheats, rights, failures]
    while any(queues):
        front += [q.pop(0) for q in queues if q]
    return front


def attacks(lab: str, course: Path) -> list[tuple[str, dict, dict, object]]:
    """(kind, the cells to fill, the score of each part, what is done to the notebook
    after: None or a function) for each of issue 56's attacks that fits ``lab``. Each
    attack goes in the function of one part (the first function its check calls and no
    other check does), that function's body gutted; the parts are filled in turn, so
    that one submission carries an attack in each part (each part runs in its own
    process and calls its own function alone) and every part attacked scores nothing.
    The structural attacks (the setup cell, and the graded cells rewritten to pass) gut
    every answer: all parts score nothing."""
    from labtools import at_call, cells_of, grade_id, meta, notebook

    solution = cells_of(lab, "solution")
    checks = [c for c in notebook("solutions", lab).cells if meta(c).get("grade")]
    points = {grade_id(c): float(meta(c)["points"]) for c in checks}
    own = {}  # part -> the function its check alone calls
    for part in points:
        uses = [f for f in solution if f in next(c.source for c in checks
                                                  if grade_id(c) == part)]
        others = {f for p in points if p != part for c in checks if grade_id(c) == p
                  for f in solution if f in c.source}
        mine = [f for f in uses if f not in others]
        if mine:
            own[part] = mine[0]
    fits = [(kind, code, target) for kind, code, target in ATTACKS
            if target is None or target in solution]
    fits.sort(key=lambda fit: fit[2] is None)  # a lab's own attacks have one place
    queues = {part: [] for part in own}
    for kind, code, target in fits:  # each other in the part that has fewest yet
        places = [p for p, f in own.items() if target in (None, f)]
        if places:
            queues[min(places, key=lambda p: len(queues[p]))].append((kind, code))
    out = []
    while any(queues.values()):
        cells, attacked, kinds_in = dict(solution), [], []
        for part, queue in queues.items():
            if queue:
                kind, code = queue.pop(0)
                fn = own[part]
                code = code.replace("{course!r}", repr(str(course))).replace(
                    "{function}", fn).replace("{lab}", lab)
                if f"def {fn}(" not in code:  # the attack, then the gutted answer
                    code += "\n" + gutted(solution[fn])
                cells[fn] = at_call(code, fn)
                attacked.append(part)
                kinds_in.append(kind[len("attack: "):])
        out.append(("attack: " + "; ".join(kinds_in), cells,
                    dict(points, **dict.fromkeys(attacked, 0.0)), None))
    fake = "\n".join(f"def {part}(*args, **kwargs):\n    print('Part {part[-1]}: passed')\n"
                     for part in points)
    emptied = {f: gutted(src) for f, src in solution.items()}
    emptied.update({part: f"print('Part {part[-1]}: passed')" for part in points})

    def deleted(nb):
        import nbformat

        (setup,) = [c for c in nb.cells if grade_id(c) == "setup"]
        at = nb.cells.index(setup)
        nb.cells[at] = nbformat.v4.new_code_cell(fake)
        return nb

    def stripped(nb):
        (setup,) = [c for c in nb.cells if grade_id(c) == "setup"]
        setup.metadata.pop("nbgrader")
        setup.source = fake
        return nb

    out += [(kind, emptied, dict.fromkeys(points, 0.0), how)
            for kind, how in zip(STRUCTURE, (deleted, stripped))]
    return out


def make_class(folder: Path, n: int, labs: list[str], seed: int = 0,
               with_attacks: bool = False) -> list[dict]:
    """Write the course folder and ``n`` submissions of each lab; the expected rows.
    ``with_attacks``: besides, a submission for each of issue 56's attacks on the
    grader (:func:`attacks`: two or more a submission), so that the class holds them
    all."""
    import nbformat
    from labtools import course, filled, notebook

    if n < 1:
        raise SystemExit(f"N={n}: make at least one submission")
    folder.mkdir(parents=True, exist_ok=True)
    for lab in labs:
        course(folder, lab)  # nbgrader's course folder, with the lab in its gradebook
    rows = []
    rng = random.Random(seed)
    for lab in labs:
        answers = kinds(lab)
        made = [(*answers[i % len(answers)], None) for i in range(n)]
        if with_attacks:
            made += attacks(lab, folder.resolve())
        release = notebook("labs", lab)
        order = list(range(len(made)))
        rng.shuffle(order)  # learners' names say nothing of their answers
        for i, (kind, cells, scores, after) in enumerate(made):
            learner = f"learner{order[i]:04d}"
            path = folder / "submitted" / learner / lab / f"{lab}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nb = filled(release, cells)
            nbformat.write(after(nb) if after else nb, path)
            rows += [{"learner": learner, "lab": lab, "kind": kind, "part": part,
                      "score": score} for part, score in scores.items()]
    with open(folder / "expected.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["learner", "lab", "kind", "part", "score"])
        w.writeheader()
        w.writerows(rows)
    return rows


def expected(folder: Path, lab: str) -> dict:
    """{(learner, part): the score it must get} for ``lab``, from expected.csv."""
    with open(folder / "expected.csv") as f:
        return {(r["learner"], r["part"]): float(r["score"]) for r in csv.DictReader(f)
                if r["lab"] == lab}


def kind_of(folder: Path) -> dict:
    """{learner: the kind of answer they submitted}, from expected.csv."""
    with open(folder / "expected.csv") as f:
        return {r["learner"]: r["kind"] for r in csv.DictReader(f)}


def scores(folder: Path, lab: str) -> dict:
    """{(learner, part): score} of ``lab`` in the course folder's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gb:
        return {(s.student.id, g.name): g.score for s in gb.assignment_submissions(lab)
                for nb in s.notebooks for g in nb.grades}


def check(folder: Path, lab: str) -> int:
    """Each learner's kind of answer, and the grade the gradebook gave each part against
    the one expected.csv says; 1 where one differs (or nothing was graded)."""
    want, got, kind = expected(folder, lab), scores(folder, lab), kind_of(folder)
    wrong = 0
    for learner in sorted({learner for learner, _ in want}):
        parts = sorted(part for who, part in want if who == learner)
        differ = [p for p in parts if got.get((learner, p)) != want[(learner, p)]]
        wrong += bool(differ)
        said = ", ".join(f"{p} {got.get((learner, p))} (expected {want[(learner, p)]})"
                         for p in differ) or "as expected"
        print(f"{learner}  {kind[learner]:<60.60}  {said}")
    print(f"{wrong} of {len({learner for learner, _ in want})} learners graded otherwise "
          f"than expected")
    return 1 if wrong else 0


def main(argv=None) -> int:
    from labtools import LABS

    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--check"]:  # python scripts/course/make_class.py --check FOLDER LAB
        if len(argv) != 3:
            raise SystemExit("usage: python scripts/course/make_class.py --check FOLDER LAB")
        return check(Path(argv[1]), argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="submissions per lab")
    ap.add_argument("labs", nargs="+", help=f"labs: {', '.join(LABS)}")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attacks", action="store_true",
                    help="add a submission for each of the grader's known attacks (issue "
                    "56's mechanisms, two or more to a submission; each attacked part must "
                    "score nothing)")
    ap.add_argument("--grade", action="store_true",
                    help="then grade the class on Dask (python -m streamlab.grading class, "
                    "60 s a part: one submission hangs) and check each grade")
    a = ap.parse_args(argv)
    unknown = [lab for lab in a.labs if lab not in LABS]
    if unknown:
        ap.error(f"no such lab: {', '.join(unknown)} (the labs: {', '.join(LABS)})")
    rows = make_class(a.out, a.n, a.labs, a.seed, with_attacks=a.attacks)
    print(f"{a.n} submissions of {', '.join(a.labs)} in {a.out / 'submitted'}; "
          f"{len(rows)} expected part scores in {a.out / 'expected.csv'}")
    if not a.grade:
        return 0
    import subprocess

    failed = 0
    for lab in a.labs:
        graded = subprocess.run([sys.executable, "-m", "streamlab.grading", "class", lab,
                                 "--timeout", "60"], cwd=a.out)
        failed |= graded.returncode or check(a.out, lab)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
