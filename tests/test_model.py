"""The model GPU under the simulator: what a learner without a GPU sees.

Each test is a picture a lesson draws, or a rule of the model, checked on the
simulator's modelled timeline. (tests/test_gpu.py and scripts/gpu/model_vs_gpu.py set the
model beside measurements on a real GPU.)
"""

import math
import threading
import time

import matplotlib
import numpy as np
import pytest
from numba import cuda
from numba.cuda.cudadrv.driver import CudaAPIError

import streamlab
from streamlab import model

matplotlib.use("Agg")
pytestmark = pytest.mark.usefixtures("sim_only")


@cuda.jit
def rennich(x, n):  # notebook 01's kernel
    tid = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    for i in range(tid, n, cuda.blockDim.x * cuda.gridDim.x):
        x[i] = math.sqrt(math.pow(3.14159, i % 600))


@cuda.jit
def double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2.0


@pytest.fixture
def gpu_sized():
    """Arrays timed as if 1024 times bigger, as streamlab.size() makes them."""
    before = model.simulator_model().scale
    model.set_scale(1024)
    yield 1024
    model.set_scale(before)


def eight_streams(n, dummy=None):
    streams = [cuda.stream() for _ in range(8)]
    data = [cuda.device_array(n, dtype=np.float32) for _ in range(8)]
    spare = cuda.device_array(1, dtype=np.float32)
    tl = streamlab.Timeline()
    for i, st in enumerate(streams):
        tl.name_stream(st, f"stream {i}")
    for i, st in enumerate(streams):
        with tl.span(f"kernel {i}", st):
            rennich[1, 64, st](data[i], n)
        if dummy is not None:
            with tl.span("dummy", dummy):
                rennich[1, 1, dummy](spare, 0)
    cuda.synchronize()
    trace = tl.trace()
    return trace.metrics(rows=[f"stream {i}" for i in range(8)])


def test_the_simulator_runs_a_model_gpu_and_says_which():
    m = model.simulator_model()
    assert m is not None and m.profile.key in model.profiles()
    tl = streamlab.Timeline()
    s = cuda.stream()
    with tl.span("k", s):
        streamlab.spin[1, 1, s](1000)
    trace = tl.trace()
    assert trace.model == m.profile.label
    assert trace.model.startswith("model of an NVIDIA H") and \
        trace.model.endswith(", not a measurement")
    assert trace.plot().get_title().startswith(trace.model)


# Rennich's kernel writes pi ** 599 and the like into float32: inf, as on a GPU (numpy warns)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_eight_streams_overlap_and_legacy_dummies_serialise_them(gpu_sized):
    # best of five, as the course times host-issued work: the host's own gaps vary
    plain = max((eight_streams(1 << 10) for _ in range(5)), key=lambda m: m.concurrency)
    # 6, not 7: the model's host clock counts this machine's own gaps between calls; a
    # loaded CI machine gave 6.90 once, a slower two-core machine with the suite's three
    # workers 6.24 as its best of three (notebook 01's H200 run: 6.99). The legacy
    # dummies below serialise to 1.0 at most: the test still tells the two apart
    assert plain.concurrency >= 6
    legacy = eight_streams(1 << 10, dummy=cuda.legacy_default_stream())
    assert 0.95 <= legacy.concurrency <= 1.0
    per_thread = max((eight_streams(1 << 10, dummy=cuda.per_thread_default_stream())
                      for _ in range(5)), key=lambda m: m.concurrency)
    assert per_thread.concurrency >= 5  # (one run on a loaded CI machine: 4.68)


# Rennich's kernel writes pi ** 599 and the like into float32: inf, as on a GPU (numpy warns)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_the_overlap_check_judges_the_model_on_the_simulator(gpu_sized, capsys,
                                                            monkeypatch):
    """Lab 01's and lesson 01's overlap check: passed by eight streams, failed on the model
    GPU by the same kernels chained by events (each stream waits for the one before, the
    structure a careless learner's extra waits give); not checked, and said so, with the
    model off. (A chain, not legacy dummies: the check's end events would wait for the last
    dummy in every stream, and its spans would all end together.)"""
    from streamlab import check

    def timed(chained):
        streams = [cuda.stream() for _ in range(8)]
        data = [cuda.device_array(1 << 10, dtype=np.float32) for _ in range(8)]
        with check.time_per_stream(streams) as timing:
            before = None
            for st, d in zip(streams, data):
                if chained and before is not None:
                    before.wait(st)
                rennich[1, 64, st](d, d.size)
                before = cuda.event(timing=False)
                before.record(st)
        return timing[0]

    best = max((timed(False) for _ in range(3)), key=lambda t: t.metrics().concurrency)
    check.concurrency_at_least(best, 0.65 * 8, "eight streams")
    assert "eight streams: overlapped" in capsys.readouterr().out
    label = model.simulator_model().profile.label.split(",")[0]
    with pytest.raises(check.CheckFailed, match=f"overlapped only .*-fold on the {label}"):
        check.concurrency_at_least(timed(True), 0.65 * 8, "chained by events")
    monkeypatch.setitem(model._sim, "model", None)
    check.concurrency_at_least(best, 100, "with the model off")
    assert "overlap not checked" in capsys.readouterr().out


def test_a_streams_span_begins_at_its_own_first_launch_not_the_block():
    """check.time_per_stream times each stream from just before its first launch in the
    block: kernels the host launched 20 ms apart (a sleep, a wait that is not a
    synchronize) start their streams' spans 20 ms apart, where a bracket around the whole
    block made every stream look busy all along (issue 56, lab 01). A stream the block
    launched nothing into spans the whole block."""
    import time

    from streamlab import check

    streams = [cuda.stream() for _ in range(3)]
    with check.time_per_stream(streams) as timing:
        time.sleep(0.005)
        for s in streams[:2]:
            streamlab.spin[1, 1, s](streamlab.ms_to_ns(5))
            time.sleep(0.02)
    first, second, idle = timing[0].spans
    assert second.start_ms > first.start_ms + 15, timing[0].table()
    assert idle.start_ms < first.start_ms - 4, timing[0].table()
    assert timing[0].metrics().concurrency < 2.5, timing[0].table()


def test_with_more_streams_than_hardware_queues_every_span_begins_with_the_block(
        monkeypatch):
    """More streams than hardware queues (CUDA_DEVICE_MAX_CONNECTIONS): an event recorded
    before a stream's first launch could wait behind another stream's kernel on a GPU, so
    time_per_stream records none, and every span begins with the block."""
    import time

    from streamlab import check

    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2")
    streams = [cuda.stream() for _ in range(3)]
    with check.time_per_stream(streams) as timing:
        for s in streams:
            time.sleep(0.01)
            streamlab.spin[1, 1, s](streamlab.ms_to_ns(1))
    starts = [span.start_ms for span in timing[0].spans]
    assert max(starts) - min(starts) < 1, timing[0].table()


def test_eight_host_threads_overlap_their_kernels():
    def eight_threads():
        tl = streamlab.Timeline()
        streams = [cuda.stream() for _ in range(8)]

        def work(i):
            with tl.span(f"kernel {i}", streams[i]):
                streamlab.spin[1, 1, streams[i]](streamlab.ms_to_ns(20))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        cuda.synchronize()
        return tl.trace().metrics().concurrency

    # One after another would be 1. The threads take turns at the GIL, and each one's
    # issue time counts, as on a GPU: notebook 01's committed H200 run gives 8 threads
    # 13.1 ms against 7.3 ms for one kernel, a concurrency of about 4.5. The host's real
    # time between calls counts too (a wait for the GIL is not a wait for a CPU), so other
    # processes busy on this machine can stretch the issue: with 5 ms kernels the best of
    # three read 3.4 and 3.5 in two loaded CI runs. With 20 ms kernels the same stretch is
    # a quarter of the share: about 8 x 20 / (20 + 10) = 5.3 for 10 ms of issue.
    assert max(eight_threads() for _ in range(3)) >= 4


def harris_like(version, n, chunks=4):
    """Mark Harris's sequential version (0) and version 1, with the kernel's cost stated as
    notebook 04 calibrates it on a GPU: as long as its chunk's copy in."""
    h = cuda.pinned_array(n, dtype=np.float32)
    h[:] = 1.0
    d = cuda.device_array(n, dtype=np.float32)
    streams = [cuda.stream() for _ in range(chunks)]
    c = n // chunks
    p = model.simulator_model().profile
    copy_ms = 4 * n * model.simulator_model().scale / (p.copies["h2d_pinned"]["gbs"] * 1e6)
    streamlab.kernel_cost(double, lambda grid, block: copy_ms * grid[0] / ((n + 255) // 256))
    tl = streamlab.Timeline()
    if version == 0:
        s = streams[0]
        with tl.span("h2d", s, kind="h2d"):
            d.copy_to_device(h, stream=s)
        with tl.span("kernel", s):
            double[(n + 255) // 256, 256, s](d)
        with tl.span("d2h", s, kind="d2h"):
            d.copy_to_host(h, stream=s)
    else:
        for i, s in enumerate(streams):
            part, host = d[i * c:(i + 1) * c], h[i * c:(i + 1) * c]
            with tl.span(f"h2d {i}", s, kind="h2d"):
                part.copy_to_device(host, stream=s)
            with tl.span(f"kernel {i}", s):
                double[(c + 255) // 256, 256, s](part)
            with tl.span(f"d2h {i}", s, kind="d2h"):
                part.copy_to_host(host, stream=s)
    cuda.synchronize()
    streamlab.kernel_cost(double, None)
    assert np.all(h == 2.0)
    return tl.trace()


def test_harris_version_1_overlaps_on_the_model():
    before = model.simulator_model().scale
    # 2 GB on the GPU (notebook 04 copies 64 MB): each chunk's copy takes ms, so that the
    # host's real time issuing the next chunk (longer on a loaded machine) stays shorter
    model.set_scale(16384 * 32)
    try:
        sequential = harris_like(0, 1 << 10)
        version1 = harris_like(1, 1 << 10)
    finally:
        model.set_scale(before)
    assert version1.metrics().makespan_ms < 0.7 * sequential.metrics().makespan_ms
    assert version1.overlap_ms("h2d 1", "kernel 0") > 0
    assert max(version1.overlap_ms(f"h2d {i + 1}", f"d2h {i}") for i in range(3)) > 0


def test_a_pageable_copy_holds_the_host_and_a_pinned_one_does_not(gpu_sized):
    n = 1 << 14
    d = cuda.device_array(n, dtype=np.float32)
    s = cuda.stream()
    held = {}
    for memory, host in (("pinned", cuda.pinned_array(n, dtype=np.float32)),
                         ("pageable", np.ones(n, dtype=np.float32))):
        tl = streamlab.Timeline()
        with tl.host("call"):
            with tl.span("copy", s, kind="h2d"):
                d.copy_to_device(host, stream=s)
        s.synchronize()
        t = tl.trace()
        held[memory] = t.span("call").duration_ms / t.span("copy").duration_ms
    assert held["pinned"] < 0.5 and held["pageable"] > 0.9


def test_kernels_share_the_sms_by_their_blocks():
    # 4096 simulated threads (each a Python thread) that the model times as 64 M elements,
    # 262144 blocks: all of the GPU's slots
    before = model.simulator_model().scale
    model.set_scale(1 << 14)
    try:
        x, y = cuda.device_array(1 << 12, dtype=np.float32), cuda.device_array(1 << 12,
                                                                                dtype=np.float32)
        a, b = cuda.stream(), cuda.stream()
        # both streams held 20 ms by an event: both kernels are queued before either starts,
        # however long the host (a loaded machine) takes to issue the second
        hold, go = cuda.stream(), cuda.event()
        streamlab.spin[1, 1, hold](streamlab.ms_to_ns(20))
        go.record(hold)
        go.wait(a)
        go.wait(b)
        tl = streamlab.Timeline()
        with tl.span("big a", a):
            double[16, 256, a](x)
        with tl.span("big b", b):
            double[16, 256, b](y)
        cuda.synchronize()
    finally:
        model.set_scale(before)
    t = tl.trace()
    one = t.span("big a").duration_ms
    assert t.metrics().makespan_ms > 1.8 * one  # the second waits for the first's slots


def test_query_and_elapsed_time_follow_the_model():
    s = cuda.stream()
    start, end = cuda.event(), cuda.event()
    start.record(s)
    streamlab.spin[1, 1, s](streamlab.ms_to_ns(50))
    end.record(s)
    assert end.query() is False
    with pytest.raises(CudaAPIError, match="NOT_READY.*event.synchronize"):
        start.elapsed_time(end)
    end.synchronize()
    assert end.query() is True
    # the spin's 50 ms on the model, and the host's real time between the two records
    # (a loaded CI machine once took 0.46 ms there)
    assert 50 <= start.elapsed_time(end) < 55


def test_the_host_waits_for_the_model_not_for_the_simulator():
    from streamlab import ops

    s = cuda.stream()
    tl = streamlab.Timeline()
    waited = ops.run_delay()
    with tl.span("20 ms", s):
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(20))
    with tl.host("host work"):
        t0 = time.perf_counter()
        time.sleep(0.005)  # the host's own work counts as it is
        slept_ms = (time.perf_counter() - t0) * 1000
    waited_ms = (ops.run_delay() - waited) * 1000
    with tl.host("wait"):
        s.synchronize()
    t = tl.trace()
    # the span is the host's own time: the sleep, and the host's real time around it (a
    # loaded machine adds some), never the 20 ms the model's GPU is still busy; time the
    # thread spent waiting for a CPU (another process's turn) is not the host's work, and
    # the model may take it off (never more than there was)
    assert slept_ms - waited_ms - 0.001 <= t.span("host work").duration_ms < slept_ms + 2, \
        (slept_ms, waited_ms, t.span("host work").duration_ms)
    assert t.span("wait").end_ms == pytest.approx(t.span("20 ms").end_ms, abs=0.05)


def test_a_host_function_runs_when_its_stream_reaches_it():
    s = cuda.stream()
    tl = streamlab.Timeline()
    with tl.span("10 ms", s):
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(10))
    call = streamlab.launch_host_func(s, time.sleep, 0.002, name="sleep 2 ms")
    with tl.span("after", s):
        streamlab.spin[1, 1, s](1000)
    s.synchronize()
    call.wait(5)
    tl.add_host_call(call)
    t = tl.trace()
    fn = t.span("sleep 2 ms")
    assert fn.start_ms > t.span("10 ms").end_ms  # and the driver's thread woke up
    assert fn.row == "host: CUDA driver"
    assert 2 <= fn.duration_ms < 5
    assert t.span("after").start_ms >= fn.end_ms - 1e-6


def test_a_stated_cost_times_the_kernel():
    x = cuda.device_array(64, dtype=np.float32)
    s = cuda.stream()
    streamlab.kernel_cost(double, 3.0)
    try:
        # each span behind a 20 ms hold: the host's time between its record and the
        # launch (real time on the simulator, more of it on a loaded machine) is not in it
        tl = streamlab.Timeline()
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(20))
        with tl.span("k", s):
            double[1, 64, s](x)
        assert 3.0 - 1e-6 <= tl.trace().span("k").duration_ms < 3.1
        streamlab.kernel_cost(double, lambda grid, block: grid[0] * 1.0)
        tl = streamlab.Timeline()
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(20))
        with tl.span("k", s):
            double[2, 32, s](x)
        assert 2.0 - 1e-6 <= tl.trace().span("k").duration_ms < 2.1
    finally:
        streamlab.kernel_cost(double, None)


def test_work_done_is_frozen_once_the_host_has_waited_for_it():
    s = cuda.stream()
    for _ in range(5):
        streamlab.spin[1, 1, s](1000)
    cuda.synchronize()
    assert model.simulator_model().ops == []


@pytest.mark.parametrize("call, message", [
    (lambda: streamlab.kernel_cost(print, 1.0), "@cuda.jit kernel"),
    (lambda: streamlab.kernel_cost(double, -1), "number of ms"),
    (lambda: streamlab.kernel_cost(double, "fast"), "number of ms"),
    (lambda: streamlab.size(gpu=0, sim=4), "whole number"),
    (lambda: streamlab.size(gpu=1 << 20, sim=1.5), "whole number"),
    (lambda: model.load_profile("nvidia-b200"), "no GPU profile called 'nvidia-b200'"),
    (lambda: model.load_profile(200), "named by a string"),
])
def test_bad_input_to_the_model_gets_a_clear_error(call, message):
    with pytest.raises((TypeError, ValueError, model.ModelError), match=message):
        call()


def test_profiles_were_measured_by_the_script():
    keys = model.profiles()
    assert {"nvidia-h100", "nvidia-h200"} <= set(keys)
    for key in keys:
        p = model.load_profile(key)
        assert p.sm_count > 0 and p.async_engine_count >= 1
        assert p.name.startswith("NVIDIA ") and key.split("-")[1] in p.name.lower()
        assert 1 < p.copies["h2d_pinned"]["gbs"] < 1000
        assert 1 < p.host_us["launch"] < 200


def test_size_scales_the_models_bytes_on_the_simulator():
    before = model.simulator_model().scale
    try:
        assert streamlab.size(gpu=1 << 20, sim=1 << 10) == 1 << 10
        assert model.simulator_model().scale == 1024
    finally:
        model.set_scale(before)


def test_a_second_model_beside_the_run_predicts_a_timeline():
    """What streamlab.predict() does on a GPU: a model fed the block's operations, its
    trace built from the Timeline's events and host times."""
    from streamlab import ops

    p = model.Prediction(model.load_profile("nvidia-h100"))
    ops.add_model(p.model)
    model._predictions.append(p)
    try:
        streams = [cuda.stream() for _ in range(4)]
        tl = streamlab.Timeline()
        for i, s in enumerate(streams):
            with tl.span(f"k{i}", s):
                streamlab.spin[1, 1, s](streamlab.ms_to_ns(20))
        with tl.host("wait"):
            cuda.synchronize()
    finally:
        model._predictions.remove(p)
        ops.remove_model(p.model)
    predicted = p.trace()
    assert predicted.model == "model of an NVIDIA H100, not a measurement"
    assert [s.name for s in predicted.spans] == [s.name for s in tl.trace().spans]
    assert predicted.metrics().concurrency > 3.5
    # the wait ends with the last kernel (not before it), plus the host's own time to
    # return, which the model's host clock counts: 0.2 ms once on a loaded two-core
    # machine; serialised kernels would have ended it some 60 ms later
    last = max(predicted.span(f"k{i}").end_ms for i in range(4))
    assert last - 0.05 <= predicted.span("wait").end_ms <= last + 1.0, \
        (predicted.span("wait").end_ms, last)
    with pytest.raises(model.ModelError, match="made inside the `with streamlab.predict"):
        model.Prediction(model.load_profile("nvidia-h100")).trace()


def test_a_one_block_grid_over_small_data_grows_with_it(gpu_sized):
    """On the simulator a data-sized grid may be one block (256 elements); at the GPU's size
    it has 1024 blocks, and runs at DRAM speed, not at one block's."""
    x = cuda.to_device(np.ones(256, dtype=np.float32))
    s = cuda.stream()

    def once():
        tl = streamlab.Timeline()
        with tl.span("double", s):
            double[1, 256, s](x)
        return tl.trace().span("double").duration_ms

    # 2 MB at DRAM speed is 2 us; the span adds the host's launch (tens of us) and its
    # real time between the span's records, which a loaded CI machine stretched to 0.49 ms
    # once: the best of three. As one block of 256 threads it would take about 1 ms.
    ms = min(once() for _ in range(3))
    assert ms < 0.3, ms


def _waiting_for_a_cpu(monkeypatch):
    """A stand-in for the thread's wait for a CPU (streamlab.ops.run_delay) that grows
    only when told: a test can say "this thread waited 50 ms for another process"."""
    from streamlab import ops

    waited = {"s": 0.0, "thread": threading.get_ident()}

    def run_delay():
        return waited["s"] if threading.get_ident() == waited["thread"] else 0.0

    monkeypatch.setattr(ops, "run_delay", run_delay)
    return waited


def test_time_another_process_had_the_cpu_is_not_the_hosts_work(monkeypatch):
    """Between two calls the host's clock on the model moves by the host's own work: a
    sleep counts (the program chose to wait), time the operating system gave another
    process does not (a machine busy with other work made lesson 09's loop look
    host-bound on the simulator, and failed its claim in CI)."""
    waited = _waiting_for_a_cpu(monkeypatch)
    s = cuda.stream()
    streamlab.spin[1, 1, s](0)
    t0 = streamlab.now()
    time.sleep(0.05)                 # the program's own 50 ms: counted
    streamlab.spin[1, 1, s](0)
    slept = streamlab.now() - t0
    time.sleep(0.05)
    waited["s"] += 0.05              # the same 50 ms, spent waiting for a CPU: not counted
    streamlab.spin[1, 1, s](0)
    preempted = streamlab.now() - t0 - slept
    s.synchronize()
    assert slept >= 0.05, slept
    assert preempted < 0.01, preempted


def test_the_hosts_clock_never_goes_back(monkeypatch):
    """streamlab.now() reads the time, then the thread's wait for a CPU: a thread that
    loses the CPU between the two reads has a wait taken off that came after the time it
    read. The clock must still never go back (CI's loaded machine read a later now()
    earlier than the one before it, failing now()'s doctest)."""
    waited = _waiting_for_a_cpu(monkeypatch)
    s = cuda.stream()
    streamlab.spin[1, 1, s](0)
    time.sleep(0.02)
    t0 = streamlab.now()
    waited["s"] += 0.05            # 50 ms of waiting, as if it came after t0's reading
    t1 = streamlab.now()
    assert t1 >= t0, (t0, t1)
    streamlab.spin[1, 1, s](0)
    t2 = streamlab.now()
    s.synchronize()
    assert t2 >= t1, (t1, t2)


def test_a_host_function_waiting_for_a_cpu_holds_its_stream_only_for_its_work(monkeypatch):
    """A host function's length on the model is its body's time less its thread's wait
    for a CPU (lesson 05's 20 ms host function measured 28 ms on a busy machine)."""
    from streamlab import hostfn, ops

    in_body = threading.local()

    def run_delay():  # the driver's thread: 30 ms of its 40 ms body spent waiting
        return 0.03 if getattr(in_body, "waited", False) else 0.0

    monkeypatch.setattr(ops, "run_delay", run_delay)
    monkeypatch.setattr(hostfn, "run_delay", run_delay)

    def body():
        time.sleep(0.04)
        in_body.waited = True

    s = cuda.stream()
    call = streamlab.launch_host_func(s, body)
    s.synchronize()
    call.wait()
    assert 0.005 < call.work_s < 0.025, call.work_s       # about 40 - 30 ms
    # on the simulator its times are the model's: its stream was held for its work
    assert call.ended_s - call.started_s < 0.025, (call.started_s, call.ended_s)


def test_reading_a_threads_wait_for_a_cpu_leaves_no_file_open():
    """ops.run_delay keeps a file of each thread's own open while the thread lives: the
    simulator starts threads by the thousand, and each left one open once (the process
    ran out of file descriptors)."""
    import os

    from streamlab import ops

    def count():
        return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0

    before = count()
    for _ in range(200):
        t = threading.Thread(target=ops.run_delay)
        t.start()
        t.join()
    assert count() <= before + 2, (before, count())


def _span_on_the_model(waited, wait_s):
    """Launch; wait ``wait_s`` for a CPU (told to the stand-in); a 10 ms host span; launch:
    the span's ends on the model's clock, the model times of the two launches, and the
    span's width on the host's clock (a 10 ms sleep on a busy machine wakes up late)."""
    from streamlab import model as model_module

    m = model_module.simulator_model()
    thread = threading.current_thread().name
    s = cuda.stream()
    streamlab.spin[1, 1, s](0)
    first = streamlab.now()
    time.sleep(wait_s)
    waited["s"] += wait_s
    a = time.perf_counter()
    time.sleep(0.01)
    b = time.perf_counter()
    streamlab.spin[1, 1, s](0)
    second = streamlab.now()
    s.synchronize()
    return m.to_model(thread, a), m.to_model(thread, b), first, second, b - a


def test_a_host_span_after_a_wait_for_a_cpu_keeps_its_place_and_a_width(monkeypatch):
    """Timeline.host() maps its ends with ModelGPU.to_model: after a wait for a CPU that
    the model leaves out, the span still lies between the calls around it, with a width
    (a first version clamped both ends to one point); with no wait, nothing changes. The
    widths are held to what the host's clock measured, not to the sleep's 10 ms: under a
    busy loop a 10 ms sleep took 15 ms, and a first version of this test failed."""
    waited = _waiting_for_a_cpu(monkeypatch)
    a, b, first, second, host_width = _span_on_the_model(waited, 0.05)
    assert first <= a < b <= second + 1e-9, (first, a, b, second)
    assert 0 < b - a <= host_width + 1e-4, (b - a, host_width)
    a, b, first, second, host_width = _span_on_the_model(waited, 0.0)
    assert abs((b - a) - host_width) < 1e-4, (b - a, host_width)
    assert first <= a < b <= second + 1e-9, (first, a, b, second)


def test_a_host_span_mapped_as_it_closes_ends_before_the_call_after_it(monkeypatch):
    """Timeline.host() maps a span's ends as the span closes, before the next call: when
    the thread waited for a CPU inside the span (a sleep's wake-up on a busy machine), the
    next call's place leaves that wait out, and so must the span's, or the span ends after
    the call that follows it (tests/test_timeline.py failed so in CI, under load)."""
    from streamlab import model as model_module

    waited = _waiting_for_a_cpu(monkeypatch)
    m = model_module.simulator_model()
    thread = threading.current_thread().name
    s = cuda.stream()
    streamlab.spin[1, 1, s](0)
    first = streamlab.now()
    a = time.perf_counter()
    time.sleep(0.01)
    waited["s"] += 0.008                 # 8 ms of the span spent waiting for a CPU
    b = time.perf_counter()
    start, end = m.to_model(thread, a), m.to_model(thread, b)   # as Timeline.host does
    streamlab.spin[1, 1, s](0)
    second = streamlab.now()
    s.synchronize()
    assert first <= start <= end <= second + 1e-9, (first, start, end, second)
