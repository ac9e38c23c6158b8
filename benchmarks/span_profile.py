"""Where a span's host time goes: cProfile over the span benchmark's three host paths.

    python benchmarks/span_profile.py [--n 2000] [--top 22]

For two bare event records, a timeline span (``with tl.span("x", s): pass``), and the
same span while ``streamlab.record_ops`` is on, it prints the host's cost per call (best of
five batches, unprofiled, as ``benchmarks/span_overhead.py`` times it) and then cProfile's
functions with the most time of their own over ``n`` calls (the stream drained every 50
calls, untimed, so that a full queue never makes the host wait for the GPU). Issue 54 asks
what made a span dearer on an H100 (1.81x to 1.97x two records, against 1.45x earlier):
this is its profile, to be run on a GPU. On the simulator the same paths run through the
model GPU, so its profile says little about a GPU's.
"""

import argparse
import cProfile
import io
import pstats
import sys

import streamlab

from span_overhead import host_cost_us, host_paths  # the benchmark's own (same folder)


def profile(name: str, fn, stream, n: int, top: int) -> None:
    for _ in range(200):  # warm: the pool of events, numba's caches
        fn()
    stream.synchronize()
    print(f"== {name}: {host_cost_us(fn, n=n, stream=stream):.2f} us per call "
          f"(best of 5, unprofiled)")
    prof = cProfile.Profile()
    prof.enable()
    for i in range(n):
        fn()
        if i % 50 == 49:
            stream.synchronize()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    print(text[text.index("ncalls"):] if "ncalls" in text else text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="calls profiled per path")
    ap.add_argument("--top", type=int, default=22, help="functions shown per path")
    a = ap.parse_args(argv)
    if a.n < 50 or a.top < 1:
        print(f"--n {a.n} --top {a.top}: profile at least 50 calls and show at least one "
              f"function", file=sys.stderr)
        return 2
    s, _, paths = host_paths()
    print(f"span profile on {streamlab.device_name()}")
    profile("two bare records", paths["two_records"], s, a.n, a.top)
    profile("a timeline span", paths["span"], s, a.n, a.top)
    with streamlab.record_ops():
        profile("a span under record_ops", paths["span"], s, max(50, a.n // 4), a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
