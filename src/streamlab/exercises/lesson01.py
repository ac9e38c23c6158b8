"""Lesson 01's exercises: the per-thread default stream, one per host thread; streams the
legacy default stream cannot serialise."""

from __future__ import annotations

import threading

from numba import cuda

import streamlab

from .. import check
from ..check import none_ordered
from ..ops import record_ops
from ..order import analyze
from ..runner import Inputs, run
from ..streams import StreamRef
from . import THREADS, add_one, blocks_for, exercise, exercise_check, fresh

__all__ = ["add_one", "blocks_for", "THREADS", "dummy", "check_exercise1", "check_exercise2"]

# 5 ms on the simulator too: its model GPU times each span from just before its kernel's
# launch (check.time_per_stream), and issues launches slower than a GPU does; 1 ms steps
# overlapped only about 4.6-fold there
STEP_NS = streamlab.ms_to_ns(5)


@cuda.jit
def dummy():
    """The post's dummy kernel: it does nothing, quickly."""
    pass


def check_exercise2(make_streams, *, count=8):
    """``make_streams(count)`` returns ``count`` streams on which the post's loop (a
    kernel on each stream, a dummy on the legacy default stream after each) still runs
    the kernels at once."""
    with exercise(2, make_streams):
        streams = make_streams(count)
        if not isinstance(streams, (list, tuple)) or len(streams) != count:
            check.fail(f"make_streams({count}) returned {streams!r}: return a list of "
                       f"{count} streams")
        keys = {StreamRef.of(s).key() for s in streams}
        if len(keys) != count:
            check.fail(f"make_streams({count}) returned {len(keys)} different stream(s): "
                       f"make a new one for each")

        def run_once():
            with record_ops() as ops, check.time_per_stream(streams) as timing:
                for s in streams:  # the post's loop, issued by the check
                    streamlab.spin[1, 1, s](STEP_NS)
                    dummy[1, 1]()   # the legacy default stream
            order = analyze(ops)
            none_ordered(order, ops.launches("spin"), "kernel")
            cuda.synchronize()
            return timing[0]

        check.best_concurrency_at_least(run_once, 0.65 * count,
                                        f"{count} kernels with dummies on the legacy stream")


def _threads_inputs(*, count, seed):
    inputs = [fresh(None if seed is None else seed + i) for i in range(count)]

    def call(launch_from_thread):
        errors = []

        def worker(d_x):
            try:
                launch_from_thread(d_x)
            except BaseException as exc:  # noqa: BLE001 (raised below, in the check)
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(d,), name=f"worker {i}")
                   for i, (_, d) in enumerate(inputs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    return Inputs(call, outputs={f"thread {i}": d for i, (_, d) in enumerate(inputs)},
                  expected={f"thread {i}": (h + 1, f"thread {i}'s array")
                            for i, (h, _) in enumerate(inputs)})


def _threads_rules(run, order, *, count, seed):
    launches = run.ops.launches("add_one")
    if len(launches) != count:
        check.fail(f"{len(launches)} add_one launches from {count} threads: launch once "
                   f"in each")
    legacy = [op for op in launches if op.stream.is_legacy_default]
    if legacy:
        check.fail(f"{len(legacy)} launch(es) went to the legacy default stream, which "
                   f"all threads share: launch on cuda.per_thread_default_stream()")
    other = [op for op in launches if not op.stream.is_per_thread_default]
    if other:
        check.fail(f"{other[0].describe()}: launch on the thread's own default stream, "
                   f"cuda.per_thread_default_stream(), not a stream made for it")
    none_ordered(order, launches, "thread")


EXERCISE1 = exercise_check(1, _threads_inputs, _threads_rules)


def check_exercise1(launch_from_thread, *, count=8, seed=None):
    """``launch_from_thread(d_x)``, called in ``count`` host threads at once, launches
    add_one over d_x on its thread's own default stream; no launch waits for another."""
    run(EXERCISE1, launch_from_thread, count=count, seed=seed)
