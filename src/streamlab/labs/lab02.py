"""Lab 02 · Events between streams: its kernels, sizes and checks.

``from streamlab.labs.lab02 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..exercises.given import no_host_function_wait
from ..runner import Check, Inputs, run
from ..transcript import plain_int

__all__ = ["warm_up", "N", "THREADS", "BLOCKS", "BUSY_NS", "producer", "consumer", "update_counter",
           "fresh_data", "check_part1", "check_part2", "check_part3"]

# On the simulator, 64-thread blocks (every simulated GPU thread is a Python thread), and
# more than one block's worth of data: a launch of one block cannot cover it.
THREADS = streamlab.pick(gpu=256, sim=64)
N = streamlab.pick(gpu=1 << 22, sim=3 * THREADS + 17)
BLOCKS = (N + THREADS - 1) // THREADS
BUSY_NS = streamlab.ms_to_ns(streamlab.pick(gpu=20, sim=1))


@cuda.jit
def producer(data, src):
    i = cuda.grid(1)
    if i < data.size:
        data[i] = 3 * src[i]


@cuda.jit
def consumer(data, out):
    i = cuda.grid(1)
    if i < data.size:
        out[i] = data[i] + 1


@cuda.jit
def update_counter(counter, value):
    cuda.atomic.add(counter, 0, value)


def _source(seed):
    """The producer's input for ``seed`` (numpy, on the host): the judge's expected values
    are made from it, in the learner's process and in the grader's alike."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1000, N).astype(np.float32)


def fresh_data(seed=None):
    """Random producer input on the device, stale data, and the consumer's expected output."""
    src = _source(seed)
    s = cuda.stream()
    d_src = cuda.to_device(src, stream=s)
    d_data = cuda.to_device(np.full(N, -1, np.float32), stream=s)  # stale until produced
    s.synchronize()
    return d_src, d_data, 3 * src + 1


def _streams(nonblocking: bool, count: int):
    if nonblocking:
        return [streamlab.stream(nonblocking=True) for _ in range(count)]
    return [cuda.stream() for _ in range(count)]


def _ordered_after(order, ops, before, after, waiter, producer_name="the producer"):
    """Fail, naming the mistake, unless ``after`` is ordered after ``before``."""
    if order.ordered(before, after):
        return
    check.waits_for(ops, before, after, waiter, producer_name)  # names the usual mistakes
    check.fail(f"{waiter} is not ordered after {producer_name}: record an event in "
               f"{producer_name}'s stream after its launch, and have {waiter}'s stream wait "
               f"on that event before its launch")


def warm_up() -> None:
    """Compile this lab's kernels once (before any timing), on zeros (uninitialised
    memory would make the simulator warn of overflows), and quiet numba's warning about
    small grids: the labs use them on purpose."""
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    a, b = cuda.to_device(np.zeros(N, np.float32)), cuda.to_device(np.zeros(N, np.float32))
    producer[BLOCKS, THREADS](a, b)
    consumer[BLOCKS, THREADS](a, b)
    update_counter[1, 1](cuda.to_device(np.zeros(1, np.int32)), 0)
    streamlab.spin[1, 1](1)
    cuda.synchronize()


# Each check is its data and its own rules, run by streamlab.runner: the run (in the
# learner's process: inputs made, the learner's function called under record_ops, the
# outputs copied back) and the judge (the rules and the expected values, from the Run and
# the check's arguments alone). Under the grader the run sends its Run to the grader,
# which judges it again in its own process: see streamlab.transcript.

def _part1_inputs(*, nonblocking, seed):
    p_stream, c_stream = _streams(nonblocking, 2)
    src, data, _ = fresh_data(seed)
    out = cuda.device_array(N, np.float32)
    return Inputs(lambda fn: fn(src, data, out, p_stream, c_stream),
                  {"producer": p_stream, "consumer": c_stream}, {"out": out},
                  busy=((p_stream, BUSY_NS),))  # the producer's stream is busy


def _part1_rules(run, order, *, nonblocking, seed):
    ops = run.ops
    check.no_host_sync(ops, "produce_then_consume")
    no_host_function_wait(ops, "produce_then_consume")
    check.one_launch_per_stream(ops, "producer", [run.stream("producer")])
    check.one_launch_per_stream(ops, "consumer", [run.stream("consumer")])
    _ordered_after(order, ops, ops.launches("producer")[0], ops.launches("consumer")[0],
                   "the consumer")


PART1 = Check(1, f"{__name__}.check_part1", _part1_inputs,
              _part1_rules, lambda *, nonblocking, seed: {
                  "out": (3 * _source(seed) + 1, "the consumer's output")}, seeded=True)


def check_part1(produce_then_consume, *, nonblocking=False, seed=None):
    """The consumer's stream waits for the producer with an event; the host does not."""
    run(PART1, produce_then_consume, nonblocking=nonblocking, seed=seed)


def _part2_inputs(*, count, seed):
    p_stream, *c_streams = _streams(False, count + 1)
    src, data, _ = fresh_data(seed)
    outs = [cuda.device_array(N, np.float32) for _ in range(count)]
    given = {"producer": p_stream, **{f"consumer {i}": s for i, s in enumerate(c_streams)}}
    return Inputs(lambda fn: fn(src, data, outs, p_stream, c_streams), given,
                  {f"out {i}": out for i, out in enumerate(outs)},
                  busy=((p_stream, BUSY_NS),))


def _part2_rules(run, order, *, count, seed):
    ops = run.ops
    check.no_host_sync(ops, "fan_out")
    no_host_function_wait(ops, "fan_out")
    check.one_launch_per_stream(ops, "producer", [run.stream("producer")])
    check.one_launch_per_stream(ops, "consumer",
                                [run.stream(f"consumer {i}") for i in range(count)])
    prod = ops.launches("producer")[0]
    for i, cons in enumerate(ops.launches("consumer")):
        _ordered_after(order, ops, prod, cons, f"consumer {i}")
    if len(ops.records()) != 1:
        check.fail(f"you recorded {len(ops.records())} events: one event, recorded once "
                   f"after the producer and waited on by every consumer stream, is enough")


def _part2_expected(*, count, seed):
    expected = 3 * _source(seed) + 1
    return {f"out {i}": (expected, f"consumer {i}'s output") for i in range(count)}


PART2 = Check(2, f"{__name__}.check_part2", _part2_inputs, _part2_rules,
              _part2_expected, seeded=True)


def check_part2(fan_out, *, count=3, seed=None):
    """One producer, ``count`` consumers in their own streams, released by one event."""
    run(PART2, fan_out, count=count, seed=seed)


def _part3_inputs(*, start):
    s0, s1 = _streams(True, 2)
    counter = cuda.to_device(np.array([start], np.int32), stream=s0)
    s0.synchronize()
    return Inputs(lambda fn: fn(counter, s0, s1), {"s0": s0, "s1": s1},
                  busy=((s0, BUSY_NS), (s1, BUSY_NS)),  # both streams are busy
                  returned=lambda value: ({"value": value}, {}))


def _part3_rules(run, order, *, start):
    ops = run.ops
    no_host_function_wait(ops, "add_in_two_streams")
    check.one_launch_per_stream(ops, "update_counter", [run.stream("s0"), run.stream("s1")])
    counter = [r for op in ops.launches("update_counter") for r in op.atomics + op.writes]
    reads = [op for op in ops.user() if op.kind == "copy" and op.name == "d2h"
             and any(r.overlaps(c) for r in op.reads for c in counter)]
    if not reads:
        check.fail("the counter was never copied back to the host: "
                   "counter.copy_to_host() after both additions are done")
    for name, launch in zip(("s0", "s1"), ops.launches("update_counter")):
        if not order.ordered(launch, reads[-1]):
            check.fail(f"the counter was read before the addition in {name} had to be "
                       f"done: wait for it first ({name}.synchronize(), or an event "
                       f"recorded in {name} after the launch, then event.synchronize())")
    if not order.host_after(reads[-1], thread=ops[0].thread):  # (the check's own thread)
        check.fail("the counter's copy to the host was never waited for before its value "
                   "was used: wait for the copy's stream (stream.synchronize(), or an "
                   "event recorded after the copy, then event.synchronize())")


def _part3_value(run, order, *, start):
    """Part 3's returned value: a plain int, equal to the counter's (after the races)."""
    value = run.values["value"]
    if not plain_int(value):
        kind = run.type_name("value")
        if kind == "NoneType":
            check.fail("add_in_two_streams returned nothing (None): did you forget the "
                       "return? Return the counter's value as a Python int")
        hint = (": take its one element, int(host_copy[0])" if kind == "ndarray" else "")
        check.fail(f"add_in_two_streams returned {kind} {value!r}: return the counter's "
                   f"value as a Python int{hint}")
    check.equal(value, start + 30, "the value returned")


PART3 = Check(3, f"{__name__}.check_part3", _part3_inputs,
              _part3_rules, values=_part3_value)


def check_part3(add_in_two_streams, *, start=0):
    """Atomic additions in two streams; the value is read once both are done."""
    run(PART3, add_in_two_streams, start=start)


#: the checks the grader judges again in its own process: check name -> (judge, part)
JUDGES = {"check_part1": (PART1.judge, 1), "check_part2": (PART2.judge, 2),
          "check_part3": (PART3.judge, 3)}
