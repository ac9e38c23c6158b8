"""Lesson 03's exercises: a consumer stream that waits for every producer (the post's
m x n waits); consumers that need only their own producer."""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..ops import internal
from ..runner import Inputs, run
from . import BUSY_NS, N, THREADS, blocks_for, exercise_check

__all__ = ["check_exercise1", "check_exercise2"]


@cuda.jit
def produce(buffer, start, size):
    i = cuda.grid(1)
    if i < size:
        buffer[start + i] += 1


@cuda.jit
def consume(buffer, start, size):
    i = cuda.grid(1)
    if i < size:
        buffer[start + i] *= 10


def _producers(m, buffer):
    """m producer streams, each busy first, each producing its part; an event recorded
    after each. Issued by the check (internal)."""
    streams = [cuda.stream() for _ in range(m)]
    events = [cuda.event() for _ in range(m)]
    part = buffer.size // m
    with internal():
        for i, (s, e) in enumerate(zip(streams, events)):
            streamlab.spin[1, 1, s](BUSY_NS * (m - i) // m)  # the first producer ends last
            produce[blocks_for(part), THREADS, s](buffer, i * part, part)
            e.record(s)
    return streams, events, part


def _tenfold(buffer) -> dict:
    return {"buffer": (np.full(buffer.size, 10, np.int32), "the buffer")}


def _all_inputs(*, m):
    buffer = cuda.to_device(np.zeros(m * (N // m), np.int32))
    consumer_stream = cuda.stream()

    def call(wait_for_all):
        _, events, part = _producers(m, buffer)
        wait_for_all(list(events), consumer_stream)
        with internal():
            consume[blocks_for(buffer.size), THREADS, consumer_stream](buffer, 0, buffer.size)

    return Inputs(call, outputs={"buffer": buffer}, expected=_tenfold(buffer))


def _all_rules(run, order, *, m):
    ops = run.ops
    check.no_host_sync(ops, "wait_for_all")
    if ops.launches():
        check.fail("wait_for_all only waits: the check launches the consumer itself")
    consumer = [op for op in ops if op.kind == "launch" and op.name == "consume"][0]
    for j, p in enumerate(op for op in ops if op.kind == "launch" and op.name == "produce"):
        if not order.ordered(p, consumer):
            check.fail(f"the consumer's stream never waits for producer {j}: wait on "
                       f"every event, producer_events[{j}] too")


EXERCISE1 = exercise_check(1, _all_inputs, _all_rules)


def check_exercise1(wait_for_all, *, m=4):
    """``wait_for_all(producer_events, stream)`` makes ``stream`` wait for every producer
    event; the check then launches a consumer of the whole buffer in ``stream``."""
    run(EXERCISE1, wait_for_all, m=m)


def _own_inputs(*, n):
    buffer = cuda.to_device(np.zeros(n * (N // n), np.int32))
    c_streams = [cuda.stream() for _ in range(n)]

    def call(wait_for_own):
        _, events, part = _producers(n, buffer)
        wait_for_own(list(events), list(c_streams))
        with internal():
            for i, s in enumerate(c_streams):
                consume[blocks_for(part), THREADS, s](buffer, i * part, part)

    return Inputs(call, outputs={"buffer": buffer}, expected=_tenfold(buffer))


def _own_rules(run, order, *, n):
    ops = run.ops
    check.no_host_sync(ops, "wait_for_own")
    if ops.launches():
        check.fail("wait_for_own only waits: the check launches the consumers itself")
    producers = [op for op in ops if op.kind == "launch" and op.name == "produce"]
    consumers = [op for op in ops if op.kind == "launch" and op.name == "consume"]
    for i, c in enumerate(consumers):
        if not order.ordered(producers[i], c):
            check.fail(f"consumer {i} is not ordered after producer {i}, whose part it "
                       f"reads: producer_events[{i}].wait(consumer_streams[{i}])")
    waits = ops.waits()
    if len(waits) > n:
        check.fail(f"{len(waits)} waits for {n} consumers: consumer i reads only "
                   f"producer i's part, so one wait each is enough")


EXERCISE2 = exercise_check(2, _own_inputs, _own_rules)


def check_exercise2(wait_for_own, *, n=4):
    """``wait_for_own(producer_events, consumer_streams)``: consumer i reads only the part
    producer i wrote, so its stream waits for that one event: n waits, not n x n."""
    run(EXERCISE2, wait_for_own, n=n)
