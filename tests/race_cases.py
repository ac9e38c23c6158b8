"""The races of the source documents, and their correct versions, as numba code.

Each case is a function of the streams it needs that runs one example under
``streamlab.race_check(raises=False)`` and returns the RaceCheck. test_order.py runs
them on the simulator (and, in GPU mode, on a GPU); test_gpu.py runs them on a GPU
beside the wrong results the races give there.
"""

import numpy as np
from numba import cuda

import streamlab

N = 1 << 10


@cuda.jit
def kernel1(data):  # "How can CUDA kernels concurrently transfer data to the host?"
    i = cuda.grid(1)
    if i < data.size:
        data[i] *= 2.0


@cuda.jit
def kernel2(data):
    i = cuda.grid(1)
    if i < data.size:
        data[i] += 1.0


@cuda.jit
def producer(data):  # "How can CUDA kernels in different streams communicate efficiently?"
    i = cuda.grid(1)
    if i < data.size:
        data[i] = i


@cuda.jit
def consumer(data, out):
    i = cuda.grid(1)
    if i < data.size:
        out[i] = 2 * data[i]


@cuda.jit
def update_counter(counter, value):
    cuda.atomic.add(counter, 0, value)


@cuda.jit
def my_kernel(d_input, d_output):  # "How can CUDA handle CPU-GPU callbacks ...?"
    i = cuda.grid(1)
    if i < d_input.size:
        d_output[i] = d_input[i] * 2.0


def grid(n=N):
    return (n + 255) // 256, 256


def busy(stream, ms=1):
    streamlab.spin[1, 1, stream](streamlab.ms_to_ns(ms))


def copies_example1(read_in_same_stream_only=False):
    """Two kernels modify one buffer in two streams, and each stream copies it back."""
    s1, s2 = cuda.stream(), cuda.stream()
    dev = cuda.to_device(np.ones(N, np.float32))
    h1, h2 = cuda.pinned_array(N, np.float32), cuda.pinned_array(N, np.float32)
    cuda.synchronize()
    with streamlab.race_check(raises=False) as rc:
        kernel1[grid()[0], grid()[1], s1](dev)
        kernel2[grid()[0], grid()[1], s2](dev)
        dev.copy_to_host(h1, stream=s1)
        dev.copy_to_host(h2, stream=s2)
        s1.synchronize()
        s2.synchronize()
    return rc


def copies_example1_fixed():
    """The same work, ordered: kernel2 waits for kernel1 and its copy."""
    s1, s2 = cuda.stream(), cuda.stream()
    dev = cuda.to_device(np.ones(N, np.float32))
    h1, h2 = cuda.pinned_array(N, np.float32), cuda.pinned_array(N, np.float32)
    done = cuda.event()
    cuda.synchronize()
    with streamlab.race_check(raises=False) as rc:
        kernel1[grid()[0], grid()[1], s1](dev)
        dev.copy_to_host(h1, stream=s1)
        done.record(s1)
        done.wait(s2)
        kernel2[grid()[0], grid()[1], s2](dev)
        dev.copy_to_host(h2, stream=s2)
        s1.synchronize()
        s2.synchronize()
    return rc


def events_no_wait_consumer(wait=False, event_object="same"):
    """Producer in stream0, consumer in stream1; with ``wait``, ordered by an event.
    ``event_object``: "same" (right), "two" (records one event, waits on another),
    "early" (records before the producer's launch)."""
    s0, s1 = cuda.stream(), cuda.stream()
    data, out = cuda.device_array(N, np.float32), cuda.device_array(N, np.float32)
    cuda.synchronize()
    with streamlab.race_check(raises=False) as rc:
        busy(s0)
        ev = cuda.event()
        if wait and event_object == "early":
            ev.record(s0)
        producer[grid()[0], grid()[1], s0](data)
        if wait and event_object == "same":
            ev.record(s0)
            ev.wait(s1)
        elif wait and event_object == "two":
            cuda.event().record(s0)
            cuda.event().wait(s1)
        elif wait and event_object == "early":
            ev.wait(s1)
        consumer[grid()[0], grid()[1], s1](data, out)
        cuda.synchronize()
    return rc


def callbacks_example1(nonblocking):
    """An async copy in ``stream``, then the kernel on the default stream (the document's
    mistake), then the copy back in ``stream``. With a blocking stream the legacy
    default stream orders it; with a non-blocking one nothing does."""
    stream = streamlab.stream(nonblocking=True) if nonblocking else cuda.stream()
    h_input = cuda.pinned_array(N, np.float32)
    h_input[:] = 1
    h_output = cuda.pinned_array(N, np.float32)
    d_input, d_output = cuda.device_array(N, np.float32), cuda.device_array(N, np.float32)
    cuda.synchronize()
    with streamlab.race_check(raises=False) as rc:
        busy(stream)
        d_input.copy_to_device(h_input, stream=stream)
        my_kernel[grid()[0], grid()[1]](d_input, d_output)       # no stream: the default
        stream.synchronize()
        d_output.copy_to_host(h_output, stream=stream)
        stream.synchronize()
    return rc


def callbacks_example2(wait_at_end):
    """Event-based version; the last copy back is read on the host without a wait."""
    stream = cuda.stream()
    h_input = cuda.pinned_array(N, np.float32)
    h_input[:] = 1
    h_output = cuda.pinned_array(N, np.float32)
    d_input, d_output = cuda.device_array(N, np.float32), cuda.device_array(N, np.float32)
    transfer, kernel_done = cuda.event(), cuda.event()
    cuda.synchronize()
    with streamlab.race_check(raises=False) as rc:
        d_input.copy_to_device(h_input, stream=stream)
        transfer.record(stream)
        transfer.wait(stream)
        my_kernel[grid()[0], grid()[1], stream](d_input, d_output)
        kernel_done.record(stream)
        kernel_done.synchronize()
        d_output.copy_to_host(h_output, stream=stream)
        if wait_at_end:
            stream.synchronize()
        # the block's end: the host reads h_output
    return rc


def atomics_example3(nonblocking, synchronize):
    """Two atomic adds in two streams, then a plain cudaMemcpy (copy_to_host with no
    stream, on the legacy default stream)."""
    make = (lambda: streamlab.stream(nonblocking=True)) if nonblocking else cuda.stream
    s0, s1 = make(), make()
    counter = cuda.to_device(np.zeros(1, np.int32))
    cuda.synchronize()
    with streamlab.race_check(raises=False) as rc:
        update_counter[1, 1, s0](counter, 10)
        update_counter[1, 1, s1](counter, 20)
        if synchronize:
            s0.synchronize()
            s1.synchronize()
        value = counter.copy_to_host()[0]
    rc.value = int(value)
    return rc


RACES = {
    "async copies, Example 1: two kernels on one buffer": copies_example1,
    "events, the consumer that does not wait": lambda: events_no_wait_consumer(False),
    "events, two different event objects": lambda: events_no_wait_consumer(True, "two"),
    "events, recorded before the producer": lambda: events_no_wait_consumer(True, "early"),
    "callbacks, Example 1 with a non-blocking stream": lambda: callbacks_example1(True),
    "callbacks, Example 2 read without a wait": lambda: callbacks_example2(False),
    "events, Example 3 with non-blocking streams": lambda: atomics_example3(True, False),
}

CORRECT = {
    "async copies, Example 1 ordered by an event": copies_example1_fixed,
    "events, the consumer waits on the event": lambda: events_no_wait_consumer(True),
    "callbacks, Example 1 with a blocking stream (legacy stream orders it)":
        lambda: callbacks_example1(False),
    "callbacks, Example 2 with a wait at the end": lambda: callbacks_example2(True),
    "events, Example 3 with blocking streams (legacy stream orders it)":
        lambda: atomics_example3(False, False),
    "events, Example 3 with non-blocking streams, synchronized":
        lambda: atomics_example3(True, True),
}
