"""Does a lab's timed part judge the same in the grader's part process as in the
learner's own? Lab 04 part 2 and lab 08 part 2, the solution and a right answer in
other words, through run_part (sandbox off), each twice; prints each verdict's message.
A probe: run it on a GPU (python scripts/probes/grader_timing_on_gpu.py)."""

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

from labtools import cells_of, submission  # noqa: E402

from streamlab.grading import plan, run_part  # noqa: E402


def main():
    import wrong_solutions.lab08__hardware as l08
    from test_judged_timings import RIGHT as JT
    from test_judged_timings import _HOST_WORK_IN_THE_LOOP as HOST_WORK

    cases = [("lab08__hardware", "check_part2", {}, "solution"),
             ("lab08__hardware", "check_part2",
              {"issue_breadth_first": l08.RIGHT["breadth-first from a list of pairs made first"][1]},
              "pairs"),
             ("lab04__pipeline", "check_part2", {}, "solution"),
             ("lab04__pipeline", "check_part2",
              {"pipeline": JT["lab 04: each slot's stream synchronized when reused"][2]},
              "stream synchronized"),
             ("lab04__pipeline", "check_part2", {"pipeline": HOST_WORK}, "float64")]
    for lab, part, change, name in cases:
        answers = {**cells_of(lab, "solution"), **{k: v.strip("\n") for k, v in change.items()}}
        for _ in range(2):
            began = time.monotonic()
            got = run_part(plan(submission(lab, answers)), part, cwd=tempfile.mkdtemp(),
                           timeout=120, sandbox="off")
            print(f"{lab} {part} {name}: passed={got.passed} {time.monotonic() - began:.1f} s "
                  f"| {got.message[:300]} | {got.output[-700:]!r}", flush=True)


if __name__ == "__main__":
    main()
