"""Wrong solutions to lab 05 that its checks must reject (see lab01's file for the format)."""

WRONG = {
    "the host waits, then post-processes": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        stream.synchronize()
        results.append((i, float(h.sum(dtype=np.float64))))
''', "check_part1", "you synchronized the host"),

    "host function before the copy": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    def post(i):
        results.append((i, float(h_outs[i].sum(dtype=np.float64))))

    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        streamlab.launch_host_func(stream, post, i)
        d.copy_to_host(h, stream=stream)
''', "check_part1", "before its copy"),

    "copies not in the stream": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    def post(i):
        results.append((i, float(h_outs[i].sum(dtype=np.float64))))

    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h)
        streamlab.launch_host_func(stream, post, i)
''', "check_part1", "pass stream=stream to copy_to_host"),

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
        streamlab.launch_host_func(
            stream, lambda: results.append((i, float(h_outs[i].sum(dtype=np.float64)))))
''', "check_part1", "values are wrong"),

    "host functions in a stream of their own": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    other = cuda.stream()

    def post(i):
        results.append((i, float(h_outs[i].sum(dtype=np.float64))))

    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        streamlab.launch_host_func(other, post, i)
''', "check_part1", "host functions in the stream"),

    "stream_done without await": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    streamlab.stream_done(stream)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "reads h_out"),

    "awaits a fresh stream": ("checksum_when_done", '''
async def checksum_when_done(stream, h_out):
    await streamlab.stream_done(cuda.stream())
    return float(h_out.sum(dtype=np.float64))
''', "check_part2", "reads h_out"),

    "sleeps instead of waiting": ("checksum_when_done", '''
import asyncio

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
    "a lambda that binds i as a default": ("post_process_in_order", '''
def post_process_in_order(d_chunks, h_outs, stream, results):
    for i in range(len(d_chunks)):
        d_chunks[i].copy_to_host(h_outs[i], stream=stream)
        streamlab.launch_host_func(
            stream, lambda i=i: results.append((i, float(h_outs[i].sum(dtype=np.float64)))))
''', "check_part1"),

    "functools.partial": ("post_process_in_order", '''
import functools

def post(results, h_outs, i):
    results.append((i, float(np.sum(h_outs[i], dtype=np.float64))))

def post_process_in_order(d_chunks, h_outs, stream, results):
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        streamlab.launch_host_func(stream, functools.partial(post, results, h_outs, i))
''', "check_part1"),

    "awaited with a time limit": ("checksum_when_done", '''
import asyncio

async def checksum_when_done(stream, h_out):
    await asyncio.wait_for(streamlab.stream_done(stream), timeout=20)
    return float(h_out.sum(dtype=np.float64))
''', "check_part2"),
}
