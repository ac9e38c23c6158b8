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

_COPY = "        d.copy_to_host(h, stream=stream)\n"
_LAUNCH = "        driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, i)\n"


WRONG = {
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
''', "check_part2", "blocked the event loop"),

    "does not wait at all": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "reads h_out"),

    "a lambda that closes over the loop variable": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    for i in range(len(d_chunks)):
        d_chunks[i].copy_to_host(h_outs[i], stream=stream)
        post = HOST_FN(lambda _: results.append((i, float(h_outs[i].sum(dtype=np.float64)))))
        keep_alive.append(post)
        driver.cuLaunchHostFunc(stream.handle, ctypes.cast(post, ctypes.c_void_p).value, 0)
''', "check_part1", "values are wrong"),

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
''', "check_part2", "blocked the event loop"),
}

# Right answers in other words: each must pass its part (and every other part).
RIGHT = {
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

    "a threading.Event, waited for in a worker thread": ("checksum_when_done", '''
import threading

async def checksum_when_done(stream, h_out):
    landed = threading.Event()

    @HOST_FN
    def signal(_):
        landed.set()

    driver.cuLaunchHostFunc(stream.handle, ctypes.cast(signal, ctypes.c_void_p).value, 0)
    await asyncio.to_thread(landed.wait, 20)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2"),

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
}
