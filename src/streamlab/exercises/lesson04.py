"""Lesson 04's exercises: a copy to the host that does not hold the host (pinned memory);
a kernel that writes host memory itself (mapped memory)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from .. import check
from ..ops import internal
from ..regions import is_pinned
from ..runner import Inputs, run
from . import BUSY_NS, N, THREADS, blocks_for, exercise_check, fill, fresh, once_in

__all__ = ["fill", "blocks_for", "THREADS", "SIZE", "check_exercise1", "check_exercise2"]

# the exercises' arrays, in elements (not N, which the lesson uses for its own arrays)
SIZE = N


def _copy_inputs(*, seed):
    h, d_x = fresh(seed)
    s = cuda.stream()

    def landed(run, *_):
        s.synchronize()
        check.equal(np.asarray(run.values["h_x"]), h, "the array copy_back_async returned, "
                                                      "once the stream is done")

    return Inputs(lambda copy_back_async: copy_back_async(d_x, s), {"stream": s},
                  busy=((s, BUSY_NS),),  # the stream is busy: the copy must queue
                  returned=lambda h_x: ({"h_x": h_x}, {}), after=landed)


def _copy_rules(run, order, *, seed):
    ops, h_x = run.ops, run.values["h_x"]
    copies = ops.copies("d2h")
    if not once_in(copies, run.stream("stream")):
        check.fail("copy d_x to the host once, in the stream you are given: "
                   "d_x.copy_to_host(h_x, stream=stream)")
    if not isinstance(h_x, np.ndarray) or h_x.shape != (N,):
        check.fail(f"copy_back_async returned {type(h_x).__name__}: return the host "
                   f"array the copy lands in")
    if not copies[0].pinned or not is_pinned(h_x):
        check.fail("the copy goes to pageable memory, so it is not asynchronous: the "
                   "host waits for the stream's work and the copy. Copy into "
                   "cuda.pinned_array(d_x.shape, d_x.dtype)")
    check.no_host_sync(ops, "copy_back_async")
    if order.host_after(copies[0]):
        check.fail("copy_back_async waited for the copy: return at once and let the "
                   "caller wait")


EXERCISE1 = exercise_check(1, _copy_inputs, _copy_rules)


def check_exercise1(copy_back_async, *, seed=None):
    """``copy_back_async(d_x, stream)`` returns a host array that d_x is being copied
    into, in ``stream``, and returns at once: it does not wait for the copy."""
    run(EXERCISE1, copy_back_async, seed=seed)


def _mapped_inputs():
    s = cuda.stream()

    def filled(run, *_):
        h, event = run.values["got"]
        with internal():
            event.synchronize()
            value = np.array(h)
        check.equal(value, np.full(N, 7, np.float32), "h after event.synchronize()")

    return Inputs(lambda fill_on_host: fill_on_host(s), {"stream": s}, busy=((s, BUSY_NS),),
                  returned=lambda got: ({"got": got}, {}), after=filled)


def _mapped_rules(run, order):
    ops, got = run.ops, run.values["got"]
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        check.fail(f"fill_on_host returned {type(got).__name__}: return (h, event)")
    h, event = got
    if ops.copies():
        check.fail(f"{ops.copies()[0].describe()}: no copy is needed: the kernel can "
                   f"write host memory that is mapped, cuda.mapped_array(SIZE, np.float32)")
    check.one_launch_per_stream(ops, "fill", [run.stream("stream")])
    if not isinstance(h, np.ndarray) or not is_pinned(h):
        check.fail("h must be mapped host memory, which the kernel writes directly: "
                   "cuda.mapped_array(SIZE, np.float32)")
    check.no_host_sync(ops, "fill_on_host")
    launch = ops.launches("fill")[0]
    recs = [op for op in ops.records() if op.event is event]
    if not recs or recs[-1].stream.key() != launch.stream.key() \
            or recs[-1].index < launch.index:
        check.fail("record the event in the stream after the launch: "
                   "event.record(stream)")


EXERCISE2 = exercise_check(2, _mapped_inputs, _mapped_rules)


def check_exercise2(fill_on_host):
    """``fill_on_host(stream)`` returns ``(h, event)``: ``h`` a host array the kernel
    ``fill`` writes 7 into directly (no copy), in ``stream``; ``event`` recorded after it.
    It does not wait."""
    run(EXERCISE2, fill_on_host)
