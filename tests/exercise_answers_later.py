"""Answers to the exercises of lessons 06-10 (see exercise_answers.py, which adds them to
its RIGHT and WRONG tables)."""

RIGHT = {
    ("06", 1, "time_kernel"): {
        "solution": """
def time_kernel(stream):
    start, end = cuda.event(), cuda.event()
    streamlab.spin[1, 1, stream](HOLD_NS)
    start.record(stream)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""",
        "the hold in another stream, waited on by an event": """
def time_kernel(stream):
    other = cuda.stream()
    streamlab.spin[1, 1, other](HOLD_NS)
    held = cuda.event(timing=False)
    held.record(other)
    held.wait(stream)
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    stream.synchronize()
    return float(start.elapsed_time(end))
""",
    },
    ("06", 2, "time_all"): {
        "solution": """
def time_all(streams, work):
    start, end = cuda.event(), cuda.event()
    start.record(streams[0])
    for s in streams[1:]:
        start.wait(s)
    work()
    for s in streams[1:]:
        done = cuda.event(timing=False)
        done.record(s)
        done.wait(streams[0])
    end.record(streams[0])
    end.synchronize()
    return start.elapsed_time(end)
""",
        "the start and end in a stream of its own": """
def time_all(streams, work):
    timer = cuda.stream()
    start, end = cuda.event(), cuda.event()
    start.record(timer)
    for s in streams:
        start.wait(s)
    work()
    for s in streams:
        done = cuda.event()
        done.record(s)
        done.wait(timer)
    end.record(timer)
    end.synchronize()
    return start.elapsed_time(end)
""",
    },
    ("07", 1, "capture_slot"): {
        "solution": """
def capture_slot(stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    builder.end_building()
    return builder
""",
        "the builder's own stream, then returned by end_building": """
def capture_slot(stream, slot):
    b = streamlab.graph_builder(stream)
    b.begin_building("relaxed")
    slot.d_in.copy_to_device(slot.h_in, stream=b.stream)
    transform[(slot.d_in.size + THREADS - 1) // THREADS, THREADS, b](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=b.stream)
    return b.end_building()
""",
    },
    ("07", 2, "retarget"): {
        "solution": """
def retarget(graph, stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    builder.end_building()
    graph.update(builder)
""",
        "a capture from a builder of its own stream, and the graph returned": """
def retarget(graph, stream, slot):
    b = streamlab.graph_builder().begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=b.stream)
    transform[BLOCKS, THREADS, b](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=b.stream)
    graph.update(b.end_building())
    return graph
""",
    },
    ("08", 1, "copy_both_ways"): {
        "solution": """
def copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out):
    d_in.copy_to_device(h_in, stream=s_in)
    d_out.copy_to_host(h_out, stream=s_out)
""",
        "the copy out first": """
def copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out):
    d_out.copy_to_host(h_out, stream=s_out)
    d_in.copy_to_device(h_in, stream=s_in)
""",
    },
    ("08", 2, "wait_quietly"): {
        "solution": """
from cuda.core import EventOptions

def wait_quietly(stream):
    done = stream.record(options=EventOptions(blocking_sync=True))
    done.sync()
""",
        "an event made first, then recorded": """
from cuda.core import Device, EventOptions

def wait_quietly(stream):
    done = Device().create_event(options={"blocking_sync": True, "timing_enabled": False})
    stream.record(done)
    done.sync()
""",
        "streamlab's driver call, a numba event": """
def wait_quietly(stream):
    done = streamlab.event(blocking_sync=True)
    done.record(stream)
    done.synchronize()
""",
        "an event that keeps no time": """
def wait_quietly(stream):
    ev = streamlab.event(timing=False, blocking_sync=True)
    ev.record(stream=stream)
    ev.synchronize()
    return None
""",
        "a query after the blocking wait returned": """
from cuda.core import EventOptions
def wait_quietly(stream):
    done = stream.record(options=EventOptions(blocking_sync=True))
    done.sync()
    assert done.is_done
""",
    },
    ("09", 1, "scratch_step"): {
        "solution": """
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
""",
        "a cuda.core view of the stream made first (streamlab.core_stream)": """
def scratch_step(mr, stream, d_x):
    core = streamlab.core_stream(stream)
    buf = mr.allocate(4 * d_x.size, stream=core)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(core)
""",
        "the device's own allocate, which takes the same pool": """
from cuda.core import Device
def scratch_step(mr, stream, d_x):
    buf = Device().allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
""",
        "freed by a helper it calls": """
def free_in(buf, stream):
    buf.close(stream)
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    free_in(buf, stream)
""",
        "closed by contextlib.closing": """
import contextlib
def scratch_step(mr, stream, d_x):
    with contextlib.closing(mr.allocate(4 * d_x.size, stream=stream)) as buf:
        scratch = streamlab.as_array(buf, d_x.size, np.float32)
        double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
        double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""",
        "allocated, then closed in a finally": """
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(d_x.nbytes, stream=stream)
    try:
        scratch = streamlab.as_array(buf, d_x.shape, d_x.dtype)
        grid = blocks_for(d_x.size)
        double_into[grid, THREADS, stream](d_x, scratch)
        double_into[grid, THREADS, stream](scratch, d_x)
    finally:
        buf.close(stream=stream)
""",
        "a helper allocates and returns the buffer and its array": """
def scratch_like(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    return buf, streamlab.as_array(buf, d_x.size, np.float32)
def scratch_step(mr, stream, d_x):
    buf, scratch = scratch_like(mr, stream, d_x)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
""",
        "freed by a thread it starts and joins, in the stream": """
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    import threading
    t = threading.Thread(target=buf.close, args=(stream,))
    t.start(); t.join()
""",
        "closed with no stream: the stream it was allocated in": """
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(d_x.nbytes, stream=streamlab.core_stream(stream))
    tmp = streamlab.as_array(buf, d_x.shape, d_x.dtype)
    for src, dst in ((d_x, tmp), (tmp, d_x)):
        double_into[blocks_for(d_x.size), THREADS, stream](src, dst)
    buf.close()
""",
    },
    ("09", 2, "hand_over"): {
        "solution": """
def hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst):
    with gpu_src:
        fill[blocks_for(d_src.size), THREADS, s_src](d_src, VALUE)
        filled = cuda.event()
        filled.record(s_src)
    with gpu_dst:
        filled.wait(s_dst)
        d_dst.copy_to_device(d_src, stream=s_dst)
""",
        "an event without timing, made first": """
def hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst):
    with gpu_src:
        ready = cuda.event(timing=False)
        fill[blocks_for(d_src.size), THREADS, s_src](d_src, VALUE)
        ready.record(stream=s_src)
    with gpu_dst:
        ready.wait(stream=s_dst)
        d_dst.copy_to_device(d_src, stream=s_dst)
""",
    },
    ("10", 1, "pipeline_bound"): {
        "solution": """
def pipeline_bound(totals, serial_ms, n_chunks):
    slowest = max(totals.values())
    return slowest + (serial_ms - slowest) / n_chunks
""",
        "by the slowest's name": """
def pipeline_bound(totals, serial_ms, n_chunks):
    name = max(totals, key=totals.get)
    fill_and_drain = (serial_ms - totals[name]) / n_chunks
    return totals[name] + fill_and_drain
""",
    },
    ("10", 2, "next_chunk"): {
        "solution": """
def next_chunk(slot, x, stream):
    slot["done"].synchronize()
    checksum = float(slot["h_out"].sum(dtype=np.float64))
    slot["h_in"][:] = x
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    slot["done"].record(stream)
    return checksum
""",
        "the slot's stream synchronized, and np.copyto": """
def next_chunk(slot, x, stream):
    stream.synchronize()
    previous = slot["h_out"].sum(dtype=np.float64)
    np.copyto(slot["h_in"], x)
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    slot["done"].record(stream)
    return previous
""",
    },
}

WRONG = {
    ("06", 1, "time_kernel"): {
        "no hold: the first span on an idle stream": ("""
def time_kernel(stream):
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""", "idle when the start event was recorded"),
        "the hold waited for: a host sync in disguise": ("""
def time_kernel(stream):
    start, end = cuda.event(), cuda.event()
    streamlab.spin[1, 1, stream](HOLD_NS)
    stream.synchronize()
    start.record(stream)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""", "waited for the hold"),
        "the hold in another stream, never waited on": ("""
def time_kernel(stream):
    streamlab.spin[1, 1, cuda.stream()](HOLD_NS)
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""", "idle when the start event was recorded"),
        "the start recorded before the hold": ("""
def time_kernel(stream):
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](HOLD_NS)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""", "idle when the start event was recorded"),
        "the kernel's nominal time typed in": ("""
def time_kernel(stream):
    start, end = cuda.event(), cuda.event()
    streamlab.spin[1, 1, stream](HOLD_NS)
    start.record(stream)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    end.synchronize()
    return 0.05
""", "its events read"),
    },
    ("06", 2, "time_all"): {
        "a start event the other streams do not wait on": ("""
def time_all(streams, work):
    start, end = cuda.event(), cuda.event()
    start.record(streams[0])
    work()
    for s in streams[1:]:
        done = cuda.event()
        done.record(s)
        done.wait(streams[0])
    end.record(streams[0])
    end.synchronize()
    return start.elapsed_time(end)
""", "no event comes before every kernel"),
        "an end event in streams[0] alone": ("""
def time_all(streams, work):
    start, end = cuda.event(), cuda.event()
    start.record(streams[0])
    for s in streams[1:]:
        start.wait(s)
    work()
    end.record(streams[0])
    end.synchronize()
    return start.elapsed_time(end)
""", "no event comes after every kernel"),
        "the host waits for the device, then records the end": ("""
def time_all(streams, work):
    start, end = cuda.event(), cuda.event()
    start.record(streams[0])
    for s in streams[1:]:
        start.wait(s)
    work()
    cuda.synchronize()
    end.record(streams[0])
    end.synchronize()
    return start.elapsed_time(end)
""", "before the end event was recorded"),
        "a span in each stream, the longest returned": ("""
def time_all(streams, work):
    pairs = [(cuda.event(), cuda.event()) for _ in streams]
    for (start, _), s in zip(pairs, streams):
        start.record(s)
    work()
    for (_, end), s in zip(pairs, streams):
        end.record(s)
    for _, end in pairs:
        end.synchronize()
    return max(a.elapsed_time(b) for a, b in pairs)
""", "no event comes before every kernel"),
        "the host's clock": ("""
import time
def time_all(streams, work):
    start, end = cuda.event(), cuda.event()
    start.record(streams[0])
    for s in streams[1:]:
        start.wait(s)
    t0 = time.perf_counter()
    work()
    for s in streams[1:]:
        done = cuda.event()
        done.record(s)
        done.wait(streams[0])
    end.record(streams[0])
    end.synchronize()
    return (time.perf_counter() - t0) * 1000
""", "its events read"),
    },
    ("07", 1, "capture_slot"): {
        "a synchronize inside the capture": ("""
def capture_slot(stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    stream.synchronize()
    builder.end_building()
    return builder
""", "a call the capture cannot hold"),
        "the copy out with no stream": ("""
def capture_slot(stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out)
    builder.end_building()
    return builder
""", "legacy default stream"),
        "never ended": ("""
def capture_slot(stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    return builder
""", "still capturing"),
        "the work run, then an empty capture": ("""
def capture_slot(stream, slot):
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    builder = streamlab.graph_builder(stream).begin_building()
    builder.end_building()
    return builder
""", "captured no work"),
        "the completed graph returned": ("""
def capture_slot(stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    builder.end_building()
    return builder.complete()
""", "return the builder"),
        "a snapshot of h_in captured": ("""
def capture_slot(stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(np.array(slot.h_in), stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    builder.end_building()
    return builder
""", "the buffers they named"),
    },
    ("07", 2, "retarget"): {
        "a new graph, the old one left as it was": ("""
def retarget(graph, stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    builder.end_building()
    return builder.complete()
""", "returned a new graph"),
        "another topology: the kernel alone": ("""
def retarget(graph, stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    builder.end_building()
    graph.update(builder)
""", "topology differs"),
        "updated before the capture ended": ("""
def retarget(graph, stream, slot):
    builder = streamlab.graph_builder(stream).begin_building()
    slot.d_in.copy_to_device(slot.h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
    slot.d_out.copy_to_host(slot.h_out, stream=stream)
    graph.update(builder)
""", "end_building"),
        "the result computed on the host": ("""
def retarget(graph, stream, slot):
    slot.h_out[:] = 2 * slot.h_in + 1
""", "still works on the old slot"),
    },
    ("08", 1, "copy_both_ways"): {
        "both copies in one stream": ("""
def copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out):
    d_in.copy_to_device(h_in, stream=s_in)
    d_out.copy_to_host(h_out, stream=s_in)
""", "in s_out"),
        "the copy out ordered after the copy in by an event": ("""
def copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out):
    d_in.copy_to_device(h_in, stream=s_in)
    landed = cuda.event()
    landed.record(s_in)
    landed.wait(s_out)
    d_out.copy_to_host(h_out, stream=s_out)
""", "cannot run at once"),
        "the copy out with no stream": ("""
def copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out):
    d_in.copy_to_device(h_in, stream=s_in)
    d_out.copy_to_host(h_out)
""", "the host waited"),
        "the host waits between them": ("""
def copy_both_ways(h_in, d_in, d_out, h_out, s_in, s_out):
    d_in.copy_to_device(h_in, stream=s_in)
    s_in.synchronize()
    d_out.copy_to_host(h_out, stream=s_out)
""", "you synchronized the host"),
    },
    ("08", 2, "wait_quietly"): {
        "stream.sync()": ("""
def wait_quietly(stream):
    stream.sync()
""", "keeps a CPU core busy"),
        "a plain cuda.core event": ("""
def wait_quietly(stream):
    stream.record().sync()
""", "without blocking_sync"),
        "a never-recorded blocking-sync event synchronized as a decoy, then a plain event": ("""
from cuda.core import Device, EventOptions
def wait_quietly(stream):
    Device().create_event(options=EventOptions(blocking_sync=True)).sync()
    stream.record().sync()
""", "without blocking_sync"),
        "a plain event's spinning sync, then a blocking one": ("""
from cuda.core import EventOptions
def wait_quietly(stream):
    stream.record().sync()
    stream.record(options=EventOptions(blocking_sync=True)).sync()
""", "without blocking_sync"),
        "a cuda.core event polled with is_done": ("""
from cuda.core import EventOptions
def wait_quietly(stream):
    done = stream.record(options=EventOptions(blocking_sync=True))
    while not done.is_done:
        pass
""", "keeps a CPU core busy"),
        "a blocking-sync cuda.core event recorded in a new stream": ("""
from cuda.core import Device, EventOptions
def wait_quietly(stream):
    other = Device().create_stream()
    done = other.record(options=EventOptions(blocking_sync=True))
    done.sync()
""", "returned before the stream's work had finished"),
        "a plain event": ("""
def wait_quietly(stream):
    done = cuda.event()
    done.record(stream)
    done.synchronize()
""", "without blocking_sync"),
        "a blocking-sync event recorded in another stream": ("""
def wait_quietly(stream):
    done = streamlab.event(blocking_sync=True)
    done.record(cuda.stream())
    done.synchronize()
""", "returned before the stream's work had finished"),
        "a sleep instead of a wait": ("""
import time
def wait_quietly(stream):
    time.sleep(0.2)
""", "returned before the stream's work had finished"),
        "a query loop": ("""
def wait_quietly(stream):
    done = streamlab.event(blocking_sync=True)
    done.record(stream)
    while not done.query():
        pass
""", "keeps a CPU core busy"),
        "a plain event marked blocking_sync by hand": ("""
def wait_quietly(stream):
    done = cuda.event()
    done.blocking_sync = True
    done.record(stream)
    done.synchronize()
""", "without blocking_sync"),
    },
    ("09", 1, "scratch_step"): {
        "cuda.device_array": ("""
def scratch_step(mr, stream, d_x):
    scratch = cuda.device_array(d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""", "allocate the scratch from the pool"),
        "freed before the second kernel": ("""
def scratch_step(mr, stream, d_x):
    core = streamlab.core_stream(stream)
    buf = mr.allocate(4 * d_x.size, stream=core)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    buf.close(core)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""", "freed before the last double_into"),
        "allocated in a new cuda.core stream": ("""
from cuda.core import Device
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=Device().create_stream())
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
""", "allocated in another stream"),
        "allocated in another stream": ("""
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=streamlab.core_stream(cuda.stream()))
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(streamlab.core_stream(stream))
""", "allocated in another stream"),
        "never freed": ("""
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=streamlab.core_stream(stream))
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""", "never freed"),
        "a second allocation, in another stream, never used or freed": ("""
from cuda.core import Device
def scratch_step(mr, stream, d_x):
    Device().allocate(4 * d_x.size, stream=Device().create_stream())
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
""", "2 stream-ordered allocations"),
        "the device's allocate, never freed": ("""
from cuda.core import Device
def scratch_step(mr, stream, d_x):
    buf = Device().allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""", "never freed"),
        "kept for later, never freed": ("""
kept = []
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    kept.append(buf)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""", "never freed"),
        "the device's allocate, freed before the second kernel": ("""
from cuda.core import Device
def scratch_step(mr, stream, d_x):
    buf = Device().allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    buf.close(stream)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""", "freed before the last double_into"),
        "pool buffer allocated and freed, scratch from cuda.device_array": ("""
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = cuda.device_array(d_x.size, np.float32, stream=stream)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
""", "did not use the scratch you allocated"),
        "closes an earlier cell's buffer (name slip), scratch leaks to return": ("""
from cuda.core import Device
buf = Device().memory_resource.allocate(64, stream=Device().default_stream)   # an earlier cell
def scratch_step(mr, stream, d_x):
    scratch_buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(scratch_buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    buf.close(stream)
""", "never freed"),
        "helper does all the work and never closes": ("""
def _step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
def scratch_step(mr, stream, d_x):
    _step(mr, stream, d_x)
""", "never freed"),
        "never freed, scratch_step = functools.partial(...)": ("""
import functools
def _step(mr, stream, d_x, kernel):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    kernel[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    kernel[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
scratch_step = functools.partial(_step, kernel=double_into)
""", "never freed"),
        "a decorated scratch_step that never frees (decorator without wraps)": ("""
def logged(fn):
    def inner(*a):
        return fn(*a)
    return inner
@logged
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
""", "never freed"),
        "a callable object with no __code__, never frees": ("""
class _Step:
    def __call__(self, mr, stream, d_x):
        buf = mr.allocate(4 * d_x.size, stream=stream)
        scratch = streamlab.as_array(buf, d_x.size, np.float32)
        double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
        double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
scratch_step = _Step()
""", "never freed"),
        "note_allocation by hand, real buffer leaked in a global": ("""
from streamlab.memory import note_allocation
from streamlab.streams import handle_of
kept = []
def scratch_step(mr, stream, d_x):
    buf = mr.allocate(4 * d_x.size, stream=stream)
    kept.append(buf)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    note_allocation("free", handle_of(stream))
""", "never freed"),
        "the host waits before the free": ("""
def scratch_step(mr, stream, d_x):
    core = streamlab.core_stream(stream)
    buf = mr.allocate(4 * d_x.size, stream=core)
    scratch = streamlab.as_array(buf, d_x.size, np.float32)
    double_into[blocks_for(d_x.size), THREADS, stream](d_x, scratch)
    double_into[blocks_for(d_x.size), THREADS, stream](scratch, d_x)
    stream.sync()
    buf.close(core)
""", "you synchronized the host"),
    },
    ("09", 2, "hand_over"): {
        "no wait": ("""
def hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst):
    with gpu_src:
        fill[blocks_for(d_src.size), THREADS, s_src](d_src, VALUE)
    with gpu_dst:
        d_dst.copy_to_device(d_src, stream=s_dst)
""", "does not wait for the fill"),
        "the event recorded before the fill": ("""
def hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst):
    with gpu_src:
        filled = cuda.event()
        filled.record(s_src)
        fill[blocks_for(d_src.size), THREADS, s_src](d_src, VALUE)
    with gpu_dst:
        filled.wait(s_dst)
        d_dst.copy_to_device(d_src, stream=s_dst)
""", "does not wait for the fill"),
        "the host waits for the source GPU": ("""
def hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst):
    with gpu_src:
        fill[blocks_for(d_src.size), THREADS, s_src](d_src, VALUE)
        s_src.synchronize()
    with gpu_dst:
        d_dst.copy_to_device(d_src, stream=s_dst)
""", "you synchronized the host"),
        "the copy in the source's stream": ("""
def hand_over(d_src, s_src, gpu_src, d_dst, s_dst, gpu_dst):
    with gpu_src:
        fill[blocks_for(d_src.size), THREADS, s_src](d_src, VALUE)
        d_dst.copy_to_device(d_src, stream=s_src)
""", "in s_dst"),
    },
    ("10", 1, "pipeline_bound"): {
        "the slowest alone": ("""
def pipeline_bound(totals, serial_ms, n_chunks):
    return max(totals.values())
""", "the floor"),
        "the sum": ("""
def pipeline_bound(totals, serial_ms, n_chunks):
    return sum(totals.values())
""", "the sum of the totals"),
        "the serial time shared out": ("""
def pipeline_bound(totals, serial_ms, n_chunks):
    return serial_ms / len(totals)
""", "the bound is"),
        "a figure from the notebook typed in": ("""
def pipeline_bound(totals, serial_ms, n_chunks):
    return 246.3
""", "the bound is"),
    },
    ("10", 2, "next_chunk"): {
        "the pinned buffer replaced by the chunk itself": ("""
def next_chunk(slot, x, stream):
    slot["done"].synchronize()
    checksum = float(slot["h_out"].sum(dtype=np.float64))
    slot["h_in"] = x
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    slot["done"].record(stream)
    return checksum
""", "pageable host memory"),
        "no wait: the slot refilled while in use": ("""
def next_chunk(slot, x, stream):
    checksum = float(slot["h_out"].sum(dtype=np.float64))
    slot["h_in"][:] = x
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    slot["done"].record(stream)
    return checksum
""", "nothing orders the two"),
        "the event recorded before the copy out": ("""
def next_chunk(slot, x, stream):
    slot["done"].synchronize()
    checksum = float(slot["h_out"].sum(dtype=np.float64))
    slot["h_in"][:] = x
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["done"].record(stream)
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    return checksum
""", "nothing orders the two"),
        "cuda.synchronize()": ("""
def next_chunk(slot, x, stream):
    cuda.synchronize()
    checksum = float(slot["h_out"].sum(dtype=np.float64))
    slot["h_in"][:] = x
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    slot["done"].record(stream)
    return checksum
""", "waits for every stream"),
        "the new chunk's checksum, computed on the host": ("""
def next_chunk(slot, x, stream):
    slot["done"].synchronize()
    slot["h_in"][:] = x
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    slot["done"].record(stream)
    return float((2 * x + 1).sum(dtype=np.float64))
""", "computed on the host"),
    },
}
