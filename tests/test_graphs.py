"""CUDA graphs (streamlab.graphs): capture, shape, replay, update, and what a capture
refuses; the simulator's stand-in held to what a GPU does.

Each ``case_*`` below is plain numba code through streamlab's calls, the same on both
paths. CI runs them on the simulator; ``test_the_cases_on_a_gpu`` (marker ``gpu``) runs
the very same functions on a GPU, so that the stand-in cannot drift from cuda.core.
"""

import numpy as np
import pytest
from numba import cuda

import streamlab
from streamlab import graphs
from streamlab.graphs import INVALIDATED_MESSAGE, GraphError, demangle, end_capture, is_capturing

N = 256


@cuda.jit
def double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2


def pinned(value, n=N):
    h = cuda.pinned_array(n, np.float32)
    h[:] = value
    return h


def error_code(e) -> str:
    """The CUDA error's name, from a numba or cuda.core error alike."""
    import re

    found = re.search(r"CUDA_ERROR_[A-Z_]+", str(e))
    return found.group(0) if found else type(e).__name__


def capture_one_chain(h, d):
    b = streamlab.graph_builder().begin_building()
    d.copy_to_device(h, stream=b.stream)
    double[N // 64, 64, b](d)
    d.copy_to_host(h, stream=b.stream)
    b.end_building()
    return b


@pytest.fixture(autouse=True)
def _no_capture_left_open():
    """A case that failed midway must not leave a stream capturing for the next one. And
    on a GPU, numba's pending frees are made before each case: numba frees memory in
    batches, and a batch that falls due inside a capture is refused there
    (cuMemFreeHost: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, seen once on an H100 when
    other tests had run in the same worker first). numba queues an array's free in its
    memory manager's queue, not the context's (numba-cuda 0.30's docstrings name the
    context's, which holds streams and events): both are emptied."""
    if not streamlab.on_simulator():
        ctx = cuda.current_context()
        ctx.memory_manager.deallocations.clear()
        ctx.deallocations.clear()
    yield
    for builder in list(graphs._live):
        end_capture(builder)


# --- the cases: the same code on both paths -----------------------------------------
def case_capture_runs_nothing_and_each_launch_replays():
    h, d = pinned(1), cuda.device_array(N, np.float32)
    b = capture_one_chain(h, d)
    assert (h == 1).all(), "capturing must not run the work"
    g = b.complete()
    s = cuda.stream()
    g.upload(streamlab.core_stream(s))
    g.launch(streamlab.core_stream(s))
    s.synchronize()
    assert (h == 2).all()
    h[:] = 5  # a graph's copy reads the host buffer when it runs, not when captured
    g.launch(streamlab.core_stream(s))
    s.synchronize()
    assert (h == 10).all()


def case_shape_of_one_chain():
    # the arrays are kept alive, as a lesson keeps them: a copy node's direction is read
    # from its pointers. With temporaries, one GPU run of the whole suite read 'copy h2h'
    # (both ends unknown to the driver as device memory); likely numba had freed the
    # device array by then, its frees being deferred and flushed at a count of them
    h, d = pinned(1), cuda.device_array(N, np.float32)
    b = capture_one_chain(h, d)
    shape = streamlab.graph_shape(b)
    assert [n.kind for n in shape.nodes] == ["copy h2d", "kernel", "copy d2h"]
    assert shape.of("kernel")[0].name == "double"
    assert shape.edges == {(0, 1), (1, 2)}
    assert shape.reaches(0, 2) and not shape.concurrent(0, 2)


def case_split_and_join_make_parallel_chains():
    hs = [pinned(k + 1) for k in range(4)]
    ds = [cuda.device_array(N, np.float32) for _ in range(4)]
    b = streamlab.graph_builder().begin_building()
    parts = b.split(4)
    assert parts[0] is b
    for p, h, d in zip(parts, hs, ds):
        d.copy_to_device(h, stream=p.stream)
        double[N // 64, 64, p](d)
        d.copy_to_host(h, stream=p.stream)
    streamlab.join(*parts).end_building()
    shape = streamlab.graph_shape(b)
    kernels = shape.of("kernel")
    assert len(kernels) == 4 and len(shape.of("copy h2d")) == 4
    assert all(shape.concurrent(a.index, c.index) for a in kernels for c in kernels if a != c)
    for k in kernels:
        assert any(shape.reaches(c.index, k.index) for c in shape.of("copy h2d"))
        assert any(shape.reaches(k.index, c.index) for c in shape.of("copy d2h"))
    g = b.complete()
    s = cuda.stream()
    g.launch(streamlab.core_stream(s))
    s.synchronize()
    assert [float(h[0]) for h in hs] == [2.0, 4.0, 6.0, 8.0]


def case_events_fork_and_join_numba_streams():
    origin, other = cuda.stream(), cuda.stream()
    h1, h2 = pinned(1), pinned(3)
    d1, d2 = cuda.device_array(N, np.float32), cuda.device_array(N, np.float32)
    b = streamlab.graph_builder(origin).begin_building()
    fork, joined = cuda.event(), cuda.event()
    fork.record(origin)
    fork.wait(other)  # other joins the capture here
    d1.copy_to_device(h1, stream=origin)
    double[N // 64, 64, origin](d1)
    d2.copy_to_device(h2, stream=other)
    double[N // 64, 64, other](d2)
    joined.record(other)
    joined.wait(origin)  # ...and is joined back here
    d1.copy_to_host(h1, stream=origin)
    d2.copy_to_host(h2, stream=origin)
    b.end_building()
    shape = streamlab.graph_shape(b)
    k1, k2 = shape.of("kernel")
    assert shape.concurrent(k1.index, k2.index)
    for out in shape.of("copy d2h"):
        assert shape.reaches(k1.index, out.index) and shape.reaches(k2.index, out.index)
    g = b.complete()
    g.launch(streamlab.core_stream(origin))
    origin.synchronize()
    assert h1[0] == 2 and h2[0] == 6


def case_a_branch_never_joined_is_refused():
    origin, other = cuda.stream(), cuda.stream()
    d = cuda.device_array(N, np.float32)
    b = streamlab.graph_builder(origin).begin_building()
    fork = cuda.event()
    fork.record(origin)
    fork.wait(other)
    double[N // 64, 64, other](d)
    with pytest.raises(Exception) as e:
        b.end_building()
    assert error_code(e.value) == "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"


def case_a_wait_on_an_event_recorded_outside_the_capture_is_refused():
    """Lab 07's 'no fork' on an H200: a stream never forked into the capture runs its work
    at once; the origin's wait on that stream's event is refused (905) and invalidates the
    capture."""
    origin, other = cuda.stream(), cuda.stream()
    d = cuda.device_array(N, np.float32)
    b = streamlab.graph_builder(origin).begin_building()
    double[N // 64, 64, other](d)  # not in the capture: it runs
    done = cuda.event()
    done.record(other)
    with pytest.raises(Exception) as e:
        done.wait(origin)
    assert error_code(e.value) == "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"
    with pytest.raises(RuntimeError, match="must now be ended"):
        b.end_building()
    end_capture(b)
    assert not is_capturing(origin)


# what a capture into a blocking numba stream refuses, with the error an H200 gave
REFUSED = {"cuda.synchronize": "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
           "stream.synchronize": "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
           "event.synchronize": "CUDA_ERROR_CAPTURED_EVENT",
           "event.query": "CUDA_ERROR_CAPTURED_EVENT",
           "a copy with no stream": "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
           "a launch with no stream": "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"}


@pytest.fixture(params=list(REFUSED))
def refused(request):
    return request.param


def capture_refuses(what) -> tuple[str, str]:
    """What the call in a capture raised, and what end_building then said."""
    s = cuda.stream()
    d = cuda.device_array(N, np.float32)
    h = pinned(1)
    b = streamlab.graph_builder(s).begin_building()
    double[N // 64, 64, s](d)
    calls = {
        "cuda.synchronize": lambda: cuda.synchronize(),
        "stream.synchronize": lambda: s.synchronize(),
        "event.synchronize": lambda: (ev := cuda.event(), ev.record(s), ev.synchronize()),
        "event.query": lambda: (ev := cuda.event(), ev.record(s), ev.query()),
        "a copy with no stream": lambda: d.copy_to_host(h),
        "a launch with no stream": lambda: double[N // 64, 64](d),
    }
    with pytest.raises(Exception) as raised:
        calls[what]()
    with pytest.raises(RuntimeError, match="must now be ended"):
        b.is_building  # noqa: B018  (cuda.core refuses even this, until it is ended)
    with pytest.raises(RuntimeError) as ended:
        b.end_building()
    # cuda.core's end_building cannot end it: the stream is still capturing, and every
    # synchronize in the process is refused, until end_capture ends it (an H200's answer)
    assert is_capturing(s), "end_building() of an invalidated capture left it on"
    with pytest.raises(Exception) as refused:
        cuda.synchronize()
    assert error_code(refused.value) == "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
    end_capture(b)
    assert not is_capturing(s)
    cuda.synchronize()
    return error_code(raised.value), str(ended.value)


def case_capture_refuses(what):
    raised, ended = capture_refuses(what)
    assert raised == REFUSED[what]
    assert ended.startswith(INVALIDATED_MESSAGE), ended  # cuda.core's words, on both paths


def case_pageable_copies_are_captured_and_read_at_each_replay():
    """Measured on an H200, in every capture mode: accepted, and the replay reads the
    pageable buffer when it runs (and the launch holds the host for the copy)."""
    for mode in ("relaxed", "global"):
        p, q = np.ones(N, np.float32), np.zeros(N, np.float32)
        d = cuda.device_array(N, np.float32)
        s = cuda.stream()
        # in global mode numba's deferred frees (of earlier tests' memory) are refused
        # inside the capture and invalidate it, as an H200 showed: hold them back
        with cuda.defer_cleanup():
            b = streamlab.graph_builder(s).begin_building(mode)
            d.copy_to_device(p, stream=s)
            double[N // 64, 64, s](d)
            d.copy_to_host(q, stream=s)
            b.end_building()
        assert (q == 0).all()
        p[:] = 5
        b.complete().launch(streamlab.core_stream(s))
        s.synchronize()
        assert (q == 10).all(), mode


def case_legacy_work_beside_a_non_blocking_capture_runs_at_once():
    h, d = pinned(3), cuda.device_array(N, np.float32)
    d.copy_to_device(h)
    # (numba frees earlier tests' memory when its list of frees fills; a cuMemFree during
    # a global capture is refused and invalidates it: a 2xH200 run failed so, once in 4)
    with cuda.defer_cleanup():
        b = streamlab.graph_builder().begin_building("global")  # cuda.core's non-blocking
        double[N // 64, 64, b](d)
        d.copy_to_host(h)  # the legacy stream: not in the graph, and it runs now
        b.end_building()
    assert (h == 3).all() and [n.kind for n in streamlab.graph_shape(b).nodes] == ["kernel"]


def case_events_recorded_in_a_capture_time_nothing():
    """A plain record in a capture is an edge, not a node: no replay records it, so the
    event cannot be read; streamlab's span refuses at once, saying why."""
    s = cuda.stream()
    d = cuda.device_array(N, np.float32)
    timeline = streamlab.Timeline()
    b = streamlab.graph_builder(s).begin_building()
    e0, e1 = cuda.event(), cuda.event()
    e0.record(s)
    double[N // 64, 64, s](d)
    e1.record(s)
    with pytest.raises(streamlab.TimelineError, match="being captured"):
        with timeline.span("double", s):
            double[N // 64, 64, s](d)
    b.end_building()
    b.complete().launch(streamlab.core_stream(s))
    s.synchronize()
    with pytest.raises(Exception) as e:
        cuda.event_elapsed_time(e0, e1)
    assert error_code(e.value) == "CUDA_ERROR_INVALID_VALUE"


def case_a_graph_launches_into_a_cuda_core_stream_only():
    h, d = pinned(1), cuda.device_array(N, np.float32)
    g = capture_one_chain(h, d).complete()
    with pytest.raises(TypeError, match="incorrect type"):
        g.launch(cuda.stream())


def case_allocation_is_refused_in_global_mode_only():
    s = cuda.stream()
    with cuda.defer_cleanup():  # no free of earlier memory refused in its place
        b = streamlab.graph_builder(s).begin_building("global")
        with pytest.raises(Exception) as e:
            cuda.device_array(N, np.float32)
        assert error_code(e.value) == "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
        with pytest.raises(Exception):
            b.end_building()
        end_capture(b)  # end_building leaves an invalidated capture on
    s = cuda.stream()
    b = streamlab.graph_builder(s).begin_building()  # relaxed, cuda.core's default
    d = cuda.device_array(N, np.float32)
    double[N // 64, 64, s](d)
    b.end_building()
    assert [n.kind for n in streamlab.graph_shape(b).nodes] == ["kernel"]


def case_end_capture_ends_an_invalidated_split_capture_with_all_its_branches():
    """Lab 07's 'synchronize inside the capture' on an H200: the split branches were left
    capturing too, and every later synchronize in the process was refused."""
    d = cuda.device_array(N, np.float32)
    b = streamlab.graph_builder().begin_building()
    parts = b.split(3)
    double[N // 64, 64, parts[1]](d)
    with pytest.raises(Exception) as e:
        cuda.synchronize()
    assert error_code(e.value) == "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
    with pytest.raises(RuntimeError, match="must now be ended"):
        b.end_building()
    assert all(is_capturing(p) for p in parts), "every branch is still capturing"
    end_capture(b)
    assert not any(is_capturing(p) for p in parts)
    cuda.synchronize()
    end_capture(b)  # already ended: nothing to do
    fresh = streamlab.graph_builder().begin_building()  # and a new capture works
    double[N // 64, 64, fresh](d)
    fresh.end_building()
    assert [n.kind for n in streamlab.graph_shape(fresh).nodes] == ["kernel"]


def case_update_keeps_the_topology_and_changes_the_arrays():
    h1, h2 = pinned(1), pinned(7)
    d1, d2 = cuda.device_array(N, np.float32), cuda.device_array(N, np.float32)
    g = capture_one_chain(h1, d1).complete()
    g.update(capture_one_chain(h2, d2))
    s = cuda.stream()
    g.launch(streamlab.core_stream(s))
    s.synchronize()
    assert h2[0] == 14 and h1[0] == 1
    b = streamlab.graph_builder().begin_building()
    double[N // 64, 64, b](d1)
    b.end_building()
    with pytest.raises(Exception) as e:
        g.update(b)
    assert "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE" in str(e.value) or "update" in str(e.value).lower()


def case_host_callbacks_run_at_each_replay():
    hits = []
    d = cuda.to_device(np.zeros(N, np.float32))
    b = streamlab.graph_builder().begin_building()
    double[N // 64, 64, b](d)
    b.callback(lambda: hits.append(1))
    b.end_building()
    assert hits == []
    assert [n.kind for n in streamlab.graph_shape(b).nodes] == ["kernel", "host"]
    g = b.complete()
    s = cuda.stream()
    for _ in range(3):
        g.launch(streamlab.core_stream(s))
    s.synchronize()
    assert len(hits) == 3


CASES = [case_capture_runs_nothing_and_each_launch_replays, case_shape_of_one_chain,
         case_split_and_join_make_parallel_chains, case_events_fork_and_join_numba_streams,
         case_a_branch_never_joined_is_refused, case_allocation_is_refused_in_global_mode_only,
         case_a_wait_on_an_event_recorded_outside_the_capture_is_refused,
         case_update_keeps_the_topology_and_changes_the_arrays,
         case_host_callbacks_run_at_each_replay,
         case_pageable_copies_are_captured_and_read_at_each_replay,
         case_legacy_work_beside_a_non_blocking_capture_runs_at_once,
         case_events_recorded_in_a_capture_time_nothing,
         case_a_graph_launches_into_a_cuda_core_stream_only,
         case_end_capture_ends_an_invalidated_split_capture_with_all_its_branches]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__[5:])
def test_case_on_the_simulator(case):
    case()


def test_capture_refuses_on_the_simulator(refused):
    case_capture_refuses(refused)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__[5:])
def test_the_cases_on_a_gpu(case):
    assert not streamlab.on_simulator()
    case()


@pytest.mark.gpu
def test_capture_refuses_on_a_gpu(refused):
    assert not streamlab.on_simulator()
    case_capture_refuses(refused)


# --- the simulator's stand-in: what only it needs to show --------------------------------
def test_a_replay_is_one_graph_launch_and_its_work_is_the_graphs(sim_only):
    h, d = pinned(1), cuda.device_array(N, np.float32)
    g = capture_one_chain(h, d).complete()
    s = cuda.stream()
    with streamlab.record_ops() as ops:
        g.launch(streamlab.core_stream(s))
        g.launch(streamlab.core_stream(s))
        s.synchronize()
    assert len(ops.graph_launches()) == 2
    assert ops.launches() == [] and ops.copies() == []  # the graph's, not the learner's
    replayed = [op for op in ops if op.kind == "launch"]
    assert len(replayed) == 2 and all(op.internal and op.detail.get("graph_node")
                                      for op in replayed)


def test_reading_a_graphs_output_before_waiting_is_a_race(sim_only):
    h, d = pinned(1), cuda.device_array(N, np.float32)
    g = capture_one_chain(h, d).complete()
    s = cuda.stream()
    with streamlab.race_check(raises=False, quiet=True) as early:
        g.launch(streamlab.core_stream(s))
        streamlab.host_access([h])
    assert early.races, "the host read the graph's output before the stream finished it"
    s.synchronize()
    with streamlab.race_check(raises=False, quiet=True) as waited:
        g.launch(streamlab.core_stream(s))
        s.synchronize()
        streamlab.host_access([h])
    assert not waited.races


def test_the_model_times_a_graph_of_small_kernels_faster_than_their_launches(sim_only):
    """The wall the graphs lesson is about: 32 tiny kernels cost the host 32 launches,
    their graph one."""
    d = cuda.to_device(np.zeros(32, np.float32))
    s = cuda.stream()
    double[1, 32, s](d)
    s.synchronize()

    def timed(body):
        e0, e1 = cuda.event(), cuda.event()
        e0.record(s)
        body()
        e1.record(s)
        e1.synchronize()
        return e0.elapsed_time(e1)

    streamed = timed(lambda: [double[1, 32, s](d) for _ in range(32)])
    b = streamlab.graph_builder().begin_building()
    for _ in range(32):
        double[1, 32, b](d)
    b.end_building()
    g = b.complete()
    cs = streamlab.core_stream(s)
    graphed = timed(lambda: g.launch(cs))
    assert graphed < streamed / 4, (graphed, streamed)


def test_launch_host_func_inside_a_capture_is_a_host_node():  # both paths
    s = cuda.stream()
    hits = []
    b = streamlab.graph_builder(s).begin_building()
    streamlab.launch_host_func(s, lambda: hits.append(1))
    b.end_building()
    assert [n.kind for n in streamlab.graph_shape(b).nodes] == ["host"] and hits == []
    b.complete().launch(streamlab.core_stream(s))
    s.synchronize()
    assert hits == [1]


def test_demangle_reads_numba_kernel_names():
    assert demangle("_ZN8__main__6doubleB2v1B94cw51cXTLSUwv1sCUt9Uw1VEw0NRRQPKzLTg4gK4EUE") \
        == "double"
    assert demangle("plain_name") == "plain_name"


def test_bad_input_gets_a_clear_error(sim_only):
    with pytest.raises(TypeError, match="numba stream"):
        streamlab.graph_builder("stream0")
    b = streamlab.graph_builder()
    with pytest.raises(GraphError, match="begin_building"):
        b.split(2)
    with pytest.raises(GraphError, match="end_building"):
        b.end_building()
    with pytest.raises(GraphError, match="nothing was captured"):
        b.complete()
    ran = cuda.to_device(np.ones(4, np.float32))
    double[1, 4, b](ran)  # a builder not begun is a plain stream: the work runs, as on a GPU
    b.stream.synchronize()
    assert ran.copy_to_host().tolist() == [2.0] * 4
    b.begin_building()
    with pytest.raises(ValueError, match="count >= 2"):
        b.split(1)
    with pytest.raises(GraphError, match="two or more"):
        streamlab.join(b)
    with pytest.raises(GraphError, match="end_building"):
        b.complete()
    b.end_building()
    g = b.complete()
    with pytest.raises(TypeError, match="not a graph builder"):
        g.launch(b)
    with pytest.raises(TypeError, match="graph builder"):
        streamlab.graph_shape(g.launch)


def test_lab07_says_plainly_when_a_capture_was_left_open(sim_only):
    """A capture still open in the process refuses every synchronize: lab 07's checks
    say so, and what to do, instead of failing on their own first synchronize."""
    from streamlab.check import CheckFailed
    from streamlab.labs import lab07

    b = streamlab.graph_builder().begin_building()
    try:
        with pytest.raises(CheckFailed, match="still open.*Restart the kernel"):
            lab07.check_part1(lambda builder, slots: None)
    finally:
        with pytest.raises(RuntimeError, match="invalidated"):
            b.end_building()
        end_capture(b)


def test_end_capture_takes_a_builder(sim_only):
    with pytest.raises(TypeError, match="graph builder"):
        end_capture(cuda.stream())


# --- a builder whose capture ended without a graph is never collected -------------
class _Builder:
    """Stands in for cuda.core 1.2's GraphBuilder as it was measured on an H100: while an
    invalidated capture is still open, ``is_building`` raises; once the capture has ended
    (by cuda.core, or by the driver), it is False, whether a graph was made or not."""

    INVALIDATED = ("Build process encountered an error and has been invalidated. "
                   "Build process must now be ended.")

    def __init__(self, state):
        self.state = state  # "capturing", "invalidated", "ended with a graph", "ended without"
        self.stream = cuda.stream()

    @property
    def is_building(self):
        if self.state == "invalidated":
            raise RuntimeError(self.INVALIDATED)
        return self.state == "capturing"


def test_a_builder_the_driver_ended_is_kept_for_good_the_others_let_go(monkeypatch):
    """cuda.core 1.2 destroys an invalidated capture's graph a second time when its
    builder is collected (the driver destroyed it when the capture ended), which kills
    the process. _settle keeps exactly those builders, with a reference nobody drops."""
    import sys

    capturing = {}
    monkeypatch.setattr("streamlab.streams.capturing", lambda h: capturing.get(h, False))
    # whether the builder holds a graph the driver knows (read from the driver on a GPU,
    # held to cuda.core there by test_invalidated_captures_no_longer_kill_the_process)
    monkeypatch.setattr(graphs, "_holds_graph", lambda b: b.state == "ended with a graph")
    monkeypatch.setattr(graphs, "_live", [])
    monkeypatch.setattr(graphs, "_dead", [])
    from streamlab.streams import handle_of

    ended_well = _Builder("ended with a graph")
    ended_without = _Builder("ended without")      # the driver ended it (or refused it unjoined)
    invalidated = _Builder("invalidated")          # still open, to be ended
    still = _Builder("capturing")
    for b in (invalidated, still):
        capturing[handle_of(b.stream)] = True
    graphs._live.extend([ended_well, ended_without, invalidated, still])
    refs = sys.getrefcount(ended_without)
    graphs._settle()
    assert graphs._live == [invalidated, still]
    assert graphs._dead == [ended_without]
    # one reference for _dead, one more that nothing will ever drop; _live's is gone
    assert sys.getrefcount(ended_without) == refs + 1
    graphs._settle()                               # settling again keeps it once
    assert sys.getrefcount(ended_without) == refs + 1
    assert graphs._dead == [ended_without]
    # the invalidated capture is ended (is_building now False, no graph); the other ends well
    capturing.clear()
    invalidated.state, still.state = "ended without", "ended with a graph"
    graphs._settle()
    assert graphs._live == [] and graphs._dead == [ended_without, invalidated]


def test_an_invalidated_capture_the_driver_has_not_ended_is_still_capturing(monkeypatch):
    """cuda.core says 'must now be ended' (is_building raises) while the stream still
    captures: not yet settled either way. If the stream no longer captures, it ended
    without a graph."""
    monkeypatch.setattr(graphs, "_holds_graph", lambda b: pytest.fail("not asked"))
    b = _Builder("invalidated")
    from streamlab.streams import handle_of

    monkeypatch.setattr("streamlab.streams.capturing", lambda h: h == handle_of(b.stream))
    assert graphs._ended_without_graph(b) is None
    monkeypatch.setattr("streamlab.streams.capturing", lambda h: False)
    assert graphs._ended_without_graph(b) is True


# the programs below, run in a process of their own: what they share
_PRELUDE = """
import gc, sys
import numpy as np
from numba import cuda
import streamlab
from cuda.core import Device
@cuda.jit
def k(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1.0
def fresh():                             # each capture its own array: no race between them
    return cuda.device_array(1 << 12, dtype=np.float32)
k[16, 256](fresh()); cuda.synchronize()
kept = []
"""


def _exits_cleanly(program: str) -> None:
    """Run ``program`` on the GPU in a fresh process: it must reach its end and exit 0."""
    import os
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", program],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "STREAMLAB_DEVICE": "gpu"})
    assert p.returncode == 0 and "alive at the end" in p.stdout, p.stdout + p.stderr[-3000:]


_KEEPS_TO_EXIT = _PRELUDE + """
for n in range(8):
    st = cuda.stream()
    b = streamlab.graph_builder(st).begin_building()
    k[16, 256, st](fresh())
    try:
        st.synchronize()                 # refused: the capture is invalidated
    except Exception:
        pass
    streamlab.end_capture(b)             # the driver ends it; the graph is gone
    if n % 2:
        kept.append((st, b))             # half kept until the process ends...
    del b; gc.collect()                  # ...half dropped now
other = cuda.stream()                    # and one ended unjoined by cuda.core itself
b = streamlab.graph_builder(st).begin_building()
ev = cuda.event(); ev.record(st); ev.wait(other)
k[16, 256, other](fresh())
try:
    b.end_building()
except Exception:
    pass
streamlab.end_capture(b); streamlab.graphs.end_capture_of(other)
del b; gc.collect()
print("alive at the end")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("run", range(3))
def test_invalidated_captures_no_longer_kill_the_process(run):
    """Measured on an H100 with cuda.core 1.2.0: every process that kept such a builder
    until it exited died there (segfault). Through streamlab it must exit cleanly."""
    _exits_cleanly(_KEEPS_TO_EXIT)


_DIRECT_BUILDERS = _PRELUDE + """for n in range(6):                       # refused inside the capture, ended by streamlab
    st = cuda.stream()
    b = Device().create_stream(st).create_graph_builder().begin_building()
    k[16, 256, st](fresh())
    try:
        st.synchronize()
    except Exception:
        pass
    streamlab.end_capture(b)
    if n % 2:
        kept.append(b)
    del b; gc.collect()
for n in range(4):                       # unjoined, ended by cuda.core alone, never shown
    origin, other = cuda.stream(), cuda.stream()   # to streamlab
    b = Device().create_stream(origin).create_graph_builder().begin_building()
    ev = cuda.event(); ev.record(origin); ev.wait(other)
    k[16, 256, other](fresh())
    try:
        b.end_building()
    except Exception:
        pass
    if n % 2:
        kept.append(b)
    del b; gc.collect()
good = Device().create_stream().create_graph_builder().begin_building()
k[16, 256, good](fresh())
good.end_building()
g = good.complete()                      # ended with a graph, kept to the end
g.launch(Device().create_stream(cuda.stream()))
cuda.synchronize()
left_open = Device().create_stream(cuda.stream()).create_graph_builder().begin_building()
k[16, 256, left_open](fresh())                 # a capture never ended: the exit ends it
print("alive at the end", flush=True)
"""


@pytest.mark.gpu
@pytest.mark.parametrize("run", range(3))
def test_builders_the_learner_makes_with_cuda_core_do_not_kill_the_process(run):
    """The learner writes ``Device().create_stream(s).create_graph_builder()``: streamlab
    never sees the builder made. Refused captures, unjoined ones that cuda.core ended
    alone, builders dropped mid-process or kept to the end, a graph made and a capture
    left open: the process must exit cleanly (streamlab keeps every builder alive at
    exit, ``graphs._keep_builders_at_exit``)."""
    _exits_cleanly(_DIRECT_BUILDERS)


def test_the_exit_keeper_keeps_every_builder_it_finds(monkeypatch):
    """``_keep_builders_at_exit`` finds cuda.core's GraphBuilders by the garbage
    collector's list and keeps each (here with a stand-in class in cuda.core's place)."""
    import sys
    import types

    class GraphBuilder:  # a stand-in for cuda.core.graph.GraphBuilder
        stream = 0

    fake = types.ModuleType("cuda.core.graph")
    fake.GraphBuilder = GraphBuilder
    monkeypatch.setitem(sys.modules, "cuda.core.graph", fake)
    monkeypatch.setattr(graphs, "_dead", [])
    monkeypatch.setattr(graphs, "_live", [])
    kept_for_good = []
    monkeypatch.setattr(graphs, "_keep_for_good", kept_for_good.append)
    monkeypatch.setattr(graphs, "_end_driver_capture", lambda raw: None)
    mine = [GraphBuilder(), GraphBuilder()]
    graphs._keep_builders_at_exit()
    assert all(any(k is b for k in kept_for_good) for b in mine)
    assert all(type(k) is GraphBuilder for k in kept_for_good)


def test_a_watched_host_array_copied_in_by_to_device_replays(sim_only):
    """Issue 32's smaller hole: on the simulator, a graph that copies a checker's watched
    host array in with ``cuda.to_device(h, stream=s)`` (no ``to=``) crashed at replay
    (``'WatchedArray' object has no attribute '_ary'``): the simulator kept the host
    array's class for the device array, which then broke when sliced. A GPU's device array
    never has the host's class; the simulator's copy no longer has it either."""
    from streamlab.watched import watch

    h = watch(np.arange(N, dtype=np.float32), "h")
    s = cuda.stream()
    b = streamlab.graph_builder(s).begin_building()
    d = cuda.to_device(h, stream=s)
    double[N // 64, 64, s](d)
    b.end_building()
    assert type(d._ary) is np.ndarray  # not the host's WatchedArray
    g = b.complete()
    for _ in range(2):
        g.launch(streamlab.core_stream(s))
        s.synchronize()
        assert (d.copy_to_host() == 2 * np.arange(N, dtype=np.float32)).all()
    plain = cuda.to_device(watch(np.ones(N, np.float32), "p"))  # and outside a capture
    assert type(plain._ary) is np.ndarray and (plain[1:3].copy_to_host() == 1).all()
