"""Wrong solutions to lab 08 that its checks must reject, and right answers in other
words (see lab01's file for the format). Each wrong one is one change to a right answer,
made with str.replace so that the change is what a reader sees; the parts are numbered
here and turned into the format at the end."""

RIGHT_PART1 = '''
from cuda.core import Device, StreamOptions

def launch_urgent(work_ns, last_end, out, started):
    err, least, greatest = driver.cuCtxGetStreamPriorityRange()
    dev = Device()
    low = dev.create_stream(options=StreamOptions(priority=least))
    high = dev.create_stream(options=StreamOptions(priority=greatest))
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    urgent[1, 32, high](out, started)
'''

_LOW = "low = dev.create_stream(options=StreamOptions(priority=least))"
_HIGH = "high = dev.create_stream(options=StreamOptions(priority=greatest))"

RIGHT_PART2 = '''
def issue_breadth_first(streams, xs, step_ns):
    for s, x in zip(streams, xs):
        step_a[1, 1, s](x, step_ns)
    for s, x in zip(streams, xs):
        step_b[1, 1, s](x, step_ns)
'''

_BACKGROUND = "    for _ in range(4):\n        background[BLOCKS, THREADS, low](work_ns, last_end)\n"
_URGENT = "    urgent[1, 32, high](out, started)\n"

_WRONG = {
    "urgent at priority 0, read as the highest": (1, RIGHT_PART1.replace(
        "err, least, greatest = driver.cuCtxGetStreamPriorityRange()",
        "err, greatest, least = driver.cuCtxGetStreamPriorityRange()"),
        "belongs on the lowest priority"),
    "urgent on a plain numba stream": (1, RIGHT_PART1.replace(_HIGH, "high = cuda.stream()"),
                                       "give it the highest priority"),
    "urgent on a cuda.core stream with the default options (the lowest priority)": (
        1, RIGHT_PART1.replace(_HIGH, "high = dev.create_stream()"),
        "give it the highest priority"),
    "plain numba streams given a priority attribute by hand": (1, RIGHT_PART1.replace(
        _LOW, "low = cuda.stream()\n    low.priority = least").replace(
        _HIGH, "high = cuda.stream()\n    high.priority = greatest"),
        "give it the highest priority"),
    "urgent in the background's stream": (1, RIGHT_PART1.replace(
        "urgent[1, 32, high]", "urgent[1, 32, low]"), "give it the highest priority"),
    "both streams at the highest priority": (1, RIGHT_PART1.replace(
        _LOW, _LOW.replace("least", "greatest")), "belongs on the lowest priority"),
    "urgent issued first": (1, RIGHT_PART1.replace(_BACKGROUND + _URGENT, _URGENT + _BACKGROUND),
                            "issued before the background"),
    "the host waits for the background first": (1, RIGHT_PART1.replace(
        _URGENT, "    low.sync()\n" + _URGENT), "you synchronized the host"),
    "the host waits for the background through an event first": (1, RIGHT_PART1.replace(
        _URGENT, "    low.record().sync()\n" + _URGENT), "you synchronized the host"),
    "background on the legacy default stream, urgent on a blocking stream": (1, RIGHT_PART1.replace(
        "background[BLOCKS, THREADS, low]", "background[BLOCKS, THREADS]").replace(
        _HIGH, "high = dev.create_stream(options=StreamOptions(nonblocking=False, "
               "priority=greatest))"),
        "must wait for background kernel"),
    "urgent made to wait for the background by an event": (1, RIGHT_PART1.replace(
        _URGENT, "    done = cuda.event()\n    done.record(low)\n    done.wait(high)\n" + _URGENT),
        "must wait for background kernel"),
    "urgent made to wait for the background stream (cuda.core's wait)": (1, RIGHT_PART1.replace(
        _URGENT, "    high.wait(low)\n" + _URGENT), "must wait for background kernel"),
    "depth-first": (2, RIGHT_PART2.replace(
        "        step_a[1, 1, s](x, step_ns)\n    for s, x in zip(streams, xs):\n",
        "        step_a[1, 1, s](x, step_ns)\n"), "depth-first"),
    "each B in the next stream": (2, RIGHT_PART2.replace(
        "    for s, x in zip(streams, xs):\n        step_b[1, 1, s]",
        "    for s, x in zip(streams[1:] + streams[:1], xs):\n        step_b[1, 1, s]"),
        "in streams[1]"),
    "the host waits between the A's and the B's": (2, RIGHT_PART2.replace(
        "    for s, x in zip(streams, xs):\n        step_b",
        "    cuda.synchronize()\n    for s, x in zip(streams, xs):\n        step_b"),
        "you synchronized the host"),
    "everything in the first stream": (2, RIGHT_PART2.replace("[1, 1, s]", "[1, 1, streams[0]]"),
                                       "stream number 1 of the"),
    "B before A": (2, RIGHT_PART2.replace("step_a", "STEP").replace("step_b", "step_a")
                   .replace("STEP", "step_b"), "depth-first"),
    # (passed before: steps of no work end at once, so no order is slow)
    "the steps given 0 ns of work, not step_ns": (2, RIGHT_PART2.replace(
        "(x, step_ns)", "(x, 0)"), "pass step_ns on"),
    "step_a given step_ns, step_b a tenth of it": (2, RIGHT_PART2.replace(
        "step_b[1, 1, s](x, step_ns)", "step_b[1, 1, s](x, step_ns // 10)"),
        "pass step_ns on"),
}

_RIGHT = {
    "cuda.core's default options for the background (the lowest priority)": (1, RIGHT_PART1.replace(
        _LOW, "low = dev.create_stream()      # the default: non-blocking, the lowest priority")),
    "options as a dict, blocking streams": (1, RIGHT_PART1.replace(
        _LOW, 'low = dev.create_stream(options={"nonblocking": False, "priority": least})').replace(
        _HIGH, 'high = dev.create_stream(options={"nonblocking": False, "priority": greatest})')),
    "each background kernel on a low stream of its own": (1, '''
from cuda.core import Device, StreamOptions

def launch_urgent(work_ns, last_end, out, started):
    least, greatest = streamlab.priority_range()
    for _ in range(4):
        s = Device().create_stream(options=StreamOptions(priority=least))
        background[BLOCKS, THREADS, s](work_ns, last_end)
    urgent[1, 32, Device().create_stream(options=StreamOptions(priority=greatest))](out, started)
'''),
    # the legacy default stream has the lowest priority, and a non-blocking stream does
    # not wait for it: the urgent kernel still starts at once
    "background on the legacy default stream, urgent on a non-blocking stream": (
        1, RIGHT_PART1.replace("background[BLOCKS, THREADS, low]", "background[BLOCKS, THREADS]")),
    "streamlab's driver call, numba streams": (1, '''
def launch_urgent(work_ns, last_end, out, started):
    least, greatest = streamlab.priority_range()
    low = streamlab.stream(priority=least)
    high = streamlab.stream(priority=greatest)
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    urgent[1, 32, high](out, started)
'''),
    "breadth-first, the B's in reverse order": (2, RIGHT_PART2.replace(
        "    for s, x in zip(streams, xs):\n        step_b",
        "    for s, x in reversed(list(zip(streams, xs))):\n        step_b")),
    "breadth-first from a list of pairs made first": (2, '''
def issue_breadth_first(streams, xs, step_ns):
    pairs = list(zip(streams, xs))
    for step in (step_a, step_b):
        for s, x in pairs:
            step[1, 1, s](x, step_ns)
'''),
    "breadth-first by index": (2, '''
def issue_breadth_first(streams, xs, step_ns):
    for step in (step_a, step_b):
        for i in range(len(streams)):
            step[1, 1, streams[i]](xs[i], step_ns)
'''),
}

_CELL = {1: "launch_urgent", 2: "issue_breadth_first"}
WRONG = {name: (_CELL[n], code, f"check_part{n}", phrase)
         for name, (n, code, phrase) in _WRONG.items()}
# Right answers in other words: each must pass its part (and every other part).
RIGHT = {name: (_CELL[n], code, f"check_part{n}") for name, (n, code) in _RIGHT.items()}

for _name, (_cell, _code, *_rest) in {**WRONG, **RIGHT}.items():   # every replace took
    assert _code not in (RIGHT_PART1, RIGHT_PART2), f"{_name}: the change did not apply"
