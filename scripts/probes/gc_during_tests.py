"""Which garbage collections run while tests run, on which thread, and for how long? Made
for a lab 05 defect: in the GPU tests' PART=t1 order, a right part-2 answer was refused
("another task ran only 0 times while you waited"), and the next lab 05 case hung.

What a run of this kind found on an H100 (2026-11-26, a probe with the same hook): full
collections of up to 236 ms on the main thread of the tests' process, longer than the
100 ms of GPU work part 2 awaits, and a collection on the driver's host-function thread
(``Dummy-2``). Lab 05's checks now run with automatic collection off and numba's frees
held (``labs/lab05.py``, ``_quiet_window``); run this again if a timed check turns flaky.

Runs pytest in this process with a plugin that registers a ``gc.callbacks`` hook. Every
collection that takes at least ``--min-ms`` milliseconds, or that runs on a thread that is
not the main thread (the CUDA driver's host-function thread, say), is listed with the test
that was running, the thread's name, the generation and the duration. The two hypotheses
it was made to tell apart (the probe run did not reproduce the refusal, so neither was
seen to cause it; the mend prevents both):

(a) a full collection of the large process, in the window before the learner's ``await``,
    outlasts the GPU work that lab 05's part 2 awaits (a long collection on the main
    thread, or on the check's ``lab05-check`` thread);
(b) a collection that starts on the driver's host-function thread runs numba's finalizers
    there, and numba's batched ``cuMemFree`` is then a CUDA call inside a host function,
    which CUDA forbids (a collection on a thread named ``Dummy-...``, just before the
    hang).

On a GPU machine, with the course's wheels installed as scripts/gpu/gpu-check.sh does::

    STREAMLAB_DEVICE=gpu python3 scripts/probes/gc_during_tests.py --out /tmp/gc.txt -- \\
        -m "gpu or not gpu" -p no:cacheprovider -o addopts="" -n 0 \\
        tests/test_exercises.py tests/test_lab_answers.py tests/test_lab_answers_later.py

The list is written as it goes (``--out``, flushed at each line), so a hang still leaves
it behind.
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time


class GcLog:
    """A pytest plugin: the collections worth naming, written to ``out`` as they end."""

    def __init__(self, out, min_ms: float):
        self.out, self.min_ms = out, min_ms
        self.test = "(before the first test)"
        self._started: dict = {}  # thread id -> perf_counter at the collection's start

    def callback(self, phase: str, info: dict) -> None:
        """``gc.callbacks`` entry: time each collection, and name the ones worth naming."""
        ident = threading.get_ident()
        if phase == "start":
            self._started[ident] = time.perf_counter()
            return
        began = self._started.pop(ident, None)
        if began is None:
            return
        ms = (time.perf_counter() - began) * 1e3
        thread = threading.current_thread()
        if ms >= self.min_ms or thread is not threading.main_thread():
            self.out.write(f"{ms:9.2f} ms  gen {info.get('generation')}  "
                           f"collected {info.get('collected')}  thread {thread.name!r}  "
                           f"during {self.test}\n")
            self.out.flush()

    def pytest_runtest_setup(self, item) -> None:  # noqa: D102  (pytest's hook)
        self.test = item.nodeid
        self.out.write(f"-- {item.nodeid}\n")
        self.out.flush()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        at = argv.index("--")
        mine, pytest_args = argv[:at], argv[at + 1:]
    else:
        mine, pytest_args = argv, []
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-ms", type=float, default=5.0,
                        help="list a main-thread collection from this many ms on (default 5)")
    parser.add_argument("--out", default="-", help="where to write the list (default: stdout)")
    args = parser.parse_args(mine)
    if args.min_ms < 0:
        parser.error(f"--min-ms must be 0 or more, got {args.min_ms}")
    if not pytest_args:
        parser.error("give pytest's arguments after --, e.g. -- tests/test_lab_answers.py")
    import pytest

    out = sys.stdout if args.out == "-" else open(args.out, "w")  # noqa: SIM115
    log = GcLog(out, args.min_ms)
    gc.callbacks.append(log.callback)
    try:
        return int(pytest.main(pytest_args, plugins=[log]))
    finally:
        gc.callbacks.remove(log.callback)
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
