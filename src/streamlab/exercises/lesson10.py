"""The capstone's exercises: a pipeline's bound from its stages' totals; one step of the
pipeline, which reuses a slot only once its event says the slot's last chunk is done."""

from __future__ import annotations

import numpy as np
from numba import cuda

import streamlab

from .. import check
from ..ops import internal
from ..runner import Inputs, run
from ..watched import watch
from . import BUSY_NS, N, THREADS, blocks_for, exercise, exercise_check

__all__ = ["transform", "blocks_for", "THREADS", "check_exercise1", "check_exercise2"]

RESOURCES = ("host", "copy in", "kernel", "copy out")


@cuda.jit
def transform(inp, out):
    """out[i] = 2 inp[i] + 1, one thread an element: a chunk's work."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * inp[i] + 1


def _cases(rng):
    """Stage totals (ms) with each resource the slowest in turn, a serial time and a
    number of chunks."""
    for slowest in RESOURCES:
        totals = {name: float(rng.uniform(5, 40)) for name in RESOURCES}
        totals[slowest] = float(rng.uniform(60, 90))
        n = int(rng.integers(4, 64))
        yield totals, sum(totals.values()) + float(rng.uniform(1, 10)), n


def check_exercise1(pipeline_bound, *, seed=None):
    """``pipeline_bound(totals, serial_ms, n_chunks)``: ``totals`` maps each resource
    ("host", "copy in", "kernel", "copy out") to its total ms over the job. Return the
    bound: the slowest resource's total, plus the time to fill and drain the pipeline,
    estimated as one chunk's time through the other stages of the serial run,
    (serial_ms - slowest) / n_chunks."""
    with exercise(1, pipeline_bound):
        rng = np.random.default_rng(seed)
        for totals, serial_ms, n in _cases(rng):
            slowest = max(totals.values())
            want = slowest + (serial_ms - slowest) / n
            got = pipeline_bound(dict(totals), serial_ms, n)
            if not check.plain_number(got):
                check.fail(f"pipeline_bound returned {type(got).__name__}: return the bound "
                           f"in ms, a number")
            if abs(got - want) <= 1e-6 * want:
                continue
            said = ", ".join(f"{k} {v:.2f}" for k, v in totals.items())
            case = f"for totals of {said} ms, serial_ms={serial_ms:.2f} and n_chunks={n}"
            if abs(got - slowest) <= 1e-6 * want:
                check.fail(f"pipeline_bound returned the slowest total alone, {got:.2f} ms, "
                           f"{case}: that is the floor. A pipeline also fills and drains: "
                           f"add (serial_ms - slowest) / n_chunks")
            if abs(got - sum(totals.values())) <= 1e-6 * want:
                check.fail(f"pipeline_bound returned the sum of the totals, {got:.2f} ms, "
                           f"{case}: in a pipeline the resources work at once, so only "
                           f"the slowest one's total counts, plus filling and draining")
            check.fail(f"pipeline_bound returned {got:.2f} ms {case}; the bound is "
                       f"{want:.2f} ms: the slowest total, plus (serial_ms - slowest) / "
                       f"n_chunks")
        print(f"right for {len(RESOURCES)} jobs, each with a different slowest resource")


def _slot(i: int) -> dict:
    slot = {"h_in": watch(cuda.pinned_array(N, np.float32), f"slot {i}'s h_in"),
            "h_out": watch(cuda.pinned_array(N, np.float32), f"slot {i}'s h_out"),
            "d_in": cuda.to_device(np.zeros(N, np.float32)),
            "d_out": cuda.to_device(np.zeros(N, np.float32)),
            "done": cuda.event()}
    slot["h_in"].view(np.ndarray)[:] = 0.0
    slot["h_out"].view(np.ndarray)[:] = 0.0  # the slot's last chunk: zeros, checksum 0
    return slot


def _chunks(chunks, seed):
    rng = np.random.default_rng(seed)
    return [rng.random(N, dtype=np.float32) for _ in range(chunks)]


def _sums(chunks, seed):
    return [float((2 * x + 1).sum(dtype=np.float64)) for x in _chunks(chunks, seed)]


def _step_inputs(*, chunks, seed):
    data = _chunks(chunks, seed)
    slots, streams = [_slot(0), _slot(1)], [cuda.stream(), cuda.stream()]
    with internal():
        transform[1, 1](slots[0]["d_in"][:1], slots[0]["d_out"][:1])  # compiled
        cuda.synchronize()

    def call(next_chunk):
        got = []
        with internal():
            for slot, s in zip(slots, streams):
                slot["done"].record(s)
        for i, x in enumerate(data):
            slot, s = slots[i % 2], streams[i % 2]
            with internal():  # the stream is still busy: a missing wait would show
                streamlab.spin[1, 1, s](BUSY_NS)
            got.append(next_chunk(slot, x, s))
        with internal():  # the caller drains: the last chunk of each slot
            for slot in slots:
                slot["done"].synchronize()
                got.append(float(slot["h_out"].sum(dtype=np.float64)))
        return got

    return Inputs(call, {"stream 0": streams[0], "stream 1": streams[1]},
                  returned=lambda got: ({"got": got}, {}))


def _step_rules(run, order, *, chunks, seed):
    ops = run.ops
    check.pinned_copies_only(ops, "next_chunk")
    whole = [op for op in ops.syncs() if op.name == "device"]
    if whole:
        check.fail(f"{whole[0].describe()} waits for every stream, the other slot's work "
                   f"too, so the slots stop overlapping: wait for the slot's own event, "
                   f"slot['done'].synchronize()")
    key = {run.key("stream 0"), run.key("stream 1")}
    for kind in ("h2d", "d2h"):
        if len([op for op in ops.copies(kind) if op.stream.key() in key]) != chunks:
            check.fail("each call issues one copy in (slot['d_in'].copy_to_device("
                       "slot['h_in'], stream=stream)) and one copy out (slot['d_out']"
                       ".copy_to_host(slot['h_out'], stream=stream)), in its stream")
    if len(ops.launches("transform")) != chunks:
        check.fail("each call launches transform once, in its stream: "
                   "transform[blocks_for(x.size), THREADS, stream](slot['d_in'], "
                   "slot['d_out'])")


def _step_sums(run, order, *, chunks, seed):
    got, sums = run.values["got"], _sums(chunks, seed)
    want = [0.0, 0.0] + sums
    for i, (g, w) in enumerate(zip(got[:chunks], want)):
        if not check.plain_number(g):
            check.fail(f"call {i + 1} returned {type(g).__name__}, not a number: return "
                       f"the slot's last checksum, float(slot['h_out'].sum(dtype=np.float64))")
        if abs(g - w) > 1e-4 * max(1.0, abs(w)):
            if abs(g - sums[i]) <= 1e-4 * abs(sums[i]):
                check.fail(f"call {i + 1} returned the checksum of the chunk it was "
                           f"given, computed on the host: return the slot's last "
                           f"chunk's, read from slot['h_out'] once its event has "
                           f"happened")
            check.fail(f"call {i + 1} returned {g!r}; the slot's last chunk sums to {w!r}"
                       + (" (the slot starts with a chunk of zeros)" if i < 2 else ""))
    for i, (g, w) in enumerate(zip(got[chunks:], sums[-2:])):
        if abs(g - w) > 1e-4 * abs(w):
            check.fail(f"after the last calls, slot {i}'s h_out sums to {g!r}, not {w!r}: "
                       f"did the last chunk's copy out and event go to its stream?")
    print(f"{chunks} chunks through two slots, every checksum right")


EXERCISE2 = exercise_check(2, _step_inputs, _step_rules, values=_step_sums, seeded=True)


def check_exercise2(next_chunk, *, chunks=6, seed=None):
    """``next_chunk(slot, x, stream)``: the slot (a dict of pinned h_in and h_out, device
    d_in and d_out, and an event done) holds a chunk issued earlier in ``stream``, whose
    done event was recorded after its copy out. Wait for that event, take the checksum of
    slot["h_out"] (its sum, in float64), then put x into slot["h_in"], issue the copy in,
    transform (d_in into d_out) and the copy out in ``stream``, record done after them,
    and return the checksum. The check runs chunks through two slots, one stream each."""
    run(EXERCISE2, next_chunk, chunks=chunks, seed=seed)
