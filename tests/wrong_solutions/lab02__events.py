"""Wrong solutions to lab 02 that its checks must reject (see lab01's file for the format)."""

WRONG = {
    "host waits instead of the stream": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    producer_stream.synchronize()
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "you synchronized the host"),

    "no wait at all": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "never waits"),

    "wait before record": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    ready.wait(consumer_stream)
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "not been recorded yet"),

    "event recorded in the consumer's stream": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(consumer_stream)
    ready.wait(consumer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "recorded in another stream"),

    "an event per consumer": ("fan_out", '''
def fan_out(src, data, outs, producer_stream, consumer_streams):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    for out, s in zip(outs, consumer_streams):
        ready = cuda.event()
        ready.record(producer_stream)
        ready.wait(s)
        consumer[BLOCKS, THREADS, s](data, out)
''', "check_part2", "one event"),

    "reads the counter without waiting": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    return int(counter.copy_to_host()[0])
''', "check_part3", "read before the addition in s1"),

    "both additions in one stream": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s0](counter, 20)
    s0.synchronize()
    return int(counter.copy_to_host()[0])
''', "check_part3", "stream number 1 of the 2 you were given got 2 launches"),

    "two different events": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    cuda.event().record(producer_stream)
    cuda.event().wait(consumer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "not been recorded yet"),

    "event recorded before the producer": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    ready.record(producer_stream)
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.wait(consumer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "recorded before the producer was launched"),

    "one block for the whole array": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    producer[1, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    ready.wait(consumer_stream)
    consumer[1, THREADS, consumer_stream](data, out)
''', "check_part1", "values are wrong"),

    "only the first consumer waits": ("fan_out", '''
def fan_out(src, data, outs, producer_stream, consumer_streams):
    ready = cuda.event()
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    ready.wait(consumer_streams[0])
    for out, s in zip(outs, consumer_streams):
        consumer[BLOCKS, THREADS, s](data, out)
''', "check_part2", "consumer 1"),

    "reads an element without waiting": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    return int(counter[0])
''', "check_part3", "read before the addition in s1"),

    "waits in threads it never joins": ("add_in_two_streams", '''
import threading

def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    threading.Thread(target=s0.synchronize).start()
    threading.Thread(target=s1.synchronize).start()
    return int(counter.copy_to_host()[0])
''', "check_part3", "read before the addition in s1"),

    "events recorded before the additions": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    e0, e1 = cuda.event(), cuda.event()
    e0.record(s0)
    e1.record(s1)
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    e0.synchronize()
    e1.synchronize()
    return int(counter.copy_to_host(stream=s1)[0])
''', "check_part3", "read before the addition in s0"),
}

# Right answers in other words: each must pass its part (and every other part).
RIGHT = {
    "an event after each addition, each synchronized": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    done0, done1 = cuda.event(), cuda.event()
    update_counter[1, 1, s0](counter, 10)
    done0.record(s0)
    update_counter[1, 1, s1](counter, 20)
    done1.record(s1)
    done0.synchronize()
    done1.synchronize()
    return int(counter.copy_to_host()[0])
''', "check_part3"),

    "s1 waits for s0 by an event, the host for s1": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    done0 = cuda.event()
    done0.record(s0)
    update_counter[1, 1, s1](counter, 20)
    done0.wait(s1)
    value = counter.copy_to_host(stream=s1)
    s1.synchronize()
    return int(value[0])
''', "check_part3"),

    "the whole device": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    cuda.synchronize()
    return int(counter[0])
''', "check_part3"),

    "consumers each wait, in a loop of their own": ("fan_out", '''
def fan_out(src, data, outs, producer_stream, consumer_streams):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    produced = cuda.event()
    produced.record(producer_stream)
    for s in consumer_streams:
        produced.wait(s)
    for i, s in enumerate(consumer_streams):
        consumer[BLOCKS, THREADS, s](data, outs[i])
''', "check_part2"),
}

WRONG.update({
    "forgets to return the value": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    cuda.synchronize()
    counter.copy_to_host()[0]
''', "check_part3", "did you forget the return"),

    "returns the host copy, not its element": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    cuda.synchronize()
    return counter.copy_to_host()
''', "check_part3", "int(host_copy[0])"),
})

# Wrong answers an attack on the judged grader found passing (2026-11-26), now refused.
# name: (graded cell, answer cell, code, where it shows: "both", or "sim" for the
# simulator's own ways: a launch from a host function runs there, and its arrays can be
# read behind its back).
FOUND_BY_ATTACK = {
    "a host wait inside streamlab's own internal()": ("check_part1", "produce_then_consume", '''
from streamlab.ops import internal
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    with internal():
        producer_stream.synchronize()
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "both"),

    "fan-out: an unwaited event to count, and a host wait inside internal()": (
        "check_part2", "fan_out", '''
from streamlab.ops import internal
def fan_out(src, data, outs, producer_stream, consumer_streams):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    cuda.event().record(producer_stream)
    with internal():
        producer_stream.synchronize()
    for out, s in zip(outs, consumer_streams):
        consumer[BLOCKS, THREADS, s](data, out)
''', "both"),

    "the host waits for a host function's threading.Event": (
        "check_part1", "produce_then_consume", '''
import threading
from streamlab.hostfn import launch_host_func
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    done = threading.Event()
    launch_host_func(producer_stream, done.set)
    done.wait()
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "both"),

    "the consumer launched from inside a host function": (
        "check_part1", "produce_then_consume", '''
import threading
from streamlab.hostfn import launch_host_func
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    launched = threading.Event()
    def body():
        consumer[BLOCKS, THREADS, consumer_stream](data, out)
        launched.set()
    launch_host_func(producer_stream, body)
    launched.wait()
''', "sim"),

    "the value returned as an int that reads the counter later": (
        "check_part3", "add_in_two_streams", '''
class Later(int):
    def __new__(cls, counter):
        self = super().__new__(cls, 0)
        self.counter = counter
        return self
    def __int__(self):
        return int(self.counter.copy_to_host()[0])
    def __array__(self, dtype=None, copy=None):
        return np.asarray(int(self), dtype=dtype)
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    e = cuda.event()
    e.record(s0)
    e.wait(s1)
    counter.copy_to_host(cuda.pinned_array(1, np.int32), stream=s1)
    return Later(counter)
''', "both"),

    "a copy into pinned memory, read before it is waited for": (
        "check_part3", "add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    e = cuda.event()
    e.record(s0)
    update_counter[1, 1, s1](counter, 20)
    e.wait(s1)
    host = cuda.pinned_array(1, np.int32)
    counter.copy_to_host(host, stream=s1)
    return int(host[0])
''', "sim"),

    "the counter read behind the simulator's back, another array copied back": (
        "check_part3", "add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    value = int(counter._ary[0])
    cuda.synchronize()
    cuda.device_array(1).copy_to_host()
    return value
''', "sim"),

    "one block for the whole array, its output's copy_to_host replaced": (
        "check_part1", "produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    producer[1, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    ready.wait(consumer_stream)
    consumer[1, THREADS, consumer_stream](data, out)
    out.copy_to_host = lambda *a, **k: 3 * src.copy_to_host() + 1
''', "both"),
}

_SAYS = {
    "a host wait inside streamlab's own internal()": "code outside streamlab cannot use it",
    "fan-out: an unwaited event to count, and a host wait inside internal()":
        "code outside streamlab cannot use it",
    "the host waits for a host function's threading.Event":
        "waited inside produce_then_consume for a host function",
    "the consumer launched from inside a host function": "issued from inside a host function",
    "the value returned as an int that reads the counter later": "never waited for",
    "a copy into pinned memory, read before it is waited for": "never waited for",
    "the counter read behind the simulator's back, another array copied back":
        "never copied back",
    "one block for the whole array, its output's copy_to_host replaced": "values are wrong",
}
WRONG.update({name: (target, code, check_id, _SAYS[name])
              for name, (check_id, target, code, where) in FOUND_BY_ATTACK.items()
              if where == "both"})
#: wrong on the simulator only (on a GPU each fails otherwise: the launch in a host
#: function with CUDA's error, the simulator's array with an AttributeError)
WRONG_ON_SIMULATOR = {name: (target, code, check_id, _SAYS[name])
                      for name, (check_id, target, code, where) in FOUND_BY_ATTACK.items()
                      if where == "sim"}
