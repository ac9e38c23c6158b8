"""Lesson 08's exercises: a copy in and a copy out at once, one per copy engine; a wait
that sleeps instead of spinning on a CPU core (a cuda.core event made with blocking_sync)."""

from __future__ import annotations

import time

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..check import none_ordered
from ..ops import internal
from ..runner import Inputs, run
from ..streams import is_blocking_sync
from ..watched import watch
from . import N, exercise_check, once_in

__all__ = ["check_exercise1", "check_exercise2"]

# exercise 2: the work the host waits for (long enough on a GPU to measure its CPU time)
HOLD_MS = streamlab.pick(gpu=100.0, sim=2.0)


def _both_inputs(*, seed):
    rng = np.random.default_rng(seed)
    data_in = rng.random(N, dtype=np.float32)
    data_out = rng.random(N, dtype=np.float32)
    h_in = watch(cuda.pinned_array(N, np.float32), "h_in")
    h_out = watch(cuda.pinned_array(N, np.float32), "h_out")
    h_in.view(np.ndarray)[:] = data_in
    h_out.view(np.ndarray)[:] = -1.0
    d_in = cuda.to_device(np.zeros(N, np.float32))
    d_out = cuda.to_device(data_out)
    s_in, s_out = cuda.stream(), cuda.stream()
    cuda.synchronize()
    return Inputs(lambda copy_both_ways: copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out),
                  {"s_in": s_in, "s_out": s_out}, {"d_in": d_in, "h_out": h_out},
                  expected={"d_in": (data_in, "d_in after copy_both_ways"),
                            "h_out": (data_out, "h_out after copy_both_ways")})


def _both_rules(run, order, *, seed):
    ops = run.ops
    check.no_host_sync(ops, "copy_both_ways")
    ins, outs = ops.copies("h2d"), ops.copies("d2h")
    if not once_in(ins, run.stream("s_in")):
        check.fail("copy h_in into d_in once, in s_in: d_in.copy_to_device(h_in, "
                   "stream=s_in)")
    if not once_in(outs, run.stream("s_out")):
        check.fail("copy d_out into h_out once, in s_out: d_out.copy_to_host(h_out, "
                   "stream=s_out)")
    none_ordered(order, [ins[0], outs[0]], "copy")


EXERCISE1 = exercise_check(1, _both_inputs, _both_rules)


def check_exercise1(copy_both_ways, *, seed=None):
    """``copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out)``: copy the pinned h_in into
    d_in in ``s_in`` and d_out into the pinned h_out in ``s_out``, so that nothing orders
    one after the other (each direction has its own copy engine), and return without
    waiting."""
    run(EXERCISE1, copy_both_ways, seed=seed)


def _quiet_inputs():
    from cuda.core import Device, StreamOptions

    dev = Device()
    dev.set_current()
    s = dev.create_stream(options=StreamOptions(nonblocking=False))
    with internal():
        streamlab.spin[1, 1, s](1)  # compiled before the timing
        s.sync()

    def call(wait_quietly):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        wait_quietly(s)
        return time.perf_counter() - wall0, time.process_time() - cpu0

    return Inputs(call, busy=((s, streamlab.ms_to_ns(HOLD_MS)),),
                  returned=lambda took: ({"wall": took[0], "cpu": took[1]}, {}))


def _quiet_rules(run, order):
    ops = run.ops
    work = [op for op in ops if op.kind == "launch"][0]
    if not order.host_after(work):
        check.fail("wait_quietly returned before the stream's work had finished: record "
                   "the event in the stream (stream.record(...)), then wait on it "
                   "(event.sync())")
    # The wait that counts is the first one after which the host is ordered after the
    # work: the one the host spent the work's time in. Polling before it spins; a wait
    # that returned at once (an event never recorded) or a look after it costs nothing.
    waits = sorted(ops.syncs() + ops.queries(), key=lambda op: op.index)
    waited = next((op for op in waits if order.ordered(work, op)), None)
    if waited is None:
        check.fail("the host waited for the stream's work by other means than an "
                   "event's sync (a blocking copy, say), which spins: sync() an event "
                   "made with EventOptions(blocking_sync=True), recorded in the stream")
    polled = [op for op in waits if op.index < waited.index and op.kind == "query"]
    for op in polled + [waited]:
        if op.kind == "query" or op.name != "event":
            check.fail(f"{op.describe()} keeps a CPU core busy while it waits: "
                       f"record an event made with EventOptions(blocking_sync=True) in "
                       f"the stream (stream.record(options=...)), and sync() that")
    if is_blocking_sync(waited.event) is False:  # None: made unseen; CPU time judges
        check.fail("the event you waited on was made without blocking_sync, so its "
                   "synchronize spins on a CPU core: make it with "
                   "EventOptions(blocking_sync=True)")


def _quiet_cpu(run, order):
    if streamlab.on_simulator():
        return
    share = run.values["cpu"] / run.values["wall"]
    print(f"the host waited {run.values['wall'] * 1000:.0f} ms, using {share:.0%} of a CPU core")
    if share > 0.5:
        check.fail(f"the wait kept a CPU core {share:.0%} busy: wait on the "
                   f"blocking-sync event alone")


EXERCISE2 = exercise_check(2, _quiet_inputs, _quiet_rules, values=_quiet_cpu)


def check_exercise2(wait_quietly):
    """``wait_quietly(stream)``: return once the work already in ``stream`` (a cuda.core
    stream) has finished, waiting on an event made with ``EventOptions(blocking_sync=True)``,
    recorded in the stream: its synchronize sleeps instead of spinning on a CPU core. On a
    GPU the check also measures the CPU time the wait used."""
    run(EXERCISE2, wait_quietly)
