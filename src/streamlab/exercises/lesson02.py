"""Lesson 02's exercises: a consumer that waits for two producers; reading a copy on the
host once its event has happened."""

from __future__ import annotations

import numpy as np
from numba import cuda

from .. import check
from ..ops import internal
from ..runner import Inputs, run
from ..watched import watch
from . import BUSY_NS, N, THREADS, blocks_for, exercise_check, fill, fresh, once_in

__all__ = ["fill", "add", "blocks_for", "THREADS", "check_exercise1", "check_exercise2"]


@cuda.jit
def add(a, b, out):
    """The consumer: out[i] = a[i] + b[i]."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def _join_inputs():
    s_a, s_b, s_out = cuda.stream(), cuda.stream(), cuda.stream()
    d_a, d_b = cuda.device_array(N, np.float32), cuda.device_array(N, np.float32)
    d_out = cuda.device_array(N, np.float32)
    return Inputs(lambda join: join(d_a, d_b, d_out, s_a, s_b, s_out),
                  {"s_a": s_a, "s_b": s_b, "s_out": s_out}, {"d_out": d_out},
                  busy=((s_b, BUSY_NS),),  # the second producer starts late
                  expected={"d_out": (np.full(N, 3, np.float32), "d_out")})


def _join_rules(run, order):
    ops = run.ops
    check.no_host_sync(ops, "join")
    fills = ops.launches("fill")
    check.one_launch_per_stream(ops, "add", [run.stream("s_out")])
    if len(fills) != 2 or {op.stream.key() for op in fills} != {run.key("s_a"), run.key("s_b")}:
        check.fail("launch fill twice: fill(d_a, 1) in s_a and fill(d_b, 2) in s_b")
    consumer = ops.launches("add")[0]
    for producer in fills:
        if order.ordered(producer, consumer):
            continue
        name = "s_a" if producer.stream.key() == run.key("s_a") else "s_b"
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


EXERCISE1 = exercise_check(1, _join_inputs, _join_rules)


def check_exercise1(join):
    """``join(d_a, d_b, d_out, s_a, s_b, s_out)``: fill d_a with 1 in s_a and d_b with 2 in
    s_b, then add them into d_out in s_out once both are done, ordered by events; the host
    does not wait."""
    run(EXERCISE1, join)


def _copy_back_inputs(*, seed):
    h, d_x = fresh(seed)
    h_x = watch(cuda.pinned_array(N, np.float32), "h_x")
    h_x[:] = -1
    s, other = cuda.stream(), cuda.stream()
    got = {}

    def call(copy_back):
        copy_back(d_x, h_x, s)
        with internal():
            got["h_x"] = np.array(h_x)  # the caller reads the copy

    return Inputs(call, {"stream": s, "other": other},
                  busy=((s, BUSY_NS), (other, 4 * BUSY_NS)),  # busy, and another much longer
                  after=lambda *_: check.equal(got["h_x"], h, "h_x after copy_back"))


def _copy_back_rules(run, order, *, seed):
    ops = run.ops
    copies = ops.copies("d2h")
    if not once_in(copies, run.stream("stream")):
        check.fail("copy d_x into h_x once, in the stream you are given: "
                   "d_x.copy_to_host(h_x, stream=stream)")
    if not order.host_after(copies[0]):
        check.fail("copy_back returned before the copy had landed: record an event in "
                   "the stream after the copy, and event.synchronize()")
    busy_other = [op for op in ops if op.kind == "launch"
                  and op.stream.key() == run.key("other")][0]
    if order.host_after(busy_other):
        check.fail("copy_back also waited for another stream's work (cuda.synchronize() "
                   "waits for the whole device): wait on an event recorded after the "
                   "copy, event.synchronize()")


EXERCISE2 = exercise_check(2, _copy_back_inputs, _copy_back_rules)


def check_exercise2(copy_back, *, seed=None):
    """``copy_back(d_x, h_x, stream)``: copy d_x into the pinned h_x in ``stream`` (after
    the work already there), and return once that copy has landed, without waiting for
    other streams' work (an event recorded after the copy, or the stream itself)."""
    run(EXERCISE2, copy_back, seed=seed)
