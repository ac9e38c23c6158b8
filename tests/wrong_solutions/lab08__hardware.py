"""Wrong solutions to lab 08 that its checks must reject, each with the feedback expected,
and right answers in other words that they must pass.

Each entry: name -> (the graded function's grade_id, the code, the check cell, [a phrase
its message must contain]).
"""

WRONG = {
    "urgent at priority 0, read as the highest": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    low = streamlab.stream(priority=-5)
    high = streamlab.stream(priority=0)
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    urgent[1, 32, high](out, started)
''', "check_part1", "belongs on the lowest priority"),

    "urgent on a plain numba stream": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    low = cuda.stream()
    high = cuda.stream()
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    urgent[1, 32, high](out, started)
''', "check_part1", "give it the highest priority"),

    "urgent in the background's stream": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    s = streamlab.stream(priority=streamlab.priority_range()[0])
    for _ in range(4):
        background[BLOCKS, THREADS, s](work_ns, last_end)
    urgent[1, 32, s](out, started)
''', "check_part1", "give it the highest priority"),

    "both streams at the highest priority": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    greatest = streamlab.priority_range()[1]
    low, high = streamlab.stream(priority=greatest), streamlab.stream(priority=greatest)
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    urgent[1, 32, high](out, started)
''', "check_part1", "belongs on the lowest priority"),

    "urgent issued first": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    least, greatest = streamlab.priority_range()
    low, high = streamlab.stream(priority=least), streamlab.stream(priority=greatest)
    urgent[1, 32, high](out, started)
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
''', "check_part1", "issued before the background"),

    "the host waits for the background first": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    least, greatest = streamlab.priority_range()
    low, high = streamlab.stream(priority=least), streamlab.stream(priority=greatest)
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    low.synchronize()
    urgent[1, 32, high](out, started)
''', "check_part1", "you synchronized the host"),

    "background on the legacy default stream": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    high = streamlab.stream(priority=streamlab.priority_range()[1])
    for _ in range(4):
        background[BLOCKS, THREADS](work_ns, last_end)
    urgent[1, 32, high](out, started)
''', "check_part1", "must wait for background kernel"),

    "urgent made to wait for the background by an event": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    least, greatest = streamlab.priority_range()
    low, high = streamlab.stream(priority=least), streamlab.stream(priority=greatest)
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    done = cuda.event()
    done.record(low)
    done.wait(high)
    urgent[1, 32, high](out, started)
''', "check_part1", "must wait for background kernel"),

    "depth-first": ("issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    for s, x in zip(streams, xs):
        step_a[1, 1, s](x, step_ns)
        step_b[1, 1, s](x, step_ns)
''', "check_part2", "depth-first"),

    "each B in the next stream": ("issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    for s, x in zip(streams, xs):
        step_a[1, 1, s](x, step_ns)
    for i, x in enumerate(xs):
        step_b[1, 1, streams[(i + 1) % len(streams)]](x, step_ns)
''', "check_part2", "in streams[1]"),

    "the host waits between the A's and the B's": ("issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    for s, x in zip(streams, xs):
        step_a[1, 1, s](x, step_ns)
    cuda.synchronize()
    for s, x in zip(streams, xs):
        step_b[1, 1, s](x, step_ns)
''', "check_part2", "you synchronized the host"),

    "everything in the first stream": ("issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    for x in xs:
        step_a[1, 1, streams[0]](x, step_ns)
    for x in xs:
        step_b[1, 1, streams[0]](x, step_ns)
''', "check_part2", "stream 0 got"),

    "B before A": ("issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    for s, x in zip(streams, xs):
        step_b[1, 1, s](x, step_ns)
    for s, x in zip(streams, xs):
        step_a[1, 1, s](x, step_ns)
''', "check_part2", "depth-first"),
}

RIGHT = {
    "the priorities typed in, non-blocking streams": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    low = streamlab.stream(nonblocking=True)            # the default: the lowest priority
    high = streamlab.stream(nonblocking=True, priority=streamlab.priority_range()[1])
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    urgent[1, 32, high](out, started)
''', "check_part1"),

    "each background kernel on a low stream of its own": ("launch_urgent", '''
def launch_urgent(work_ns, last_end, out, started):
    least, greatest = streamlab.priority_range()
    for _ in range(4):
        background[BLOCKS, THREADS, streamlab.stream(priority=least)](work_ns, last_end)
    urgent[1, 32, streamlab.stream(priority=greatest)](out, started)
''', "check_part1"),

    "breadth-first, the B's in reverse order": ("issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    pairs = list(zip(streams, xs))
    for s, x in pairs:
        step_a[1, 1, s](x, step_ns)
    for s, x in reversed(pairs):
        step_b[1, 1, s](x, step_ns)
''', "check_part2"),

    "breadth-first by index": ("issue_breadth_first", '''
def issue_breadth_first(streams, xs, step_ns):
    for step in (step_a, step_b):
        for i in range(len(streams)):
            step[1, 1, streams[i]](xs[i], step_ns)
''', "check_part2"),
}
