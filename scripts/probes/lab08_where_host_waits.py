"""Lab 08 part 2's first run in a process fails on an H200 because every stream's span
ends ~280 ms late, all together (scripts/probes/lab08_spans.py): the end events are
recorded late, so the host was busy elsewhere between the learner's issue and the span
ends. Where? A thread samples the main thread's stack every 2 ms through the check's first
two runs; printed: each run's samples, consecutive equal stacks collapsed, with times.
    python3 scripts/probes/lab08_where_host_waits.py

Answer (2026-11-28, one H200): before the learner's first launch, the first run spent some
200 ms in imports and in starting the course's own recorder (record_ops: the driver watch
loading a library), which the runner entered after the spans' start events were recorded. The
mend: streamlab.runner.once enters record_ops first, then time_per_stream.
"""

import sys
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]


def main():
    from labtools import cells_of, setup_code
    lab = "lab08__hardware"
    ns = {"__name__": "__main__"}
    exec(setup_code(lab), ns)
    for src in cells_of(lab, "solution").values():
        exec(src, ns)
    main_id = threading.get_ident()
    for i in range(2):
        samples, stop = [], threading.Event()

        def sample():
            while not stop.is_set():
                frame = sys._current_frames().get(main_id)
                if frame is not None:
                    stack = traceback.extract_stack(frame)[-7:]
                    samples.append((time.perf_counter(), " < ".join(
                        f"{Path(f.filename).name}:{f.name}:{f.lineno}" for f in reversed(stack))))
                time.sleep(0.002)

        t0 = time.perf_counter()
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        try:
            ns["check_part2"](ns["issue_breadth_first"])
        except Exception as e:
            print("FAILED", type(e).__name__, str(e)[:160])
        stop.set()
        th.join()
        print(f"--- run {i}: {len(samples)} samples", flush=True)
        last, since = None, None
        for t, s in samples + [(time.perf_counter(), None)]:
            if s != last:
                if last is not None:
                    print(f"  {(since - t0) * 1e3:7.1f}-{(t - t0) * 1e3:7.1f} ms  {last[:400]}")
                last, since = s, t
        sys.stdout.flush()


if __name__ == "__main__":
    main()
