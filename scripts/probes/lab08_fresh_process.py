"""Why does lab 08 part 2's solution pass in the notebook (42-48 ms on an H200) and fail
in the grader's part process (216-275 ms against ~74 allowed)? The check, in a fresh
process each, with one more of the part process's differences at a time:

  A  plain: the setup cell, the solution, check_part2 (as a notebook runs it)
  B  A with the grader's environment (STREAMLAB_GRADING=1, STREAMLAB_QUIET=1)
  C  B with every lab module imported before the setup (as the part process does)
  D  C with the grader's audit hook installed after the setup (as the part process does)
  E  the part process itself (streamlab.grading.run_part, sandbox off)

Each prints the check's own line (how long the kernels took, and what it allows). The
first variant that fails names the cause. A probe for a GPU (about 40 s):
    python3 scripts/probes/lab08_fresh_process.py

Answer (2026-11-28, one H200): every variant failed its first run (225-340 ms) and passed
its second (45-49 ms): none of the part process's differences is the cause, a process's
first check is. lab08_spans.py and lab08_where_host_waits.py found why; after the mend
(streamlab.runner.once starts recording before timing) every variant passed both runs.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

CODE = r'''
import sys, time
sys.path[:0] = [{tests!r}, {src!r}]
if {labs}:
    import importlib, pkgutil, streamlab.labs
    for info in pkgutil.iter_modules(streamlab.labs.__path__, "streamlab.labs."):
        importlib.import_module(info.name)
from labtools import cells_of, notebook, grade_id
lab = "lab08__hardware"
ns = {{"__name__": "__main__"}}
exec(next(c.source for c in notebook("labs", lab).cells if grade_id(c) == "setup"), ns)
if {hook}:
    from streamlab.grading._child import _guard_hook
    sys.addaudithook(_guard_hook([], (), ()))
for src in cells_of(lab, "solution").values():
    exec(src, ns)
for i in range(2):
    t = time.perf_counter()
    try:
        ns["check_part2"](ns["issue_breadth_first"])
    except Exception as e:
        print("FAILED", type(e).__name__, str(e)[:240])
    print(f"  (run {{i}}: {{time.perf_counter() - t:.2f}} s)", flush=True)
'''


def variant(name, *, grading=False, labs=False, hook=False):
    print(f"--- {name}", flush=True)
    env = dict(os.environ, **({"STREAMLAB_GRADING": "1", "STREAMLAB_QUIET": "1"}
                              if grading else {}))
    code = CODE.format(tests=str(ROOT / "tests"), src=str(ROOT / "src"), labs=labs,
                       hook=hook)
    subprocess.run([sys.executable, "-c", code], env=env)


def main():
    variant("A plain")
    variant("B the grader's environment", grading=True)
    variant("C and every lab module imported first", grading=True, labs=True)
    variant("D and the audit hook", grading=True, labs=True, hook=True)
    print("--- E the part process (run_part)", flush=True)
    from labtools import cells_of, submission

    from streamlab.grading import plan, run_part

    lab = "lab08__hardware"
    for _ in range(2):
        got = run_part(plan(submission(lab, cells_of(lab, "solution"))), "check_part2",
                       cwd=tempfile.mkdtemp(), timeout=120, sandbox="off")
        print(f"passed={got.passed} {got.message[:240]} | {got.output[-400:]!r}",
              flush=True)


if __name__ == "__main__":
    main()
