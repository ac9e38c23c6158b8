"""Lesson 02's exercises: a consumer that waits for two producers; reading a copy on the
host once its event has happened; and a hand-over between two streams, given with a
mistake in it, to diagnose and fix."""

from __future__ import annotations

import numpy as np
from numba import cuda

from .. import check
from ..ops import internal
from ..runner import Inputs, run
from ..watched import watch
from . import BUSY_NS, N, THREADS, add_one, blocks_for, exercise_check, fill, fresh, once_in
from .given import diagnose, no_host_function_wait, no_legacy_stream

__all__ = ["fill", "add", "twice", "add_one", "blocks_for", "THREADS", "check_exercise1",
           "check_exercise2", "check_exercise3"]


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


@cuda.jit
def twice(x, y):
    """y[i] = 2 * x[i], one thread an element."""
    i = cuda.grid(1)
    if i < y.size:
        y[i] = 2 * x[i]


#: exercise 3's program as given, with its mistake (the learner's copy holds it, written
#: there by scripts/course/make_lessons.py; the check tells it from the learner's own)
GIVEN3 = '''def hand_over(d_x, d_y, s_work, s_read):
    """d_y = 2 * d_x in s_work, then d_y += 1 in s_read once that is done, ordered by an
    event: the host does not wait. On a GPU its results are wrong now and then."""
    ready = cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record(s_read)
    ready.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
'''


def _hand_over_inputs(*, seed):
    h, d_x = fresh(seed)
    d_y = cuda.device_array(N, np.float32)
    s_work, s_read = cuda.stream(), cuda.stream()
    return Inputs(lambda hand_over: hand_over(d_x, d_y, s_work, s_read),
                  {"s_work": s_work, "s_read": s_read}, {"d_y": d_y},
                  busy=((s_work, BUSY_NS),),  # the producer's stream is busy first
                  expected={"d_y": (2 * h + 1, "d_y")})


def _hand_over_launches(run, order, *, seed):
    """Each kernel once, in its own stream, and the host never waits: what the program
    as given does right, so that its symptom is the race."""
    check.no_host_sync(run.ops, "hand_over")
    check.one_launch_per_stream(run.ops, "twice", [run.stream("s_work")], ["s_work"])
    check.one_launch_per_stream(run.ops, "add_one", [run.stream("s_read")], ["s_read"])


def _hand_over_rules(run, order, *, seed):
    _hand_over_launches(run, order, seed=seed)
    ops = run.ops
    no_host_function_wait(ops, "hand_over")
    no_legacy_stream(ops, "hand_over")  # (a record with no stream orders s_read by accident)
    producer, consumer = ops.launches("twice")[0], ops.launches("add_one")[0]
    if order.ordered(producer, consumer):
        return
    waits = [w for w in ops.waits() if w.stream.key() == consumer.stream.key()
             and w.index < consumer.index]
    if not waits:
        check.fail("s_read never waits before add_one: make it wait on an event that marks "
                   "the end of twice")
    recorded = [ops.recorded_before(w) for w in waits]
    if all(r is None for r in recorded):
        check.fail("s_read waits on an event that had not been recorded yet: record "
                   "first, then wait")
    if not [r for r in recorded if r is not None and r.stream.key() == producer.stream.key()]:
        check.fail("s_read waits on an event recorded in another stream than s_work, where "
                   "twice runs: an event marks a point in the stream it is recorded in")
    check.fail("s_read waits on an event recorded in s_work before twice was launched: "
               "record it after the launch")


EXERCISE3 = exercise_check(3, _hand_over_inputs, _hand_over_rules, named_races=True)
#: the program as given, judged for its symptom: its launches are right, so the race shows
SYMPTOM3 = exercise_check(3, _hand_over_inputs, _hand_over_launches, named_races=True)


def check_exercise3(hand_over, *, seed=None):
    """``hand_over(d_x, d_y, s_work, s_read)``: d_y = 2 * d_x in s_work, then d_y += 1 in
    s_read once that is done, ordered by an event, the host not waiting. Given with a
    mistake: while it is the program as given, the check shows what goes wrong in it."""
    diagnose(EXERCISE3, SYMPTOM3, hand_over, GIVEN3, seed=seed)
