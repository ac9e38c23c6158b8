"""Lab 03 · A rendezvous stream: its kernels, sizes and checks.

``from streamlab.labs.lab03 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.
"""

from __future__ import annotations

import contextlib

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..ops import internal
from ..runner import Check, Inputs, run

__all__ = ["warm_up", "BUFFER", "THREADS", "BUSY_NS", "producer_kernel", "consumer_kernel", "blocks",
           "check_part1", "check_part2"]

# On the simulator, small blocks and a small buffer (every simulated GPU thread is a Python
# thread). Divisible by every m and n the checks use (2 to 5); each part is still more
# than one block's worth, so a launch of one block cannot cover it.
THREADS = streamlab.pick(gpu=128, sim=32)
BUFFER = streamlab.pick(gpu=15 << 20, sim=480)
BUSY_NS = streamlab.ms_to_ns(streamlab.pick(gpu=10, sim=1))


@cuda.jit
def producer_kernel(buffer, start, size):
    idx = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if idx < size:
        buffer[start + idx] += 1


@cuda.jit
def consumer_kernel(buffer, start, size):
    idx = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if idx < size:
        buffer[start + idx] *= 10


def blocks(size):
    """Blocks of THREADS threads enough for ``size`` elements."""
    return (size + THREADS - 1) // THREADS


def _checkers_barrier(producer_events, rendezvous_stream):
    """The checks' own barrier, for part 2: the rendezvous stream waits on every producer
    event, then records the barrier."""
    for ev in producer_events:
        ev.wait(rendezvous_stream)
    barrier = cuda.event()
    barrier.record(rendezvous_stream)
    return barrier


def _checkers_consumer(stream, barrier, buffer, start, size):
    """The checks' own consumer, for part 1."""
    barrier.wait(stream)
    consumer_kernel[blocks(size), THREADS, stream](buffer, start, size)


def _program(m, n, learner) -> Inputs:
    """The post's program: m producers (busy first), a barrier, n consumers, in
    non-blocking streams (so that nothing but the events orders them). ``learner`` names
    the function under test (the other is the check's own); the rest is the check's own
    too (recorded as internal)."""
    if BUFFER % m or BUFFER % n:
        raise ValueError(f"BUFFER = {BUFFER} does not split into {m} and {n} equal parts")
    producers = [streamlab.stream(nonblocking=True) for _ in range(m)]
    consumers = [streamlab.stream(nonblocking=True) for _ in range(n)]
    rendezvous = streamlab.stream(nonblocking=True)
    s = cuda.stream()
    buffer = cuda.to_device(np.zeros(BUFFER, np.int32), stream=s)
    s.synchronize()

    def call(fn):
        make, launch = (fn, _checkers_consumer) if learner == "make_barrier" \
            else (_checkers_barrier, fn)
        events = []
        with internal():
            part = BUFFER // m
            for i, st in enumerate(producers):
                streamlab.spin[1, 1, st](BUSY_NS)          # the producer is busy first
                producer_kernel[blocks(part), THREADS, st](buffer, i * part, part)
                ev = cuda.event()
                ev.record(st)
                events.append(ev)
        mine = contextlib.nullcontext if learner == "make_barrier" else internal
        with mine():
            barrier = make(events, rendezvous)
        theirs = contextlib.nullcontext if learner == "launch_consumer" else internal
        part = BUFFER // n
        for i, st in enumerate(consumers):
            with theirs():
                launch(st, barrier, buffer, i * part, part)
        return barrier

    streams = {**{f"producer {i}": s for i, s in enumerate(producers)},
               **{f"consumer {i}": s for i, s in enumerate(consumers)},
               "rendezvous": rendezvous}
    return Inputs(call, streams, {"buffer": buffer})


def _consumers_after_producers(order, ops, what):
    """Fail unless every consumer launch is ordered after every producer launch."""
    prods = [op for op in ops if op.kind == "launch" and op.name == "producer_kernel"]
    cons = [op for op in ops if op.kind == "launch" and op.name == "consumer_kernel"]
    for i, c in enumerate(cons):
        for j, p in enumerate(prods):
            if not order.ordered(p, c):
                check.fail(what(i, j))


def warm_up() -> None:
    """Compile this lab's kernels once (before any timing), on zeros (uninitialised
    memory would make the simulator warn of overflows), and quiet numba's warning about
    small grids: the labs use them on purpose."""
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    d = cuda.to_device(np.zeros(1, np.int32))
    producer_kernel[1, 1](d, 0, 1)
    consumer_kernel[1, 1](d, 0, 1)
    streamlab.spin[1, 1](1)
    cuda.synchronize()


# Each check is its data and its own rules, run by streamlab.runner (as lab 02's): under
# the grader the run sends its Run to the grader, which judges it again in its own process
# (streamlab.transcript).

def _the_barrier(value):
    """make_barrier's returned value, as the Run carries it: an event, or what it was."""
    is_event = isinstance(value, type(cuda.event()))
    return ({} if is_event else {"barrier": value}), {"barrier": value if is_event else None}


def _part1_inputs(*, m, n):
    inputs = _program(m, n, "make_barrier")
    inputs.returned = _the_barrier
    return inputs


def _part1_rules(run, order, *, m, n):
    ops = run.ops
    check.no_host_sync(ops, "make_barrier")
    barrier = run.events.get("barrier")
    if barrier is None:
        check.fail(f"make_barrier returned {run.values.get('barrier')!r}: return the event "
                   f"you recorded")
    key = run.key("rendezvous")
    records = [op for op in ops.user() if op.kind == "record" and op.event is barrier]
    if not records or records[-1].stream.key() != key:
        check.fail("the event returned was never recorded in the rendezvous stream: "
                   "record it there, after the waits")
    waits = [op for op in ops.user() if op.kind == "wait"]
    late = any(w.index > records[-1].index for w in waits)

    def message(i, j):
        hint = (" The barrier was recorded before some of the waits: wait first, then "
                "record" if late else "")
        return (f"consumer {i} may start before producer {j} ends: the rendezvous stream "
                f"never waits for producer {j}'s event before the barrier is recorded."
                f"{hint}")

    _consumers_after_producers(order, ops, message)
    if len(waits) != m:
        check.fail(f"{len(waits)} waits in make_barrier for m = {m} producers: wait once "
                   f"for each producer event")


def _every_element_ten(**_):
    return {"buffer": (np.full(BUFFER, 10), "the buffer (every element (0 + 1) x 10)")}


PART1 = Check(1, f"{__name__}.check_part1", _part1_inputs, _part1_rules,
              _every_element_ten, races={"parts_of_one_array": True})


def check_part1(make_barrier, *, m=4, n=2):
    """make_barrier returns one event that happens once every producer event has."""
    run(PART1, make_barrier, m=m, n=n)


def _part2_rules(run, order, *, m, n):
    ops = run.ops
    check.no_host_sync(ops, "launch_consumer")
    check.one_launch_per_stream(ops, "consumer_kernel",
                                [run.stream(f"consumer {i}") for i in range(n)])
    _consumers_after_producers(
        order, ops,
        lambda i, j: (f"consumer {i} may start before producer {j} ends: its stream never "
                      f"waits on the barrier before the kernel. barrier.wait(stream), "
                      f"then launch"))


PART2 = Check(2, f"{__name__}.check_part2",
              lambda *, m, n: _program(m, n, "launch_consumer"), _part2_rules,
              _every_element_ten, races={"parts_of_one_array": True})


def check_part2(launch_consumer, *, m=4, n=2):
    """launch_consumer runs the consumer in its stream once the barrier has happened."""
    run(PART2, launch_consumer, m=m, n=n)


#: the checks the grader judges again in its own process: check name -> (judge, part)
JUDGES = {"check_part1": (PART1.judge, 1), "check_part2": (PART2.judge, 2)}
