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
''', "check_part2", "never waited for the stream"),
}
