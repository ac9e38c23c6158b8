"""Wrong solutions to lab 07 that its checks must reject, and right answers in other
words (see lab01's file for the format). Most are one change to a right answer, made with
str.replace so that the change is what a reader sees; the parts are numbered here and
turned into the format at the end."""

RIGHT_PART1 = '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
'''

RIGHT_PART2 = '''
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
'''

RIGHT_PART3 = '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        stream.synchronize()
        results.append([slot.h_out.copy() for slot in slots])
    return results
'''

#: part 3's frame-secret cheat: the key the graph adds, read from the check's frames (the
#: check's inputs, found in its runner's frame: the key is a cell of its timing's closure),
#: every result computed on the host; the slots filled and the graph launched once a
#: batch, as a right answer does, and h_out never read. (Before the grader judged part 3,
#: the check compared results in the learner's process: this passed.)
FRAME_SECRET = '''
def run_batches(graph, stream, slots, batches):
    import sys
    f = sys._getframe(1)
    while "inputs" not in f.f_locals:
        f = f.f_back
    cells = f.f_locals["inputs"].after.__closure__
    key = next(c.cell_contents for c in cells if isinstance(c.cell_contents, np.float32))
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        stream.synchronize()
        results.append([2 * chunk + 1 + key for chunk in batch])
    return results
'''

_RIGHT = {
    "split and join": (1, RIGHT_PART1),
    "split, with the first branch's own stream for copies": (1, '''
def capture_pipeline(builder, slots):
    branches = builder.split(len(slots))
    for i, slot in enumerate(slots):
        b = branches[i]
        cuda.to_device(slot.h_in, stream=b.stream, to=slot.d_in)
        transform[BLOCKS, THREADS, b](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=b.stream)
    type(builder).join(*branches)
'''),
    "events": (2, RIGHT_PART2),
    "events, one join event waited on in turn": (2, '''
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
'''),
    "replay": (3, RIGHT_PART3),
    "replay, waiting on an event": (3, '''
def run_batches(graph, stream, slots, batches):
    out = []
    done = cuda.event()
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            slot.h_in[:] = chunk
        graph.launch(stream)
        done.record(stream)
        done.synchronize()
        out.append([np.copy(slot.h_out) for slot in slots])
    return out
'''),
    # each batch's results read from h_out in other words that the watched buffer sees
    "replay, each h_out read through a view of it": (3, RIGHT_PART3.replace(
        "slot.h_out.copy()", "slot.h_out[:].copy()")),
    "replay, each h_out copied into a buffer of the loop's own": (3, RIGHT_PART3.replace(
        "        results.append([slot.h_out.copy() for slot in slots])\n",
        "        mine = [np.empty(CHUNK, np.float32) for _ in slots]\n"
        "        for buf, slot in zip(mine, slots):\n"
        "            np.copyto(buf, slot.h_out)\n"
        "        results.append(mine)\n")),
    "replay, each h_out converted": (3, RIGHT_PART3.replace(
        "slot.h_out.copy()", "slot.h_out.astype(np.float32)")),
}

_WRONG = {
    "never joined": (1, RIGHT_PART1.replace("    streamlab.join(*parts)\n", ""),
                     "never joined"),
    "every slot in one branch": (1, '''
def capture_pipeline(builder, slots):
    for slot in slots:
        slot.d_in.copy_to_device(slot.h_in, stream=builder.stream)
        transform[BLOCKS, THREADS, builder](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=builder.stream)
''', "run one after the other"),
    "a synchronize inside the capture": (1, RIGHT_PART1.replace(
        "        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)\n",
        "        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)\n"
        "        cuda.synchronize()\n"), "cannot hold"),
    "pageable host memory": (1, RIGHT_PART1.replace(
        "slot.d_in.copy_to_device(slot.h_in, stream=p.stream)",
        "slot.d_in.copy_to_device(np.array(slot.h_in), stream=p.stream)"), "snapshot"),
    "kernel on the default stream": (1, RIGHT_PART1.replace(
        "transform[BLOCKS, THREADS, p]", "transform[BLOCKS, THREADS]"), "0 kernels"),
    "copy out forgotten": (1, RIGHT_PART1.replace(
        "        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)\n", ""),
        "0 copies out"),
    "kernel before its copy in": (1, '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
''', "follows no copy in"),
    "the work issued to a stream of its own, not the branch's": (1, RIGHT_PART1.replace(
        "    for p, slot in zip(parts, slots):\n",
        "    for p, slot in zip(parts, slots):\n        own = cuda.stream()\n").replace(
        "stream=p.stream", "stream=own").replace("THREADS, p]", "THREADS, own]"),
        "no work at all"),
    "no fork: the streams are not in the capture": (2, RIGHT_PART2.replace(
        "        fork.wait(s)\n", ""), "forked into the capture"),
    "no join": (2, RIGHT_PART2.replace("    for end in ends:\n        end.wait(origin)\n",
                                       ""), "never joined"),
    "join event recorded in the origin": (2, RIGHT_PART2.replace("end.record(s)",
                                                                 "end.record(origin)"),
                                          "never joined"),
    "streamed, not replayed": (3, '''
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
''', "of its own"),
    "no wait before reading": (3, RIGHT_PART3.replace("        stream.synchronize()\n", ""),
                               "nothing orders the two"),
    "launched twice a batch": (3, RIGHT_PART3.replace(
        "        graph.launch(stream)\n", "        graph.launch(stream)\n        graph.launch(stream)\n"),
        "launched 10 time(s)"),
    "the results computed on the host (a cheat)": (3, '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        graph.launch(stream)
        stream.synchronize()
        results.append([2 * chunk + 1 for chunk in batch])
    return results
''', "values are wrong"),
    "one launch for every batch": (3, '''
def run_batches(graph, stream, slots, batches):
    graph.launch(stream)
    stream.synchronize()
    return [[slot.h_out.copy() for slot in slots] for _ in batches]
''', "launched 1 time(s)"),
    # issue 56: the shape check asked only the kernels to be side by side
    "every copy out issued after the join": (1, '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
    joined = streamlab.join(*parts)
    for slot in slots:
        slot.d_out.copy_to_host(slot.h_out, stream=joined.stream)
''', "the copies out at nodes"),
    "every copy in issued before the split": (1, '''
def capture_pipeline(builder, slots):
    for slot in slots:
        slot.d_in.copy_to_device(slot.h_in, stream=builder.stream)
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
''', "the copies in at nodes"),
    "every copy out in the origin, after the join": (2, RIGHT_PART2.replace(
        "        slot.d_out.copy_to_host(slot.h_out, stream=s)\n", "").replace(
        "    for end in ends:\n        end.wait(origin)\n",
        "    for end in ends:\n        end.wait(origin)\n"
        "    for slot in slots:\n        slot.d_out.copy_to_host(slot.h_out, stream=origin)\n"),
        "the copies out at nodes"),
    "a copy out with no stream": (2, RIGHT_PART2.replace(
        "slot.d_out.copy_to_host(slot.h_out, stream=s)", "slot.d_out.copy_to_host(slot.h_out)"),
        "legacy default stream"),
    "the host waits on the branch events": (2, RIGHT_PART2.replace(
        "        ends.append(end)\n", "        end.synchronize()\n"), "cannot wait"),
    "the results kept without a copy": (3, RIGHT_PART3.replace(
        "[slot.h_out.copy() for slot in slots]", "[slot.h_out for slot in slots]"),
        "values are wrong"),
    # right on a GPU, but a read of h_out that the watched buffer cannot see (np.array
    # takes the raw buffer): refused, and the message says what to write instead
    "each h_out read with np.array (a read the check cannot see)": (3, RIGHT_PART3.replace(
        "slot.h_out.copy()", "np.array(slot.h_out, copy=True)"), "slot.h_out.copy()"),
    # a cheat: the key and the chunks read from the check's frames, the results made on
    # the host, the graph launched once a batch and h_out never read
    "the results computed on the host with the key read from the check's frames":
        (3, FRAME_SECRET, "not read after the batch's replay"),
}

_CELL = {1: "capture_pipeline", 2: "capture_with_events", 3: "run_batches"}
WRONG = {name: (_CELL[n], code, f"check_part{n}", phrase)
         for name, (n, code, phrase) in _WRONG.items()}
# Right answers in other words: each must pass its part (and every other part).
RIGHT = {name: (_CELL[n], code, f"check_part{n}") for name, (n, code) in _RIGHT.items()}
