"""How long the grader takes per submission, with the course hidden by bubblewrap and
without it: the sandbox's cost (issue 32 asks for at most 1.5 times the time before).

    python benchmarks/grading_times.py [--reps N] [--out docs/grading-times.md] [LAB ...]

Grades each lab's solution (every graded part, each in a fresh process, as
``nbgrader autograde`` does through streamlab.grading) ``--reps`` times with
``sandbox="off"`` (the grader's audit hook alone, as before the sandbox) and as many with
``sandbox="bwrap"``, alternating, and prints a table of the best and median time per
submission. On this machine's device: the simulator unless a GPU is found. With --out,
the table is written there too, with the machine it ran on. A table, never a timed test.

``--compare judging`` measures instead what judging in the grader costs (every lab,
whose checks send the grader a transcript that it judges again, :func:`streamlab.grading.
judge_in_grader`): each lab graded alternately as it is, and with the grader's second
judgement skipped (the part's own verdict taken as it came; the part still sends its
transcripts). Both in bubblewrap's sandbox where it can be made, else with the audit
hook alone. Issue 32 asks that grading take at most 1.5 times its time before.
"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def grade(lab: str, mode: str, judged: bool = True) -> float:
    """Seconds to grade lab's solution, every part, in the grader's fresh processes;
    ``judged=False`` skips the grader's second judgement of the parts' transcripts."""
    from labtools import cells_of, submission

    import streamlab.grading as grading
    from streamlab.grading import plan, run_part

    cells = plan(submission(lab, cells_of(lab, "solution")))
    judge = grading.judge_in_grader
    if not judged:
        grading.judge_in_grader = lambda cells, part, transcripts, verdict: verdict
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            for part in [c["id"] for c in cells if c["role"] == "graded"]:
                verdict = run_part(cells, part, cwd=tmp, hide=[str(ROOT)], sandbox=mode)
                if not verdict.passed:
                    raise SystemExit(f"{lab} {part} failed with sandbox={mode}, "
                                     f"judged={judged}: {verdict}")
            return time.perf_counter() - t0
    finally:
        grading.judge_in_grader = judge


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("labs", nargs="*", help="labs to grade (default: every lab)")
    ap.add_argument("--reps", type=int, default=3, help="gradings per lab and mode")
    ap.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    ap.add_argument("--compare", choices=("sandbox", "judging"), default="sandbox",
                    help="what to time with and without: the sandbox (default), or the "
                         "grader's judging of the transcripts (every lab)")
    a = ap.parse_args()
    if a.reps < 1:
        ap.error(f"--reps {a.reps}: grade each lab at least once")
    import importlib

    import streamlab
    from streamlab.grading import sandbox

    every = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    # the labs whose checks the grader judges again: their module has JUDGES
    judged_labs = [lab for lab in every if hasattr(
        importlib.import_module(f"streamlab.labs.{lab.split('__')[0]}"), "JUDGES")]
    labs = a.labs or (judged_labs if a.compare == "judging" else every)
    for lab in labs:
        if not (ROOT / "solutions" / lab).is_dir():
            ap.error(f"{lab}: no such lab in solutions/")
    bwrap, why = sandbox.status()
    if a.compare == "judging":
        mode = "bwrap" if bwrap is not None else "off"
        table = _compare(labs, a.reps, "part's verdict alone", "judged again in the grader",
                         lambda lab, judged: grade(lab, mode, judged))
        title, command = "with and without judging in the grader", "--compare judging "
        how = ("with the part's own verdict taken as it came and with the grader judging "
               "each transcript again (as it grades), in bubblewrap's sandbox where it can "
               "be made. Both ways the part's process still collects and sends its "
               "transcripts: the table times the grader's second judgement, not the whole "
               "change that brought it (the labs' times before it are in the history of "
               "docs/grading-times.md, measured under another load).")
        sandboxed = f", sandbox {mode}"
    else:
        if bwrap is None:
            ap.error(f"no sandbox can be made here, so there is nothing to compare: {why}")
        table = _compare(labs, a.reps, "audit hook alone", "bubblewrap",
                         lambda lab, boxed: grade(lab, "bwrap" if boxed else "off"))
        title, command, sandboxed = "with and without the sandbox", "", ""
        how = "with the grader's audit hook alone and in bubblewrap's sandbox."
    print()
    print(table)
    if a.out:
        device = ("Numba's CUDA simulator" if streamlab.on_simulator()
                  else importlib.import_module("streamlab._device").device_name())
        a.out.write_text(
            f"# Grading time per submission, {title}\n\n"
            f"Written by `benchmarks/grading_times.py {command}--reps {a.reps}` on "
            f"{datetime.date.today().isoformat()}: {os.cpu_count()} CPU cores "
            f"({platform.machine()}), Python {platform.python_version()}, {device}"
            f"{sandboxed}.\n\n"
            "Each lab's solution graded whole (every part in a fresh process), alternately "
            f"{how} Each way goes first in every other round.\n\n" + table + "\n")
    return 0


def _compare(labs, reps: int, without: str, with_: str, timed) -> str:
    """The table of ``timed(lab, False)`` against ``timed(lab, True)`` (seconds to grade
    a lab), ``reps`` times each, the two taking turns at going first."""
    rows = [f"| lab | parts | {without}: best / median (s) | {with_}: best / median (s) | "
            "ratio of medians |", "| --- | ---: | ---: | ---: | ---: |"]
    for lab in labs:
        times = {False: [], True: []}
        for rep in range(reps):
            for way in ((False, True) if rep % 2 == 0 else (True, False)):
                times[way].append(timed(lab, way))
        parts = sum(1 for c in nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb",
                                             as_version=4).cells
                    if c.get("metadata", {}).get("nbgrader", {}).get("grade"))
        med = {k: statistics.median(t) for k, t in times.items()}
        rows.append(f"| {lab} | {parts} | {min(times[False]):.2f} / {med[False]:.2f} | "
                    f"{min(times[True]):.2f} / {med[True]:.2f} | "
                    f"{med[True] / med[False]:.2f} |")
        print(rows[-1], flush=True)
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
