"""Wrong solutions to lab 04 that its checks must reject (see lab01's file for the format)."""

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

    "pageable memory": ("pipeline", '''
def pipeline(chunks, slots):
    results = []
    for i, chunk in enumerate(chunks):
        slot = slots[i % len(slots)]
        out = np.empty_like(chunk)
        copy_compute_copy(chunk, out, slot.d_in, slot.d_out, slot.stream)
        slot.stream.synchronize()
        results.append(out)
    return results
''', "check_part2", "pageable host memory"),

    "waits for the whole device": ("pipeline", '''
def pipeline(chunks, slots):
    k, results = len(slots), []
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        cuda.synchronize()
        if i >= k:
            results.append(slot.h_out.copy())
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
    cuda.synchronize()
    results += [slots[i % k].h_out.copy() for i in range(max(0, len(chunks) - k), len(chunks))]
    return results
''', "check_part2", "waits for every slot at once"),

    "one stream for every chunk": ("pipeline", '''
def pipeline(chunks, slots):
    results, slot = [], slots[0]
    for chunk in chunks:
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        slot.stream.synchronize()
        results.append(slot.h_out.copy())
    return results
''', "check_part2", "the kernels went to 1 stream"),

    "waits for the chunk it just issued": ("pipeline", '''
def pipeline(chunks, slots):
    results = []
    for i, chunk in enumerate(chunks):
        slot = slots[i % len(slots)]
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        slot.done.record(slot.stream)
        slot.done.synchronize()           # every slot used, but one chunk at a time
        results.append(slot.h_out.copy())
    return results
''', "check_part2", "waited for a slot other than its own"),

    "slot reused without waiting": ("pipeline", '''
def pipeline(chunks, slots):
    results = []
    for i, chunk in enumerate(chunks):
        slot = slots[i % len(slots)]
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        results.append(slot.h_out)        # read later, after the slot was reused
    for slot in slots:
        slot.stream.synchronize()
    return results
''', "check_part2", "values are wrong"),
}
