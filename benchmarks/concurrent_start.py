"""Do m spin kernels on m fresh streams start at once? Under streamlab's race check, with
Timeline spans, both, or neither.

    python benchmarks/concurrent_start.py [--reps N] [--m M] [--out docs/concurrent-start.md]

Lesson 03's diagnosis cell (a consumer that waits on the last producer's event alone)
gives producer i a spin of m - i ms first, so that, started at once, producer 0 would end
last. On an H100 (2026-11-26), inside ``streamlab.race_check`` and with a Timeline span
around each producer, they did not start at once: their ends were staggered as if partly
serialised, and in some runs the consumer started after them all. Lesson 01's eight
spins, with spans and no race check, run eight at once. This benchmark separates the two
causes: each variant issues the lesson's producers (spin, then a kernel on the producer's
slice, then an event) and the consumer, and prints, per run, when each producer started
and ended and when the consumer started, against the first producer's start (from events
recorded in their streams, read after a final synchronize); when the host began issuing
each producer's calls and the consumer's, against the first (a late start on the GPU that
follows a late issue is the host's); and whether each part came out wrong.

A table, not a test: on the simulator it runs (small sizes) and its times are the model
GPU's. On a GPU it measures, and for each run gives the lag: the most any producer after
the first began later, on the GPU, than the host began issuing it (both against the first
producer). A small lag beside a large spacing of the issues says the stagger is the
host's. ``--out`` writes the table and that summary as a page (docs/concurrent-start.md).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from datetime import datetime, timezone

import os
import time

import numpy as np

# the variants turn the race check on and off themselves: a session-wide one
# (STREAMLAB_RACE_CHECK=1, as the course's tests set) would be on in every variant, and
# would stop the run at the races the consumer is built to have
os.environ.pop("STREAMLAB_RACE_CHECK", None)
import streamlab  # noqa: E402  (before numba.cuda: it chooses the GPU or the simulator)
from numba import cuda  # noqa: E402

# lesson 03's kernels: a producer adds 1 to its part, a consumer multiplies by 10
from streamlab.exercises.lesson03 import consume, produce  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="runs of each variant (default 3)")
    ap.add_argument("--m", type=int, default=4, help="producers (default 4)")
    ap.add_argument("--out", help="also write the table and its summary to this page")
    a = ap.parse_args(argv)
    if a.reps < 1 or a.m < 2:
        ap.error(f"--reps {a.reps} --m {a.m}: at least one run and two producers")
    size = streamlab.size(gpu=10485760, sim=512)
    tpb = streamlab.pick(gpu=256, sim=32)
    m = a.m

    zeros = np.zeros(size, np.int32)
    d = cuda.to_device(zeros)
    blocks = lambda n: (n + tpb - 1) // tpb  # noqa: E731
    produce[1, tpb](d, 0, 1)
    consume[1, tpb](d, 0, 1)
    streamlab.spin[1, 1](1000)
    cuda.synchronize()

    def run(race: bool, spans: bool) -> tuple[str, float | None, float]:
        d.copy_to_device(zeros)
        tl = streamlab.Timeline()
        producers = [cuda.stream() for _ in range(m)]
        done = [cuda.event() for _ in range(m)]
        marks = [(cuda.event(), cuda.event()) for _ in range(m)]
        consumer = cuda.stream()
        part = size // m
        check = (streamlab.race_check(raises=False, quiet=True) if race
                 else contextlib.nullcontext())
        consumer_start = cuda.event()
        issued = []                     # host perf_counter when each call group began
        with check:
            for i, (s, e) in enumerate(zip(producers, done)):
                issued.append(time.perf_counter())
                marks[i][0].record(s)
                with (tl.span(f"producer {i}", s) if spans else contextlib.nullcontext()):
                    streamlab.spin[1, 1, s](streamlab.ms_to_ns(m - i))
                    produce[blocks(part), tpb, s](d[i * part:(i + 1) * part], 0, part)
                marks[i][1].record(s)
                e.record(s)
            issued.append(time.perf_counter())
            done[-1].wait(consumer)
            consumer_start.record(consumer)
            consume[blocks(size), tpb, consumer](d, 0, size)
            cuda.synchronize()
        h = d.copy_to_host()
        wrong = ["x" if np.count_nonzero(h[i * part:(i + 1) * part] != 10) else "."
                 for i in range(m)]
        issued_ms = [(t - issued[0]) * 1000 for t in issued[1:]]
        lag = None
        if streamlab.on_simulator():
            times = "(the simulator's events carry no times)"
        else:
            t0 = marks[0][0]
            starts = [cuda.event_elapsed_time(t0, a_) for a_, _ in marks]
            times = "  ".join(
                f"p{i} {start:5.2f}-{cuda.event_elapsed_time(t0, b_):5.2f}"
                for i, (start, (_, b_)) in enumerate(zip(starts, marks)))
            times += f"  consumer {cuda.event_elapsed_time(t0, consumer_start):5.2f}"
            lag = max(start - at for start, at in zip(starts[1:], issued_ms))
        host = " ".join(f"{t:.2f}" for t in issued_ms)
        text = f"{''.join(wrong)}  GPU: {times}  host issued p1.. and the consumer at: {host}"
        if lag is not None:
            text += f"  lag {lag:+.2f}"
        return text, lag, issued_ms[m - 2]  # (when the last producer was issued)

    lines = [f"device: {streamlab.device_name()}; {m} producers, producer i spins {m} - i ms; "
             "wrong parts marked x; times in ms from producer 0's start",
             f"{'race check':<11} {'spans':<6} {'run':>3}  result"]
    for line in lines:
        print(line)
    summary: dict = {}
    for rep in range(a.reps):
        for race in (False, True):
            for spans in (False, True):
                text, lag, last_issued = run(race, spans)
                line = (f"{'on' if race else 'off':<11} {'on' if spans else 'off':<6} "
                        f"{rep + 1:>3}  {text}")
                lines.append(line)
                print(line, flush=True)
                summary.setdefault((race, spans), []).append((lag, last_issued))
    if a.out:
        _page(a, lines, summary)
    return 0


def _page(a, lines: list, summary: dict) -> None:
    """The table and, per variant, the largest lag and when the last producer was issued."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# Do lesson 03's producers start at once?", "",
           f"Written by `python benchmarks/concurrent_start.py --reps {a.reps} --m {a.m} "
           f"--out {a.out}` on {streamlab.device_name()}, {when}. Each run issues lesson 03's "
           "producers and consumer (see the script's docstring); the lag is the most any "
           "producer after the first began later on the GPU than the host began issuing it, "
           "both against the first producer.", "",
           "| race check | spans | largest lag (ms) | last producer issued at (ms) |",
           "| --- | --- | ---: | --- |"]
    for (race, spans), runs in summary.items():
        lags = [lag for lag, _ in runs if lag is not None]
        issued = ", ".join(f"{t:.2f}" for _, t in runs)
        out.append(f"| {'on' if race else 'off'} | {'on' if spans else 'off'} | "
                   f"{max(lags):+.2f} | {issued} |" if lags else
                   f"| {'on' if race else 'off'} | {'on' if spans else 'off'} | "
                   f"(no GPU times) | {issued} |")
    out += ["", "```", *lines, "```", ""]
    with open(a.out, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
