"""Submissions graded per minute: a synthetic class on Dask with 1 and 2 workers, and a
serial nbgrader autograde of the same class.

    python benchmarks/class_grading.py [--n 40] [--labs lab05__host_functions ...]
                                       [--workers 1 2] [--timeout 10] [--out PATH]

The class is scripts/make_class.py's (the kept right, wrong, cheating, hanging and
crashing answers, each with its expected grade); every grading is checked against those
grades, and a grading that misses one stops the benchmark. Prints a table (Markdown);
--out writes it, with the machine it ran on, to a page (docs/class-grading.md). Needs
the test tools (nbgrader, Dask). On a GPU machine the workers grade on its GPU (one
worker per GPU: --gpus).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))


def check(course: Path, labs, how: str) -> None:
    from make_class import expected, scores

    for lab in labs:
        got, want = scores(course, lab), expected(course, lab)
        if got != want:
            wrong = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
            raise SystemExit(f"{how} graded {lab} wrongly (got, expected): {wrong}")


def main(argv=None) -> int:
    import make_class

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="submissions per lab")
    ap.add_argument("--labs", nargs="+", default=["lab05__host_functions"])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--gpus", action="store_true", help="also one worker per GPU")
    ap.add_argument("--timeout", type=float, default=10, help="seconds a part may run")
    ap.add_argument("--no-serial", action="store_true", help="skip the serial autograde")
    ap.add_argument("--out", type=Path, help="write the table to this page")
    a = ap.parse_args(argv)
    if a.n < 1 or any(w < 1 for w in a.workers):
        ap.error("--n and --workers take 1 or more")
    from streamlab.grading.classroom import grade_class

    base = Path(tempfile.mkdtemp(prefix="streamlab-class-bench-"))
    try:
        make_class.make_class(base / "class", a.n, a.labs)
        total = a.n * len(a.labs)
        runs = [(f"Dask, {w} worker{'s' if w > 1 else ''}", dict(workers=w))
                for w in a.workers]
        if a.gpus:
            runs.append(("Dask, one worker per GPU", dict(gpus=True)))
        rows = []
        for how, kw in runs:
            course = base / how.replace(" ", "_").replace(",", "")
            shutil.copytree(base / "class", course)
            t0 = time.perf_counter()
            for lab in a.labs:
                grade_class(course, lab, timeout=a.timeout, progress=False, **kw)
            rows.append((how, time.perf_counter() - t0))
            check(course, a.labs, how)
        if not a.no_serial:
            course = base / "serial"
            shutil.copytree(base / "class", course)
            env = dict(os.environ, STREAMLAB_QUIET="1")
            t0 = time.perf_counter()
            for lab in a.labs:
                subprocess.run([sys.executable, "-m", "nbgrader", "autograde", lab, "--create",
                                f"--GradeInFreshProcesses.timeout={a.timeout}"], cwd=course,
                               env=env, check=True, capture_output=True)
            rows.append(("nbgrader autograde, serial", time.perf_counter() - t0))
            check(course, a.labs, "the serial autograde")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    import streamlab

    one = rows[0][1]
    serial = dict(rows).get("nbgrader autograde, serial")
    lines = [f"{total} submissions ({a.n} of each of {', '.join(a.labs)}), every one graded "
             f"as expected; {os.cpu_count()} CPU cores ({platform.machine()}), Python "
             f"{platform.python_version()}, "
             + ("on Numba's CUDA simulator" if streamlab.on_simulator()
                else f"on {streamlab.device_name()}")
             + f"; a part may run "
             f"{a.timeout:g} s (the class's hangs each cost that).", "",
             "| grading | seconds | submissions per minute | seconds per submission "
             "| speed against 1 worker | against the serial autograde |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for how, seconds in rows:
        lines.append(f"| {how} | {seconds:.1f} | {60 * total / seconds:.1f} | "
                     f"{seconds / total:.2f} | {one / seconds:.2f}x | "
                     + (f"{serial / seconds:.2f}x |" if serial else "- |"))
    table = "\n".join(lines)
    print(table)
    if a.out:
        a.out.write_text("# Grading a class on Dask\n\nWritten by `benchmarks/class_grading.py "
                         + " ".join(argv if argv is not None else sys.argv[1:])
                         + f"` on {time.strftime('%Y-%m-%d')}.\n\n" + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
