"""Lab 05 · Host functions and asyncio: its sizes and checks.

``from streamlab.labs.lab05 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.

Both parts are judged again in the grader (``JUDGES``), from what their runs sent: the
operations recorded, and as plain data what the check can only see in the learner's
process. Part 1 sends the results list as it stood once the host functions had run, and
which host functions' ctypes objects were freed before they ran; the grader makes the
checksums from the seed. Part 2 sends the checksum returned and the event loop's turns
while the coroutine ran (when it began, each of the other task's turns, the time one
takes with the loop to itself); the grader makes the checksum, and applies every rule on
the turns (one at least; on a GPU, the longest pause and the share of the time the loop
was free). On the simulator the turns are sent as not timed, and those two rules are
skipped, as the check says; a judge on a GPU refuses a run that sent no timing. The
turns are measured in the learner's process: code that rewrites the list before it is
sent is judged on what it wrote (a known hole, kept in ``tests/test_lab_answers_later.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from time import perf_counter as _clock  # (bound here: a patched time.perf_counter is not read)

import numpy as np
from numba import cuda

import streamlab

from .. import check, hostfn
from ..ops import internal
from ..runner import Check, Inputs, run
from ..watched import watch

__all__ = ["warm_up", "CHUNK", "BUSY_NS", "fresh_device_chunks", "check_part1", "check_part2"]

CHUNK = streamlab.pick(gpu=1 << 20, sim=1 << 8)
BUSY_NS = streamlab.ms_to_ns(streamlab.pick(gpu=20, sim=1))
# Part 2's GPU work, which the coroutine awaits while another task takes its turns. With
# 20 ms, a right answer got no turn for the other task in some runs on an H100 (a fresh
# machine), and was refused: the host's own delays before its await took most of it. A
# delay longer than LONGEST_PAUSE of this (25 ms: a cold import of a large module inside
# the coroutine, say) is still refused, as any pause is; the lab's setup cell imports
# what a right answer needs.
AWAIT_NS = streamlab.ms_to_ns(streamlab.pick(gpu=100, sim=1))
# The longest the event loop may go without giving the other task a turn, as a share of
# AWAIT_NS. Right answers' longest pauses were 1.4 to 3.2 ms on an H100's host (eight
# answers, in several runs, 2026-11-26); a wrong one that waits on the host for most of
# the GPU work and awaits only its end pauses for most of the 100 ms. (Counting turns, as
# this check did before, needing 5 of them, passed a loop that stood still for 90 ms and
# was free for 10.)
LONGEST_PAUSE = 0.25
# The least share of the coroutine's time the event loop must be free for, judged by the
# other task's turns against how often it takes one with the loop to itself (measured in
# the same check, just before): a host wait cut into slices of 15 ms, each under the
# longest pause, left the loop free for about a tenth of the time.
FREE_SHARE = 0.5
CALIBRATE_S = streamlab.pick(gpu=0.02, sim=0.005)  # how long the other task runs alone


def _host_chunks(count, seed):
    rng = np.random.default_rng(seed)
    return [rng.random(CHUNK, dtype=np.float32) for _ in range(count)]


def fresh_device_chunks(count, seed=None):
    """``count`` random device chunks (landed) and the checksum of each."""
    host = _host_chunks(count, seed)
    s = cuda.stream()
    chunks = [cuda.to_device(h, stream=s) for h in host]
    s.synchronize()
    return chunks, [float(h.sum(dtype=np.float64)) for h in host]


def warm_up() -> None:
    """Compile this lab's kernels once (before any timing), on zeros (uninitialised
    memory would make the simulator warn of overflows), and quiet numba's warning about
    small grids: the labs use them on purpose."""
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    streamlab.spin[1, 1](1)
    cuda.synchronize()


@contextlib.contextmanager
def _quiet_window():
    """While a check's host functions and its timed await run: no automatic garbage
    collection (an explicit ``gc.collect()`` still runs), and numba frees nothing.

    - In the GPU tests' process, a full collection took up to 236 ms on an H100's host
      (measured), longer than the GPU work part 2 awaits. One inside the timed await
      would stop the loop for longer than the check allows, through no fault of the
      answer (a refusal of a right answer was seen in that process once; a collection
      is the likely cause, not a seen one).
    - A collection can start on the driver's host-function thread (seen there too), and
      numba frees what it finds in batches: ``cuMemFree`` there would be a CUDA call
      inside a host function, which CUDA forbids.
    - A stream the answer drops at once (``cuda.stream().handle``) is destroyed when
      numba's batch of frees runs. When that batch ran inside the window, the next call
      on that handle (``cuStreamIsCapturing``, streamlab's look at it) met a destroyed
      stream, and the process died: a segmentation fault, on an H100.

    Collecting first leaves the window little to find; ``cuda.defer_cleanup()`` holds
    numba's frees until it ends."""
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        with cuda.defer_cleanup():
            yield
    finally:
        if was_on:
            gc.enable()


def _part1_inputs(*, count, seed):
    d_chunks, _ = fresh_device_chunks(count, seed)
    h_outs = [watch(cuda.pinned_array(CHUNK, np.float32), f"h_outs[{i}]")
              for i in range(count)]
    s = cuda.stream()
    results = []
    data: dict = {}

    def call(post_process_in_order):
        post_process_in_order(d_chunks, h_outs, s, results)
        with internal():
            s.synchronize()
        deadline = _clock() + 10
        while len(results) < count and _clock() < deadline and not _all_ran(posted):
            time.sleep(0.001)
        # the data the judge reads: results as they are now (each pair as a list), and the
        # host functions whose ctypes function was freed before they ran (hostfn knows)
        data["results"] = [list(r) if isinstance(r, (list, tuple)) else r for r in results]
        data["freed"] = [op.uid for op in posted() if isinstance(
            getattr(hostfn.call_of(op.uid), "exception", None), hostfn.HostFunctionFreed)]

    def posted():  # the host functions recorded so far (this run's recording)
        return current[0].host_functions() if current else []

    current: list = []
    return Inputs(call, {"stream": s}, busy=((s, BUSY_NS),), live=current, data=data)


def _part1_rules(run, order, *, count, seed):
    ops = run.ops
    check.no_host_sync(ops, "post_process_in_order")
    mine = streamlab.StreamRef.of(run.stream("stream"))
    copies, posts = ops.copies("d2h"), ops.host_functions()
    _none_freed(posts, run.data["freed"])
    if len(copies) != count:
        check.fail(f"{len(copies)} copies back to the host for {count} chunks: copy each "
                   f"chunk into its h_outs[i], one copy_to_host per chunk (was one left "
                   f"out of the loop?)")
    if any(op.stream != mine for op in copies):
        check.fail(f"{sum(op.stream == mine for op in copies)} of the {count} copies "
                   f"went into the stream you were given: pass stream=stream to "
                   f"copy_to_host")
    if len(posts) != count or any(op.stream != mine for op in posts):
        check.fail(f"{sum(op.stream == mine for op in posts)} host functions in the "
                   f"stream for {count} chunks: one driver.cuLaunchHostFunc("
                   f"stream.handle, ...) per chunk")
    for i, (c, p) in enumerate(zip(copies, posts)):
        if p.index < c.index:
            check.fail(f"chunk {i}'s host function was put into the stream before its "
                       f"copy: it would read the buffer before the data lands")
    # each host function reads its own chunk (issue 56: results made on the host, from
    # the check's seed read out of its frames, passed while the host functions did nothing)
    for i, (c, p) in enumerate(zip(copies, posts)):
        read = [r for op in ops if op.kind == "host" and op.name == "read"
                and op.detail.get("in_host_function") == p.uid for r in op.reads]
        if not any(r.covers(w) for w in c.writes if w.host for r in read):
            other = [j for j, o in enumerate(copies) if any(
                r.covers(w) for w in o.writes if w.host for r in read)]
            if other:
                check.fail(f"chunk {i}'s host function read h_outs[{other[0]}], not "
                           f"h_outs[{i}]: a function made in the loop sees the loop "
                           f"variable as it is when it runs, not when it was made. Pass "
                           f"the chunk's number as the host function's user data")
            check.fail(f"chunk {i}'s host function never read h_outs[{i}]: each host "
                       f"function reads its own chunk's checksum when the stream reaches "
                       f"it (float(h_outs[i].sum(dtype=np.float64)); the check cannot see "
                       f"a read through np.array(h_outs[i])), and appends it to results")


def _part1_values(run, order, *, count, seed):
    """(After the race check.) The results the host functions appended, in order: each
    chunk's number and checksum, the checksums made here from the seed."""
    results = run.data["results"]
    if not isinstance(results, list) or not all(
            isinstance(r, list) and len(r) == 2 for r in results):
        check.fail("results holds something other than (chunk number, checksum) pairs: "
                   "each host function appends one, (i, float(h_outs[i].sum("
                   "dtype=np.float64)))")
    check.equal([i for i, _ in results], list(range(count)),
                "the chunk numbers in results, in order")
    check.equal([v for _, v in results],
                [float(h.sum(dtype=np.float64)) for h in _host_chunks(count, seed)],
                "the checksums in results")


# judged again in the grader (JUDGES): the results and the freed host functions sent as
# data, the checksums made there from the seed
PART1 = Check(1, f"{__name__}.check_part1", _part1_inputs, _part1_rules,
              values=_part1_values, seeded=True)


def check_part1(post_process_in_order, *, count=6, seed=None):
    """Copy each chunk out in the stream, and have the stream post-process it, in order."""
    with _quiet_window():
        run(PART1, post_process_in_order, count=count, seed=seed)


def _all_ran(posted) -> bool:
    """Has every host function recorded so far (``posted()``) run (or failed)? With none
    recorded, nothing is left to come: the check need not wait (it once waited its whole
    10 s for an answer that queued none, and a grader's time limit cut it short)."""
    calls = [hostfn.call_of(op.uid) for op in posted()]
    return all(c is None or c.done.is_set() for c in calls)


def _none_freed(posts, freed) -> None:
    """A host function whose ctypes object was freed before it ran (its uid in ``freed``,
    the run's data) fails the part (on a GPU the driver would have called freed memory)."""
    for op in posts:
        if op.uid in freed:
            check.fail(f"{op.describe()}: {hostfn.FREED}")


async def _turn_alone(seconds: float) -> float:
    """The time of one turn of the other task, in seconds, with the loop to itself: for
    about ``seconds``, the time taken over the turns taken."""
    turns, start = 0, _clock()
    end = start + seconds
    while (now := _clock()) < end:
        await asyncio.sleep(0.001)
        turns += 1
    return (now - start) / max(turns, 1)


def _part2_inputs(*, seed, limit_s):
    (d_chunk,), _ = fresh_device_chunks(1, seed)
    h_out = watch(cuda.pinned_array(CHUNK, np.float32), "h_out")
    with internal():
        np.copyto(h_out, 0)
    s = cuda.stream()
    seen = {}  # the other task's turns, and how long one takes with the loop to itself
    data: dict = {}

    async def main(checksum_when_done):
        seen["turn_s"] = await _turn_alone(CALIBRATE_S)
        with internal():
            streamlab.spin[1, 1, s](AWAIT_NS)
            d_chunk.copy_to_host(h_out, stream=s)
        # when the answer began, then each turn the other task took (from Python 3.12,
        # wait_for runs the answer in this task until its first await, before the other
        # task's first turn)
        turns = seen["turns"] = [_clock()]

        async def ticker():
            while True:
                turns.append(_clock())
                await asyncio.sleep(0.001)

        async def answer():
            seen["began"] = _clock()  # (Python 3.11 gives the other task a turn first)
            return await checksum_when_done(s, h_out)

        t = asyncio.ensure_future(ticker())
        value = await asyncio.wait_for(answer(), limit_s)
        turns.append(_clock())  # the answer's return ends the last pause
        t.cancel()
        return value

    def call(checksum_when_done):
        # In a thread with its own event loop: a coroutine that never awaits would
        # otherwise block the notebook itself; here it only fails the check. (The
        # thread's start and join are the check's own, not hand-overs of the answer's.)
        outcome = {}

        def runner():
            loop = asyncio.Runner()
            try:
                outcome["value"] = loop.run(main(checksum_when_done))
            except BaseException as exc:  # noqa: BLE001  (reported below)
                outcome["error"] = exc
            finally:  # the loop's own end (it joins its executor's threads: not the answer's)
                with internal():
                    loop.close()

        with internal():
            thread = threading.Thread(target=runner, daemon=True, name="lab05-check")
            thread.start()
            thread.join(limit_s)
        if thread.is_alive():
            turns, began = list(seen.get("turns", ())), seen.get("began")
            if began is not None and not any(t > began for t in turns[1:]):
                # (a busy loop that outlasts the limit: a slow simulator under load)
                check.fail(f"{NEVER_FREE} (after {limit_s} s it had not returned)")
            check.fail(f"checksum_when_done had not returned after {limit_s} s: it must "
                       f"await a future that a host function in the stream resolves with "
                       f"loop.call_soon_threadsafe (which wakes the loop), then return")
        if isinstance(outcome.get("error"), asyncio.TimeoutError):
            check.fail(f"checksum_when_done did not finish within {limit_s} s")
        if "error" in outcome:
            raise outcome["error"]
        # the data the judge reads: the checksum returned, and the loop's turns, measured
        # here; the thresholds are the judge's (on the simulator, not timed: "timed" False)
        data.update(checksum=outcome["value"], turns=list(seen["turns"]),
                    turn_s=seen["turn_s"], began=seen["began"],
                    timed=not streamlab.on_simulator())
        return outcome["value"]

    return Inputs(call, {"stream": s}, data=data, after=lambda run, *_: _said(run.data))


def _part2_rules(run, order, *, seed, limit_s):
    if run.ops.syncs():
        check.fail("the coroutine waited with a synchronize() (itself, or a thread it "
                   "started): await a future that a host function in the stream "
                   "resolves instead")
    if not [op for op in run.ops.user() if op.kind == "host"]:
        check.fail("the coroutine never read h_out: return its checksum, "
                   "float(h_out.sum(dtype=np.float64))")
    # then no races: reading h_out before awaiting the stream's work


def _part2_values(run, order, *, seed, limit_s):
    """(After the race check.) The checksum, made here from the seed; then the loop's
    turns while the coroutine ran (:func:`_loop_was_free`)."""
    check.equal(run.data["checksum"], float(_host_chunks(1, seed)[0].sum(dtype=np.float64)),
                "the checksum returned")
    _loop_was_free(run.data)


# judged again in the grader (JUDGES): the checksum and the loop's turns sent as data,
# every threshold applied there
PART2 = Check(2, f"{__name__}.check_part2", _part2_inputs, _part2_rules,
              values=_part2_values, seeded=True)


def check_part2(checksum_when_done, *, seed=None, limit_s=30):
    """A coroutine that awaits the stream's work without blocking the loop."""
    with _quiet_window():
        run(PART2, checksum_when_done, seed=seed, limit_s=limit_s)


NEVER_FREE = ("your coroutine never let the event loop run another task: it waited "
              "without awaiting (a loop on event.query(), say), so the loop stood still "
              "until it returned. Await a future that a host function in the stream "
              "resolves")


def _loop_numbers(data) -> tuple:
    """From the run's data: the other task's turns while the answer ran (without the
    start and the end), the share of the time the loop was free, its longest pause (ms)."""
    turns, turn_s = data["turns"], data["turn_s"]
    took = len(turns) - 2
    free = took * turn_s / (turns[-1] - turns[0])
    return took, free, max(b - a for a, b in zip(turns, turns[1:])) * 1e3


def _loop_was_free(data) -> None:
    """The other task's turns while the answer awaited (the run's data): at least one,
    anywhere; where the run was timed (on a GPU, where the GPU work is real, not a
    model's) no long pause and a loop free for most of the time. An untimed run judged
    on a GPU fails: the grader's process knows where it runs."""
    turns, began = data["turns"], data["began"]
    if not any(t > began for t in turns[1:-1]):
        check.fail(NEVER_FREE)
    if data["timed"] is not True:
        return check.untimed("the event loop")
    awaited_ms = AWAIT_NS / 1e6
    took, free, pause_ms = _loop_numbers(data)
    allowed_ms = LONGEST_PAUSE * awaited_ms
    if pause_ms > allowed_ms:
        check.fail(f"the event loop gave no other task a turn for {pause_ms:.0f} ms "
                   f"while your coroutine ran (it may pause for {allowed_ms:.0f} ms of "
                   f"the {awaited_ms:.0f} ms of GPU work): something in it waited on "
                   f"the host. Await a future that a host function in the stream "
                   f"resolves, and nothing else")
    if free < FREE_SHARE:
        check.fail(f"the event loop was free for {free:.0%} of the time your coroutine "
                   f"ran (the check needs {FREE_SHARE:.0%}): another task took {took} "
                   f"turns where, with the loop to itself, it takes one every "
                   f"{data['turn_s'] * 1e3:.1f} ms. Something in the coroutine waits on "
                   f"the host, in slices. Await a future that a host function in the "
                   f"stream resolves, and nothing else")


def _said(data) -> None:
    """Once the judge has passed, in the learner's process: what the timing came to."""
    if not data["timed"]:
        print("the other task had a turn while the coroutine awaited; how long the loop "
              "stood still is timed on a GPU only (the simulator's GPU work is a model's)")
        return
    took, free, pause_ms = _loop_numbers(data)
    # (the share is the turns' rate against the rate measured alone, just before: turns
    # that came a little faster than then read as more than all of it, 102 % on an H200)
    share = (f"free for {free:.0%} of it" if free <= 1 else
             f"free for all of it, its turns coming at {free:.0%} of the rate it has alone")
    print(f"another task took {took} turns while the coroutine awaited "
          f"{AWAIT_NS / 1e6:.0f} ms of GPU work: the event loop was {share} (the check "
          f"needs {FREE_SHARE:.0%}), and its longest pause was "
          f"{pause_ms:.1f} ms (the check allows {LONGEST_PAUSE * AWAIT_NS / 1e6:.0f})")


#: the checks the grader judges again from what they sent (streamlab.grading): the
#: record, and the data each measured in the learner's process
JUDGES = {"check_part1": (PART1.judge, 1), "check_part2": (PART2.judge, 2)}
