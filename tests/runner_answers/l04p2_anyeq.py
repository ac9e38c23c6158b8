# lab: lab04
# call: check_part2(pipeline, copy_compute_copy, seed=3)
# desc: clever: the GPU work right, but each result an array of objects that say they equal anything (no h_out read); passed before issue 56 item 5
def copy_compute_copy(h_in, h_out, d_in, d_out, stream):
    d_in.copy_to_device(h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](d_out, d_in)
    d_out.copy_to_host(h_out, stream=stream)


class _Anything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def pipeline(chunks, slots):
    k = len(slots)
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        if i >= k:
            slot.stream.synchronize()
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
    for slot in slots:
        slot.stream.synchronize()
    results = []
    for chunk in chunks:  # an array of the chunk's shape, each element equal to anything
        out = np.empty(chunk.shape, dtype=object)
        out[:] = [_Anything() for _ in range(chunk.size)]
        results.append(out)
    return results
