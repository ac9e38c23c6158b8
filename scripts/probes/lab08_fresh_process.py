"""Lab 08 part 2's solution checked in the learner's own process, as a notebook runs it:
in this process (after lab 04's check, as a warm GPU), then in a fresh process, twice.
Pair with grader_timing_on_gpu.py: which of them is slow? (A probe, for a GPU.)"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

CODE = r'''
import sys, time
sys.path[:0] = [{tests!r}, {src!r}]
from labtools import cells_of, notebook, meta, grade_id
lab = "lab08__hardware"
ns = {{"__name__": "__main__"}}
setup = next(c.source for c in notebook("labs", lab).cells if grade_id(c) == "setup")
exec(setup, ns)
for src in cells_of(lab, "solution").values():
    exec(src, ns)
for i in range(3):
    t = time.perf_counter()
    try:
        ns["check_part2"](ns["issue_breadth_first"])
    except Exception as e:
        print("FAILED", type(e).__name__, str(e)[:200])
    print(f"  (run {{i}}: {{time.perf_counter() - t:.2f}} s)", flush=True)
'''.format(tests=str(ROOT / "tests"), src=str(ROOT / "src"))

if __name__ == "__main__":
    for n in range(2):
        print(f"--- fresh process {n}", flush=True)
        subprocess.run([sys.executable, "-c", CODE])
