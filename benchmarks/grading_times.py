"""How long the grader takes per submission, with the course hidden by bubblewrap and
without it: the sandbox's cost (issue 32 asks for at most 1.5 times the time before).

    python benchmarks/grading_times.py [--reps N] [--out docs/grading-times.md] [LAB ...]

Grades each lab's solution (every graded part, each in a fresh process, as
``nbgrader autograde`` does through streamlab.grading) ``--reps`` times with
``sandbox="off"`` (the grader's audit hook alone, as before the sandbox) and as many with
``sandbox="bwrap"``, alternating, and prints a table of the best and median time per
submission. On this machine's device: the simulator unless a GPU is found. With --out,
the table is written there too, with the machine it ran on. A table, never a timed test.

``--compare judging`` measures instead what judging in the grader costs (labs 02 and 03,
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
                         "grader's judging of the transcripts (labs 02 and 03)")
    a = ap.parse_args()
    if a.reps < 1:
        ap.error(f"--reps {a.reps}: grade each lab at least once")
    import streamlab
    from streamlab.grading import sandbox

    judged_labs = ["lab02__events", "lab03__rendezvous"]
    default = judged_labs if a.compare == "judging" else sorted(
        p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    labs = a.labs or default
    for lab in labs:
        if not (ROOT / "solutions" / lab).is_dir():
            ap.error(f"{lab}: no such lab in solutions/")
        if a.compare == "judging" and lab not in judged_labs:
            ap.error(f"{lab}: its checks are not judged in the grader (only "
                     f"{', '.join(judged_labs)} are): nothing to compare")
    if a.compare == "judging":
        return _compare_judging(a, labs, streamlab, sandbox)
    bwrap, why = sandbox.status()
    if bwrap is None:
        ap.error(f"no sandbox can be made here, so there is nothing to compare: {why}")
    rows = ["| lab | parts | audit hook alone: best / median (s) | bubblewrap: best / median "
            "(s) | ratio of medians |", "| --- | ---: | ---: | ---: | ---: |"]
    for lab in labs:
        times = {"off": [], "bwrap": []}
        for _ in range(a.reps):
            for mode in times:
                times[mode].append(grade(lab, mode))
        parts = sum(1 for c in nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb",
                                             as_version=4).cells
                    if c.get("metadata", {}).get("nbgrader", {}).get("grade"))
        med = {m: statistics.median(t) for m, t in times.items()}
        rows.append(f"| {lab} | {parts} | {min(times['off']):.2f} / {med['off']:.2f} | "
                    f"{min(times['bwrap']):.2f} / {med['bwrap']:.2f} | "
                    f"{med['bwrap'] / med['off']:.2f} |")
        print(rows[-1], flush=True)
    table = "\n".join(rows)
    print()
    print(table)
    if a.out:
        when = datetime.date.today().isoformat()
        if streamlab.on_simulator():
            device = "Numba's CUDA simulator"
        else:
            from streamlab._device import device_name

            device = device_name()
        a.out.write_text(
            "# Grading time per submission, with and without the sandbox\n\n"
            f"Written by `benchmarks/grading_times.py --reps {a.reps}` on {when}: "
            f"{os.cpu_count()} CPU cores ({platform.machine()}), Python "
            f"{platform.python_version()}, {device}.\n\n"
            "Each lab's solution graded whole (every part in a fresh process), alternately "
            "with the grader's audit hook alone and in bubblewrap's sandbox.\n\n"
            + table + "\n")
    return 0


def _parts(lab: str) -> int:
    return sum(1 for c in nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb",
                                        as_version=4).cells
               if c.get("metadata", {}).get("nbgrader", {}).get("grade"))


def _compare_judging(a, labs, streamlab, sandbox) -> int:
    mode = "bwrap" if sandbox.status()[0] is not None else "off"
    rows = ["| lab | parts | part's verdict alone: best / median (s) | judged again in the "
            "grader: best / median (s) | ratio of medians |",
            "| --- | ---: | ---: | ---: | ---: |"]
    for lab in labs:
        times = {False: [], True: []}
        for rep in range(a.reps):
            for judged in ((False, True) if rep % 2 == 0 else (True, False)):  # turn about
                times[judged].append(grade(lab, mode, judged))
        med = {k: statistics.median(t) for k, t in times.items()}
        rows.append(f"| {lab} | {_parts(lab)} | {min(times[False]):.2f} / {med[False]:.2f} | "
                    f"{min(times[True]):.2f} / {med[True]:.2f} | {med[True] / med[False]:.2f} |")
        print(rows[-1], flush=True)
    table = "\n".join(rows)
    print()
    print(table)
    if a.out:
        device = ("Numba's CUDA simulator" if streamlab.on_simulator()
                  else __import__("streamlab._device", fromlist=["x"]).device_name())
        a.out.write_text(
            "# Grading time per submission, with and without judging in the grader\n\n"
            f"Written by `benchmarks/grading_times.py --compare judging --reps {a.reps}` on "
            f"{datetime.date.today().isoformat()}: {os.cpu_count()} CPU cores "
            f"({platform.machine()}), Python {platform.python_version()}, {device}, "
            f"sandbox {mode}.\n\n"
            "Each lab's solution graded whole (every part in a fresh process), alternately "
            "with the part's own verdict taken as it came and with the grader judging each "
            "transcript again (as it grades), each first in every other round. Both ways "
            "the part's process still collects and sends its transcripts: the table times "
            "the grader's second judgement, not the whole change that brought it (the "
            "labs' times before it are in the history of docs/grading-times.md, measured "
            "under another load).\n\n" + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
