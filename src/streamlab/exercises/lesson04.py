"""Lesson 04's exercises: a copy to the host that does not hold the host (pinned memory);
a kernel that writes host memory itself (mapped memory)."""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..check import no_races
from ..ops import internal, record_ops
from ..regions import is_pinned
from ..order import analyze
from . import BUSY_NS, N, THREADS, blocks_for, exercise, fill, fresh, once_in

__all__ = ["fill", "blocks_for", "THREADS", "SIZE", "check_exercise1", "check_exercise2"]

# the exercises' arrays, in elements (not N, which the lesson uses for its own arrays)
SIZE = N


def check_exercise1(copy_back_async, *, seed=None):
    """``copy_back_async(d_x, stream)`` returns a host array that d_x is being copied
    into, in ``stream``, and returns at once: it does not wait for the copy."""
    with exercise(1, copy_back_async):
        h, d_x = fresh(seed)
        s = cuda.stream()
        with record_ops() as ops:
            with internal():
                streamlab.spin[1, 1, s](BUSY_NS)  # the stream is busy: the copy must queue
            h_x = copy_back_async(d_x, s)
        copies = ops.copies("d2h")
        if not once_in(copies, s):
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
        order = analyze(ops)
        if order.host_after(copies[0]):
            check.fail("copy_back_async waited for the copy: return at once and let the "
                       "caller wait")
        no_races(ops, order)
        s.synchronize()
        check.equal(np.asarray(h_x), h, "the array copy_back_async returned, once the "
                                        "stream is done")


def check_exercise2(fill_on_host):
    """``fill_on_host(stream)`` returns ``(h, event)``: ``h`` a host array the kernel
    ``fill`` writes 7 into directly (no copy), in ``stream``; ``event`` recorded after it.
    It does not wait."""
    with exercise(2, fill_on_host):
        s = cuda.stream()
        with record_ops() as ops:
            with internal():
                streamlab.spin[1, 1, s](BUSY_NS)
            got = fill_on_host(s)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            check.fail(f"fill_on_host returned {type(got).__name__}: return (h, event)")
        h, event = got
        if ops.copies():
            check.fail(f"{ops.copies()[0].describe()}: no copy is needed: the kernel can "
                       f"write host memory that is mapped, cuda.mapped_array(SIZE, np.float32)")
        check.one_launch_per_stream(ops, "fill", [s])
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
        with internal():
            event.synchronize()
            value = np.array(h)
        check.equal(value, np.full(N, 7, np.float32), "h after event.synchronize()")
