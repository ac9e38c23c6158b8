"""How many of the package's files one thing passes through, counted by tracing.

Issue 31 asks that one span becoming a bar on a plot visit at most 5 of streamlab's files
on the simulator, and an exercise's verdict at most 6. This script runs each path once
(after a warm-up run, so that imports and compiles are not counted) under
``sys.setprofile``, follows every call, and counts the streamlab files the path entered
and the calls from one of them into another (a move; a move into a file entered before
is a move *back*: the package's middle calling up and down through itself).

    python scripts/trace_files.py            # on the simulator (as CI runs)
    python scripts/trace_files.py --all      # and every kept right answer's verdict

It prints a table (the path, files, moves, moves back, and the files in the order first
entered) and exits 1 when a path enters more files than the issue's limit, 0 otherwise.
The tests run it the same way (tests/test_scripts.py).

The issue names one exercise (lesson 00's first). ``--all`` also traces the verdict on
every kept right answer of every exercise (tests/exercise_answers.py), the class the
limit is about, and prints them below: a table to read, which does not change the exit
status (most enter more files than 6 today).
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # kept answers

import streamlab  # noqa: E402
from numba import cuda  # noqa: E402

PACKAGE = str(Path(streamlab.__file__).parent) + os.sep
LIMITS = {"one span becomes a bar": 5, "an exercise's verdict": 6}


def count(run) -> dict:
    """Trace ``run()``: the package files entered (in order), the calls from one package
    file into another ("moves"), and those into a file entered before ("moves back")."""
    order: list[str] = []
    moves = back = 0

    def where(frame):
        name = frame.f_code.co_filename if frame is not None else ""
        return name[len(PACKAGE):] if name.startswith(PACKAGE) else None

    def profile(frame, event, arg):
        nonlocal moves, back
        if event != "call":
            return
        callee = where(frame)
        if callee is None:
            return
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
    return {"files": order, "moves": moves, "back": back}


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
    """(exercise, files entered) for the verdict on each kept right answer."""
    from exercise_answers import RIGHT

    found = []
    for lesson, n, name in RIGHT:
        verdict = verdict_of(lesson, n, name)
        verdict()  # warm-up, as for the paths above
        found.append((f"{lesson}.{n} ({name})", count(verdict)["files"]))
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
        got = count(path)
        rows.append((name, got))
    print("| path | package files | issue 31's limit | moves between files | moves back | "
          "files, in the order first entered |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name, got in rows:
        print(f"| {name} | {len(got['files'])} | {LIMITS[name]} | {got['moves']} | "
              f"{got['back']} | {', '.join(got['files'])} |")
    if a.all:
        print()
        print("| exercise, its kept right answer | package files | files, in the order first entered |")
        print("| --- | ---: | --- |")
        for label, files in all_verdicts():
            print(f"| {label} | {len(files)} | {', '.join(files)} |")
    over = [name for name, got in rows if len(got["files"]) > LIMITS[name]]
    if over:
        print(f"over issue 31's limit: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
