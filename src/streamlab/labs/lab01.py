"""Lab 01 · Eight kernels at once: its kernels, sizes and checks.

``from streamlab.labs.lab01 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.

Every part is judged again in the grader (``JUDGES``), from what its run sent: the
operations recorded, the outputs' digests (expected values made there from the seed),
and the timings as plain numbers. Parts 1 and 2 send the best of their three runs, with
each stream's span (measured on a GPU, placed by the model GPU on the simulator): the
grader judges that run's record and how much its spans overlapped. Part 3 sends how long
``wait_for`` waited and whether the other stream's work was still running then, judged
on a GPU only (the simulator runs everything in order), as in the notebook.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..check import none_ordered
from ..ops import internal
from ..runner import Check, Inputs, run

__all__ = ["warm_up", "N", "REPS", "work", "dummy_kernel", "reference", "fresh_inputs",
           "check_part1", "check_part2", "check_part3"]

# On the simulator, more elements than one block of 64 threads has: every thread loops.
N = streamlab.pick(gpu=1 << 20, sim=3 * 64 + 5)   # elements per stream
REPS = streamlab.pick(gpu=48, sim=1)               # work per element


@cuda.jit
def work(out, inp, reps):
    """One block of 64 threads is plenty of room for eight of these at once."""
    tid = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    for i in range(tid, out.size, cuda.blockDim.x * cuda.gridDim.x):
        v = inp[i]
        acc = np.float32(0.0)
        for k in range(reps):
            acc = acc * np.float32(0.5) + math.sin(v + np.float32(k))
        out[i] = acc


#: what one launch of ``work`` takes on the simulator's model GPU, in ms: about what it
#: takes on a GPU (62 ms on an H100; a GPU test holds it within a factor of two), so that
#: the model's timeline of a right answer, or of one that waits between its launches,
#: looks like a GPU's. The simulator's own problem is far smaller (``N``, ``REPS``), and
#: the model would time it as a few microseconds, less than the host takes to launch it.
MODEL_WORK_MS = 60
streamlab.kernel_cost(work, MODEL_WORK_MS)


@cuda.jit
def dummy_kernel(x):
    """The post's dummy kernel: it does nothing, quickly."""
    pass


def reference(x, reps=REPS):
    """What ``work`` computes, in numpy (float32, like the GPU)."""
    acc = np.zeros_like(x)
    for k in range(reps):
        acc = acc * np.float32(0.5) + np.sin(x + np.float32(k))
    return acc


def fresh_inputs(count, seed=None):
    """``count`` random device arrays (landed: synchronized) and the results ``work``
    must produce from them."""
    rng = np.random.default_rng(seed)
    host = [rng.random(N, dtype=np.float32) * 10 for _ in range(count)]
    s = cuda.stream()
    inputs = [cuda.to_device(h, stream=s) for h in host]
    s.synchronize()
    return inputs, [reference(h) for h in host]


def warm_up() -> None:
    """Compile this lab's kernels once (before any timing), on zeros (uninitialised
    memory would make the simulator warn of overflows), and quiet numba's warning about
    small grids: the labs use them on purpose."""
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    a, b = cuda.to_device(np.zeros(N, np.float32)), cuda.to_device(np.zeros(N, np.float32))
    work[1, 64](a, b, 1)
    dummy_kernel[1, 1](cuda.to_device(np.zeros(1, np.float32)))
    streamlab.spin[1, 1](1)
    cuda.synchronize()


def _workers(name, what, with_dummy):
    """The inputs and rules of parts 1 and 2: fresh inputs on fresh streams, the learner's
    function given them; no host sync, one worker launch per stream, none ordered (with
    ``with_dummy``, one dummy launch per worker). ``name`` and ``what`` name the function
    and its kernels in the messages."""

    def arrange(*, count, seed, nonblocking=False):
        streams = [streamlab.stream(nonblocking=True) if nonblocking else cuda.stream()
                   for _ in range(count)]
        inputs, expected = fresh_inputs(count, seed)
        outputs = [cuda.device_array(N, np.float32) for _ in range(count)]
        args = (inputs, outputs, streams)
        if with_dummy:
            args += (cuda.device_array(1, np.float32),)
        return Inputs(lambda fn: fn(*args),
                      {f"stream {i}": s for i, s in enumerate(streams)},
                      {f"output {i}": out for i, out in enumerate(outputs)},
                      expected={f"output {i}": (exp, f"output {i}")
                                for i, exp in enumerate(expected)},
                      timed=tuple(streams))

    def rules(run, order, *, count, seed, nonblocking=False):
        ops = run.ops
        streams = [run.stream(f"stream {i}") for i in range(count)]
        check.no_host_sync(ops, name)
        check.one_launch_per_stream(ops, "work", streams)
        dummies = ops.launches("dummy_kernel")
        if with_dummy and len(dummies) != count:
            check.fail(f"{len(dummies)} dummy_kernel launches for {count} worker launches: "
                       f"launch one dummy after each worker")
        none_ordered(order, ops.launches("work"), what)

    return arrange, rules


def _expected(*, count, seed, **_):
    """Each output as the grader makes it from the seed, to compare with the output's
    digest: ``work`` itself run on the inputs, on this machine's GPU (or simulator), since
    a GPU's sin differs from numpy's in the last bits. (The learner's process compares the
    outputs themselves with :func:`reference`'s, within a tolerance.)"""
    inputs, _ = fresh_inputs(count, seed)
    made = {}
    for i, inp in enumerate(inputs):
        out = cuda.device_array(N, np.float32)
        work[(N + 255) // 256, 256](out, inp, REPS)
        made[f"output {i}"] = (out.copy_to_host(), f"output {i}")
    return made


# judged again in the grader (JUDGES): the best run's record, and its spans' overlap
PART1 = Check(1, f"{__name__}.check_part1", *_workers("launch_on_streams", "kernel", False),
              expected=_expected, seeded=True,
              overlap=lambda *, count, **_: (0.65 * count,
                                             f"{count} kernels on {count} streams"),
              tolerance={"rtol": 1e-4, "atol": 1e-5})


def check_part1(launch_on_streams, *, count=8, nonblocking=False, seed=None):
    """One ``work`` launch per stream, none waiting for another, the host not waiting."""
    run(PART1, launch_on_streams, count=count, nonblocking=nonblocking, seed=seed)


PART2 = Check(2, f"{__name__}.check_part2",
              *_workers("launch_with_dummies", "worker kernel", True),
              expected=_expected, seeded=True,
              overlap=lambda *, count, **_: (0.65 * count,
                                             f"{count} kernels with dummies between them"),
              tolerance={"rtol": 1e-4, "atol": 1e-5})


def check_part2(launch_with_dummies, *, count=8, seed=None):
    """As part 1, with a dummy kernel after each worker, and the workers still free to
    run at once."""
    run(PART2, launch_with_dummies, count=count, seed=seed)


def _part3_inputs(*, short_ms, long_ms):
    mine, other = cuda.stream(), cuda.stream()
    data: dict = {}

    def call(wait_for):
        with internal():
            streamlab.spin[1, 1, other](streamlab.ms_to_ns(long_ms))
            other_done = cuda.event()
            other_done.record(other)
            streamlab.spin[1, 1, mine](streamlab.ms_to_ns(short_ms))
        t0 = time.perf_counter()
        wait_for(mine)
        data["waited_ms"] = (time.perf_counter() - t0) * 1000
        with internal():  # the other stream's work still running: not waited for
            data["other_running"] = not other_done.query()

    def said(run, _trace, _functions):
        other.synchronize()  # its 60 ms end with the check
        if streamlab.on_simulator():
            print("timing not checked on the simulator (it runs everything in order)")
            return
        waited_ms, other_running = data["waited_ms"], data["other_running"]
        print(f"wait_for waited {waited_ms:.1f} ms for its stream's {short_ms} ms of "
              f"work (the other stream had {long_ms} ms"
              + (", still running when it returned)" if other_running else
                 f"; the check allows {(short_ms + long_ms) / 2:.1f} ms)"))

    return Inputs(call, {"mine": mine, "other": other}, after=said, data=data)


def _part3_rules(run, order, *, short_ms, long_ms):
    ops = run.ops
    spin_other, spin_mine = [op for op in ops if op.kind == "launch"][:2]
    if not order.host_after(spin_mine):
        check.fail("wait_for returned without waiting for the stream's work: "
                   "stream.synchronize() waits for it (so does an event recorded in the "
                   "stream, then event.synchronize())")
    if order.host_after(spin_other):
        check.fail("wait_for also waited for another stream's work: wait for the "
                   "stream you are given alone (stream.synchronize(), not "
                   "cuda.synchronize())")


def _part3_timing(run, *, short_ms, long_ms):
    """On a GPU, how long wait_for waited (the run's data): no longer than half of both
    streams' work, unless the other stream's was still running when it returned. (Host
    time alone can mislead: a GPU shared with another process's work runs both streams
    late, and a right answer once waited 145 ms on an H100; while the other stream's work
    is still running, it was not waited for.) Not judged on the simulator, which runs
    everything in order."""
    if streamlab.on_simulator():
        return
    waited_ms, other_running = run.data.get("waited_ms"), run.data.get("other_running")
    if type(other_running) is not bool or type(waited_ms) not in (int, float):
        check.fail("the grader received no timing of wait_for: this part scores nothing")
    if not other_running and waited_ms > (short_ms + long_ms) / 2:
        check.fail(f"wait_for waited {waited_ms:.0f} ms: as long as the other stream's "
                   f"{long_ms} ms of work, not just this stream's {short_ms} ms")


# judged again in the grader (JUDGES): the record, then the time waited, on a GPU
PART3 = Check(3, f"{__name__}.check_part3", _part3_inputs, _part3_rules,
              timing=_part3_timing)


def check_part3(wait_for, *, short_ms=5, long_ms=60):
    """``wait_for(stream)`` returns once that stream's work is done, and does not wait
    for another stream's."""
    run(PART3, wait_for, short_ms=short_ms, long_ms=long_ms)


#: the checks the grader judges again from what they sent (streamlab.grading)
JUDGES = {"check_part1": (PART1.judge, 1), "check_part2": (PART2.judge, 2),
          "check_part3": (PART3.judge, 3)}
