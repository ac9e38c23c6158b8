"""Lesson 05's exercises: host work while the GPU works (issue first, wait last); polling
an event between pieces of host work."""

from __future__ import annotations

import time

import numpy as np
from numba import cuda

from .. import check
from ..ops import internal
from ..runner import Inputs, run
from ..transcript import plain_int
from ..watched import watch
from . import BUSY_NS, N, THREADS, add_one, blocks_for, exercise_check, fresh

__all__ = ["add_one", "blocks_for", "THREADS", "N", "check_exercise1", "check_exercise2"]


def _overlap_inputs(*, seed):
    h, d_x = fresh(seed)
    h_x = watch(cuda.pinned_array(N, np.float32), "h_x")
    s = cuda.stream()
    live: list = []

    def call(overlap):
        host_work = check.HostWork(live[0])  # notes what had been issued when it began
        overlap(d_x, h_x, s, host_work)
        with internal():
            return host_work, np.array(h_x)

    return Inputs(call, {"stream": s}, busy=((s, BUSY_NS),),  # the GPU has work queued
                  returned=lambda got: ({"host_work": got[0], "h_x": got[1]}, {}),
                  after=lambda run, *_: check.equal(run.values["h_x"], h + 1, "h_x after overlap"),
                  live=live)


def _overlap_rules(run, order, *, seed):
    ops, host_work = run.ops, run.values["host_work"]
    if host_work.calls != 1:
        check.fail(f"host_work was called {host_work.calls} times: call it once")
    before = ops[:host_work.starts[0][0]]
    mine = [op for op in ops.user() if op.kind in ("launch", "copy")]
    if [(op.kind, op.stream.key()) for op in mine] != [("launch", run.key("stream")),
                                                       ("copy", run.key("stream"))]:
        check.fail("in the stream you are given: launch add_one, then copy d_x into h_x "
                   "(d_x.copy_to_host(h_x, stream=stream))")
    if not all(op in before for op in mine):
        check.fail("host_work ran before the GPU work was issued, so the GPU sat idle "
                   "while the host worked: issue the launch and the copy first")
    if any(op.kind == "sync" or getattr(op, "blocking", False) for op in before
           if not op.internal):
        check.fail("the host waited for the GPU before host_work, so they did not "
                   "overlap: wait after the host work")
    host_work.while_gpu_busy("overlap")
    if not order.host_after(mine[-1]):
        check.fail("overlap returned before the copy had landed: wait for the stream "
                   "after host_work")


EXERCISE1 = exercise_check(1, _overlap_inputs, _overlap_rules)


def check_exercise1(overlap, *, seed=None):
    """``overlap(d_x, h_x, stream, host_work)``: launch add_one over d_x and copy d_x into
    the pinned h_x, both in ``stream``; call ``host_work()`` while they run; return once
    the copy has landed."""
    run(EXERCISE1, overlap, seed=seed)


def _work():
    t = time.perf_counter()
    while time.perf_counter() - t < 1e-4:  # 0.1 ms of host work
        pass


#: exercise 2's busy work, 20 ms on the simulator too: with the usual 2 ms there, a pause
#: of the host's own (a collection, a page fault) before the learner's first query let the
#: model GPU finish first, and the solution, which then never called do_work, failed on a
#: clean-clone CI run under load
POLL_BUSY_NS = 20_000_000  # ns


def _polling_inputs():
    s = cuda.stream()
    event = cuda.event()
    live: list = []

    def call(work_while_waiting):
        with internal():
            event.record(s)  # after the check's busy work
        do_work = check.HostWork(live[0], _work)
        return do_work, work_while_waiting(event, do_work)

    return Inputs(call, busy=((s, POLL_BUSY_NS),), live=live,
                  returned=lambda got: ({"do_work": got[0], "count": got[1]}, {}))


def _polling_rules(run, order):
    ops, calls, count = run.ops, run.values["do_work"].starts, run.values["count"]
    if ops.syncs():
        check.fail(f"{ops.syncs()[0].describe()} blocks the host: poll event.query() "
                   f"between calls of do_work() instead")
    if not ops.queries():
        check.fail("the event was never queried: loop while not event.query()")
    spin = [op for op in ops if op.kind == "launch"][0]
    if not order.host_after(spin):
        check.fail("work_while_waiting returned before the event had happened: keep "
                   "calling do_work() until event.query() is True")
    if not plain_int(count) or count != len(calls):
        said = repr(count) if plain_int(count) else type(count).__name__
        check.fail(f"work_while_waiting returned {said}, but do_work ran "
                   f"{len(calls)} times: return the count")
    if not calls:
        check.fail("do_work never ran: call it while the event is not done")


def _polling_told(run, order):
    calls = run.values["do_work"].starts
    busy = run.values["do_work"].while_gpu_busy("work_while_waiting")
    print(f"do_work ran {busy} times while the GPU worked"
          + (f" ({len(calls) - busy} more after)" if busy < len(calls) else ""))


EXERCISE2 = exercise_check(2, _polling_inputs, _polling_rules, values=_polling_told)


def check_exercise2(work_while_waiting):
    """``work_while_waiting(event, do_work)`` calls ``do_work()`` again and again until
    ``event.query()`` says the event has happened, and returns how many times it called
    it. It never blocks in a synchronize."""
    run(EXERCISE2, work_while_waiting)
