"""Lesson 03's exercises: a consumer stream that waits for every producer (the post's
m x n waits); consumers that need only their own producer; and a rendezvous given with a
mistake in it, to diagnose and fix."""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..ops import internal
from ..runner import Inputs, run
from . import BUSY_NS, N, THREADS, blocks_for, exercise_check
from .given import diagnose, no_host_function_wait, no_legacy_stream

__all__ = ["check_exercise1", "check_exercise2", "check_exercise3"]


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


#: exercise 3's program as given, with its mistake (the learner's copy holds it, written
#: there by scripts/course/make_lessons.py; the check tells it from the learner's own)
GIVEN3 = '''def rendezvous(producer_events, r_stream, consumer_streams):
    """Every consumer stream waits for every producer, through r_stream: r_stream waits
    for each producer's event, and each consumer stream for one barrier event recorded
    in r_stream (m + n waits). Its consumers read unfinished parts now and then."""
    barrier = cuda.event()
    barrier.record(r_stream)
    for event in producer_events:
        event.wait(r_stream)
    for stream in consumer_streams:
        barrier.wait(stream)
'''


def _rendezvous_inputs(*, m, n):
    buffer = cuda.to_device(np.zeros(m * n * (N // (m * n)), np.int32))
    r_stream, c_streams = cuda.stream(), [cuda.stream() for _ in range(n)]

    def call(rendezvous):
        _, events, _ = _producers(m, buffer)
        rendezvous(list(events), r_stream, list(c_streams))
        part = buffer.size // n
        with internal():
            for i, s in enumerate(c_streams):
                consume[blocks_for(part), THREADS, s](buffer, i * part, part)

    return Inputs(call, {"r_stream": r_stream, **{f"consumer_streams[{i}]": s
                                                  for i, s in enumerate(c_streams)}},
                  {"buffer": buffer}, expected=_tenfold(buffer))


def _rendezvous_unordered(run, order, *, m, n):
    """The basics (the host free, no launches, m + n waits at most), and each consumer's
    producers, as (consumer i, producer j) pairs that nothing orders: consumer i reads the
    parts of the producers j that wrote its part of the buffer."""
    ops = run.ops
    check.no_host_sync(ops, "rendezvous")
    if ops.launches():
        check.fail("rendezvous only waits: the check launches the producers and the "
                   "consumers itself")
    if len(ops.waits()) > m + n:
        check.fail(f"{len(ops.waits())} waits: through r_stream, m + n = {m + n} are enough "
                   f"(r_stream waits for each of the {m} producers, each of the {n} "
                   f"consumer streams for one barrier)")
    producers = [op for op in ops if op.kind == "launch" and op.name == "produce"]
    consumers = [op for op in ops if op.kind == "launch" and op.name == "consume"]
    return [(i, j) for i, c in enumerate(consumers) for j, p in enumerate(producers)
            if j * n // m == i and not order.ordered(p, c)] + \
        [(i, j) for i, c in enumerate(consumers) for j, p in enumerate(producers)
         if j * n // m != i and not order.ordered(p, c)]


def _rendezvous_symptom(run, order, *, m, n):
    unordered = _rendezvous_unordered(run, order, m=m, n=n)
    if unordered:
        i, j = unordered[0]
        check.fail(f"the consumer in consumer_streams[{i}] can run before producer {j} has "
                   f"finished: nothing orders them")


def _rendezvous_rules(run, order, *, m, n):
    """Through r_stream, as the exercise asks: r_stream waits for every producer's event,
    and each consumer stream for a barrier recorded in r_stream after those waits (an
    order made any other way, or by the legacy default stream, is not the rendezvous)."""
    unordered = _rendezvous_unordered(run, order, m=m, n=n)
    ops = run.ops
    no_host_function_wait(ops, "rendezvous")
    no_legacy_stream(ops, "rendezvous")
    r_key = run.key("r_stream")
    producers = {op.stream.key() for op in ops if op.kind == "launch" and op.name == "produce"}
    r_waits = [w for w in ops.waits() if w.stream.key() == r_key]
    waited = {r.stream.key() for r in map(ops.recorded_before, r_waits) if r is not None}
    if len(waited & producers) < m:
        check.fail(f"r_stream waits for {len(waited & producers)} of the {m} producers: make "
                   f"it wait on each producer's event, event.wait(r_stream)")
    c_waits = [w for w in ops.waits() if w.stream.key() != r_key]
    barriers = [ops.recorded_before(w) for w in c_waits]
    if any(b is None for b in barriers):
        check.fail("a consumer stream waits on an event that had not been recorded yet: "
                   "record the barrier first, then make the consumers wait")
    if any(b.stream.key() != r_key for b in barriers):
        check.fail("a consumer stream waits on an event recorded in another stream than "
                   "r_stream: record the barrier in r_stream")
    if any(b.index < max(w.index for w in r_waits) for b in barriers):
        check.fail("the barrier is recorded in r_stream before r_stream has waited for every "
                   "producer, so it marks the work of those waited for before it alone: "
                   "record it after the waits")
    for i in range(n):
        if run.key(f"consumer_streams[{i}]") not in {w.stream.key() for w in c_waits}:
            check.fail(f"consumer_streams[{i}] never waits on the barrier: make each "
                       f"consumer stream wait on it, barrier.wait(stream)")
    if unordered:
        check.fail("a consumer stream is not ordered after every producer: make each wait "
                   "on the barrier recorded in r_stream after r_stream's waits")


EXERCISE3 = exercise_check(3, _rendezvous_inputs, _rendezvous_rules)
#: the program as given, judged for its symptom: a consumer unordered with a producer
SYMPTOM3 = exercise_check(3, _rendezvous_inputs, _rendezvous_symptom)


def check_exercise3(rendezvous, *, m=4, n=2):
    """``rendezvous(producer_events, r_stream, consumer_streams)``: every consumer stream
    waits for every producer, through r_stream (m + n waits). Given with a mistake: while
    it is the program as given, the check shows what goes wrong in it."""
    diagnose(EXERCISE3, SYMPTOM3, rendezvous, GIVEN3, m=m, n=n)
