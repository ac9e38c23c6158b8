"""Wrong solutions to lab 05 that its checks must reject (see lab01's file for the format).

The lab's setup cell gives ``ctypes``, ``asyncio``, ``driver`` (cuda.bindings), ``HOST_FN``
(CUDA's host function type) and ``keep_alive``."""

from answer_changes import change as _change

# The right answers that most wrong ones change, one change each, made with _change so that
# the change is what a reader sees (as in lab08's file).
RIGHT_PART1 = '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    @HOST_FN
    def post(user_data):
        i = user_data or 0
        results.append((i, float(h_outs[i].sum(dtype=np.float64))))

    keep_alive.append(post)
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, i)
'''

RIGHT_PART2 = '''
async def checksum_when_done(stream, h_out):
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    @HOST_FN
    def resolve(_):
        loop.call_soon_threadsafe(done.set_result, None)

    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(resolve, ctypes.c_void_p).value, 0)
    await done
    return float(h_out.sum(dtype=np.float64))
'''

# a right answer of part 2 in other words, which more answers change
RIGHT_EVENT = '''
import threading

async def checksum_when_done(stream, h_out):
    landed = threading.Event()

    @HOST_FN
    def signal(_):
        landed.set()

    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(signal, ctypes.c_void_p).value, 0)
    await asyncio.to_thread(landed.wait, 20)
    return float(h_out.sum(dtype=np.float64))
'''
_IN_A_WORKER = "    await asyncio.to_thread(landed.wait, 20)\n"
_KEEP = ("    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(signal",
         "    keep_alive.append(signal)\n    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(signal")
_KEEP_RESOLVE = ("    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(resolve",
                 "    keep_alive.append(resolve)\n"
                 "    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(resolve")

_COPY = "        d.copy_to_host(h, stream=stream)\n"
_LAUNCH = "        driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, i)\n"


WRONG = {
    "host functions that append checksums made from the check's seed": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    import sys
    f = sys._getframe(1)
    while f is not None and "seed" not in f.f_locals.get("kwargs", {}):
        f = f.f_back
    seed = f.f_locals["kwargs"]["seed"]
    rng = np.random.default_rng(seed)
    sums = [float(rng.random(CHUNK, dtype=np.float32).sum(dtype=np.float64)) for _ in d_chunks]

    @HOST_FN
    def post(user_data):
        i = user_data or 0
        results.append((i, sums[i]))

    keep_alive.append(post)
    for i, d in enumerate(d_chunks):
        d.copy_to_host(h_outs[i], stream=stream)
        driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, i)
''', "check_part1", "host function never read h_outs[0]"),

    'the last chunk left out of the loop': ('post_process_in_order', '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    """Copy each chunk out and have the stream post-process it, in order; do not wait."""
    @HOST_FN
    def post(user_data):
        i = user_data or 0
        results.append((i, float(h_outs[i].sum(dtype=np.float64))))

    keep_alive.append(post)
    address = ctypes.cast(post, ctypes.c_void_p).value
    for i, (d, h) in list(enumerate(zip(d_chunks, h_outs)))[:-1]:
        d.copy_to_host(h, stream=stream)
        (err,) = driver.cuLaunchHostFunc(stream.handle, address, i)
        assert err == driver.CUresult.CUDA_SUCCESS, err
''', 'check_part1', '5 copies back to the host for 6 chunks'),

    # issue 56: it passed on the simulator, which does not time the loop; an answer that
    # never awaits gives the other task no turn, on the simulator and on a GPU alike
    "busy-polls event.query() and never awaits": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    landed = cuda.event()
    landed.record(stream)
    while not landed.query():
        pass
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "never let the event loop run another task"),
    "the host waits, then post-processes": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        stream.synchronize()
        results.append((i, float(h.sum(dtype=np.float64))))
''', "check_part1", "you synchronized the host"),

    "host function before the copy": ("post_process_in_order", _change(
        RIGHT_PART1, (_COPY + _LAUNCH, _LAUNCH + _COPY)), "check_part1", "before its copy"),

    "copies not in the stream": ("post_process_in_order", _change(
        RIGHT_PART1, ("d.copy_to_host(h, stream=stream)", "d.copy_to_host(h)")),
        "check_part1", "pass stream=stream to copy_to_host"),

    "blocks the event loop": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    stream.synchronize()
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "waited with a synchronize()"),

    "does not wait at all": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "reads h_out"),

    # the hand-overs streamlab draws (a queue, Event.is_set, a worker's future) order a
    # receiver after the sender only: news sent by the wrong thread, or too early, orders
    # nothing after the GPU's work
    "a queue.Queue the coroutine fills itself, not the host function": (
        "checksum_when_done", _change(
            RIGHT_EVENT, ("import threading", "import queue"),
            ("landed = threading.Event()", "landed = queue.Queue()"),
            ("landed.set()", "pass"), _KEEP,
            (_IN_A_WORKER, "    landed.put(True)                 # not the stream's news\n"
                           "    await asyncio.to_thread(landed.get, timeout=20)\n")),
        "check_part2", "reads h_out"),

    "an Event the coroutine sets itself, polled with is_set": (
        "checksum_when_done", _change(
            RIGHT_EVENT, ("landed.set()", "pass"), _KEEP, (_IN_A_WORKER, """\
    landed.set()                     # set by the coroutine: not the stream's news
    while not landed.is_set():
        await asyncio.sleep(0.001)
""")), "check_part2", "reads h_out"),

    "a worker's future that waits for nothing, awaited once done": (
        "checksum_when_done", _change(
            RIGHT_EVENT, ("import threading\n", "import concurrent.futures\nimport threading\n"),
            _KEEP, (_IN_A_WORKER, """\
    pool = concurrent.futures.ThreadPoolExecutor(1)
    done = pool.submit(lambda: None)    # waits for nothing
    while not done.done():
        await asyncio.sleep(0.001)
    await asyncio.wrap_future(done)
    pool.shutdown()
""")), "check_part2", "reads h_out"),

    "a lambda that closes over the loop variable": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    for i in range(len(d_chunks)):
        d_chunks[i].copy_to_host(h_outs[i], stream=stream)
        post = HOST_FN(lambda _: results.append((i, float(h_outs[i].sum(dtype=np.float64)))))
        keep_alive.append(post)
        driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, 0)
''', "check_part1", "host function read h_outs["),

    "host functions in a stream of their own": ("post_process_in_order", _change(
        RIGHT_PART1, ("    keep_alive.append(post)\n", "    keep_alive.append(post)\n    other = cuda.stream()\n"),
        ("cuLaunchHostFunc(stream.handle", "cuLaunchHostFunc(other.handle")),
        "check_part1", "host functions in the stream"),

    "the ctypes function not kept alive": ("post_process_in_order", '''
import gc

def post_process_in_order(d_chunks, h_outs, stream, results):
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        post = HOST_FN(lambda u: results.append((u or 0, float(h_outs[u or 0].sum(dtype=np.float64)))))
        driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, i)
    del post
    gc.collect()
''', "check_part1", "freed before the driver called it"),

    "the future resolved without waiting for it": ("checksum_when_done", _change(
        RIGHT_PART2, ("    await done\n", "")), "check_part2", "reads h_out"),

    "awaits a fresh stream": ("checksum_when_done", _change(
        RIGHT_PART2, ("cuLaunchHostFunc(stream.handle", "cuLaunchHostFunc(cuda.stream().handle")),
        "check_part2", "reads h_out"),

    "the future resolved straight from the driver's thread": ("checksum_when_done", _change(
        RIGHT_PART2, ("loop.call_soon_threadsafe(done.set_result, None)",
                      "done.set_result(None)        # not thread-safe: the loop is not told")),
        "check_part2", "reads h_out"),

    # a clever one: the ordering edges streamlab draws for call_soon_threadsafe and
    # threading.Event, made on the host itself, with no host function in the stream
    "a hand-over faked on the host, no host function": ("checksum_when_done", '''
import threading

async def checksum_when_done(stream, h_out):
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.call_soon_threadsafe(done.set_result, None)
    landed = threading.Event()
    landed.set()
    landed.wait()
    await done
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "reads h_out"),

    "sleeps instead of waiting": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    await asyncio.sleep(0.05)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "reads h_out"),

    "waits for an event on the host": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    done = cuda.event()
    done.record(stream)
    done.synchronize()
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "waited with a synchronize()"),
}

# Wrong answers that only a GPU can tell from right ones: the simulator's timeline is a
# model's, so part 2 does not time the event loop there (and says so). On a GPU, the
# loop's longest pause while the coroutine runs must stay under a quarter of the GPU work.
_IMPORT_TIME = (("async def checksum_when_done", "import time\n\nasync def checksum_when_done"),)
WRONG_ON_GPU = {
    "busy-polls a threading.Event's flag on the loop's own thread": ("checksum_when_done",
        _change(RIGHT_EVENT, _KEEP, (_IN_A_WORKER, """\
    while not landed.is_set():
        pass                          # a host wait in disguise: the loop gets no turn
""")), "check_part2", "never let the event loop run another task"),

    "polls the event on the host for most of the work, then awaits the rest": (
        "checksum_when_done", _change(RIGHT_PART2, *_IMPORT_TIME, ("    await done\n", """\
    landed = cuda.event()
    landed.record(stream)
    began = time.perf_counter()
    while not landed.query() and time.perf_counter() - began < 0.07:
        pass                        # a host wait in disguise: the loop gets no turn
    await done
""")), "check_part2", "gave no other task a turn"),

    "sleeps on the host before it awaits": ("checksum_when_done", _change(
        RIGHT_PART2, *_IMPORT_TIME, ("    await done\n", "    time.sleep(0.05)\n    await done\n")),
        "check_part2", "gave no other task a turn"),

    "waits on a threading.Event in the loop's own thread": ("checksum_when_done", _change(
        RIGHT_EVENT, (_IN_A_WORKER, "    landed.wait(20)                 # not awaited: the loop "
                                    "stands still until it lands\n")),
        "check_part2", "never let the event loop run another task"),

    # a host wait cut into slices, each pause under the longest one allowed (an attack
    # on this lab): the share of the time the loop was free catches them
    "waits on a threading.Event in 5 ms slices on the loop's own thread": ("checksum_when_done",
        _change(RIGHT_EVENT, _KEEP, (_IN_A_WORKER, """\
    while not landed.wait(0.005):   # a host wait, sliced: the loop gets a turn now and then
        await asyncio.sleep(0)
""")), "check_part2", "free for"),

    'sleeps on the host in 15 ms slices between event.query() polls': ("checksum_when_done", '''
import time

async def checksum_when_done(stream, h_out):
    landed = cuda.event()
    landed.record(stream)
    while not landed.query():
        time.sleep(0.015)            # time.sleep, not asyncio.sleep: the loop stands still
        await asyncio.sleep(0.002)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "free for"),

    "busy-polls the event on the host in 15 ms slices, then awaits the future": (
        "checksum_when_done", _change(RIGHT_PART2, *_IMPORT_TIME, ("    await done\n", """\
    landed = cuda.event()
    landed.record(stream)
    while not landed.query():
        began = time.perf_counter()
        while not landed.query() and time.perf_counter() - began < 0.015:
            pass                     # a host wait in disguise, as in WRONG_ON_GPU ...
        await asyncio.sleep(0.002)   # ... but with a breath every 15 ms
    await done
""")), "check_part2", "free for"),
}

# Right answers in other words: each must pass its part (and every other part).
RIGHT = {
    # values of numpy's types, where the answers above give Python's: sent to the grader
    # as plain data, judged as numbers (tests/test_transcript.py, through the grader)
    "results as lists of numpy numbers": ("post_process_in_order", _change(
        RIGHT_PART1, ("results.append((i, float(h_outs[i].sum(dtype=np.float64))))",
                      "results.append([np.int64(i), h_outs[i].sum(dtype=np.float64)])")),
        "check_part1"),
    "the checksum as numpy's float64": ("checksum_when_done", _change(
        RIGHT_PART2, ("return float(h_out.sum(dtype=np.float64))",
                      "return h_out.sum(dtype=np.float64)")), "check_part2"),
    'polls a cuda.core event of the same stream': ("checksum_when_done", '''
from cuda.core import Device

async def checksum_when_done(stream, h_out):
    device = Device()
    device.set_current()             # this coroutine runs on the check's own thread
    landed = device.create_stream(stream).record()
    while not landed.is_done:
        await asyncio.sleep(0.001)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2"),
    "the answer the wrong ones change (part 1)": ("post_process_in_order", RIGHT_PART1,
                                                 "check_part1"),
    "the answer the wrong ones change (part 2)": ("checksum_when_done", RIGHT_PART2,
                                                 "check_part2"),
    "one ctypes function per chunk, each kept": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    for i in range(len(d_chunks)):
        d_chunks[i].copy_to_host(h_outs[i], stream=stream)
        post = HOST_FN(lambda _, i=i: results.append((i, float(h_outs[i].sum(dtype=np.float64)))))
        keep_alive.append(post)
        (err,) = driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, 0)
        assert err == driver.CUresult.CUDA_SUCCESS
''', "check_part1"),

    "the chunk's index as user data, a CUhostFn, one module-level function": (
        "post_process_in_order", '''
state = {}

@HOST_FN
def post(user_data):
    i = user_data or 0
    state["results"].append((i, float(np.sum(state["h_outs"][i], dtype=np.float64))))

def post_process_in_order(d_chunks, h_outs, stream, results):
    state.update(results=results, h_outs=h_outs)
    fn = driver.CUhostFn(ctypes.cast(post, ctypes.c_void_p).value)
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        driver.cuLaunchHostFunc(driver.CUstream(int(stream.handle)), fn, i)
''', "check_part1"),

    "streamlab's earlier wrapper of the same call": ("post_process_in_order", '''
import functools

def post(results, h_outs, i):
    results.append((i, float(np.sum(h_outs[i], dtype=np.float64))))

def post_process_in_order(d_chunks, h_outs, stream, results):
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        streamlab.launch_host_func(stream, functools.partial(post, results, h_outs, i))
''', "check_part1"),

    "a threading.Event, waited for in a worker thread": ("checksum_when_done",
                                                         RIGHT_EVENT, "check_part2"),

    "awaited with a time limit, through run_coroutine_threadsafe's cousin": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    @HOST_FN
    def resolve(_):
        loop.call_soon_threadsafe(done.set)

    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(resolve, ctypes.c_void_p).value, 0)
    await asyncio.wait_for(done.wait(), timeout=20)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2"),

    "streamlab's earlier awaitable": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    await asyncio.wait_for(streamlab.stream_done(stream), timeout=20)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2"),

    # the three below were known holes (right answers called a race) until streamlab drew
    # these hand-overs: a concurrent.futures.Future found done, Event.is_set, a queue.Queue.
    # The first was called a race once in CI's serial autograde (a class of lab 05): when
    # the worker's future is done before asyncio chains it, the chaining callback runs on
    # the loop's own thread; this answer makes that order certain
    "a worker's future, already done when it is awaited": ("checksum_when_done", _change(
        RIGHT_EVENT, ("import threading\n", "import concurrent.futures\nimport threading\n"),
        _KEEP, (_IN_A_WORKER, """\
    pool = concurrent.futures.ThreadPoolExecutor(1)
    done = pool.submit(landed.wait, 20)
    while not done.done():
        await asyncio.sleep(0.001)
    await asyncio.wrap_future(done)  # done already: chained on the loop's own thread
    pool.shutdown()
""")), "check_part2"),

    "polls a threading.Event's flag with asyncio.sleep": ("checksum_when_done", _change(
        RIGHT_EVENT, _KEEP, (_IN_A_WORKER, """\
    while not landed.is_set():       # thread-safe; the loop sleeps between looks
        await asyncio.sleep(0.001)
""")), "check_part2"),

    "hands the news over through a queue.Queue, read in a worker thread": (
        "checksum_when_done", _change(
            RIGHT_EVENT, ("import threading", "import queue"),
            ("landed = threading.Event()", "landed = queue.Queue()"),
            ("landed.set()", "landed.put(True)"), _KEEP,
            (_IN_A_WORKER, "    await asyncio.to_thread(landed.get, timeout=20)\n")),
        "check_part2"),

    # two more, once known holes: a Future's result() and a queue's empty() are drawn too
    "waits on a concurrent.futures.Future's result in a worker thread": (
        "checksum_when_done", _change(
            RIGHT_EVENT, ("import threading", "import concurrent.futures"),
            ("landed = threading.Event()", "landed = concurrent.futures.Future()"),
            ("landed.set()", "landed.set_result(None)"), _KEEP,
            (_IN_A_WORKER, "    await asyncio.to_thread(landed.result, 20)\n")),
        "check_part2"),

    "polls a queue's empty() with asyncio.sleep": ("checksum_when_done", _change(
        RIGHT_EVENT, ("import threading", "import queue"),
        ("landed = threading.Event()", "landed = queue.Queue()"),
        ("landed.set()", "landed.put(True)"), _KEEP, (_IN_A_WORKER, """\
    while landed.empty():            # thread-safe; the loop sleeps between looks
        await asyncio.sleep(0.001)
""")), "check_part2"),

    "hands the news over through a LIFO queue, polled with get_nowait": (
        "checksum_when_done", _change(
            RIGHT_EVENT, ("import threading", "import queue"),
            ("landed = threading.Event()", "landed = queue.LifoQueue()"),
            ("landed.set()", "landed.put(True)"), _KEEP,
            (_IN_A_WORKER, """\
    while True:
        try:
            landed.get_nowait()
            break
        except queue.Empty:
            await asyncio.sleep(0.001)
""")),
        "check_part2"),
}


# Found by an attack on this lab and not mended yet (tests/test_lab_answers_later.py keeps
# them as strict expected failures): right answers the race check calls a race, because
# nothing in them is a hand-over streamlab can draw (a list polled under the GIL); and
# wrong ones that sleep "long enough", which a run-by-run race check cannot tell from a
# wait (the work ended before the read in this run); and a cheat that rewrites the
# check's own record from inside the learner's process (issue 32 item 1: judging outside
# it). name -> (right or wrong, target, code, why[, "gpu": a hole only a GPU can show,
# since the simulator does not time the loop; skipped there])
KNOWN_HOLES = {
    "blocks the loop, then rewrites the check's record of the other task's turns": (
        "wrong", "checksum_when_done", _change(RIGHT_PART2, *_IMPORT_TIME, ("    await done\n", """\
    turns = None
    for task in asyncio.all_tasks():  # the check's own task: its locals are in reach
        frame = task.get_coro().cr_frame
        if frame is not None and "turns" in frame.f_locals:
            turns = frame.f_locals["turns"]
    time.sleep(0.09)                  # a host wait: the loop stands still
    await done
    now, t = time.perf_counter(), turns[0]
    del turns[1:]                     # then a turn every 0.1 ms, written in by hand
    while t + 1e-4 < now:
        t += 1e-4
        turns.append(t)
""")),
        "The check times the event loop from a list in its own coroutine's frame, which the "
        "learner's code can reach through asyncio.all_tasks() and rewrite: the host wait "
        "then reads as a loop free throughout. On the simulator, which does not time the loop, "
        "tests/test_lab_answers_later.py shows it with the timing forced on; this case is "
        "its GPU run.", "gpu"),
    # found by a review of the hand-overs drawn for Event.is_set, queue.Queue and
    # concurrent.futures.Future (2026-11-26): an is_set() or a get_nowait() that finds the
    # news counts as a hand-over whether or not the answer waited for it
    "sleeps, then calls Event.is_set() and ignores what it says": ("wrong",
        "checksum_when_done", _change(RIGHT_EVENT, _KEEP, (_IN_A_WORKER, """\
    await asyncio.sleep(0.5)         # "long enough"
    landed.is_set()                  # its answer never used
""")),
        "A fixed sleep is luck, but an is_set() that found the flag set is drawn as a "
        "hand-over, used or not, so the race check sees the read ordered after the stream."),
    "sleeps, then calls get_nowait() on a queue and ignores what it finds": ("wrong",
        "checksum_when_done", _change(
            RIGHT_EVENT, ("import threading", "import queue"),
            ("landed = threading.Event()", "landed = queue.Queue()"),
            ("landed.set()", "landed.put(True)"), _KEEP, (_IN_A_WORKER, """\
    await asyncio.sleep(0.5)         # "long enough"
    try:
        landed.get_nowait()          # what it finds is never used
    except queue.Empty:
        pass
""")),
        "As above, with a queue: a get that found the put is drawn as a hand-over."),
    'polls a list the host function appends to': ('right', "checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    landed = []

    @HOST_FN
    def note(_):
        landed.append(True)          # list.append is atomic under the GIL

    keep_alive.append(note)
    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(note, ctypes.c_void_p).value, 0)
    while not landed:
        await asyncio.sleep(0.001)
    return float(h_out.sum(dtype=np.float64))
''',
        'Right in CPython (the GIL orders the append before the read) and never blocks the loop, but no hand-over is recorded, so the check calls the read a race.'),
    "sleeps past the GPU work instead of awaiting the future it made": (
        "wrong", "checksum_when_done", _change(
            RIGHT_PART2, _KEEP_RESOLVE,
            ("    await done\n", '    await asyncio.sleep(0.5)         # "long enough": never '
                                 'looks at done\n')),
        "Kept WRONG 'sleeps instead of waiting' with a longer sleep: nothing in the code "
        "waits for the stream, but the set_result callback happened to run on the loop "
        "first, and the race check counts that as an ordering edge."),
    'sleeps, then calls event.query() and ignores what it says': ('wrong', "checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    landed = cuda.event()
    landed.record(stream)
    await asyncio.sleep(0.5)         # "long enough"
    landed.query()                   # result never used
    return float(h_out.sum(dtype=np.float64))
''',
        'A fixed sleep is luck, not a wait (it breaks as soon as the work takes longer); the race check treats any query() that returned True as a host wait, used or not.'),
}
