"""Lesson 06's exercises: time a kernel, not its launch (a start event recorded while the
stream is still busy); time work spread over several streams with one pair of events."""

from __future__ import annotations

from numba import cuda

import streamlab

from .. import check
from ..ops import internal, record_ops
from ..order import analyze
from ..runner import Inputs, run
from . import BUSY_NS, events_read, exercise_check, once_in

__all__ = ["HOLD_NS", "KERNEL_NS", "check_exercise1", "check_exercise2"]

# exercise 1: what keeps the stream busy first, 10 ms: long enough that the host has issued
# the start event and the kernel before it ends, even under record_ops (about 0.1 ms a call)
HOLD_MS = 10.0
HOLD_NS = streamlab.ms_to_ns(HOLD_MS)
KERNEL_MS = 0.05
KERNEL_NS = streamlab.ms_to_ns(KERNEL_MS)  # exercise 1: the kernel to time, 50 us
WORK_MS = (1.0, 2.0, 3.0)  # exercise 2: one kernel in each of three streams


def _compiled(stream) -> None:
    """The spin kernel compiled, and the recorder's path warmed on ``stream``: the calls
    the learner's function makes, made once first under a recorder of their own. Exercise
    1's window (the hold's launch to the kernel's) must stay far under the 10 ms hold, and
    the recorder's first look at a kernel (numba's front end reads it, to learn what it
    touches) made a fresh process's first window several times longer than the later ones:
    once it pushed the course's own answer past the hold (issue 54; the windows with and
    without this warm-up: benchmarks/exercise_hold.py, docs/exercise-hold.md)."""
    with record_ops(), internal():
        start, end = cuda.event(), cuda.event()
        streamlab.spin[1, 1, stream](1)
        start.record(stream)
        streamlab.spin[1, 1, stream](1)
        end.record(stream)
        end.synchronize()
        stream.synchronize()


def _kernel_inputs():
    s = cuda.stream()
    _compiled(s)
    return Inputs(lambda time_kernel: time_kernel(s), {"stream": s},
                  returned=lambda ms: ({"ms": ms}, {}))


def _kernel_span(run):
    """The kernel to time, and the events recorded in its stream just before and after."""
    ops = run.ops
    timed = [op for op in ops.launches("spin") if op.detail.get("spin_ns") == KERNEL_NS]
    if not once_in(timed, run.stream("stream")):
        check.fail(f"launch the kernel to time, streamlab.spin[1, 1, stream](KERNEL_NS), "
                   f"once, in the stream you are given (it was launched {len(timed)} "
                   f"time(s){', elsewhere' if timed else ''})")
    kernel = timed[0]
    mine = [op for op in ops.records() if op.stream.key() == run.key("stream")]
    before = [op for op in mine if op.index < kernel.index]
    after = [op for op in mine if op.index > kernel.index]
    if not before or not after:
        check.fail("record one event in the stream before the kernel and one after it "
                   "(start.record(stream), the launch, end.record(stream))")
    return kernel, before[-1], after[0]


def _kernel_rules(run, order):
    ops = run.ops
    kernel, start, end = _kernel_span(run)
    upto = analyze(ops[:kernel.index + 1])  # what was known when the kernel was issued
    held = [op for op in ops[:start.index] if op.kind == "launch" and upto.ordered(op, start)]
    if not held:
        check.fail("the stream was idle when the start event was recorded, so the event "
                   "completed at once, while the host was still inside the kernel's "
                   "launch call: the span counts the launch too. Put the hold, "
                   "streamlab.spin[1, 1, stream](HOLD_NS), in the stream before the "
                   "start event")
    if all(upto.host_after(op) for op in held):
        check.fail("the host waited for the hold to finish before it launched the "
                   "kernel, so the stream was idle again when it reached the start "
                   "event: issue the hold, the start event, the kernel and the end "
                   "event without waiting, then wait for the end event")
    if not order.host_after(end):
        check.fail("the time was read before the end event had happened: call "
                   "end.synchronize() first, then start.elapsed_time(end)")


def _kernel_ms(run, order):
    _, start, end = _kernel_span(run)
    ms = events_read(run.values["ms"], start, end, "time_kernel")
    print(f"behind a {HOLD_MS:g} ms hold, the {KERNEL_MS} ms kernel measured {ms:.3f} ms")
    if not streamlab.on_simulator() and ms > KERNEL_MS + 0.1:
        check.fail(f"the span read {ms:.3f} ms for a {KERNEL_MS} ms kernel: the stream "
                   f"reached the start event before the kernel's launch reached the GPU. "
                   f"Hold the stream longer (HOLD_NS is {HOLD_MS:g} ms), and issue the "
                   f"start event and the kernel straight after the hold")


EXERCISE1 = exercise_check(1, _kernel_inputs, _kernel_rules, values=_kernel_ms)


def check_exercise1(time_kernel):
    """``time_kernel(stream)``: keep ``stream`` busy with ``streamlab.spin[1, 1,
    stream](HOLD_NS)``, then record a start event, launch ``streamlab.spin[1, 1,
    stream](KERNEL_NS)``, record an end event, and return the milliseconds between the
    events once the end has happened. The host must not wait between the hold and the
    kernel: the start event then completes only when the stream reaches it, with the
    kernel already queued behind it."""
    run(EXERCISE1, time_kernel)


def _all_inputs():
    streams = [cuda.stream() for _ in WORK_MS]
    _compiled(streams[0])
    kernels, calls, live = [], [], []

    def work():
        calls.append(1)
        with internal():
            for s, ms in zip(streams, WORK_MS):
                streamlab.spin[1, 1, s](streamlab.ms_to_ns(ms))
                kernels.append(live[0][-1])

    return Inputs(lambda time_all: (time_all(streams, work), kernels, calls),
                  busy=((streams[0], BUSY_NS),),  # streams[0] is still busy when it begins
                  returned=lambda got: (dict(zip(("ms", "kernels", "calls"), got)), {}),
                  live=live)


def _all_span(run, order):
    """The records before every kernel (the start's candidates) and the first after all."""
    ops, kernels = run.ops, run.values["kernels"]
    records = ops.records()
    starts = [r for r in records if all(order.ordered(r, k) for k in kernels)]
    ends = [r for r in records if all(order.ordered(k, r) for k in kernels)]
    return starts, ends[0] if ends else None


def _all_rules(run, order):
    ops, kernels, calls = run.ops, run.values["kernels"], run.values["calls"]
    if len(calls) != 1:
        check.fail(f"work() was called {len(calls)} times: call it once, between the "
                   f"start event and the end event")
    records = ops.records()
    starts, end = _all_span(run, order)
    if not starts:
        loose = [i for i, k in enumerate(kernels)
                 if not any(order.ordered(r, k) for r in records if r.index < k.index)]
        which = f"streams[{loose[0]}]" if loose else "one stream"
        check.fail(f"no event comes before every kernel: the kernel in {which} may "
                   f"start before your start event. Record the start in streams[0] "
                   f"before work(), and make every other stream wait on it "
                   f"(start.wait(s))")
    if end is None:
        loose = [i for i, k in enumerate(kernels)
                 if not any(order.ordered(k, r) for r in records)]
        which = f"streams[{loose[0]}]" if loose else "one stream"
        check.fail(f"no event comes after every kernel: your end event does not wait "
                   f"for the kernel in {which}. Record an event in each stream after "
                   f"work(), make streams[0] wait on each, then record the end")
    early = [op for op in ops.syncs() if op.index < end.index]
    if early:
        check.fail(f"the host waited ({early[0].describe()}) before the end event was "
                   f"recorded: the end then marks when the host got round to it, not "
                   f"when the GPU finished. Join the streams with events instead, and "
                   f"wait only for the end")
    if not order.host_after(end):
        check.fail("the time was read before the end event had happened: call "
                   "end.synchronize() first")


def _all_ms(run, order):
    starts, end = _all_span(run, order)
    for start in reversed(starts):
        try:
            ms = events_read(run.values["ms"], start, end, "time_all")
            break
        except check.CheckFailed:
            if start is starts[0]:
                raise
    if ms < 0.9 * max(WORK_MS):
        check.fail(f"time_all returned {ms:.3f} ms, less than the longest kernel "
                   f"({max(WORK_MS)} ms)")
    print(f"kernels of {', '.join(f'{m:g}' for m in WORK_MS)} ms in three streams: "
          f"{ms:.3f} ms from start to end")


EXERCISE2 = exercise_check(2, _all_inputs, _all_rules, values=_all_ms)


def check_exercise2(time_all):
    """``time_all(streams, work)``: ``work()`` launches one kernel in each of ``streams``
    (call it once). Return the milliseconds from a start event that every kernel comes
    after to an end event that comes after every kernel: record the start in streams[0]
    and make the other streams wait on it; record an event in each stream after the work,
    make streams[0] wait on them, then record the end. The host waits only for the end
    event."""
    run(EXERCISE2, time_all)
