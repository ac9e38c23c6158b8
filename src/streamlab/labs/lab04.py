"""Lab 04 · A pipelined copy and compute, with pinned memory: its kernel, slots and checks.

``from streamlab.labs.lab04 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.

Both parts are judged again in the grader (``JUDGES``), from what their runs sent: the
operations recorded and the outputs' digests (part 1's h_out, part 2's results as
``pipeline`` returned them), the expected values made there from the seed. Part 2's
timing, the pipeline against one stream (best of three runs each, 90% or less), is
measured in the learner's process on a GPU once every other rule has passed there, sent
as plain numbers, and judged in the grader; on the simulator nothing is timed or judged.
"""

from __future__ import annotations

import time

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..runner import Check, Inputs, run
from ..spin import globaltimer
from ..watched import watch

__all__ = ["warm_up", "CHUNK", "THREADS", "BLOCKS", "transform", "Slot", "make_slots", "fresh_chunks",
           "check_part1", "check_part2"]

THREADS = streamlab.pick(gpu=256, sim=64)  # the simulator runs each thread in Python
# On the simulator, more than one block's worth: a launch of one block cannot cover it.
CHUNK = streamlab.pick(gpu=1 << 22, sim=3 * THREADS + 9)   # floats per chunk
BLOCKS = (CHUNK + THREADS - 1) // THREADS
KERNEL_NS = streamlab.ms_to_ns(streamlab.pick(gpu=4, sim=0))


@cuda.jit
def transform(out, inp):
    """out = 2 inp + 1. It stands in for real work: on a GPU one thread also waits on the
    GPU's clock, so that the kernel takes about 4 ms, like the copies and the host's work."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * inp[i] + 1
    if i == 0 and KERNEL_NS > 0:
        start = globaltimer()
        while globaltimer() - start < KERNEL_NS:
            pass


class Slot:
    """A pinned input and output buffer, their device buffers, a stream and an event.

    The host buffers are watched (:mod:`streamlab.watched`): the checks see when the host
    writes ``h_in`` and reads ``h_out``, and whether it had waited for the copies first."""

    def __init__(self, number: int = 0):
        self.h_in = watch(cuda.pinned_array(CHUNK, np.float32), f"slot {number}'s h_in")
        self.h_out = watch(cuda.pinned_array(CHUNK, np.float32), f"slot {number}'s h_out")
        self.d_in = cuda.device_array(CHUNK, np.float32)
        self.d_out = cuda.device_array(CHUNK, np.float32)
        self.stream = cuda.stream()
        self.done = cuda.event()


def make_slots(k):
    """k slots. Pinned memory takes milliseconds to allocate: make them once, reuse them."""
    return [Slot(i) for i in range(k)]


def fresh_chunks(count, seed=None):
    """``count`` pageable host chunks, as data arrives, and the expected results."""
    rng = np.random.default_rng(seed)
    chunks = [rng.random(CHUNK, dtype=np.float32) for _ in range(count)]
    return chunks, [2 * c + 1 for c in chunks]


def warm_up() -> None:
    """Compile this lab's kernels once (before any timing), on zeros (uninitialised
    memory would make the simulator warn of overflows), and quiet numba's warning about
    small grids: the labs use them on purpose."""
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    transform[BLOCKS, THREADS](cuda.to_device(np.zeros(CHUNK, np.float32)),
                               cuda.to_device(np.zeros(CHUNK, np.float32)))
    cuda.synchronize()


def _part1_inputs(*, seed):
    (chunk,), _ = fresh_chunks(1, seed)
    h_in = watch(cuda.pinned_array(CHUNK, np.float32), "h_in")
    h_out = watch(cuda.pinned_array(CHUNK, np.float32), "h_out")
    np.copyto(h_in, chunk)
    d_in, d_out = cuda.device_array(CHUNK, np.float32), cuda.device_array(CHUNK, np.float32)
    s = streamlab.stream(nonblocking=True)
    return Inputs(lambda fn: fn(h_in, h_out, d_in, d_out, s), {"s": s}, {"h_out": h_out})


def _part1_rules(run, order, *, seed):
    ops = run.ops
    check.no_host_sync(ops, "copy_compute_copy")
    mine = ops.on_stream(run.stream("s"))
    steps = [(op.kind, op.name) for op in mine]
    if steps != [("copy", "h2d"), ("launch", "transform"), ("copy", "d2h")]:
        others = [op.describe() for op in ops.user() if op not in mine and op.kind != "host"]
        check.fail(f"in the stream you were given: {steps}; expected copy in, transform, "
                   f"copy out, in that order" +
                   (f". Issued elsewhere: {others}" if others else ""))


# judged again in the grader (JUDGES), its expected output made there from the seed
PART1 = Check(1, f"{__name__}.check_part1", _part1_inputs, _part1_rules,
              lambda *, seed: {"h_out": (fresh_chunks(1, seed)[1][0], "h_out")},
              seeded=True)


def check_part1(copy_compute_copy, *, seed=None):
    """Copy in, transform, copy out: three operations in the given stream, not waited for."""
    run(PART1, copy_compute_copy, seed=seed)


def serial(chunks, slot, copy_compute_copy):
    """The one-stream version, for the timing comparison."""
    out = []
    for chunk in chunks:
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        slot.stream.synchronize()
        out.append(slot.h_out.copy())
    return out


def _waited_for(ops, sync):
    """The stream a host synchronize waited for (None: the whole device)."""
    if sync.name == "stream":
        return sync.stream.key()
    record = ops.recorded_before(sync) if sync.name == "event" else None
    return record.stream.key() if record is not None else None


def _part2_inputs(*, count, k, seed):
    chunks, _ = fresh_chunks(count, seed)
    slots = make_slots(k)

    def timings(_trace, functions):
        """The pipeline against one stream, three runs each, in ms (on a GPU only: the
        simulator runs everything in order), for the judge to compare."""
        if streamlab.on_simulator():
            return {"pipeline_ms": None, "serial_ms": None}
        pipeline, copy_compute_copy = functions
        times = {"serial_ms": [], "pipeline_ms": []}
        one = make_slots(1)[0]
        for _ in range(3):
            for name, again in (("serial_ms", lambda: serial(chunks, one, copy_compute_copy)),
                                ("pipeline_ms", lambda: pipeline(chunks, slots))):
                t0 = time.perf_counter()
                again()
                times[name].append((time.perf_counter() - t0) * 1000)
        return times

    def said(run, _trace, _functions):
        if streamlab.on_simulator():
            print("timing not checked on the simulator (it runs everything in order)")
            return
        piped, one_stream = min(run.data["pipeline_ms"]), min(run.data["serial_ms"])
        print(f"{count} chunks, {k} slots: pipeline {piped:.1f} ms, one stream "
              f"{one_stream:.1f} ms ({piped / one_stream:.0%}; the check needs 90% or less)")

    return Inputs(lambda pipeline, _: pipeline(chunks, slots),
                  returned=lambda results: _results(results, count), measure=timings,
                  after=said)


def _results(results, count):
    """What pipeline returned, as the run's outputs (``result i``: each array as it was
    when the function returned); anything but a list of ``count`` fails here."""
    if not isinstance(results, list) or len(results) != count:
        check.fail(f"pipeline returned {type(results).__name__} of length "
                   f"{len(results) if hasattr(results, '__len__') else '?'}; expected a "
                   f"list of {count} arrays, in chunk order")
    missing = [i for i, got in enumerate(results) if got is None]
    if missing:
        check.fail(f"result {missing[0]} of {count} was None when pipeline returned: were "
                   f"the last chunks collected once the loop ended? Wait for each of the "
                   f"last k slots and copy out its h_out (what pipeline returns is read "
                   f"when it returns: a result filled in later, by a host function say, "
                   f"is not)")
    return {}, {}, {f"result {i}": np.array(got, copy=True) if isinstance(got, np.ndarray)
                    else got for i, got in enumerate(results)}


def _part2_rules(run, order, *, count, k, seed):
    ops = run.ops
    pageable = [op for op in ops.copies() if op.name in ("h2d", "d2h") and not op.pinned]
    if pageable:
        check.fail(f"{len(pageable)} of {len(ops.copies())} copies used pageable host "
                   f"memory: copy through the slots' pinned buffers")
    if any(op.name == "device" for op in ops.syncs()):
        check.fail("you called cuda.synchronize(), which waits for every slot at once: "
                   "wait for the one slot you are about to reuse")
    streams = {op.stream.key() for op in ops.launches("transform")}
    if len(streams) < min(k, count):
        check.fail(f"the kernels went to {len(streams)} stream(s); use {min(k, count)}, "
                   f"chunk i in slot i % k and its stream")
    if any(op.stream.is_legacy_default for op in ops.launches("transform")):
        check.fail("a kernel went to the legacy default stream: use the slots' streams")
    if len(ops.copies("h2d")) != count:
        check.fail(f"{len(ops.copies('h2d'))} copies to the GPU for {count} chunks: one per "
                   f"chunk")
    # the slots' own host buffers, k of each (issue 56: work issued through buffers of the
    # code's own, never waited for, while the results were made on the host, passed)
    used = [{(r.alloc, r.lo, r.hi) for op in ops.copies(d) for r in getattr(op, side) if r.host}
            for d, side in (("h2d", "reads"), ("d2h", "writes"))]
    if any(len(u) != min(k, count) for u in used):
        check.fail(f"the copies went through {len(used[0])} host buffer(s) in and "
                   f"{len(used[1])} out, for {min(k, count)} slots: copy each chunk in "
                   f"from its slot's h_in and out to its slot's h_out, the slots' own "
                   f"pinned buffers")


def _part2_waits(run, order, *, count, k, seed):
    # (after the race check: a slot's buffers touched by the host before its copies were
    # done is a race, said as one)
    ops, copies_in = run.ops, run.ops.copies("h2d")
    for sync in ops.syncs():  # a wait must be for the slot the next chunk reuses
        after = [op for op in copies_in if op.index > sync.index]
        if after and _waited_for(ops, sync) != after[0].stream.key():
            chunk = copies_in.index(after[0])
            check.fail(f"before issuing chunk {chunk} you waited for a slot other than "
                       f"its own (slot {chunk % k}): the GPU then sits idle while the "
                       f"host waits. Wait for a slot only when you are about to reuse it")


def _part2_timing(run, *, count, k, seed):
    """On a GPU, the best of three pipeline runs took 90% or less of the best of three on
    one stream (the run's data, timed in the learner's process); not judged on the
    simulator, which runs everything in order."""
    if streamlab.on_simulator():
        return
    times = [run.data.get("pipeline_ms"), run.data.get("serial_ms")]
    if not all(isinstance(t, list) and len(t) == 3 and all(
            type(ms) in (int, float) and ms > 0 for ms in t) for t in times):
        check.fail("the grader received no timings of your pipeline: this part scores nothing")
    piped, one_stream = min(times[0]), min(times[1])
    if piped > 0.9 * one_stream:
        check.fail(f"your pipeline took {piped:.1f} ms against {one_stream:.1f} ms for one stream "
                   f"({piped / one_stream:.0%}; the check needs 90% or less). The slots gain only "
                   f"while the host issues the next chunk as the GPU works: is something waiting "
                   f"for more than the slot it needs, or is there host work between the waits "
                   f"(each result converted, say: that alone lost the gain on an H200)?")


# judged again in the grader (JUDGES): the record, the results (made there from the
# seed) and, on a GPU, the timings the run sent
PART2 = Check(2, f"{__name__}.check_part2", _part2_inputs, _part2_rules,
              lambda *, count, k, seed: {f"result {i}": (want, f"result {i}") for i, want
                                         in enumerate(fresh_chunks(count, seed)[1])},
              values=_part2_waits, seeded=True, timing=_part2_timing)


def check_part2(pipeline, copy_compute_copy, *, count=8, k=3, seed=None):
    """Every chunk through the slots in rotation, each slot waited for only when reused."""
    run(PART2, pipeline, copy_compute_copy, count=count, k=k, seed=seed)


#: the checks the grader judges again from what they sent (streamlab.grading)
JUDGES = {"check_part1": (PART1.judge, 1), "check_part2": (PART2.judge, 2)}
