"""Lab 08 · Priorities and issue order: its kernels, sizes and checks.

``from streamlab.labs.lab08 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.

On a GPU the kernels stamp the GPU's own clock (``%globaltimer``): the background keeps
the time its last block ended, the urgent kernel the time it started. That is how part 1's
check sees whether the urgent kernel jumped the queue, without an event in any stream.

Both parts are judged again in the grader (``JUDGES``), from what their runs sent: the
operations recorded, the outputs' digests (the grader makes the expected ones from the
seed) and, as plain data, what a GPU timed: part 1's head start of the urgent kernel (the
two stamps read once the device is done), part 2's timed streams' spans and the time the
code took to issue its kernels. The grader applies the thresholds. On the simulator the
timings are sent as None and their rules skipped, as the check says; a judge on a GPU
refuses a run that sent none.
"""

from __future__ import annotations

import time

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..check import order_culprits
from ..runner import Check, Inputs, run
from ..streams import priority_range

__all__ = ["warm_up", "BLOCKS", "THREADS", "BLOCK_NS", "STEP_NS", "N_STREAMS", "X_SIZE",
           "background", "urgent", "step_a", "step_b", "check_part1", "check_part2"]

_GPU = not streamlab.on_simulator()
_SMS = cuda.get_current_device().MULTIPROCESSOR_COUNT if _GPU else 1
BLOCKS = streamlab.pick(gpu=2 * _SMS * 10, sim=2)   # ten waves of blocks on a GPU
THREADS = streamlab.pick(gpu=1024, sim=1)
BLOCK_NS = streamlab.pick(gpu=200_000, sim=20_000)  # each background block: 0.2 ms
STEP_NS = streamlab.pick(gpu=20_000_000, sim=20_000)  # each step kernel: 20 ms
N_STREAMS = 32                                       # part 2, as in simpleHyperQ
X_SIZE = 8                                           # elements per stream in part 2

if _GPU:
    from ..spin import globaltimer

    @cuda.jit(device=True)
    def _clock():
        return globaltimer()

    @cuda.jit(device=True)
    def _busy(ns):
        start = globaltimer()
        while globaltimer() - start < ns:
            pass
else:
    @cuda.jit(device=True)
    def _clock():
        return 1  # the simulator has no GPU clock: the stamps only say "it ran"

    @cuda.jit(device=True)
    def _busy(ns):
        cuda.nanosleep(ns)


@cuda.jit
def background(ns, last_end):
    """Keep every thread busy for ``ns`` ns; ``last_end[0]``: when the last block ended
    (the GPU's clock in ns)."""
    _busy(ns)
    if cuda.threadIdx.x == 0:
        cuda.atomic.max(last_end, 0, _clock())


@cuda.jit
def urgent(out, started):
    """The latency-sensitive kernel: ``out[i] = 2 i``; ``started[0]``: when it began."""
    i = cuda.grid(1)
    if i == 0:
        started[0] = _clock()
    if i < out.size:
        out[i] = 2.0 * i


@cuda.jit
def step_a(x, ns):
    """Step A of a stream's work (one thread): a while of work, then ``x += 1``."""
    _busy(ns)
    for i in range(x.size):
        x[i] += 1.0


@cuda.jit
def step_b(x, ns):
    """Step B needs step A's result (one thread): a while of work, then ``x *= 2``."""
    _busy(ns)
    for i in range(x.size):
        x[i] *= 2.0


def warm_up() -> None:
    """Compile this lab's kernels once, before any timing, and quiet numba's warning about
    small grids (the lab uses them on purpose)."""
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    stamp = cuda.to_device(np.zeros(1, np.uint64))
    background[1, 1](0, stamp)
    urgent[1, 32](cuda.device_array(32, np.float32), stamp)
    x = cuda.to_device(np.zeros(X_SIZE, np.float32))
    step_a[1, 1](x, 0)
    step_b[1, 1](x, 0)
    cuda.synchronize()


def _stream_text(op) -> str:
    return f"{op.stream.kind} stream of priority {op.stream.priority}"


def _part1_inputs(*, kernels, seed):
    least, greatest = priority_range()  # asked before the learner's code runs
    size = _part1_size(seed)   # one block of 32 threads covers it
    last_end = cuda.to_device(np.zeros(1, np.uint64))
    started = cuda.to_device(np.zeros(1, np.uint64))
    out = cuda.to_device(np.full(size, -1.0, np.float32))
    cuda.synchronize()

    def stamps(_trace, _functions):
        """Once the device is done: how long before the background ended the urgent
        kernel started, by the GPU's clock (ms; None on the simulator, which has none)."""
        if streamlab.on_simulator():
            return {"ahead_ms": None}
        return {"ahead_ms": (int(last_end.copy_to_host()[0])
                             - int(started.copy_to_host()[0])) / 1e6}

    def said(run, *_):
        if run.data["ahead_ms"] is None:
            print("timing not checked on the simulator (it has no priorities)")
        else:
            print(f"the urgent kernel started {run.data['ahead_ms']:.2f} ms before the "
                  f"background ({_background_ms(kernels):.0f} ms) ended")

    return Inputs(lambda fn: fn(BLOCK_NS, last_end, out, started), outputs={"out": out},
                  returned=lambda _: ({"least priority": least,
                                       "greatest priority": greatest}, {}),
                  measure=stamps, after=said)


def _background_ms(kernels) -> float:
    """How long the background runs alone on a GPU (ms): ten waves of blocks a kernel."""
    return kernels * (BLOCKS // (2 * _SMS)) * BLOCK_NS / 1e6




def _part1_size(seed) -> int:
    """How many of ``out``'s elements the urgent kernel fills (16 to 32), from the seed."""
    return int(np.random.default_rng(seed).integers(16, 33))


def _part1_rules(run, order, *, kernels, seed):
    ops = run.ops
    least, greatest = run.values["least priority"], run.values["greatest priority"]
    check.no_host_sync(ops, "launch_urgent")
    bg, ur = ops.launches("background"), ops.launches("urgent")
    if len(bg) != kernels or len(ur) != 1:
        check.fail(f"{len(bg)} background launches and {len(ur)} urgent ones: launch "
                   f"`background[BLOCKS, THREADS, s](work_ns, last_end)` {kernels} times, "
                   f"then `urgent[1, 32, u](out, started)` once")
    ur = ur[0]
    for k, op in enumerate(bg):
        if op.stream.priority != least:
            check.fail(f"background kernel {k} is on a {_stream_text(op)}: background "
                       f"work belongs on the lowest priority, {least} (the default of "
                       f"cuda.core's StreamOptions(); lower numbers run first)")
    if ur.stream.priority != greatest:
        check.fail(f"the urgent kernel is on a {_stream_text(ur)}: give it the highest "
                   f"priority, {greatest}. Lower numbers run first; "
                   f"driver.cuCtxGetStreamPriorityRange() gives (err, lowest, highest) = "
                   f"(0, {least}, {greatest})")
    if ur.uid < max(op.uid for op in bg):
        check.fail("the urgent kernel was issued before the background: issue it last, "
                   "as work that arrives while the background runs")
    for k, op in enumerate(bg):
        if order.ordered(op, ur):
            why = next(order_culprits(order, op, ur), None)
            check.fail(f"the urgent kernel must wait for background kernel {k}"
                       f"{': ' + why if why else ''}. Priority cannot help a kernel that "
                       f"waits for the background")


def _part1_values(run, order, *, kernels, seed):
    """(After the race check.) ``out``, made here from the seed; then, on a GPU, the
    urgent kernel's head start (the run's data) against the background's time."""
    run.equal("out", 2.0 * np.arange(_part1_size(seed), dtype=np.float32), "out")
    ahead_ms, total_ms = run.data["ahead_ms"], _background_ms(kernels)
    if ahead_ms is None:
        check.untimed("the urgent kernel's start")
    elif ahead_ms < total_ms / 4:
        check.fail(f"the urgent kernel started only {ahead_ms:.2f} ms before the "
                   f"background ended ({total_ms:.0f} ms of it): it waited behind the "
                   f"background. Check its stream's priority")


# judged again in the grader (JUDGES): its expected output made there from the seed, the
# urgent kernel's head start (read from the GPU's clock) sent as data
PART1 = Check(1, f"{__name__}.check_part1", _part1_inputs, _part1_rules,
              values=_part1_values, seeded=True)


def check_part1(launch_urgent, *, kernels=4, seed=None):
    """Background on the lowest priority, the urgent kernel last, on the highest; on a GPU
    the urgent kernel starts well before the background ends."""
    run(PART1, launch_urgent, kernels=kernels, seed=seed)


def _part2_start(count, seed) -> list:
    """Each stream's x before the steps, from the seed (whole numbers, 0 to 99)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 100, X_SIZE).astype(np.float32) for _ in range(count)]


def _part2_inputs(*, count, seed):
    streams = [cuda.stream() for _ in range(count)]
    xs = [cuda.to_device(h) for h in _part2_start(count, seed)]
    cuda.synchronize()
    data: dict = {}

    def call(issue_breadth_first):
        t0 = time.perf_counter()
        issue_breadth_first(streams, xs, STEP_NS)
        data["issue_ms"] = (time.perf_counter() - t0) * 1000

    def spans(trace, _functions):
        """The timed streams' spans, as plain values (None on the simulator, whose model
        has no hardware queues): the judge takes their makespan."""
        if streamlab.on_simulator():
            return {"spans": None}
        return {"spans": [[s.name, s.start_ms, s.end_ms] for s in trace.spans]}

    def said(run, *_):
        if run.data["spans"] is None:
            print("timing not checked on the simulator (its model has no hardware queues)")
            return
        took, allowed = _makespan(run.data)[1:]
        print(f"{2 * count} kernels of {STEP_NS / 1e6:.0f} ms on {count} streams took "
              f"{took:.1f} ms (issued in {run.data['issue_ms']:.1f} ms; the check allows "
              f"{allowed:.1f} ms)")

    return Inputs(call, {f"streams[{i}]": s for i, s in enumerate(streams)},
                  {f"stream {i}'s x": x for i, x in enumerate(xs)},
                  timed=tuple(streams), measure=spans, after=said, data=data)


def _makespan(data) -> tuple:
    """From the run's data (spans measured on a GPU): the trace, its makespan and the
    most it may take (ms)."""
    from ..trace import Span, Trace

    trace = Trace.from_spans([Span(n, n, "kernel", a, b) for n, a, b in data["spans"]])
    # breadth-first: the A's together, then the B's (2 steps), after the host's issue
    # time; depth-first on 8 queues: a queue's streams one after another (5 steps at 32)
    return trace, trace.metrics().makespan_ms, 3 * STEP_NS / 1e6 + data["issue_ms"]


def _part2_rules(run, order, *, count, seed):
    ops = run.ops
    streams = list(run.streams.values())
    check.no_host_sync(ops, "issue_breadth_first")
    check.one_launch_per_stream(ops, "step_a", streams)
    check.one_launch_per_stream(ops, "step_b", streams)
    a, b = ops.launches("step_a"), ops.launches("step_b")
    # each step works step_ns (given 0, the kernels end at once and any order is quick)
    given = [op.detail.get("scalars", {}).get("ns") for op in a + b]
    if any(ns != STEP_NS for ns in given):
        other = next(ns for ns in given if ns != STEP_NS)
        check.fail(f"a step was given ns={other!r}, not the step_ns your function "
                   f"received ({STEP_NS}): pass step_ns on to every step_a and step_b")
    first_b = min(b, key=lambda op: op.uid)
    late_a = [op for op in a if op.uid > first_b.uid]
    if late_a:
        check.fail(f"a step_b was issued before {len(late_a)} step_a launch(es): that is "
                   f"depth-first (A0 B0 A1 B1 ...), where each B blocks a hardware queue "
                   f"until its A ends. Issue every step_a first, then every step_b")


def _part2_values(run, order, *, count, seed):
    """(After the race check.) Each stream's x is (x + 1) * 2, made here from the seed;
    then, on a GPU, the kernels' makespan (the run's data) well under depth-first's."""
    for i, h in enumerate(_part2_start(count, seed)):
        run.equal(f"stream {i}'s x", (h + 1) * 2, f"stream {i}'s x")
    if run.data["spans"] is None:
        check.untimed("the kernels")
        return
    trace, took, allowed = _makespan(run.data)
    if took > allowed:
        check.fail_with_timeline(
            trace, f"{2 * count} kernels of {STEP_NS / 1e6:.0f} ms took {took:.1f} ms: "
                   f"more than {allowed:.1f} ms (three kernels' time, plus the "
                   f"{run.data['issue_ms']:.1f} ms your code took to issue them). "
                   f"Breadth-first, the A's run together, then the B's")


# judged again in the grader (JUDGES): the expected x's made there from the seed, the
# spans the GPU measured and the time the code took to issue the kernels sent as data
PART2 = Check(2, f"{__name__}.check_part2", _part2_inputs, _part2_rules,
              values=_part2_values, seeded=True, named_races=True)


def check_part2(issue_breadth_first, *, count=N_STREAMS, seed=None):
    """Every step_a before any step_b, each stream's B after its A in that stream; on a
    GPU, the 2 x count kernels take well under depth-first's time."""
    run(PART2, issue_breadth_first, count=count, seed=seed)


#: the checks the grader judges again from what they saw (streamlab.grading), the GPU's
#: timings included (read in the learner's process, sent as data, judged there)
JUDGES = {"check_part1": (PART1.judge, 1), "check_part2": (PART2.judge, 2)}
