"""Stream-ordered memory (streamlab.memory_resource, as_array), events numba cannot make
(streamlab.event), and stream priorities as the recorder sees them: on any device."""

import time

import numpy as np
import pytest
from numba import cuda

import streamlab


def test_a_pool_buffer_is_a_numba_array_allocated_and_freed_in_a_stream():
    s = cuda.stream()
    mr = streamlab.memory_resource()
    buf = mr.allocate(4 * 1000, stream=streamlab.core_stream(s))
    a = streamlab.as_array(buf, 1000, np.float32)
    a.copy_to_device(np.arange(1000, dtype=np.float32), stream=s)
    streamlab.spin[1, 1, s](10)
    assert np.array_equal(a.copy_to_host(stream=s), np.arange(1000, dtype=np.float32))
    two_d = streamlab.as_array(buf, (10, 100), np.float32)
    assert two_d.shape == (10, 100)
    assert two_d.copy_to_host(stream=s)[1, 2] == 102.0   # views of one buffer share it
    buf.close(streamlab.core_stream(s))
    s.synchronize()


def test_pool_calls_return_while_the_stream_still_works():
    """Queued behind a 50 ms kernel, the pool's allocate and close return at once."""
    s = cuda.stream()
    mr = streamlab.memory_resource()
    mr.allocate(1 << 20, stream=streamlab.core_stream(s)).close(streamlab.core_stream(s))
    s.synchronize()
    streamlab.spin[1, 1, s](streamlab.ms_to_ns(50))
    t0 = streamlab.now()
    buf = mr.allocate(1 << 20, stream=streamlab.core_stream(s))
    buf.close(streamlab.core_stream(s))
    took_ms = (streamlab.now() - t0) * 1000
    s.synchronize()
    assert took_ms < 25, took_ms


def test_bad_memory_arguments_say_what_to_do():
    s = cuda.stream()
    mr = streamlab.memory_resource()
    buf = mr.allocate(400, stream=streamlab.core_stream(s))
    with pytest.raises(ValueError, match="needs 800 bytes; the buffer has 400"):
        streamlab.as_array(buf, 200, np.float32)
    with pytest.raises(TypeError, match="memory_resource\\(\\).allocate"):
        streamlab.as_array(np.zeros(4), 4, np.float32)
    with pytest.raises(TypeError, match="GPU's number"):
        streamlab.memory_resource("0")
    buf.close(streamlab.core_stream(s))
    s.synchronize()
    if streamlab.on_simulator():
        with pytest.raises(TypeError, match=r"Device\(\)\.create_stream\(s\)"):
            mr.allocate(4, stream=None)
        with pytest.raises(ValueError, match="number of bytes"):
            mr.allocate(-1, stream=streamlab.core_stream(s))


def test_events_with_flags_are_numba_events():
    s = cuda.stream()
    a, b = streamlab.event(), streamlab.event(blocking_sync=True)
    assert (a.timing, a.blocking_sync, b.blocking_sync) == (True, False, True)
    a.record(s)
    streamlab.spin[1, 1, s](streamlab.ms_to_ns(5))
    b.record(s)
    b.synchronize()
    assert cuda.event_elapsed_time(a, b) >= 4.0 if not streamlab.on_simulator() \
        else a.elapsed_time(b) >= 4.0
    plain = streamlab.event(timing=False)
    plain.record(s)
    plain.synchronize()
    with pytest.raises(TypeError, match="True or False"):
        streamlab.event(blocking_sync=1)


@pytest.mark.gpu
def test_a_blocking_sync_event_lets_the_host_sleep():
    """Measured: a spinning wait burns the CPU for the whole wait; a blocking one does not."""
    if streamlab.on_simulator():
        pytest.skip("the simulator has no GPU to wait for")
    s = cuda.stream()
    share = {}
    for blocking in (False, True):
        ev = streamlab.event(blocking_sync=blocking)
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(100))
        ev.record(s)
        w0, c0 = time.perf_counter(), time.process_time()
        ev.synchronize()
        share[blocking] = (time.process_time() - c0) / (time.perf_counter() - w0)
    assert share[False] > 0.8 and share[True] < 0.1, share


def test_the_recorder_sees_each_streams_priority():
    low, high = streamlab.priority_range()
    s_low, s_high = streamlab.stream(priority=low), streamlab.stream(priority=high)
    x = cuda.to_device(np.zeros(1, np.float32))
    with streamlab.record_ops() as ops:
        streamlab.spin[1, 1, s_low](10)
        streamlab.spin[1, 1, s_high](10)
    cuda.synchronize()
    assert [op.stream.priority for op in ops.launches()] == [low, high]
    assert x.copy_to_host()[0] == 0.0


def test_allocations_seen_sees_every_api_and_a_buffer_let_go():
    """Through the pool, through the device's allocate, a close, and a buffer nothing
    holds any more (freed in the stream it was allocated in, as cuda.core does); ``at``'s
    answer is kept with each. On a GPU, CUPTI sees them while a recorder listens."""
    import gc

    from cuda.core import Device

    from streamlab.memory import allocations_seen

    s = cuda.stream()
    cs = Device().create_stream(s)
    ticks = iter(range(100))
    with streamlab.record_ops(), allocations_seen(at=lambda: next(ticks)) as seen:
        a = Device().memory_resource.allocate(64, stream=cs)
        b = Device().allocate(32, stream=cs)
        a.close(cs)
        del b
        gc.collect()
    s.synchronize()
    handle = int(cs.handle)
    assert [(x.kind, x.stream, x.nbytes, x.at) for x in seen] == [
        ("alloc", handle, 64, 0), ("alloc", handle, 32, 1), ("free", handle, None, 2),
        ("free", handle, None, 3)]
    # each free names the address its allocation gave
    assert seen[0].address and seen[1].address and seen[0].address != seen[1].address
    assert (seen[2].address, seen[3].address) == (seen[0].address, seen[1].address)
    if streamlab.on_simulator():  # a close, then a buffer let go (a GPU cannot tell them)
        assert (seen[2].explicit, seen[3].explicit) == (True, False)
    else:
        assert (seen[2].explicit, seen[3].explicit) == (None, None)
    with pytest.raises(TypeError, match="at is a function"):
        with allocations_seen(at=3):
            pass
