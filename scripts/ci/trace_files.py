"""The work one path does in the package, counted by tracing: functions and calls.

Issue 55 asks that the work be measured, not the files: a split of a module into two
must not change the count. This script runs each path once (after a warm-up run, so that
imports and compiles are not counted) under ``sys.setprofile`` and counts

* **functions**: the package's distinct functions the path entered (a comprehension's,
  a generator expression's and a lambda's frames are left out: Python 3.12 inlines
  comprehensions, and their count would change with the Python, not the code);
* **calls**: every entry into a package function, those frames included;
* and, to read beside them, the package files entered and the calls from one file into
  another (moves; a move into a file entered before is a move *back*).

    python scripts/ci/trace_files.py            # one span becoming a bar, and one verdict
    python scripts/ci/trace_files.py --all      # and every kept right answer's verdict

The paths: one span around a launch on the simulator, drawn as a bar; lesson 00's first
exercise's verdict; and with ``--all`` the verdict on every kept right answer of every
exercise (tests/exercise_answers.py), summed. It prints a table and exits 1 when a path
enters more functions than :data:`LIMITS` (today's counts, which only come down: the
tests run it), 0 otherwise. Issue 55's targets (:data:`TARGETS`) are printed beside them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("STREAMLAB_DEVICE", "sim")
os.environ.setdefault("STREAMLAB_QUIET", "1")
if __name__ == "__main__":
    # the paths as they run by default: a session-wide race check (STREAMLAB_RACE_CHECK=1,
    # as the course's tests set) adds the race check itself (streamlab.order) to each call
    os.environ["STREAMLAB_RACE_CHECK"] = "0"

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # kept answers

import streamlab  # noqa: E402
from numba import cuda  # noqa: E402

PACKAGE = str(Path(streamlab.__file__).parent) + os.sep
#: what the tests hold: the functions entered today (99, 103 and 2,528 after issue 55's
#: first step, the split of ops.py by job; 100, 104 and 2,548 once the simulator's
#: stream and event checked for a closed context; 115 and 2,730 once 16 of the
#: exercises went through the check runner: lesson 02's first verdict entered 12
#: functions more, the runner's six and four of the Run's, the same for every check,
#: and the exercise's inputs and rules. The sum counts shared code once per verdict: one
#: runner for every check costs here what it saves in code read once; 2,750 once a result
#: compared must be plain numbers, issue 56's objects equal to anything; 101 and 2,772 once
#: a check's per-stream spans begin at the stream's own first launch, not the block's, and
#: every launch passes the launch watch: issue 56's answer that sleeps between launches);
#: 2,931 once lesson 02 gained a diagnose exercise (issue 58), whose verdict on its kept
#: right answer enters 146 (the sum counts each exercise's own: 23 verdicts now); 3,077
#: once lesson 03 gained one too (144; 24 verdicts),
#: rounded up a little, as a path that depends on timing (a query that finds the work not done yet) may
#: enter a function more or less. A change may lower them, and must not raise them
LIMITS = {"one span becomes a bar": 102, "an exercise's verdict": 117,
          "every kept right answer's verdict, summed": 3077}
#: issue 55's targets, not met yet: 40 for a span, 1,400 for the kept answers' verdicts
TARGETS = {"one span becomes a bar": 40, "every kept right answer's verdict, summed": 1400}


def count(run) -> dict:
    """Trace ``run()``: the package functions entered, the calls into package functions,
    the package files entered (in order), and the calls from one package file into
    another ("moves"), and those into a file entered before ("moves back")."""
    order: list[str] = []
    functions: set = set()
    calls = moves = back = 0

    def where(frame):
        name = frame.f_code.co_filename if frame is not None else ""
        return name[len(PACKAGE):] if name.startswith(PACKAGE) else None

    def profile(frame, event, arg):
        nonlocal calls, moves, back
        if event != "call":
            return
        callee = where(frame)
        if callee is None:
            return
        calls += 1
        code = frame.f_code
        if not code.co_name.startswith("<"):  # <listcomp>, <genexpr>, <lambda>, ...
            functions.add((callee, code.co_firstlineno, code.co_name))
        caller = where(frame.f_back)
        if caller is not None and caller != callee:
            moves += 1
            back += callee in order
        if callee not in order:
            order.append(callee)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return {"functions": len(functions), "calls": calls, "files": order, "moves": moves,
            "back": back}


def span_to_bar():
    """A timeline with one span around a launch, drawn as one bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = cuda.stream()
    tl = streamlab.Timeline()
    with tl.span("kernel", s):
        streamlab.spin[1, 1, s](1000)
    cuda.synchronize()
    tl.trace().plot()
    plt.close("all")


def verdict_of(lesson: str, number: int, name: str):
    """The verdict of lesson ``lesson``'s exercise ``number`` on its kept right answer
    (tests/exercise_answers.py), as a function of no arguments: the answer made as the
    course's tests make it, and the check's printout kept off the table."""
    import contextlib
    import importlib
    import io

    from exercise_answers import RIGHT

    answer = RIGHT[(lesson, number, name)]["solution"]
    check = getattr(importlib.import_module(f"streamlab.exercises.lesson{lesson}"),
                    f"check_exercise{number}")
    preamble = ("import numpy as np\nfrom numba import cuda\nimport streamlab\n"
                f"from streamlab.exercises.lesson{lesson} import *\n")  # as the tests do

    def verdict():
        namespace: dict = {}
        exec(preamble, namespace)
        exec(answer, namespace)
        with contextlib.redirect_stdout(io.StringIO()):
            check(namespace[name])
    return verdict


#: lesson 00's exercise 1, the one the issue names
exercise_verdict = verdict_of("00", 1, "time_on")

PATHS = {"one span becomes a bar": span_to_bar, "an exercise's verdict": exercise_verdict}


def all_verdicts() -> list:
    """(exercise, its count) for the verdict on each kept right answer."""
    from exercise_answers import RIGHT

    found = []
    for lesson, n, name in RIGHT:
        verdict = verdict_of(lesson, n, name)
        verdict()  # warm-up, as for the paths above
        found.append((f"{lesson}.{n} ({name})", count(verdict)))
    return found


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true",
                    help="also trace the verdict on every kept right answer")
    a = ap.parse_args(argv)
    rows = []
    for name, path in PATHS.items():
        path()  # warm-up: imports and compiles happen here, not in the count
        rows.append((name, count(path)))
    print("| path | functions | limit (today) | issue 55's target | calls | files | "
          "moves between files | moves back |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    def row(name, got):
        print(f"| {name} | {got['functions']} | {LIMITS.get(name, '')} | "
              f"{TARGETS.get(name, '')} | {got['calls']} | {len(got['files'])} | "
              f"{got['moves']} | {got['back']} |")

    for name, got in rows:
        row(name, got)
    if a.all:
        each = all_verdicts()
        total = {"functions": sum(g["functions"] for _, g in each),
                 "calls": sum(g["calls"] for _, g in each),
                 "files": sorted({f for _, g in each for f in g["files"]}),
                 "moves": sum(g["moves"] for _, g in each),
                 "back": sum(g["back"] for _, g in each)}
        name = "every kept right answer's verdict, summed"
        row(name, total)
        rows.append((name, total))
        print()
        print("| exercise, its kept right answer | functions | calls | files, in the order "
              "first entered |")
        print("| --- | ---: | ---: | --- |")
        for label, got in each:
            print(f"| {label} | {got['functions']} | {got['calls']} | "
                  f"{', '.join(got['files'])} |")
    over = [name for name, got in rows if got["functions"] > LIMITS[name]]
    if over:
        print(f"more functions entered than today's limit: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
