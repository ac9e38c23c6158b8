"""Wrong solutions to lab 04 that its checks must reject (see lab01's file for the format)."""

_PIPELINE_HEAD = '''
def pipeline(chunks, k):
    streams = [cuda.stream() for _ in range(k)]
    d_in = [cuda.device_array(CHUNK, np.float32) for _ in range(k)]
    d_out = [cuda.device_array(CHUNK, np.float32) for _ in range(k)]
    results = []
'''

WRONG = {
    "kernel before the copy in": ("copy_compute_copy", '''
def copy_compute_copy(h_in, h_out, d_in, d_out, stream):
    transform[BLOCKS, THREADS, stream](d_out, d_in)
    d_in.copy_to_device(h_in, stream=stream)
    d_out.copy_to_host(h_out, stream=stream)
''', "check_part1", "expected copy in, transform, copy out", ("check_part2",)),

    "kernel on the default stream": ("copy_compute_copy", '''
def copy_compute_copy(h_in, h_out, d_in, d_out, stream):
    d_in.copy_to_device(h_in, stream=stream)
    transform[BLOCKS, THREADS](d_out, d_in)
    d_out.copy_to_host(h_out, stream=stream)
''', "check_part1", "Issued elsewhere", ("check_part2",)),

    "pageable memory": ("pipeline", _PIPELINE_HEAD + '''
    for i, chunk in enumerate(chunks):
        j = i % k
        out = np.empty_like(chunk)
        copy_compute_copy(chunk, out, d_in[j], d_out[j], streams[j])
        streams[j].synchronize()
        results.append(out)
    return results
''', "check_part2", "pageable host memory"),

    "waits for the whole device": ("pipeline", _PIPELINE_HEAD + '''
    h_in = [cuda.pinned_array(CHUNK, np.float32) for _ in range(k)]
    h_out = [cuda.pinned_array(CHUNK, np.float32) for _ in range(k)]
    for i, chunk in enumerate(chunks):
        j = i % k
        cuda.synchronize()
        if i >= k:
            results.append(h_out[j].copy())
        np.copyto(h_in[j], chunk)
        copy_compute_copy(h_in[j], h_out[j], d_in[j], d_out[j], streams[j])
    cuda.synchronize()
    results += [h_out[i % k].copy() for i in range(max(0, len(chunks) - k), len(chunks))]
    return results
''', "check_part2", "waits for every slot at once"),

    "one stream for every chunk": ("pipeline", _PIPELINE_HEAD + '''
    h_in = cuda.pinned_array(CHUNK, np.float32)
    h_out = cuda.pinned_array(CHUNK, np.float32)
    for chunk in chunks:
        np.copyto(h_in, chunk)
        copy_compute_copy(h_in, h_out, d_in[0], d_out[0], streams[0])
        streams[0].synchronize()
        results.append(h_out.copy())
    return results
''', "check_part2", "the kernels went to 1 stream"),

    "slot reused without waiting": ("pipeline", _PIPELINE_HEAD + '''
    h_in = [cuda.pinned_array(CHUNK, np.float32) for _ in range(k)]
    h_out = [cuda.pinned_array(CHUNK, np.float32) for _ in range(k)]
    for i, chunk in enumerate(chunks):
        j = i % k
        np.copyto(h_in[j], chunk)
        copy_compute_copy(h_in[j], h_out[j], d_in[j], d_out[j], streams[j])
        results.append(h_out[j])          # read later, after the slot was reused
    for s in streams:
        s.synchronize()
    return results
''', "check_part2", "values are wrong"),
}
