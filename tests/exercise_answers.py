"""Answers to the lessons' exercises, kept as tests (tests/test_exercises.py).

RIGHT: the solution in each lesson's __SOLUTION copy (``solution``), and right answers in
other words. WRONG: what a careless or clever learner would write, each with a piece of
the message its check must give. Every answer is the source of the exercise cell's
function, run with ``from streamlab.exercises.lessonNN import *`` done.
"""

# (lesson, exercise, function name): {case name: source}
RIGHT = {
    ("00", 2, "launch_on"): {
        "solution": """
def launch_on(stream, d_x):
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
""",
        "a configured kernel kept in a name": """
def launch_on(stream, d_x):
    configured = add_one[blocks_for(d_x.size), THREADS, stream]
    configured(d_x)
""",
    },
    ("00", 1, "time_on"): {
        "solution": """
def time_on(stream):
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""",
        "the stream synchronized instead of the event": """
def time_on(stream):
    events = [cuda.event(timing=True) for _ in range(2)]
    events[0].record(stream=stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    events[1].record(stream=stream)
    stream.synchronize()
    return float(events[0].elapsed_time(events[1]))
""",
        "the stream synchronized first, so that nothing earlier is timed": """
def time_on(stream):
    stream.synchronize()
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""",
    },
    ("01", 2, "make_streams"): {
        "solution": """
from cuda.core import Device, StreamOptions

def make_streams(count):
    return [Device().create_stream(options=StreamOptions(nonblocking=True))
            for _ in range(count)]
""",
        "cuda.core's default options (non-blocking)": """
from cuda.core import Device

def make_streams(count):
    dev = Device()
    dev.set_current()
    return [dev.create_stream() for _ in range(count)]
""",
        "streamlab's driver call": """
def make_streams(count):
    return [streamlab.stream(nonblocking=True) for _ in range(count)]
""",
        "a loop": """
def make_streams(count):
    out = []
    for _ in range(count):
        out.append(streamlab.stream(nonblocking=True))
    return out
""",
    },
    ("01", 1, "launch_from_thread"): {
        "solution": """
def launch_from_thread(d_x):
    add_one[blocks_for(d_x.size), THREADS, cuda.per_thread_default_stream()](d_x)
""",
        "the stream named first": """
def launch_from_thread(d_x):
    mine = cuda.per_thread_default_stream()
    add_one[blocks_for(d_x.size), THREADS, mine](d_x)
""",
    },
    ("02", 1, "join"): {
        "solution": """
def join(d_a, d_b, d_out, s_a, s_b, s_out):
    fill[blocks_for(d_a.size), THREADS, s_a](d_a, 1)
    fill[blocks_for(d_b.size), THREADS, s_b](d_b, 2)
    a_done, b_done = cuda.event(), cuda.event()
    a_done.record(s_a)
    b_done.record(s_b)
    a_done.wait(s_out)
    b_done.wait(s_out)
    add[blocks_for(d_out.size), THREADS, s_out](d_a, d_b, d_out)
""",
        "the consumer waits in s_a's stream: s_a waits for s_b, s_out for s_a": """
def join(d_a, d_b, d_out, s_a, s_b, s_out):
    fill[blocks_for(d_b.size), THREADS, s_b](d_b, 2)
    e = cuda.event()
    e.record(s_b)
    e.wait(s_a)
    fill[blocks_for(d_a.size), THREADS, s_a](d_a, 1)
    both = cuda.event()
    both.record(s_a)
    both.wait(s_out)
    add[blocks_for(d_out.size), THREADS, s_out](d_a, d_b, d_out)
""",
    },
    ("02", 3, "hand_over"): {
        "solution": """
def hand_over(d_x, d_y, s_work, s_read):
    ready = cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record(s_work)   # recorded in s_read, it marked nothing of s_work's work
    ready.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""",
        "a new event recorded in s_work, the given one left unused": """
def hand_over(d_x, d_y, s_work, s_read):
    ready = cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record(s_read)
    done = cuda.event()
    done.record(s_work)
    done.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""",
        "an event without timing, made after the launch": """
def hand_over(d_x, d_y, s_work, s_read):
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready = cuda.event(timing=False)
    ready.record(s_work)
    ready.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""",
    },
    ("02", 2, "copy_back"): {
        "solution": """
def copy_back(d_x, h_x, stream):
    d_x.copy_to_host(h_x, stream=stream)
    landed = cuda.event()
    landed.record(stream)
    landed.synchronize()
""",
        "the stream synchronized": """
def copy_back(d_x, h_x, stream):
    d_x.copy_to_host(h_x, stream=stream)
    stream.synchronize()
""",
        "query in a loop": """
def copy_back(d_x, h_x, stream):
    d_x.copy_to_host(h_x, stream=stream)
    landed = cuda.event()
    landed.record(stream)
    while not landed.query():
        pass
""",
    },
    ("03", 1, "wait_for_all"): {
        "solution": """
def wait_for_all(producer_events, stream):
    for event in producer_events:
        event.wait(stream)
""",
        "through a rendezvous stream": """
def wait_for_all(producer_events, stream):
    rendezvous = cuda.stream()
    for event in producer_events:
        event.wait(rendezvous)
    barrier = cuda.event()
    barrier.record(rendezvous)
    barrier.wait(stream)
""",
        "last first, in reverse order": """
def wait_for_all(producer_events, stream):
    for event in reversed(producer_events):
        event.wait(stream)
""",
    },
    ("03", 3, "rendezvous"): {
        "solution": """
def rendezvous(producer_events, r_stream, consumer_streams):
    barrier = cuda.event()
    for event in producer_events:
        event.wait(r_stream)
    barrier.record(r_stream)   # after the waits: recorded before them, it marked nothing
    for stream in consumer_streams:
        barrier.wait(stream)
""",
        "the barrier made after the waits, without timing": """
def rendezvous(producer_events, r_stream, consumer_streams):
    for event in producer_events:
        event.wait(r_stream)
    barrier = cuda.event(timing=False)
    barrier.record(r_stream)
    for stream in reversed(consumer_streams):
        barrier.wait(stream)
""",
        "a barrier for each consumer, all after the waits": """
def rendezvous(producer_events, r_stream, consumer_streams):
    for event in producer_events:
        event.wait(r_stream)
    for stream in consumer_streams:
        mine = cuda.event()
        mine.record(r_stream)
        mine.wait(stream)
""",
    },
    ("03", 2, "wait_for_own"): {
        "solution": """
def wait_for_own(producer_events, consumer_streams):
    for event, stream in zip(producer_events, consumer_streams):
        event.wait(stream)
""",
        "by index": """
def wait_for_own(producer_events, consumer_streams):
    for i in range(len(consumer_streams)):
        producer_events[i].wait(consumer_streams[i])
""",
    },
    ("04", 1, "copy_back_async"): {
        "solution": """
def copy_back_async(d_x, stream):
    h_x = cuda.pinned_array(d_x.shape, d_x.dtype)
    d_x.copy_to_host(h_x, stream=stream)
    return h_x
""",
        "numba's own pinned copy": """
def copy_back_async(d_x, stream):
    return d_x.copy_to_host(cuda.pinned_array(SIZE, np.float32), stream=stream)
""",
    },
    ("04", 2, "fill_on_host"): {
        "solution": """
def fill_on_host(stream):
    h = cuda.mapped_array(SIZE, np.float32)
    fill[blocks_for(SIZE), THREADS, stream](h, 7)
    done = cuda.event()
    done.record(stream)
    return h, done
""",
        "the event made first": """
def fill_on_host(stream):
    done = cuda.event()
    h = cuda.mapped_array(SIZE, dtype=np.float32)
    fill[blocks_for(h.size), THREADS, stream](h, 7.0)
    done.record(stream)
    return (h, done)
""",
        "a list, not a tuple": """
def fill_on_host(stream):
    h = cuda.mapped_array(SIZE, np.float32)
    fill[blocks_for(SIZE), THREADS, stream](h, 7)
    done = cuda.event()
    done.record(stream)
    return [h, done]
""",
    },
    ("05", 1, "overlap"): {
        "solution": """
def overlap(d_x, h_x, stream, host_work):
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
    d_x.copy_to_host(h_x, stream=stream)
    host_work()
    stream.synchronize()
""",
        "waits on an event": """
def overlap(d_x, h_x, stream, host_work):
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
    d_x.copy_to_host(h_x, stream=stream)
    landed = cuda.event()
    landed.record(stream)
    host_work()
    landed.synchronize()
""",
    },
    ("05", 2, "work_while_waiting"): {
        "solution": """
def work_while_waiting(event, do_work):
    count = 0
    while not event.query():
        do_work()
        count += 1
    return count
""",
        "do-while shape": """
def work_while_waiting(event, do_work):
    n = 0
    while True:
        if event.query():
            return n
        do_work()
        n += 1
""",
    },
}

WRONG = {
    ("00", 2, "launch_on"): {
        "no stream: the legacy default stream": ("""
def launch_on(stream, d_x):
    add_one[blocks_for(d_x.size), THREADS](d_x)
""", "legacy default stream"),
        "waits for it": ("""
def launch_on(stream, d_x):
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
    stream.synchronize()
""", "wait"),
        "one block": ("""
def launch_on(stream, d_x):
    add_one[1, THREADS, stream](d_x)
""", "d_x after launch_on"),
    },
    ("00", 1, "time_on"): {
        "the host's clock": ("""
import time
def time_on(stream):
    t = time.perf_counter()
    streamlab.spin[1, 1, stream](SPIN_NS)
    stream.synchronize()
    return (time.perf_counter() - t) * 1000
""", "record one event in the stream before the launch"),
        "the events in another stream": ("""
def time_on(stream):
    other = cuda.stream()
    start, end = cuda.event(), cuda.event()
    start.record(other)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(other)
    end.synchronize()
    return start.elapsed_time(end)
""", "record one event in the stream"),
        "no wait for the end event before reading the time": ("""
def time_on(stream):
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    return start.elapsed_time(end)
""", "end.synchronize()"),
        "both events before the launch": ("""
def time_on(stream):
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    end.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.synchronize()
    return start.elapsed_time(end)
""", "no event was recorded after the launch"),
        "the host pauses between the start event and the launch": ("""
import time
def time_on(stream):
    start, end = cuda.event(), cuda.event()
    stream.synchronize()
    start.record(stream)
    time.sleep(0.02)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end)
""", "nothing else between them"),
        "a cheat: the events are right, the figure returned is typed in": ("""
def time_on(stream):
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    end.synchronize()
    return 2.0
""", "its events read"),
        "seconds, not milliseconds": ("""
def time_on(stream):
    start, end = cuda.event(), cuda.event()
    start.record(stream)
    streamlab.spin[1, 1, stream](SPIN_NS)
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / 1000
""", "its events read"),
    },
    ("01", 2, "make_streams"): {
        "plain numba streams": ("""
def make_streams(count):
    return [cuda.stream() for _ in range(count)]
""", "legacy default stream"),
        "one stream, eight times": ("""
def make_streams(count):
    s = streamlab.stream(nonblocking=True)
    return [s] * count
""", "different stream"),
        "the per-thread default stream, eight times": ("""
def make_streams(count):
    return [cuda.per_thread_default_stream()] * count
""", "different stream"),
    },
    ("01", 1, "launch_from_thread"): {
        "no stream": ("""
def launch_from_thread(d_x):
    add_one[blocks_for(d_x.size), THREADS](d_x)
""", "legacy default stream"),
        "numba's default stream": ("""
def launch_from_thread(d_x):
    add_one[blocks_for(d_x.size), THREADS, cuda.default_stream()](d_x)
""", "legacy default stream"),
        "a stream of its own": ("""
def launch_from_thread(d_x):
    add_one[blocks_for(d_x.size), THREADS, cuda.stream()](d_x)
""", "per_thread_default_stream"),
    },
    ("02", 1, "join"): {
        "waits for one producer": ("""
def join(d_a, d_b, d_out, s_a, s_b, s_out):
    fill[blocks_for(d_a.size), THREADS, s_a](d_a, 1)
    fill[blocks_for(d_b.size), THREADS, s_b](d_b, 2)
    a_done = cuda.event()
    a_done.record(s_a)
    a_done.wait(s_out)
    add[blocks_for(d_out.size), THREADS, s_out](d_a, d_b, d_out)
""", "never waits"),
        "one event recorded in both streams": ("""
def join(d_a, d_b, d_out, s_a, s_b, s_out):
    fill[blocks_for(d_a.size), THREADS, s_a](d_a, 1)
    fill[blocks_for(d_b.size), THREADS, s_b](d_b, 2)
    e = cuda.event()
    e.record(s_a)
    e.record(s_b)
    e.wait(s_out)
    add[blocks_for(d_out.size), THREADS, s_out](d_a, d_b, d_out)
""", "never waits for the fill in s_a"),
        "the host waits instead": ("""
def join(d_a, d_b, d_out, s_a, s_b, s_out):
    fill[blocks_for(d_a.size), THREADS, s_a](d_a, 1)
    fill[blocks_for(d_b.size), THREADS, s_b](d_b, 2)
    cuda.synchronize()
    add[blocks_for(d_out.size), THREADS, s_out](d_a, d_b, d_out)
""", "wait"),
        "wait before record": ("""
def join(d_a, d_b, d_out, s_a, s_b, s_out):
    a_done, b_done = cuda.event(), cuda.event()
    a_done.wait(s_out)
    b_done.wait(s_out)
    fill[blocks_for(d_a.size), THREADS, s_a](d_a, 1)
    fill[blocks_for(d_b.size), THREADS, s_b](d_b, 2)
    a_done.record(s_a)
    b_done.record(s_b)
    add[blocks_for(d_out.size), THREADS, s_out](d_a, d_b, d_out)
""", "not been recorded yet"),
    },
    ("02", 3, "hand_over"): {
        "the host waits instead": ("""
def hand_over(d_x, d_y, s_work, s_read):
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    s_work.synchronize()
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "you synchronized the host"),
        "the wait dropped": ("""
def hand_over(d_x, d_y, s_work, s_read):
    ready = cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record(s_work)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "s_read never waits before add_one"),
        "recorded in s_work, but before twice": ("""
def hand_over(d_x, d_y, s_work, s_read):
    ready = cuda.event()
    ready.record(s_work)
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "before twice was launched"),
        "the wait moved to s_work": ("""
def hand_over(d_x, d_y, s_work, s_read):
    ready = cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record(s_work)
    ready.wait(s_work)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "s_read never waits before add_one"),
        "the given mistake, with another event beside it": ("""
def hand_over(d_x, d_y, s_work, s_read):
    ready, also = cuda.event(), cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record(s_read)
    also.record(s_read)
    ready.wait(s_read)
    also.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "another stream than s_work"),
        "both kernels in s_work": ("""
def hand_over(d_x, d_y, s_work, s_read):
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    add_one[blocks_for(d_y.size), THREADS, s_work](d_y)
""", "got 0 launches of 'add_one'"),
        "the host waits for a host function that sets a threading.Event": ("""
import ctypes, threading
from cuda.bindings import driver
def hand_over(d_x, d_y, s_work, s_read):
    done = threading.Event()
    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def landed(user_data):
        done.set()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    driver.cuLaunchHostFunc(s_work.handle, ctypes.cast(landed, ctypes.c_void_p).value, 0)
    done.wait()
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "the host waited inside hand_over for a host function"),
        "the record given no stream": ("""
def hand_over(d_x, d_y, s_work, s_read):
    ready = cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record()
    ready.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "in the legacy default stream"),
        "no event: a launch with no stream between the two": ("""
def hand_over(d_x, d_y, s_work, s_read):
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    fill[1, 1](d_x[:0], 0.0)  # nothing to fill: a launch that only orders
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
""", "legacy default stream"),
        "the whole device waited for at the end": ("""
def hand_over(d_x, d_y, s_work, s_read):
    ready = cuda.event()
    twice[blocks_for(d_x.size), THREADS, s_work](d_x, d_y)
    ready.record(s_read)
    ready.wait(s_read)
    add_one[blocks_for(d_y.size), THREADS, s_read](d_y)
    cuda.synchronize()
""", "you synchronized the host"),
    },
    ("02", 2, "copy_back"): {
        "no wait": ("""
def copy_back(d_x, h_x, stream):
    d_x.copy_to_host(h_x, stream=stream)
""", "before the copy had landed"),
        "the whole device": ("""
def copy_back(d_x, h_x, stream):
    d_x.copy_to_host(h_x, stream=stream)
    cuda.synchronize()
""", "whole device"),
        "the event recorded before the copy": ("""
def copy_back(d_x, h_x, stream):
    landed = cuda.event()
    landed.record(stream)
    d_x.copy_to_host(h_x, stream=stream)
    landed.synchronize()
""", "before the copy had landed"),
        "a copy in another stream": ("""
def copy_back(d_x, h_x, stream):
    d_x.copy_to_host(h_x)
""", "in the stream you are given"),
    },
    ("03", 1, "wait_for_all"): {
        "forgets the last producer": ("""
def wait_for_all(producer_events, stream):
    for event in producer_events[:-1]:
        event.wait(stream)
""", "producer 3"),
        "the host waits": ("""
def wait_for_all(producer_events, stream):
    for event in producer_events:
        event.synchronize()
""", "wait"),
        "waits on the first only": ("""
def wait_for_all(producer_events, stream):
    producer_events[0].wait(stream)
""", "never waits for producer"),
        "the port's wait, on the last producer only (the lesson's diagnosis)": ("""
def wait_for_all(producer_events, stream):
    producer_events[-1].wait(stream)
""", "never waits for producer 0"),
        "every event waited for, in a stream of its own": ("""
def wait_for_all(producer_events, stream):
    other = cuda.stream()
    for event in producer_events:
        event.wait(other)
""", "never waits for producer 0"),
    },
    ("03", 3, "rendezvous"): {
        "every consumer waits for every producer": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    for stream in consumer_streams:
        for event in producer_events:
            event.wait(stream)
""", "m + n = 6 are enough"),
        "the host waits instead": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    for event in producer_events:
        event.synchronize()
""", "you synchronized the host"),
        "the barrier recorded in a consumer stream": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    barrier = cuda.event()
    for event in producer_events:
        event.wait(r_stream)
    barrier.record(consumer_streams[0])
    for stream in consumer_streams:
        barrier.wait(stream)
""", "recorded in another stream than r_stream"),
        "the barrier recorded after the consumers wait": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    barrier = cuda.event()
    for event in producer_events:
        event.wait(r_stream)
    for stream in consumer_streams:
        barrier.wait(stream)
    barrier.record(r_stream)
""", "had not been recorded yet"),
        "r_stream waits for the first producer only": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    barrier = cuda.event()
    producer_events[0].wait(r_stream)
    barrier.record(r_stream)
    for stream in consumer_streams:
        barrier.wait(stream)
""", "r_stream waits for 1 of the 4 producers"),
        "the given mistake, with the last wait moved": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    barrier = cuda.event()
    for event in producer_events[:-1]:
        event.wait(r_stream)
    barrier.record(r_stream)
    producer_events[-1].wait(r_stream)
    for stream in consumer_streams:
        barrier.wait(stream)
""", "before r_stream has waited for every producer"),
        "r_stream waits, then the host waits for a host function resolving a Future": ("""
import ctypes
from concurrent.futures import Future
from cuda.bindings import driver
def rendezvous(producer_events, r_stream, consumer_streams):
    for event in producer_events:
        event.wait(r_stream)
    done = Future()
    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def landed(user_data):
        done.set_result(True)
    driver.cuLaunchHostFunc(r_stream.handle, ctypes.cast(landed, ctypes.c_void_p).value, 0)
    done.result()
""", "the host waited inside rendezvous for a host function"),
        "the record given no stream (still before the waits)": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    barrier = cuda.event()
    barrier.record()
    for event in producer_events:
        event.wait(r_stream)
    for stream in consumer_streams:
        barrier.wait(stream)
""", "in the legacy default stream"),
        "r_stream left out: the barrier in the first consumer stream": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    first = consumer_streams[0]
    for event in producer_events:
        event.wait(first)
    barrier = cuda.event()
    barrier.record(first)
    for stream in consumer_streams[1:]:
        barrier.wait(stream)
""", "r_stream waits for 0 of the 4 producers"),
        "r_stream waits for the first producer four times": ("""
def rendezvous(producer_events, r_stream, consumer_streams):
    for event in producer_events:
        producer_events[0].wait(r_stream)
    barrier = cuda.event()
    barrier.record(r_stream)
    for stream in consumer_streams:
        barrier.wait(stream)
""", "r_stream waits for 1 of the 4 producers"),
    },
    ("03", 2, "wait_for_own"): {
        "every consumer waits for every producer": ("""
def wait_for_own(producer_events, consumer_streams):
    for stream in consumer_streams:
        for event in producer_events:
            event.wait(stream)
""", "one wait each is enough"),
        "off by one": ("""
def wait_for_own(producer_events, consumer_streams):
    for i, stream in enumerate(consumer_streams):
        producer_events[(i + 1) % len(producer_events)].wait(stream)
""", "consumer 0 is not ordered after producer 0"),
        "no waits": ("""
def wait_for_own(producer_events, consumer_streams):
    pass
""", "not ordered after producer"),
    },
    ("04", 1, "copy_back_async"): {
        "pageable memory": ("""
def copy_back_async(d_x, stream):
    h_x = np.empty(d_x.shape, d_x.dtype)
    d_x.copy_to_host(h_x, stream=stream)
    return h_x
""", "pageable"),
        "numba's copy_to_host with no buffer": ("""
def copy_back_async(d_x, stream):
    return d_x.copy_to_host(stream=stream)
""", "pageable"),
        "waits for it": ("""
def copy_back_async(d_x, stream):
    h_x = cuda.pinned_array(d_x.shape, d_x.dtype)
    d_x.copy_to_host(h_x, stream=stream)
    stream.synchronize()
    return h_x
""", "wait"),
    },
    ("04", 2, "fill_on_host"): {
        "a device array and a copy": ("""
def fill_on_host(stream):
    d = cuda.device_array(SIZE, np.float32)
    fill[blocks_for(SIZE), THREADS, stream](d, 7)
    h = cuda.pinned_array(SIZE, np.float32)
    d.copy_to_host(h, stream=stream)
    done = cuda.event()
    done.record(stream)
    return h, done
""", "no copy is needed"),
        "the event before the launch": ("""
def fill_on_host(stream):
    h = cuda.mapped_array(SIZE, np.float32)
    done = cuda.event()
    done.record(stream)
    fill[blocks_for(SIZE), THREADS, stream](h, 7)
    return h, done
""", "after the launch"),
        "the launch on the legacy stream": ("""
def fill_on_host(stream):
    h = cuda.mapped_array(SIZE, np.float32)
    fill[blocks_for(SIZE), THREADS](h, 7)
    done = cuda.event()
    done.record(stream)
    return h, done
""", "legacy default stream"),
    },
    ("05", 1, "overlap"): {
        "host work first": ("""
def overlap(d_x, h_x, stream, host_work):
    host_work()
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
    d_x.copy_to_host(h_x, stream=stream)
    stream.synchronize()
""", "before the GPU work was issued"),
        "waits, then works": ("""
def overlap(d_x, h_x, stream, host_work):
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
    d_x.copy_to_host(h_x, stream=stream)
    stream.synchronize()
    host_work()
""", "waited for the GPU before host_work"),
        "never waits": ("""
def overlap(d_x, h_x, stream, host_work):
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
    d_x.copy_to_host(h_x, stream=stream)
    host_work()
""", "before the copy had landed"),
        "the host work run by the stream after the copy": ("""
def overlap(d_x, h_x, stream, host_work):
    add_one[blocks_for(d_x.size), THREADS, stream](d_x)
    d_x.copy_to_host(h_x, stream=stream)
    streamlab.launch_host_func(stream, host_work)
    stream.synchronize()
""", "in a host function of a stream"),
    },
    ("05", 2, "work_while_waiting"): {
        "synchronize, then work once": ("""
def work_while_waiting(event, do_work):
    event.synchronize()
    do_work()
    return 1
""", "blocks the host"),
        "one query": ("""
def work_while_waiting(event, do_work):
    if not event.query():
        do_work()
        return 1
    return 0
""", "returned before the event had happened"),
        "counts wrong": ("""
def work_while_waiting(event, do_work):
    while not event.query():
        do_work()
    return 1
""", "return the count"),
        "busy-waits on query, then works once": ("""
def work_while_waiting(event, do_work):
    while not event.query():
        pass
    do_work()
    return 1
""", "ran only after the GPU's work was done"),
        "polls until done, then works twice": ("""
def work_while_waiting(event, do_work):
    n = 0
    while not event.query():
        continue
    for _ in range(2):
        do_work()
        n += 1
    return n
""", "sat idle while the GPU worked"),
    },
}

# Lessons 06-10 keep theirs in a file of their own.
from exercise_answers_later import RIGHT as _RIGHT_LATER  # noqa: E402
from exercise_answers_later import WRONG as _WRONG_LATER  # noqa: E402

RIGHT.update(_RIGHT_LATER)
WRONG.update(_WRONG_LATER)

# Found by an attack on the exercises once they went through the check runner (it compared
# 193 answers' verdicts before and after): each passed before, and fails now. The runner
# copies an output with its class's own copy_to_host, and looks for races in every check.
_FOUND_BY_THE_RUNNERS_ATTACK = {
    ("02", 1, "join"): {
        "the wrong fill, and d_out's copy_to_host replaced (a cheat)": ("""
def join(d_a, d_b, d_out, s_a, s_b, s_out):
    fill[blocks_for(d_a.size), THREADS, s_a](d_a, 2)
    fill[blocks_for(d_b.size), THREADS, s_b](d_b, 2)
    ea, eb = cuda.event(), cuda.event()
    ea.record(s_a); eb.record(s_b); ea.wait(s_out); eb.wait(s_out)
    add[blocks_for(d_out.size), THREADS, s_out](d_a, d_b, d_out)
    d_out.copy_to_host = lambda *a, **k: np.full(d_out.size, 3, np.float32)
""", "values are wrong"),
    },
    ("04", 2, "fill_on_host"): {
        "h cleared first by a kernel in another stream": ("""
@cuda.jit
def zero(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = 0

def fill_on_host(stream):
    h = cuda.mapped_array(SIZE, np.float32)
    zero[blocks_for(SIZE), THREADS, cuda.stream()](h)
    fill[blocks_for(SIZE), THREADS, stream](h, 7)
    e = cuda.event()
    e.record(stream)
    return h, e
""", "while kernel zero"),
    },
    ("05", 2, "work_while_waiting"): {
        "two unordered kernels on a scratch array": ("""
def work_while_waiting(event, do_work):
    scratch = cuda.device_array(N, np.float32)
    add_one[blocks_for(N), THREADS, cuda.stream()](scratch)
    add_one[blocks_for(N), THREADS, cuda.stream()](scratch)
    n = 0
    while not event.query():
        do_work()
        n += 1
    return n
""", "while kernel add_one"),
    },
}
# The same attack's cheats that passed before and after: a number whose arithmetic or
# comparison is the learner's (a float subclass whose difference from anything is 0). A
# figure returned must be a plain number.
_FLOAT_SAYS_NO_DIFFERENCE = """
class _F(float):
    def __sub__(self, other): return 0.0
    def __rsub__(self, other): return 0.0
"""
_FOUND_BY_THE_RUNNERS_ATTACK.update({
    ("06", 1, "time_kernel"): {
        "a typed-in figure whose difference from anything is 0 (a cheat)":
            (_FLOAT_SAYS_NO_DIFFERENCE + """
def time_kernel(stream):
    start, end = cuda.event(), cuda.event()
    streamlab.spin[1, 1, stream](HOLD_NS)
    start.record(stream)
    streamlab.spin[1, 1, stream](KERNEL_NS)
    end.record(stream)
    end.synchronize()
    return _F(0.05)
""", "the milliseconds between the events"),
    },
    ("10", 2, "next_chunk"): {
        "a checksum whose difference from anything is 0, h_out never read (a cheat)":
            (_FLOAT_SAYS_NO_DIFFERENCE + """
def next_chunk(slot, x, stream):
    slot["done"].synchronize()
    slot["h_in"][:] = x
    slot["d_in"].copy_to_device(slot["h_in"], stream=stream)
    transform[blocks_for(x.size), THREADS, stream](slot["d_in"], slot["d_out"])
    slot["d_out"].copy_to_host(slot["h_out"], stream=stream)
    slot["done"].record(stream)
    return _F(0.0)
""", "not a number"),
    },
})
_FOUND_BY_THE_RUNNERS_ATTACK[("05", 2, "work_while_waiting")][
    "a count that says it equals anything (a cheat)"] = ("""
class Any:
    def __ne__(self, other): return False
    def __eq__(self, other): return True

def work_while_waiting(event, do_work):
    while not event.query():
        do_work()
    return Any()
""", "return the count")
for _key, _cases in _FOUND_BY_THE_RUNNERS_ATTACK.items():
    WRONG[_key] = {**WRONG[_key], **_cases}
