"""Lesson 02's exercises: a consumer that waits for two producers; reading a copy on the
host once its event has happened."""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..check import no_races
from ..streams import StreamRef
from ..ops import internal, record_ops
from ..order import analyze
from ..watched import watch
from . import BUSY_NS, N, THREADS, blocks_for, exercise, fill, fresh, once_in

__all__ = ["fill", "add", "blocks_for", "THREADS", "check_exercise1", "check_exercise2"]


@cuda.jit
def add(a, b, out):
    """The consumer: out[i] = a[i] + b[i]."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def check_exercise1(join):
    """``join(d_a, d_b, d_out, s_a, s_b, s_out)``: fill d_a with 1 in s_a and d_b with 2 in
    s_b, then add them into d_out in s_out once both are done, ordered by events; the host
    does not wait."""
    with exercise(1, join):
        s_a, s_b, s_out = cuda.stream(), cuda.stream(), cuda.stream()
        d_a, d_b = cuda.device_array(N, np.float32), cuda.device_array(N, np.float32)
        d_out = cuda.device_array(N, np.float32)
        with record_ops() as ops:
            with internal():
                streamlab.spin[1, 1, s_b](BUSY_NS)  # the second producer starts late
            join(d_a, d_b, d_out, s_a, s_b, s_out)
        check.no_host_sync(ops, "join")
        fills = ops.launches("fill")
        check.one_launch_per_stream(ops, "add", [s_out])
        if len(fills) != 2 or {op.stream.key() for op in fills} != {
                StreamRef.of(s).key() for s in (s_a, s_b)}:
            check.fail("launch fill twice: fill(d_a, 1) in s_a and fill(d_b, 2) in s_b")
        consumer = ops.launches("add")[0]
        order = analyze(ops)
        for producer in fills:
            if order.ordered(producer, consumer):
                continue
            name = "s_a" if producer.stream.key() == StreamRef.of(s_a).key() else "s_b"
            waits = [w for w in ops.waits() if w.stream.key() == consumer.stream.key()
                     and w.index < consumer.index]
            recorded = [ops.recorded_before(w) for w in waits]
            if any(r is None for r in recorded):
                check.fail("s_out waits on an event that had not been recorded yet: record "
                           "first, then wait")
            if not [r for r in recorded if r.stream.key() == producer.stream.key()]:
                check.fail(f"s_out never waits for the fill in {name}: record an event in "
                           f"{name} after the fill, and have s_out wait on it")
            check.fail(f"s_out waits on an event recorded in {name} before the fill: record "
                       f"it after the launch")
        no_races(ops, order)
        cuda.synchronize()
        check.equal(d_out.copy_to_host(), np.full(N, 3, np.float32), "d_out")


def check_exercise2(copy_back, *, seed=None):
    """``copy_back(d_x, h_x, stream)``: copy d_x into the pinned h_x in ``stream`` (after
    the work already there), and return once that copy has landed, without waiting for
    other streams' work (an event recorded after the copy, or the stream itself)."""
    with exercise(2, copy_back):
        h, d_x = fresh(seed)
        h_x = watch(cuda.pinned_array(N, np.float32), "h_x")
        h_x[:] = -1
        s, other = cuda.stream(), cuda.stream()
        with record_ops() as ops:
            with internal():
                streamlab.spin[1, 1, s](BUSY_NS)       # the stream is still busy
                streamlab.spin[1, 1, other](4 * BUSY_NS)  # and another much longer
            copy_back(d_x, h_x, s)
            with internal():
                got = np.array(h_x)                   # the caller reads the copy
        copies = ops.copies("d2h")
        if not once_in(copies, s):
            check.fail("copy d_x into h_x once, in the stream you are given: "
                       "d_x.copy_to_host(h_x, stream=stream)")
        order = analyze(ops)
        if not order.host_after(copies[0]):
            check.fail("copy_back returned before the copy had landed: record an event in "
                       "the stream after the copy, and event.synchronize()")
        busy_other = [op for op in ops if op.kind == "launch"
                      and op.stream.key() == StreamRef.of(other).key()][0]
        if order.host_after(busy_other):
            check.fail("copy_back also waited for another stream's work (cuda.synchronize() "
                       "waits for the whole device): wait on an event recorded after the "
                       "copy, event.synchronize()")
        no_races(ops, order)
        check.equal(got, h, "h_x after copy_back")
