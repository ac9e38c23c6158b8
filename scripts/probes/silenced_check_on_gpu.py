"""Why was lab 01 part 1's silenced-check attack caught by the guard ('Tampered') on an
H200 in session 69, where the simulator's run (and session 68's on two H200s, before the
runner entered record_ops first) reached the grader's judge ('CheckFailed')? The attack
(tests/attacks.py: SILENCED_WHILE_CHECKED) swaps check.fail's code and puts it back from a
tracer when a frame named check_part* returns. In one process, no grader: the setup cell,
the attack with an empty launch_on_streams, check_part1; then whether the code was put
back, and which trace function is set (a tracer that raised, or another's settrace,
would leave the swap in place).
    python3 scripts/probes/silenced_check_on_gpu.py

Answer (2026-11-28, on the simulator): the attack ran once per call of the answer, and
kept check.fail's code each time; a check that measures its overlap again (its first
attempt short) calls the answer twice, and the second kept the silenced code, which the
tracer then "put back". The simulator's run above measured again and ended with the code
not put back; the GPU run, presumably, too (its output was cut). The attack keeps the
first code it saw (tests/attacks.py), and the test asks for the judge's verdict everywhere.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]


def main():
    from attacks import SILENCED_WHILE_CHECKED
    from labtools import cells_of, prepended, setup_code

    import streamlab.check as k

    lab = "lab01__eight_streams"
    ns = {"__name__": "__main__"}
    exec(setup_code(lab), ns)
    for name, src in cells_of(lab, "solution").items():
        if name != "launch_on_streams":
            exec(src, ns)
    kept = k.fail.__code__
    exec(prepended("def launch_on_streams(*args):\n    pass\n", SILENCED_WHILE_CHECKED), ns)
    print("swapped:", k.fail.__code__ is not kept, "| tracer:", sys.gettrace())
    try:
        ns["check_part1"](ns["launch_on_streams"])
    except BaseException as exc:  # noqa: BLE001
        print("raised:", type(exc).__name__, str(exc)[:200])
    print("after check_part1: put back:", k.fail.__code__ is kept, "| tracer:", sys.gettrace())
    sys.settrace(None)


if __name__ == "__main__":
    main()
