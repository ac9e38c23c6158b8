"""On a real GPU: the timeline's accuracy, concurrency, host functions, and the real
behaviour that each simulator fill stands in for.

Run with ``python -m pytest -m gpu`` on a machine with an NVIDIA GPU (these tests fail,
not skip, without one). Figures go to docs/gpu-results.md through scripts/gpu/gpu_results.py.
"""

import asyncio
import os
import statistics
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from numba import cuda

import streamlab
from streamlab import Timeline, TimelineError, TimelineNotReady

pytestmark = pytest.mark.gpu


@cuda.jit
def fill(x, value):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = value


def warm():
    s = cuda.stream()
    streamlab.spin[1, 1, s](100)
    fill[1, 1, s](cuda.device_array(1), 1)
    s.synchronize()


def test_a_1ms_kernel_is_measured_within_5_percent(figures):
    warm()
    ns = streamlab.ms_to_ns(1.0)
    s = cuda.stream()
    # The kernel spins for 1 ms of the GPU's own nanosecond timer (%globaltimer).
    # A second reference, independent of the GPU: the host clock over 200 in a row.
    n = 200
    s.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        streamlab.spin[1, 1, s](ns)
    s.synchronize()
    reference_ms = (time.perf_counter() - t0) * 1000 / n
    # The timeline: each kernel alone between its two events.
    tl = Timeline()
    for i in range(20):
        with tl.span(f"spin {i}", s):
            streamlab.spin[1, 1, s](ns)
    measured = [sp.duration_ms for sp in tl.trace().spans]
    median = statistics.median(measured)
    figures("1 ms spin kernel: timeline span (median of 20)", round(median, 4), "ms")
    figures("1 ms spin kernel: host clock over 200 in a row, per kernel",
            round(reference_ms, 4), "ms")
    figures("timeline error against the 1 ms spin", round(100 * (median - 1.0), 2), "%")
    figures("timeline spans, min..max of 20", f"{min(measured):.4f}..{max(measured):.4f}", "ms")
    figures("GPU-host clock alignment uncertainty", round(tl.clock_uncertainty_ms * 1000, 1), "us")
    assert median == pytest.approx(1.0, rel=0.05)
    assert reference_ms == pytest.approx(1.0, rel=0.05)


def spans_on(streams, ns, tl, dummy=None, gate_ms=20.0):
    """One spin kernel per stream, each in a span; optionally a dummy after each.

    All streams first wait on one *gate* event, recorded after a long spin on a
    separate non-blocking stream: every launch is queued before the gate opens, so
    the trace shows what the GPU does, not how fast the host issues work (about
    0.2 ms a launch here, which would stagger 5 ms kernels noticeably).
    """
    gate_stream = streamlab.stream(nonblocking=True)
    gate = cuda.event(timing=False)
    streamlab.spin[1, 1, gate_stream](streamlab.ms_to_ns(gate_ms))
    gate.record(gate_stream)
    for i, s in enumerate(streams):
        gate.wait(s)
        with tl.span(f"kernel {i}", s):
            streamlab.spin[1, 1, s](ns)
        if dummy is not None:
            streamlab.spin[1, 1, dummy](1)  # the seed 003 "dummy kernel"
    return tl.trace()


def test_a_span_while_record_ops_is_on_is_two_records_of_streamlabs_own():
    """Issue 54: a span under record_ops records two events of the pool and tells the
    recorder of each as streamlab's own work (once each: CUPTI's watch leaves streamlab's
    own driver calls alone), around the kernel, and still times it."""
    warm()
    s = cuda.stream()
    tl = Timeline()
    with streamlab.record_ops():  # the recorder's first look at spin (ms), outside
        streamlab.spin[1, 1, s](1)
    with streamlab.record_ops() as ops:
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(5))  # a hold: the span times the kernel
        with tl.span("k", s):
            streamlab.spin[1, 1, s](streamlab.ms_to_ns(0.5))
    s.synchronize()
    records = [op for op in ops if op.kind == "record"]
    launch = ops.launches("spin")[1]
    assert len(records) == 2 and all(op.internal for op in records), list(map(str, ops))
    assert records[0].index < launch.index < records[1].index
    assert not any("driver" in op.detail for op in ops), "a record was reported twice"
    assert records[0].stream.key() == launch.stream.key()
    assert tl.trace().spans[0].duration_ms == pytest.approx(0.5, abs=0.1)


def test_reading_a_timeline_tells_the_race_check_the_host_waited():
    """Issue 54 (found in review): trace() waits on the span pool's own events, and the
    recorders hear of it as they hear of numba's Event.synchronize/query: a sync (or
    query) of the very event the span recorded, as streamlab's own."""
    warm()
    s = cuda.stream()
    tl = Timeline()
    with streamlab.record_ops() as ops:
        with tl.span("k", s):
            streamlab.spin[1, 1, s](streamlab.ms_to_ns(2))
        tl.trace()
    end = [op for op in ops if op.kind == "record"][-1].event
    waits = [op for op in ops if op.kind in ("sync", "query") and op.event is end]
    assert waits and all(op.internal for op in waits), list(map(str, ops))
    assert any(op.kind == "sync" or op.detail.get("result") for op in waits)


def test_a_span_is_a_threads_first_cuda_call_with_the_pool_empty():
    """Issue 54 (found in review): a worker thread whose first CUDA call is a span, when
    the pool must make events, has no context current; the pool makes the timeline's GPU
    current and makes them (cuEventCreate alone fails with CUDA_ERROR_INVALID_CONTEXT)."""
    from streamlab import timeline as tmod

    warm()
    tl = Timeline()
    s = cuda.stream()
    with tmod._pool_lock:
        kept = tmod._pool.pop(tl.device_id, [])
    errors = []

    def worker():
        try:
            with tl.span("first call", s):
                pass
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    try:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not errors, errors
        assert tl.trace().spans[0].duration_ms >= 0
    finally:
        with tmod._pool_lock:
            tmod._pool.setdefault(tl.device_id, []).extend(kept)


def test_a_long_timeline_gives_its_finished_spans_events_back():
    """Issue 54: when the pool runs short, the spans whose work has finished are timed
    (as trace() would time them) and their two events go back to the pool, oldest first,
    stopping at the first span not finished. So 1,200 spans on one timeline hold and make
    a few hundred events, not 2,400 (each made while a recorder listens was seen by CUPTI
    twice), and every span reads as it would have: around the numba events recorded
    inside it, in order, the long span on another stream included."""
    from streamlab import timeline as tmod

    warm()
    s, other = cuda.stream(), cuda.stream()
    tl = Timeline()
    before = len(tmod._pool.get(tl.device_id, ()))
    with tl.span("long", other):  # unfinished while the first few hundred are made
        streamlab.spin[1, 1, other](streamlab.ms_to_ns(10))
    inner = []
    for i in range(1200):
        a, b = cuda.event(), cuda.event()
        with tl.span(f"k{i}", s):
            a.record(s)
            streamlab.spin[1, 1, s](20_000)  # 20 us
            b.record(s)
        inner.append((a, b))
        if i % 50 == 49:
            s.synchronize()
    cuda.synchronize()
    made = len(tmod._pool.get(tl.device_id, ())) + len(tl._pooled) - before
    assert tl._timed > 600 and len(tl._pooled) < 400, (tl._timed, len(tl._pooled))
    assert made < 1500, f"{made} events made for 1,201 spans"
    spans = tl.trace().spans
    assert [sp.name for sp in spans] == ["long"] + [f"k{i}" for i in range(1200)]
    assert spans[0].duration_ms == pytest.approx(10, rel=0.05)
    for sp, (a, b) in zip(spans[1:], inner):
        a_ms, b_ms = tl._origin.elapsed_time(a), tl._origin.elapsed_time(b)
        assert sp.start_ms <= a_ms + 1e-3 and b_ms <= sp.end_ms + 1e-3, (sp, a_ms, b_ms)
        assert sp.duration_ms - (b_ms - a_ms) < 0.05, (sp, a_ms, b_ms)
    assert all(x.end_ms <= y.start_ms + 1e-3 for x, y in zip(spans[1:], spans[2:]))


def test_a_span_timed_when_its_events_went_back_tells_the_race_check_it_finished():
    """Issue 54: a span whose events the pool took back was timed then, when its end
    event had happened; the recorders hear of it as of trace()'s look (a query of that
    event that found it done, streamlab's own), so the race check still knows the host
    saw the span's work finish."""
    from streamlab import timeline as tmod

    warm()
    s = cuda.stream()
    tl = Timeline()
    with tmod._pool_lock:
        kept = tmod._pool.pop(tl.device_id, [])
    try:
        with streamlab.record_ops() as ops:
            for i in range(100):  # more than the 64 events made at a time: some go back
                with tl.span(f"k{i}", s):
                    streamlab.spin[1, 1, s](1000)
                if i % 10 == 9:
                    s.synchronize()
        assert tl._timed > 0, "nothing was taken back"
        ends = {id(op.event) for op in ops if op.kind == "query" and op.internal
                and op.detail.get("result") is True}
        records = [op for op in ops if op.kind == "record" and op.internal]
        assert len(records) == 200
        firsts = records[1:2 * tl._timed:2]  # the end events of the spans timed early
        assert firsts and all(id(op.event) in ends for op in firsts), len(ends)
    finally:
        with tmod._pool_lock:
            tmod._pool.setdefault(tl.device_id, []).extend(kept)


def test_a_streams_kind_is_asked_of_the_driver_once():
    """Issue 54: a stream's kind, priority and device are fixed when it is made, so
    stream_info keeps its first answer for as long as the stream object lives."""
    s = streamlab.stream(nonblocking=True)
    first = streamlab.stream_info(s)
    assert first.kind == "non-blocking"
    assert streamlab.stream_info(s) is first
    other = streamlab.stream()
    assert streamlab.stream_info(other) is not first
    assert streamlab.stream_info(other).kind == "blocking"


def test_eight_streams_run_eight_kernels_at_once(figures):
    warm()
    ns = streamlab.ms_to_ns(5.0)
    streams = [cuda.stream() for _ in range(8)]
    tl = Timeline()
    t = spans_on(streams, ns, tl)
    m = t.metrics()
    figures("8 x 5 ms kernels on 8 streams: concurrency", round(m.concurrency, 2))
    figures("8 x 5 ms kernels on 8 streams: makespan", round(m.makespan_ms, 3), "ms")
    assert m.concurrency > 6, t.table()


def test_lab01s_work_takes_about_what_the_model_is_told(figures):
    """Lab 01 tells the simulator's model GPU what one ``work`` launch costs
    (``MODEL_WORK_MS``), so that its timelines look like a GPU's: within a factor of two
    of what a GPU takes, best of three."""
    from streamlab.labs import lab01

    lab01.warm_up()
    s = cuda.stream()
    a = cuda.to_device(np.ones(lab01.N, np.float32))
    b = cuda.device_array(lab01.N, np.float32)
    times = []
    for _ in range(3):
        t0, t1 = cuda.event(), cuda.event()
        t0.record(s)
        lab01.work[1, 64, s](b, a, lab01.REPS)
        t1.record(s)
        t1.synchronize()
        times.append(t0.elapsed_time(t1))
    figures("lab 01: one work launch", round(min(times), 2), "ms")
    assert lab01.MODEL_WORK_MS / 2 < min(times) < 2 * lab01.MODEL_WORK_MS, times


def test_one_stream_runs_them_one_by_one(figures):
    warm()
    ns = streamlab.ms_to_ns(5.0)
    s = cuda.stream()
    t = spans_on([s] * 8, ns, Timeline())
    m = t.metrics()
    figures("8 x 5 ms kernels on 1 stream: concurrency", round(m.concurrency, 3))
    assert 0.9 < m.concurrency <= 1.01, t.table()


def test_legacy_default_dummies_serialise_blocking_but_not_nonblocking_streams(figures):
    warm()
    ns = streamlab.ms_to_ns(5.0)
    legacy = cuda.legacy_default_stream()
    blocking = spans_on([cuda.stream() for _ in range(8)], ns, Timeline(), dummy=legacy)
    nonblocking = spans_on([streamlab.stream(nonblocking=True) for _ in range(8)], ns,
                           Timeline(), dummy=legacy)
    b, nb = blocking.metrics(), nonblocking.metrics()
    figures("8 blocking streams + legacy-default dummies: concurrency", round(b.concurrency, 2))
    figures("8 non-blocking streams + legacy-default dummies: concurrency",
            round(nb.concurrency, 2))
    assert b.concurrency < 1.5, blocking.table()
    assert nb.concurrency > 6, nonblocking.table()


def test_host_function_runs_after_the_kernel_before_it_and_holds_the_next(figures):
    warm()
    s = cuda.stream()
    ns = streamlab.ms_to_ns(2.0)
    tl = Timeline()
    with tl.span("before", s):
        streamlab.spin[1, 1, s](ns)
    with tl.span("host function", s, kind="hostfn"):
        call = streamlab.launch_host_func(s, time.sleep, 0.003, name="sleep 3 ms")
    with tl.span("after", s):
        streamlab.spin[1, 1, s](ns)
    call.wait(timeout=10)
    tl.add_host_call(call)
    t = tl.trace()
    slack = 2 * t.clock_uncertainty_ms + 0.05
    before, after, ran = t.span("before"), t.span("after"), t.span("sleep 3 ms")
    figures("host function start after preceding kernel end",
            round(ran.start_ms - before.end_ms, 4), "ms")
    figures("next kernel start after host function end",
            round(after.start_ms - ran.end_ms, 4), "ms")
    assert call.thread_name != threading.current_thread().name
    assert ran.start_ms >= before.end_ms - slack, t.table()
    assert after.start_ms >= ran.end_ms - slack, t.table()
    assert after.start_ms - before.end_ms >= 3.0, t.table()


def test_stream_done_resolves_after_the_work_without_blocking_the_loop(figures):
    warm()

    async def main():
        s = cuda.stream()
        t0 = time.perf_counter()
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(20.0))
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.0005)

        task = asyncio.ensure_future(ticker())
        await streamlab.stream_done(s)
        waited = (time.perf_counter() - t0) * 1000
        task.cancel()
        return waited, ticks

    waited, ticks = asyncio.run(main())
    figures("await stream_done on a 20 ms kernel: waited", round(waited, 2), "ms")
    figures("await stream_done: other task ran", ticks, "times")
    assert waited >= 19.0 and ticks >= 5


def test_numba_add_callback_is_still_broken():
    # The reason streamlab.launch_host_func exists. If this starts passing
    # upstream, the course must say so and may use add_callback again.
    s = cuda.stream()
    with pytest.raises(AttributeError, match="value"):
        s.add_callback(lambda *a: None)
        s.synchronize()


def test_reading_a_timeline_before_its_work_finished():
    warm()
    s = cuda.stream()
    tl = Timeline()
    with tl.span("long", s):
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(50.0))
    with pytest.raises(TimelineNotReady, match="synchronize"):
        tl.trace(synchronize=False)
    assert tl.trace().span("long").duration_ms > 40


def test_host_numpy_arrays_cannot_go_to_a_kernel_on_a_stream():
    # Found on the GPU, not on the simulator: numba-cuda 0.30.4 with cuda-core hands
    # a host array to cuda.core with the stream, and cuda.core refuses. Copy to the
    # device first (cuda.to_device(a, stream=s)), which is what stream code wants anyway.
    s = cuda.stream()
    with pytest.raises(RuntimeError, match="NumPy only supports stream=None"):
        fill[1, 4, s](np.zeros(4), 1)
    a = np.zeros(4)
    fill[1, 4](a, 1)  # with no stream numba copies it in and out
    assert (a == 1).all()


def test_what_the_simulator_fills_stand_in_for():
    warm()
    s = cuda.stream()
    # cuda.event(timing=...), query() while running, event_elapsed_time
    a, b = cuda.event(timing=True), cuda.event(timing=True)
    a.record(s)
    streamlab.spin[1, 1, s](streamlab.ms_to_ns(20.0))
    b.record(s)
    assert b.query() is False
    b.synchronize()
    assert b.query() is True
    assert cuda.event_elapsed_time(a, b) == pytest.approx(a.elapsed_time(b))
    # cuda.pinned with several arrays
    x, y = np.zeros(1024), np.ones(1024)
    with cuda.pinned(x, y):
        assert cuda.to_device(y, stream=s).copy_to_host(stream=s).sum() == 1024
    # a kernel writes mapped host memory
    m = cuda.mapped_array(8, dtype=np.int32)
    fill[1, 8, s](m, 7)
    s.synchronize()
    assert (m == 7).all()
    # external streams and the default-stream handles
    # (keep the stream that owns the handle alive while its wrapper is used:
    # wrapping the handle of a stream already destroyed crashes the process)
    owner = streamlab.stream(nonblocking=True)
    ext = cuda.external_stream(int(owner.handle))
    assert streamlab.stream_info(ext).kind == "non-blocking"
    assert int(cuda.legacy_default_stream().handle) == 1
    assert int(cuda.per_thread_default_stream().handle) == 2


def test_priority_range_and_out_of_range_priority():
    low, high = streamlab.priority_range()
    assert high < low  # Hopper: 0 (low) to -5 (high)
    with pytest.raises(ValueError, match="outside this GPU's range"):
        streamlab.stream(priority=high - 1)


def test_streams_of_another_gpu_are_refused():
    if len(cuda.gpus) < 2:
        pytest.skip("needs two GPUs; this machine has one")
    tl = Timeline()
    with cuda.gpus[1]:
        other = cuda.stream()
    with pytest.raises(TimelineError, match="one Timeline per GPU"):
        with tl.span("k", other):
            pass


PER_THREAD = textwrap.dedent("""
    import threading, time, streamlab
    from numba import cuda
    ns = streamlab.ms_to_ns(10.0)
    streamlab.spin[1, 1](100); cuda.synchronize()
    def work():
        streamlab.spin[1, 1](ns)          # no stream given
        cuda.default_stream().synchronize()
    threads = [threading.Thread(target=work) for _ in range(8)]
    t0 = time.perf_counter()
    for t in threads: t.start()
    for t in threads: t.join()
    print(streamlab.stream_info(cuda.default_stream()).kind,
          round((time.perf_counter() - t0) * 1000, 1))
""")


@pytest.mark.parametrize("variable, expect_kind, serial", [
    (None, "legacy default", True),
    ("NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM", "legacy default", True),
    ("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "per-thread default", False),
])
def test_which_variable_really_gives_per_thread_default_streams(variable, expect_kind, serial,
                                                                figures):
    env = {k: v for k, v in os.environ.items() if "PER_THREAD" not in k}
    env["STREAMLAB_QUIET"] = "1"
    if variable:
        env[variable] = "1"
    r = subprocess.run([sys.executable, "-c", PER_THREAD], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    kind, ms = r.stdout.strip().rsplit(" ", 1)
    ms = float(ms)
    setting = f"{variable}=1" if variable else "no variable set"
    figures(f"8 host threads x 10 ms kernel, no stream, {setting}", ms, "ms")
    assert kind == expect_kind
    assert (ms > 60) if serial else (ms < 40), ms


def test_two_gpus_two_timelines_side_by_side(figures):
    if len(cuda.gpus) < 2:
        pytest.skip("needs two GPUs; this machine has one")
    timelines, streams = [], []
    for i in range(2):
        with cuda.gpus[i]:
            warm()
            timelines.append(Timeline())
            streams.append(cuda.stream())
    for i in range(2):
        with cuda.gpus[i]:
            with timelines[i].span(f"GPU {i} spin", streams[i]):
                streamlab.spin[1, 1, streams[i]](streamlab.ms_to_ns(20.0))
    for i in range(2):
        with cuda.gpus[i]:
            streams[i].synchronize()
    a, b = (tl.trace() for tl in timelines)
    ax = streamlab.plot([a, b])
    rows = [t.get_text().split("\n")[0] for t in ax.get_yticklabels()]
    assert "GPU 0: stream 1" in rows and "GPU 1: stream 1" in rows
    # On the shared host clock the two 20 ms kernels ran at the same time.
    shift = (b.host_origin_s - a.host_origin_s) * 1000
    sa, sb = a.span("GPU 0 spin"), b.span("GPU 1 spin")
    overlap = min(sa.end_ms, sb.end_ms + shift) - max(sa.start_ms, sb.start_ms + shift)
    figures("2 GPUs, a 20 ms kernel each: overlap on the host clock", round(overlap, 3), "ms")
    assert overlap > 15, (a.table(), b.table(), shift)
    # GPU 0's timeline refuses to make its events while GPU 1 is current
    with cuda.gpus[1]:
        with pytest.raises(TimelineError, match="current GPU is 1"):
            with timelines[0].span("wrong", streams[0]):
                pass


# --- the order of operations, as the race check assumes it, measured -------------------
def _waits_for_the_busy_stream(busy_stream, then_stream, busy_ms=50.0):
    """Does a tiny kernel issued to ``then_stream`` wait for ``busy_ms`` of work issued
    just before to ``busy_stream``? Measured on the host clock."""
    done = cuda.event()
    target = cuda.device_array(1)  # before the clock: freeing numba's pending memory
    cuda.synchronize()             # (cuMemFree) would synchronize the whole device
    t0 = time.perf_counter()
    streamlab.spin[1, 1, busy_stream](streamlab.ms_to_ns(busy_ms))
    fill[1, 1, then_stream](target, 1)
    done.record(then_stream)
    done.synchronize()
    waited_ms = (time.perf_counter() - t0) * 1000
    cuda.synchronize()
    return waited_ms > busy_ms * 0.8, waited_ms


def test_the_legacy_and_per_thread_default_streams_order_as_the_race_check_assumes(figures):
    from streamlab import order

    warm()
    legacy, per_thread = cuda.legacy_default_stream(), cuda.per_thread_default_stream()
    blocking, nonblocking = cuda.stream(), streamlab.stream(nonblocking=True)
    measured = {}
    for name, busy, then in [
        ("per-thread after legacy", legacy, per_thread),
        ("legacy after per-thread", per_thread, legacy),
        ("blocking after legacy", legacy, blocking),
        ("legacy after blocking", blocking, legacy),
        ("non-blocking after legacy", legacy, nonblocking),
        ("legacy after non-blocking", nonblocking, legacy),
    ]:
        waited, ms = _waits_for_the_busy_stream(busy, then)
        measured[name] = waited
        figures(f"{name}: waited", round(ms, 2), "ms",
                "a 50 ms kernel in the first stream, then a tiny one in the second")
    assert measured["blocking after legacy"] and measured["legacy after blocking"]
    assert not measured["non-blocking after legacy"]
    assert not measured["legacy after non-blocking"]
    # CUDA's documentation: the per-thread default stream synchronizes with the legacy
    # default stream. The race check assumes it (order.PER_THREAD_SYNCS_WITH_LEGACY).
    assert measured["per-thread after legacy"] == order.PER_THREAD_SYNCS_WITH_LEGACY
    assert measured["legacy after per-thread"] == order.PER_THREAD_SYNCS_WITH_LEGACY


def test_a_race_the_check_reports_gives_wrong_results_on_a_gpu(figures):
    """The events document's consumer without a wait: the check names the race on any
    machine; here the GPU shows it is real. With the wait: no race, no wrong element."""
    sys.path.insert(0, os.path.dirname(__file__))
    import race_cases

    n = 1 << 22
    blocks, threads = race_cases.grid(n)
    s0, s1 = cuda.stream(), cuda.stream()
    data, out = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)
    expected = 2 * np.arange(n, dtype=np.float32)
    race_cases.producer[blocks, threads, s0](data)
    race_cases.consumer[blocks, threads, s0](data, out)
    cuda.synchronize()
    for wait in (False, True):
        data.copy_to_device(np.full(n, -1, np.float32))
        ev = cuda.event()
        with streamlab.race_check(raises=False, file=open(os.devnull, "w")) as rc:
            streamlab.spin[1, 1, s0](streamlab.ms_to_ns(20))
            race_cases.producer[blocks, threads, s0](data)
            if wait:
                ev.record(s0)
                ev.wait(s1)
            race_cases.consumer[blocks, threads, s1](data, out)
            cuda.synchronize()
        wrong = int(np.count_nonzero(out.copy_to_host() != expected))
        label = "with the wait" if wait else "without a wait"
        figures(f"consumer {label}: races reported", len(rc.races))
        figures(f"consumer {label}: wrong elements", wrong, f"of {n}")
        if wait:
            assert not rc.races and wrong == 0
        else:
            assert len(rc.races) == 1 and wrong > 0


@pytest.mark.parametrize("name", ["RACES", "CORRECT"])
def test_the_source_documents_races_are_found_on_a_gpu(name, figures):
    sys.path.insert(0, os.path.dirname(__file__))
    import race_cases

    for case, run in getattr(race_cases, name).items():
        rc = run()
        figures(f"race check, {case}", len(rc.races), "races")
        assert bool(rc.races) == (name == "RACES"), f"{case}: {rc.report()}"
