"""How long the grader takes per submission, with the course hidden by bubblewrap and
without it: the sandbox's cost (issue 32 asks for at most 1.5 times the time before).

    python benchmarks/grading_times.py [--reps N] [--out docs/grading-times.md] [LAB ...]

Grades each lab's solution (every graded part, each in a fresh process, as
``nbgrader autograde`` does through streamlab.grading) ``--reps`` times with
``sandbox="off"`` (the grader's audit hook alone, as before the sandbox) and as many with
``sandbox="bwrap"``, alternating, and prints a table of the best and median time per
submission. On this machine's device: the simulator unless a GPU is found. With --out,
the table is written there too, with the machine it ran on. A table, never a timed test.
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


def grade(lab: str, mode: str) -> float:
    """Seconds to grade lab's solution, every part, in the grader's fresh processes."""
    from labtools import cells_of, submission

    from streamlab.grading import plan, run_part

    cells = plan(submission(lab, cells_of(lab, "solution")))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        for part in [c["id"] for c in cells if c["role"] == "graded"]:
            verdict = run_part(cells, part, cwd=tmp, hide=[str(ROOT)], sandbox=mode)
            if not verdict.passed:
                raise SystemExit(f"{lab} {part} failed with sandbox={mode}: {verdict}")
        return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("labs", nargs="*", help="labs to grade (default: every lab)")
    ap.add_argument("--reps", type=int, default=3, help="gradings per lab and mode")
    ap.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    a = ap.parse_args()
    if a.reps < 1:
        ap.error(f"--reps {a.reps}: grade each lab at least once")
    import streamlab
    from streamlab.grading import sandbox

    labs = a.labs or sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    for lab in labs:
        if not (ROOT / "solutions" / lab).is_dir():
            ap.error(f"{lab}: no such lab in solutions/")
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


if __name__ == "__main__":
    sys.exit(main())
