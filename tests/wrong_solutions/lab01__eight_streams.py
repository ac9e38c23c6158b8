"""Wrong solutions to lab 01 that its checks must reject, each with the feedback expected.

Each entry: name -> (the graded function's grade_id, the wrong code, the check cell that
must fail, a phrase its message must contain[, check cells of later parts that build on
this one and so may fail too]).
"""

WRONG = {
    "all launches on one stream": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out in zip(inputs, outputs):
        work[1, 64, streams[0]](out, inp, REPS)
''', "check_part1", "stream number 1 of the 8 you were given got 8 launches"),

    "no stream: the legacy default stream": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out in zip(inputs, outputs):
        work[1, 64](out, inp, REPS)
''', "check_part1", "legacy default stream"),

    "host synchronize after each launch": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        s.synchronize()
''', "check_part1", "you synchronized the host"),

    "wrong input to each stream": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs[::-1], outputs, streams):
        work[1, 64, s](out, inp, REPS)
''', "check_part1", "values are wrong"),

    "only eight streams, whatever is passed": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for i in range(8):
        work[1, 64, streams[i]](outputs[i], inputs[i], REPS)
''', "check_part1", "IndexError"),

    "dummies on the legacy default stream": ("launch_with_dummies", '''
def launch_with_dummies(inputs, outputs, streams, dummy):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        dummy_kernel[1, 1](dummy)
''', "check_part2", "legacy default stream, which waits for every blocking stream"),

    "dummies left out": ("launch_with_dummies", '''
def launch_with_dummies(inputs, outputs, streams, dummy):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
''', "check_part2", "0 dummy_kernel launches"),

    "waits for the whole device": ("wait_for", '''
def wait_for(stream):
    cuda.synchronize()
''', "check_part3", "also waited for another stream"),

    "does not wait at all": ("wait_for", '''
def wait_for(stream):
    pass
''', "check_part3", "without waiting for the stream's work"),

    "kernels chained by events": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    previous = None
    for inp, out, s in zip(inputs, outputs, streams):
        if previous is not None:
            previous.wait(s)
        work[1, 64, s](out, inp, REPS)
        previous = cuda.event()
        previous.record(s)
''', "check_part1", "cannot run at once"),

    "an aliased synchronize in the loop": ("launch_on_streams", '''
from numba.cuda import synchronize

def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        synchronize()
''', "check_part1", "you synchronized the host"),

    "a debug copy_to_host in the loop": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        print("first value:", out.copy_to_host()[0])
''', "check_part1", "the host waited"),

    "a 20 ms sleep after each launch (a wait without a synchronize)": ("launch_on_streams", '''
import time

def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        time.sleep(0.02)
''', "check_part1", "the host waits between its launches"),

    "a sleep between worker launches, dummies and all": ("launch_with_dummies", '''
import time

def launch_with_dummies(inputs, outputs, streams, dummy):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        dummy_kernel[1, 1, cuda.per_thread_default_stream()](dummy)
        time.sleep(0.02)
''', "check_part2", "overlapped only"),

    "polls an event until each kernel ends": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        done = cuda.event()
        done.record(s)
        while not done.query():
            pass
''', "check_part1", "you synchronized the host"),

    "dummies on cuda.default_stream()": ("launch_with_dummies", '''
def launch_with_dummies(inputs, outputs, streams, dummy):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        dummy_kernel[1, 1, cuda.default_stream()](dummy)
''', "check_part2", "legacy default stream"),

    "stream.auto_synchronize() around each launch": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        with s.auto_synchronize():
            work[1, 64, s](out, inp, REPS)
''', "check_part1", "you synchronized the host"),

    "waits in a thread that returns at once": ("wait_for", '''
import threading

def wait_for(stream):
    threading.Thread(target=stream.synchronize).start()
''', "check_part3", "without waiting"),

    "waits for the legacy default stream too": ("wait_for", '''
def wait_for(stream):
    stream.synchronize()
    cuda.legacy_default_stream().synchronize()
''', "check_part3", "another stream"),
}

# Right answers in other words: each must pass its part (and every other part).
RIGHT = {
    "stream.auto_synchronize(), numba's own way to wait": ("wait_for", '''
def wait_for(stream):
    with stream.auto_synchronize():
        pass
''', "check_part3"),

    "an event recorded in the stream, then synchronized": ("wait_for", '''
def wait_for(stream):
    done = cuda.event()
    done.record(stream)
    done.synchronize()
''', "check_part3"),

    "polling event.query()": ("wait_for", '''
def wait_for(stream):
    done = cuda.event()
    done.record(stream)
    while not done.query():
        pass
''', "check_part3"),

    "a thread that synchronizes, joined": ("wait_for", '''
import threading

def wait_for(stream):
    waiter = threading.Thread(target=stream.synchronize)
    waiter.start()
    waiter.join()
''', "check_part3"),

    "dummies on a non-blocking stream": ("launch_with_dummies", '''
def launch_with_dummies(inputs, outputs, streams, dummy):
    quiet = streamlab.stream(nonblocking=True)
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        dummy_kernel[1, 1, quiet](dummy)
''', "check_part2"),

    "dummies in the workers' own streams, by index": ("launch_with_dummies", '''
def launch_with_dummies(inputs, outputs, streams, dummy):
    for i in range(len(streams)):
        work[1, 64, streams[i]](outputs[i], inputs[i], REPS)
        dummy_kernel[1, 1, streams[i]](dummy)
''', "check_part2"),
}
