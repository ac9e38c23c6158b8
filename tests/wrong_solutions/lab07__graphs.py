"""Wrong solutions to lab 07 that its checks must reject (see lab01's file for the format)."""

WRONG = {
    'never joined': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
''', "check_part1", 'never joined'),

    'every slot in one branch': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    for slot in slots:
        slot.d_in.copy_to_device(slot.h_in, stream=builder.stream)
        transform[BLOCKS, THREADS, builder](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=builder.stream)
''', "check_part1", 'run one after the other'),

    'a synchronize inside the capture': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
        cuda.synchronize()
    streamlab.join(*parts)
''', "check_part1", 'cannot hold'),

    'pageable host memory': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(np.array(slot.h_in), stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
''', "check_part1", 'snapshot'),

    'kernel on the default stream': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
''', "check_part1", '0 kernels'),

    'copy out forgotten': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
    streamlab.join(*parts)
''', "check_part1", '0 copies out'),

    'kernel before its copy in': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
''', "check_part1", 'follows no copy in'),

    'no fork: the streams are not in the capture': ('capture_with_events', '''
def capture_with_events(origin, streams, slots):
    fork = cuda.event()
    fork.record(origin)
    ends = []
    for s, slot in zip(streams, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
        end = cuda.event()
        end.record(s)
        ends.append(end)
    for end in ends:
        end.wait(origin)
''', "check_part2", 'no work at all'),

    'no join': ('capture_with_events', '''
def capture_with_events(origin, streams, slots):
    fork = cuda.event()
    fork.record(origin)
    ends = []
    for s, slot in zip(streams, slots):
        fork.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
        end = cuda.event()
        end.record(s)
        ends.append(end)
''', "check_part2", 'never joined'),

    'join event recorded in the origin': ('capture_with_events', '''
def capture_with_events(origin, streams, slots):
    fork = cuda.event()
    fork.record(origin)
    ends = []
    for s, slot in zip(streams, slots):
        fork.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
        end = cuda.event()
        end.record(origin)
        ends.append(end)
    for end in ends:
        end.wait(origin)
''', "check_part2", 'never joined'),

    'streamed, not replayed': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
            slot.d_in.copy_to_device(slot.h_in, stream=stream)
            transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
            slot.d_out.copy_to_host(slot.h_out, stream=stream)
        stream.synchronize()
        results.append([slot.h_out.copy() for slot in slots])
    return results
''', "check_part3", 'of its own'),

    'no wait before reading': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        results.append([slot.h_out.copy() for slot in slots])
    return results
''', "check_part3", 'nothing orders the two'),

    'launched twice a batch': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        graph.launch(stream)
        stream.synchronize()
        results.append([slot.h_out.copy() for slot in slots])
    return results
''', "check_part3", 'launched 10 time(s)'),

    'the results computed on the host (a cheat)': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        graph.launch(stream)
        stream.synchronize()
        results.append([2 * chunk + 1 for chunk in batch])
    return results
''', "check_part3", 'values are wrong'),

    'one launch for every batch': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    graph.launch(stream)
    stream.synchronize()
    return [[slot.h_out.copy() for slot in slots] for _ in batches]
''', "check_part3", 'launched 1 time(s)'),

    'a copy out with no stream': ('capture_with_events', '''
def capture_with_events(origin, streams, slots):
    fork = cuda.event()
    fork.record(origin)
    ends = []
    for s, slot in zip(streams, slots):
        fork.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out)
        end = cuda.event()
        end.record(s)
        ends.append(end)
    for end in ends:
        end.wait(origin)
''', "check_part2", 'legacy default stream'),

    'the host waits on the branch events': ('capture_with_events', '''
def capture_with_events(origin, streams, slots):
    fork = cuda.event()
    fork.record(origin)
    for s, slot in zip(streams, slots):
        fork.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
        end = cuda.event()
        end.record(s)
        end.synchronize()
''', "check_part2", 'cannot wait'),

    'the results kept without a copy': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        stream.synchronize()
        results.append([slot.h_out for slot in slots])
    return results
''', "check_part3", 'values are wrong'),
}

# Right answers in other words: each must pass its part (and every other part).
RIGHT = {
    'split and join': ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
''', "check_part1"),

    "split, with the first branch's own stream for copies": ('capture_pipeline', '''
def capture_pipeline(builder, slots):
    branches = builder.split(len(slots))
    for i, slot in enumerate(slots):
        b = branches[i]
        cuda.to_device(slot.h_in, stream=b.stream, to=slot.d_in)
        transform[BLOCKS, THREADS, b](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=b.stream)
    type(builder).join(*branches)
''', "check_part1"),

    'events': ('capture_with_events', '''
def capture_with_events(origin, streams, slots):
    fork = cuda.event()
    fork.record(origin)
    ends = []
    for s, slot in zip(streams, slots):
        fork.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
        end = cuda.event()
        end.record(s)
        ends.append(end)
    for end in ends:
        end.wait(origin)
''', "check_part2"),

    'events, one join event waited on in turn': ('capture_with_events', '''
def capture_with_events(origin, streams, slots):
    start = cuda.event()
    start.record(origin)
    for s, slot in zip(streams, slots):
        start.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
    for s in streams:
        done = cuda.event()
        done.record(s)
        done.wait(origin)
''', "check_part2"),

    'replay': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        stream.synchronize()
        results.append([slot.h_out.copy() for slot in slots])
    return results
''', "check_part3"),

    'replay, waiting on an event': ('run_batches', '''
def run_batches(graph, stream, slots, batches):
    out = []
    done = cuda.event()
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            slot.h_in[:] = chunk
        graph.launch(stream)
        done.record(stream)
        done.synchronize()
        out.append([np.array(slot.h_out) for slot in slots])
    return out
''', "check_part3"),

}
