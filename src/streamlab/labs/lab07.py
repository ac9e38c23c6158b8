"""Lab 07 · A streamed pipeline captured as one CUDA graph: its kernel, slots and checks.

``from streamlab.labs.lab07 import *`` in the lab's setup cell; each graded cell calls
one check. See :mod:`streamlab.labs` for what every check shares.

Parts 1 and 2 read the graph itself (:func:`streamlab.graph_shape`: cuda.core's graph on
a GPU, the stand-in's record on the simulator), never the learner's code: k branches of
copy in, kernel, copy out, side by side, joined at the end. A synchronize, an event's
query or work on the legacy default stream inside the capture fails as on a GPU, with the
GPU's error, explained. A copy of another host buffer than the slot's (a pageable copy
made at capture time) is replayed as captured, and the results say so. Part 3 judges the
loop that replays a graph the check made, which adds a key to every result on the GPU:
the graph launched once a batch, no copies or launches of the loop's own, and each
batch's results read from the slots' h_out (watched: :mod:`streamlab.watched`) after
that batch's replay finished.

Every part is judged again in the grader (``JUDGES``), from what its run sent: the
operations recorded, the graph's shape as plain values (parts 1 and 2), the outputs'
digests. The grader makes every expected value itself from the check's random seed (part
3's key included), so a secret of the check's is no help: a loop that computes the
results on the host, with the key read from the check's frames, still never read h_out
after a replay, and scores nothing. Part 3's timing on a GPU is printed, not graded.
"""

from __future__ import annotations

import time

import numpy as np
from numba import cuda

import streamlab

from .. import check, ops
from ..graph_types import GraphShape
from ..graphs import end_capture, graph_builder, graph_shape
from ..runner import Check, Inputs, run, synchronized
from ..spin import globaltimer
from ..watched import watch

__all__ = ["warm_up", "CHUNK", "THREADS", "BLOCKS", "K", "transform", "Slot", "make_slots",
           "fresh_batches", "check_part1", "check_part2", "check_part3"]

# on the simulator every GPU thread is a Python thread: small blocks keep the checks quick
THREADS = streamlab.pick(gpu=256, sim=32)  # the simulator runs each thread in Python
CHUNK = streamlab.pick(gpu=1 << 20, sim=2 * THREADS + 5)  # floats per chunk (a part block)
BLOCKS = (CHUNK + THREADS - 1) // THREADS
K = 4  # slots, and branches of the graph
KERNEL_NS = streamlab.ms_to_ns(streamlab.pick(gpu=0.05, sim=0))  # a short kernel: launches matter


@cuda.jit
def transform(out, inp):
    """out = 2 inp + 1; on a GPU one thread also waits 50 us on the GPU's clock, a short
    kernel of the kind whose launches cost the host more than the GPU's work."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * inp[i] + 1
    if i == 0 and KERNEL_NS > 0:
        start = globaltimer()
        while globaltimer() - start < KERNEL_NS:
            pass


@cuda.jit
def _add_key(out, key):
    """out += key: part 3's check adds it inside its graph (see _check_graph)."""
    i = cuda.grid(1)
    if i < out.size:
        out[i] = out[i] + key


class Slot:
    """A pinned input and output buffer and their device buffers: one branch's memory.
    A graph copies the same buffers at every replay, so they are made once."""

    def __init__(self, number: int = 0):
        # zeroed: a wrong answer that reads a buffer before filling it reads zeros, never
        # garbage that makes the simulator warn
        self.h_in = watch(cuda.pinned_array(CHUNK, np.float32), f"slot {number}'s h_in")
        self.h_out = watch(cuda.pinned_array(CHUNK, np.float32), f"slot {number}'s h_out")
        self.h_in.view(np.ndarray)[:] = 0.0
        self.h_out.view(np.ndarray)[:] = 0.0
        self.d_in = cuda.to_device(np.zeros(CHUNK, np.float32))
        self.d_out = cuda.to_device(np.zeros(CHUNK, np.float32))


def make_slots(k=K):
    """k slots (pinned memory takes milliseconds to allocate: make them once)."""
    return [Slot(i) for i in range(k)]


def fresh_batches(count, k=K, seed=None):
    """``count`` batches of k pageable chunks each, and the expected results."""
    rng = np.random.default_rng(seed)
    batches = [[rng.random(CHUNK, dtype=np.float32) for _ in range(k)] for _ in range(count)]
    return batches, [[2 * c + 1 for c in batch] for batch in batches]


def warm_up() -> None:
    """Compile the kernel once, on zeros, and quiet numba's small-grid warning."""
    import warnings

    from numba.cuda.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)
    zeros = cuda.to_device(np.zeros(CHUNK, np.float32))
    transform[BLOCKS, THREADS](zeros, cuda.to_device(np.zeros(CHUNK, np.float32)))
    _add_key[BLOCKS, THREADS](zeros, np.float32(0))
    cuda.synchronize()


# --- what the graph must be -------------------------------------------------------------
def no_capture_left_open() -> None:
    """Fail clearly when a capture is still open in this process (on a GPU, a refused
    call inside a split capture can leave streams capturing after the check ended it):
    every synchronize would then be refused, and the check's own errors would mislead."""
    synchronized("a graph capture from an earlier run is still open in this kernel, so the "
                 "GPU refuses every synchronize ({error}). Restart the kernel (Kernel > "
                 "Restart) and run the lab again from the top.")


def explain_capture_error(exc, label: str):
    """Fail with what a refused graph capture's error code means, and what to change."""
    text = str(exc)
    for code, advice in (
            ("CAPTURE_UNJOINED", "a branch was never joined back: join every branch before "
                                 "the capture ends"),
            ("CAPTURE_ISOLATION", "a capturing stream waited on an event recorded outside "
                                  "the capture: each stream must first be forked into the "
                                  "capture, by waiting on an event recorded in the origin "
                                  "after the capture began; work on a stream that was never "
                                  "forked runs at once and is not in the graph"),
            ("CAPTURE_UNSUPPORTED", "a call the capture cannot hold (a synchronize, or an "
                                    "allocation): inside a capture, only issue work to the "
                                    "capturing streams, with the slots' buffers"),
            ("CAPTURED_EVENT", "an event recorded in the capture was queried or waited on "
                               "by the host: inside a capture nothing runs, so the host "
                               "cannot wait; join streams with event.wait(stream) instead"),
            ("CAPTURE_IMPLICIT", "work went to the legacy default stream (a copy or launch "
                                 "without a stream) while a blocking stream was capturing: "
                                 "give every call its branch's stream"),
            ("CAPTURE_INVALIDATED", "an earlier call in the capture was refused, which "
                                    "invalidated it"),
            ("has been invalidated", "an earlier call in the capture was refused, which "
                                     "invalidated it")):
        if code in text:
            check.fail(f"{label}: {advice}. CUDA said: {text}")
    raise exc


def pipeline_shape_ok(shape, k: int, label: str) -> None:
    """k kernels, each after its own copy in and before its own copy out, all k branches
    side by side (no two kernels, copies in or copies out chained); nothing else."""
    kernels = shape.of("kernel")
    ins, outs = shape.of("copy h2d"), shape.of("copy d2h")
    others = [n for n in shape.nodes if n.kind not in ("kernel", "copy h2d", "copy d2h",
                                                       "empty")]
    if not kernels and not ins:
        check.fail(f"{label} captured no work at all. Was it issued to a stream that was "
                   f"being captured? Work issued elsewhere runs at once and is not in the "
                   f"graph")
    if len(kernels) != k or len(ins) != k or len(outs) != k or others:
        check.fail(f"{label} captured {len(ins)} copies in, {len(kernels)} kernels and "
                   f"{len(outs)} copies out" +
                   (f" and {', '.join(n.describe() for n in others)}" if others else "") +
                   f"; expected {k} of each, one per slot, and nothing else. The graph:\n"
                   f"{shape.describe()}\nWork issued to a stream that is not being "
                   f"captured runs at once, and is not in the graph.")
    if any(n.name and n.name != "transform" for n in kernels):
        check.fail(f"{label}: the kernels must be transform, got "
                   f"{sorted({n.name for n in kernels})}")
    for kern in kernels:
        if not any(shape.reaches(c.index, kern.index) for c in ins):
            check.fail(f"{label}: a kernel (node {kern.index}) follows no copy in: it may "
                       f"read its input before it arrives. Copy in, then launch, in the same "
                       f"branch. The graph:\n{shape.describe()}")
        if not any(shape.reaches(kern.index, c.index) for c in outs):
            check.fail(f"{label}: no copy out follows the kernel at node {kern.index}: the "
                       f"copy may read d_out before it is written. The graph:\n"
                       f"{shape.describe()}")
    # every stage side by side, not the kernels alone: copies out issued after the join
    # (or copies in before the split) run one after another, on one copy engine's queue
    for what, nodes in (("kernels", kernels), ("copies in", ins), ("copies out", outs)):
        serial = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]
                  if not shape.concurrent(a.index, b.index)]
        if serial:
            a, b = serial[0]
            check.fail(f"{label}: the {what} at nodes {a.index} and {b.index} run one after "
                       f"the other: {len(serial)} pair(s) of them are chained. Each slot's "
                       f"work (its copy in, kernel and copy out) needs a branch of its own, "
                       f"side by side, between the split and the join. The graph:\n"
                       f"{shape.describe()}")


def _captured(number: int, label: str, forked: bool) -> Check:
    """Part 1 or 2 (judged again in the grader, JUDGES): the learner's capture (from a
    builder, or from numba streams ``forked`` from a capturing origin), ended and
    explained where CUDA refused it; the graph's shape read (the run's data, judged by
    :func:`pipeline_shape_ok`); then the graph launched once on fresh data, each slot's
    h_out the run's output (:func:`_replayed_right`)."""

    def arrange(*, k, seed):
        no_capture_left_open()
        slots, origin = make_slots(k), cuda.stream()
        streams = [cuda.stream() for _ in range(k)] if forked else []
        builder = graph_builder(origin if forked else None).begin_building()
        data: dict = {}

        def call(capture):
            # the capture is recorded as the check's own: what it issues does not run now,
            # and the race check would judge it as if it had (against the check's h_in
            # filled below); the simulator records nothing in a capture. The graph's shape
            # is what parts 1 and 2 judge
            try:
                with ops.internal(around_learner_code=True):
                    capture(*((origin, streams, slots) if forked else (builder, slots)))
                    builder.end_building()
            except Exception as exc:  # noqa: BLE001  (a refused capture, explained)
                end_capture(builder)
                explain_capture_error(exc, label)
            shape = graph_shape(builder)
            data["graph"] = shape.plain()
            pipeline_shape_ok(shape, k, label)  # (judged again from the data: not launched)
            with ops.internal():
                graph = builder.complete()
                for slot, chunk in zip(slots, fresh_batches(1, k, seed)[0][0]):
                    np.copyto(slot.h_in, chunk)  # after the capture: read at each replay
                graph.launch(streamlab.core_stream(origin))  # (the runner waits for it)

        return Inputs(call, outputs={f"slot {i}'s h_out": s.h_out for i, s in enumerate(slots)},
                      data=data)

    return Check(number, f"{__name__}.check_part{number}", arrange,
                 lambda run, order, *, k, seed: pipeline_shape_ok(
                     GraphShape.from_plain(run.data["graph"]), k, label),
                 values=_replayed_right, seeded=True)


def _replayed_right(run, order, *, k, seed):
    """Each slot's h_out after one launch is 2 h_in + 1, the data made from the seed."""
    for i, want in enumerate(fresh_batches(1, k, seed)[1][0]):
        try:
            run.equal(f"slot {i}'s h_out", want, f"slot {i}'s h_out after one graph launch")
        except streamlab.CheckFailed as failed:
            check.fail(f"{failed} A graph replays the copies it captured, with the buffers "
                       f"they named: each slot's copies must name slot.h_in and slot.h_out "
                       f"themselves (a copy of np.array(slot.h_in) copies a snapshot taken "
                       f"at capture time).")


PART1 = _captured(1, "capture_pipeline", forked=False)
PART2 = _captured(2, "capture_with_events", forked=True)


def check_part1(capture_pipeline, *, k=K, seed=None):
    """The pipeline captured with a GraphBuilder: split into k branches, joined."""
    run(PART1, capture_pipeline, k=k, seed=seed)


def check_part2(capture_with_events, *, k=K, seed=None):
    """The same graph captured from numba streams forked and joined by events."""
    run(PART2, capture_with_events, k=k, seed=seed)


class RecordedGraph:
    """The graph the learner replays. On a GPU, where cuda.core's launch is not observed,
    each launch is recorded as the simulator's replay is: the launch (the learner's), and
    the graph's copies (the slots' h_in read, h_out written, in the launch's stream, the
    check's own), so that the judge counts the launches and sees a result read before the
    replay finished."""

    def __init__(self, graph, slots=()):
        self._graph = graph
        self._slots = list(slots)

    def launch(self, stream) -> None:
        """Launch the graph into ``stream`` (a numba stream will do)."""
        self._graph.launch(streamlab.core_stream(stream))
        if not streamlab.on_simulator() and self._slots:
            _record_replay(stream, self._slots)

    def upload(self, stream) -> None:
        """Upload the graph in ``stream`` (optional: it makes the first launch cheaper)."""
        self._graph.upload(streamlab.core_stream(stream))

    def __repr__(self):
        return "<the captured pipeline>"


def _record_replay(stream, slots) -> None:
    """The graph's copies, recorded as the replay's (internal) work in ``stream``."""
    from ..kernels import copy_op
    from ..regions import region_of

    if not ops.observing():
        return
    ops.emit("graph", "launch", stream, detail={"nodes": 4 * len(slots)})  # the learner's
    with ops.internal():
        for i, slot in enumerate(slots):
            for direction, host, dev, end in (("h2d", slot.h_in, slot.d_in, "in"),
                                              ("d2h", slot.h_out, slot.d_out, "out")):
                copy_op(direction, stream, host=region_of(host, f"slot {i}'s h_{end}"),
                        device=region_of(dev, f"slot {i}'s d_{end}"),
                        pinned=True, synchronous=False)


def _check_graph(slots, key):
    """Part 3's graph: the pipeline, plus a key added on the GPU, so that results
    computed on the host as 2 x + 1 are wrong."""
    builder = graph_builder().begin_building()
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        _add_key[BLOCKS, THREADS, p](slot.d_out, key)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts).end_building()
    return builder.complete()


def _streamed(batches, slots, streams, key):
    out = []
    for batch in batches:
        for slot, s, chunk in zip(slots, streams, batch):
            np.copyto(slot.h_in, chunk)
            slot.d_in.copy_to_device(slot.h_in, stream=s)
            transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
            _add_key[BLOCKS, THREADS, s](slot.d_out, key)
            slot.d_out.copy_to_host(slot.h_out, stream=s)
        for s in streams:
            s.synchronize()
        out.append([slot.h_out.copy() for slot in slots])
    return out


def _key(seed) -> np.float32:
    """What part 3's graph adds to every result (from 1 to 2), from the random seed."""
    return np.float32(np.random.default_rng(seed).uniform(1.0, 2.0))


def _results(results, *, count, k):
    """What run_batches returned, as the run's outputs (``batch b, chunk i``: each array
    as it was when the function returned); a list of another shape fails here."""
    if not isinstance(results, list) or len(results) != count:
        check.fail(f"run_batches returned {type(results).__name__} of length "
                   f"{len(results) if hasattr(results, '__len__') else '?'}; expected "
                   f"a list of {count} lists (one per batch) of {k} arrays")
    outputs = {}
    for b, got in enumerate(results):
        if not isinstance(got, (list, tuple)):
            check.fail(f"batch {b}: run_batches returned {type(got).__name__} for it, not a "
                       f"list of its {k} results (filled in later, by a host function say? "
                       f"What a function returns is read when it returns: wait, then read "
                       f"the slots' h_out)")
        if len(got) != k:
            check.fail(f"batch {b}: {len(got)} results for {k} chunks")
        outputs.update({f"batch {b}, chunk {i}": np.array(a, copy=True)
                        if isinstance(a, np.ndarray) else a for i, a in enumerate(got)})
    return {}, {}, outputs


def _part3_inputs(*, count, k, seed):
    no_capture_left_open()
    slots = make_slots(k)
    key = _key(seed)
    graph = RecordedGraph(_check_graph(slots, key), slots)
    stream = cuda.stream()
    batches, _ = fresh_batches(count, k, seed)

    def timed(run, _trace, functions):
        """On a GPU, the replay beside streams, printed."""
        if streamlab.on_simulator():
            print("timing not checked on the simulator (its model charges a graph launch; "
                  "the GPU measures it)")
            return
        (run_batches,) = functions
        streams = [cuda.stream() for _ in range(k)]
        best = {"graph": [], "streams": []}
        for _ in range(3):
            for name, again in (("graph", lambda: run_batches(graph, stream, slots, batches)),
                                ("streams", lambda: _streamed(batches, slots, streams, key))):
                t0 = time.perf_counter()
                again()
                best[name].append((time.perf_counter() - t0) * 1000 / count)
        graphed, streamed = min(best["graph"]), min(best["streams"])
        # printed, not graded: which is faster moves between runs of a right answer (on an
        # H100, 84 % in one run and 101 % in another). The replay's one call per batch is
        # graded, by what the loop issued.
        print(f"{count} batches of {k} chunks: graph {graphed:.3f} ms a batch, streams "
              f"{streamed:.3f} ms ({graphed / streamed:.0%}; timed for you to compare, "
              f"not graded)")

    return Inputs(lambda run_batches: run_batches(graph, stream, slots, batches),
                  {"stream": stream},
                  returned=lambda results: _results(results, count=count, k=k), after=timed)


def _part3_rules(run, order, *, count, k, seed):
    ops = run.ops
    if ops.launches() or ops.copies():
        what = (ops.launches() + ops.copies())[0].describe()
        check.fail(f"run_batches issued {len(ops.launches())} kernel launch(es) and "
                   f"{len(ops.copies())} copies of its own (the first: {what}): the "
                   f"graph already holds every copy and kernel. Fill the slots' h_in, "
                   f"launch the graph, wait, read h_out")
    if len(ops.graph_launches()) != count:
        check.fail(f"the graph was launched {len(ops.graph_launches())} time(s) for {count} "
                   f"batches: launch it once per batch (a new capture per batch pays "
                   f"the host's cost again, and is not this graph)")


def _part3_results(run, order, *, count, k, seed):
    """(After the race check: h_out read, or h_in refilled, before the replay had
    finished.) Each result is the expected one, made here, the key included; and each
    batch's results were read from the slots' h_out after that batch's replay."""
    _, expected = fresh_batches(count, k, seed)
    for b, batch in enumerate(expected):
        for i, want in enumerate(batch):
            run.equal(f"batch {b}, chunk {i}", want + _key(seed),
                      f"batch {b}, chunk {i} (read from the slot's h_out after the replay)")
    ops, launches = list(run.ops), run.ops.graph_launches()
    for b, launch in enumerate(launches):
        upto = launches[b + 1].index if b + 1 < len(launches) else len(ops)
        between = [op for op in ops if launch.index < op.index < upto]
        filled = [r for op in between if op.internal and op.kind == "copy"
                  and op.name == "d2h" for r in op.writes if r.host]
        read = [r for op in between if not op.internal and op.kind == "host"
                and op.name == "read" for r in op.reads]
        unread = [f for f in filled if not any(r.covers(f) for r in read)]
        if unread:
            check.fail(f"batch {b}: {len(unread)} of the {len(filled)} slots' h_out were "
                       f"not read after the batch's replay (no read of them between this "
                       f"launch and the next): the results must be copies of the slots' "
                       f"h_out, made once the replay finished: slot.h_out.copy() or np.copy("
                       f"slot.h_out) (np.array(slot.h_out) reads it unseen by the check)")


# judged again in the grader (JUDGES), every expected result made there from the seed;
# the timing is the GPU's, printed in the learner's process
PART3 = Check(3, f"{__name__}.check_part3", _part3_inputs, _part3_rules,
              values=_part3_results, seeded=True)


def check_part3(run_batches, *, count=5, k=K, seed=None):
    """Every batch by one replay of the captured graph: no launches of its own, each
    batch's results read from the slots' h_out after its replay."""
    run(PART3, run_batches, count=count, k=k, seed=seed)


#: the checks the grader judges again from what they saw (streamlab.grading)
JUDGES = {"check_part1": (PART1.judge, 1), "check_part2": (PART2.judge, 2),
          "check_part3": (PART3.judge, 3)}
