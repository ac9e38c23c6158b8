"""Lab 08 part 2's check, twice in one fresh process (the first run fails on an H200, the
second passes): each run's per-stream spans as the check measured them (start and end,
ms, sorted), to see the shape of the slow first run.
    python3 scripts/probes/lab08_spans.py

Answer (2026-11-28, one H200): the first run's spans all began at 0 and ended at 317-330
ms, the second's at 41-48: the whole first run late by ~280 ms, as if the host had been
busy elsewhere inside the timed window.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]


def main():
    from labtools import cells_of, setup_code
    import streamlab.labs.lab08 as l08
    lab = "lab08__hardware"
    ns = {"__name__": "__main__"}
    exec(setup_code(lab), ns)
    for src in cells_of(lab, "solution").values():
        exec(src, ns)
    plain = l08._makespan

    def shown(data):
        spans = data["spans"] or []
        if spans:
            t0 = min(a for _, a, _ in spans)
            print("  starts:", " ".join(f"{a - t0:.0f}" for a in sorted(a for _, a, _ in spans)))
            print("  ends:  ", " ".join(f"{b - t0:.0f}" for b in sorted(b for _, _, b in spans)))
            print("  by stream:", " ".join(f"{n}:{a - t0:.0f}-{b - t0:.0f}" for n, a, b in spans))
        return plain(data)

    l08._makespan = shown
    for i in range(3):
        print(f"--- run {i}", flush=True)
        try:
            ns["check_part2"](ns["issue_breadth_first"])
        except Exception as e:
            print("FAILED", type(e).__name__, str(e)[:200])


if __name__ == "__main__":
    main()
