"""Lab 02 · Events between streams: its kernels, sizes and checks.

``from streamlab.labs.lab02 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..ops import internal, record_ops
from ..order import analyze
from . import no_races, part

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


def fresh_data(seed=None):
    """Random producer input on the device, stale data, and the consumer's expected output."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 1000, N).astype(np.float32)
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


def check_part1(produce_then_consume, *, nonblocking=False, seed=None):
    """The consumer's stream waits for the producer with an event; the host does not."""
    with part(1, produce_then_consume):
        p_stream, c_stream = _streams(nonblocking, 2)
        src, data, expected = fresh_data(seed)
        out = cuda.device_array(N, np.float32)
        with record_ops() as ops:
            with internal():
                streamlab.spin[1, 1, p_stream](BUSY_NS)  # the producer's stream is busy
            produce_then_consume(src, data, out, p_stream, c_stream)
        check.no_host_sync(ops, "produce_then_consume")
        check.one_launch_per_stream(ops, "producer", [p_stream])
        check.one_launch_per_stream(ops, "consumer", [c_stream])
        order = analyze(ops)
        _ordered_after(order, ops, ops.launches("producer")[0], ops.launches("consumer")[0],
                       "the consumer")
        no_races(ops, order)
        cuda.synchronize()
        check.equal(out.copy_to_host(), expected, "the consumer's output")


def check_part2(fan_out, *, count=3, seed=None):
    """One producer, ``count`` consumers in their own streams, released by one event."""
    with part(2, fan_out):
        p_stream, *c_streams = _streams(False, count + 1)
        src, data, expected = fresh_data(seed)
        outs = [cuda.device_array(N, np.float32) for _ in range(count)]
        with record_ops() as ops:
            with internal():
                streamlab.spin[1, 1, p_stream](BUSY_NS)
            fan_out(src, data, outs, p_stream, c_streams)
        check.no_host_sync(ops, "fan_out")
        check.one_launch_per_stream(ops, "producer", [p_stream])
        check.one_launch_per_stream(ops, "consumer", c_streams)
        order = analyze(ops)
        prod = ops.launches("producer")[0]
        for i, cons in enumerate(ops.launches("consumer")):
            _ordered_after(order, ops, prod, cons, f"consumer {i}")
        if len(ops.records()) != 1:
            check.fail(f"you recorded {len(ops.records())} events: one event, recorded once "
                       f"after the producer and waited on by every consumer stream, is enough")
        no_races(ops, order)
        cuda.synchronize()
        for i, out in enumerate(outs):
            check.equal(out.copy_to_host(), expected, f"consumer {i}'s output")


def check_part3(add_in_two_streams, *, start=0):
    """Atomic additions in two streams; the value is read once both are done."""
    with part(3, add_in_two_streams):
        s0, s1 = _streams(True, 2)
        counter = cuda.to_device(np.array([start], np.int32), stream=s0)
        s0.synchronize()
        with record_ops() as ops:
            with internal():
                for s in (s0, s1):
                    streamlab.spin[1, 1, s](BUSY_NS)  # both streams are busy
            value = add_in_two_streams(counter, s0, s1)
        check.one_launch_per_stream(ops, "update_counter", [s0, s1])
        reads = [op for op in ops.user() if op.kind == "copy" and op.name == "d2h"]
        if not reads:
            check.fail("the counter was never copied back to the host: "
                       "counter.copy_to_host() after both additions are done")
        order = analyze(ops)
        for name, launch in zip(("s0", "s1"), ops.launches("update_counter")):
            if not order.ordered(launch, reads[-1]):
                check.fail(f"the counter was read before the addition in {name} had to be "
                           f"done: wait for it first ({name}.synchronize(), or an event "
                           f"recorded in {name} after the launch, then event.synchronize())")
        no_races(ops, order)
        cuda.synchronize()
        if not isinstance(value, (int, np.integer)):
            check.fail(f"add_in_two_streams returned {type(value).__name__} {value!r}: "
                       f"return the counter's value as a Python int")
        check.equal(value, start + 30, "the value returned")
