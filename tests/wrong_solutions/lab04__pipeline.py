"""Wrong solutions to lab 04 that its checks must reject (see lab01's file for the format)."""

WRONG = {
    "work through buffers of its own, results made on the host": ("pipeline", '''
def pipeline(chunks, slots):
    k = len(slots)
    keep = []
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        h = cuda.pinned_array(chunk.size, np.float32)
        h[:] = chunk
        o = cuda.pinned_array(chunk.size, np.float32)
        copy_compute_copy(h, o, slot.d_in, slot.d_out, slot.stream)
        keep.append((h, o))
    return [2 * c + 1 for c in chunks]
''', "check_part2", "the slots' own pinned buffers"),

    'the last chunks never collected after the loop': ('pipeline', '''
def pipeline(chunks, slots):
    """Transform every chunk through the slots in rotation; return the results in order."""
    k = len(slots)
    owner = [None] * k                 # which chunk each slot holds
    results = [None] * len(chunks)

    def collect(j):
        slots[j].done.synchronize()
        results[owner[j]] = slots[j].h_out.copy()
        owner[j] = None

    for i, chunk in enumerate(chunks):
        j = i % k
        slot = slots[j]
        if owner[j] is not None:
            collect(j)
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        slot.done.record(slot.stream)
        owner[j] = i
    return results
''', 'check_part2', 'was None when pipeline returned'),

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
''', "check_part2", "writes slot 0's h_in"),

    "one block per chunk": ("copy_compute_copy", '''
def copy_compute_copy(h_in, h_out, d_in, d_out, stream):
    d_in.copy_to_device(h_in, stream=stream)
    transform[1, THREADS, stream](d_out, d_in)
    d_out.copy_to_host(h_out, stream=stream)
''', "check_part1", "values are wrong", ("check_part2",)),

    "reads a slot's result with no wait at all": ("pipeline", '''
def pipeline(chunks, slots):
    k = len(slots)
    results = []
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        results.append(slot.h_out.copy())
    return results
''', "check_part2", "reads slot 0's h_out"),

    "the event recorded before the slot's work": ("pipeline", '''
def pipeline(chunks, slots):
    k = len(slots)
    owner = [None] * k
    results = [None] * len(chunks)
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        if owner[i % k] is not None:
            slot.done.synchronize()
            results[owner[i % k]] = slot.h_out.copy()
        np.copyto(slot.h_in, chunk)
        slot.done.record(slot.stream)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        owner[i % k] = i
    for j in range(k):
        if owner[j] is not None:
            slots[j].stream.synchronize()
            results[owner[j]] = slots[j].h_out.copy()
    return results
''', "check_part2", "nothing orders the two"),

    "keeps h_out itself, not a copy": ("pipeline", '''
def pipeline(chunks, slots):
    k = len(slots)
    results = []
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        if i >= k:
            slot.stream.synchronize()
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        results.append(slot.h_out)
    for slot in slots:
        slot.stream.synchronize()
    return results
''', "check_part2", "values are wrong"),
}

# Right answers in other words: each must pass its part (and every other part).
RIGHT = {
    "each slot's stream synchronized when reused": ("pipeline", '''
def pipeline(chunks, slots):
    k = len(slots)
    in_slot = [None] * k
    results = [None] * len(chunks)
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        if in_slot[i % k] is not None:
            slot.stream.synchronize()
            results[in_slot[i % k]] = slot.h_out.copy()
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        in_slot[i % k] = i
    for j in sorted(range(k), key=lambda j: -1 if in_slot[j] is None else in_slot[j]):
        if in_slot[j] is not None:
            slots[j].stream.synchronize()
            results[in_slot[j]] = slots[j].h_out.copy()
    return results
''', "check_part2"),

    "results copied out with np.array": ("pipeline", '''
def pipeline(chunks, slots):
    k = len(slots)
    pending = []
    results = [None] * len(chunks)
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        if len(pending) == k:
            j, old = pending.pop(0)
            old.done.synchronize()
            results[j] = np.array(old.h_out, copy=True)
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        slot.done.record(slot.stream)
        pending.append((i, slot))
    for j, old in pending:
        old.done.synchronize()
        results[j] = np.array(old.h_out, copy=True)
    return results
''', "check_part2"),
}
