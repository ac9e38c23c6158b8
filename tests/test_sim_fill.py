"""The simulator's gaps, filled: real numba.cuda code runs unchanged on it.

Each test is the GPU behaviour the fill stands in for. They run on the simulator
only: on a GPU nothing is patched (test_gpu.py checks the real behaviour).
"""

import asyncio
import os
import threading
import time

import numpy as np
import pytest
from numba import cuda
from numba.cuda.cudadrv.driver import CudaAPIError

import streamlab

pytestmark = pytest.mark.usefixtures("sim_only")


@cuda.jit
def sleep_ms(ms):
    cuda.nanosleep(int(ms * 1_000_000))


@cuda.jit
def fill(x, value):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = value


def test_events_accept_timing_and_time_the_model_gpu():
    s = cuda.stream()
    start, end = cuda.event(timing=True), cuda.event()
    launch = sleep_ms[1, 1, s]  # configured first: between the record and the launch, the
    t0 = time.perf_counter()    # host does as little as it can (the model counts that time)
    start.record(s)
    launch(2000)
    slept_s = time.perf_counter() - t0
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 2000 <= ms < 2000.5  # the threads' nanosleep, counted by the model, not slept
    assert slept_s < 1.0  # a margin for a loaded machine; sleeping would take 2 s
    assert cuda.event_elapsed_time(start, end) == ms
    assert end.query() is True


def test_timing_disabled_event_raises_like_the_gpu_and_says_what_to_do():
    a, b = cuda.event(timing=False), cuda.event(timing=False)
    a.record()
    b.record()
    with pytest.raises(CudaAPIError, match=r"timing=False.*cuda.event\(timing=True\)"):
        a.elapsed_time(b)


def test_unrecorded_event_raises_like_the_gpu():
    a, b = cuda.event(), cuda.event()
    a.record()
    with pytest.raises(CudaAPIError, match="never recorded"):
        a.elapsed_time(b)


def test_streams_are_distinct_and_have_handles():
    s1, s2 = cuda.stream(), cuda.stream()
    assert s1 != s2 and int(s1) != int(s2)
    assert s1.__cuda_stream__()[1] == int(s1)
    assert int(cuda.default_stream()) == 0
    assert int(cuda.legacy_default_stream()) == 1
    assert int(cuda.per_thread_default_stream()) == 2
    assert "Per-thread" in repr(cuda.per_thread_default_stream())


def test_external_streams_stay_as_numba_has_them_on_the_simulator():
    # unsupported there: numba-cuda's own test of it passes with streamlab imported
    with pytest.raises(RuntimeError, match="unsupported in the simulator"):
        cuda.external_stream(0xBEEF)


def test_pinned_takes_several_arrays():
    a, b = np.zeros(4), np.ones(4)
    with cuda.pinned(a, b):
        d = cuda.to_device(b)
    assert d.copy_to_host().sum() == 4
    with pytest.raises(TypeError, match="numpy arrays"):
        with cuda.pinned([1, 2]):
            pass


def test_a_device_copy_of_a_pinned_array_is_a_plain_device_array():
    h = cuda.pinned_array(8, dtype=np.float32)
    h[:] = 3.0
    d = cuda.to_device(h)                  # the simulator kept the pinned class: it broke
    d.copy_to_device(h)                    # the next copy into the device array
    assert (d.copy_to_host() == 3.0).all()


def test_pinned_is_the_memory_not_the_class_a_copy_is_pageable():
    """issue 32: a copy of a pinned array is new, pageable memory on a GPU, though numpy
    gives it the pinned stand-in's class; views share the pinned memory. A pageable copy
    made from it is recorded as pageable, so a check that asks for pinned copies sees it."""
    h = cuda.pinned_array(64, dtype=np.float32)
    m = cuda.mapped_array(64, dtype=np.float32)
    for ary in (h, h[8:], h.reshape(8, 8)[2], np.asarray(h), m, m[1:]):
        assert streamlab.is_pinned(ary)
    for copy in (h.copy(), np.copy(h), h + 1, h * 2.0, np.empty_like(h), np.array(h),
                 m.copy(), h.copy()[8:]):
        assert not streamlab.is_pinned(copy), type(copy)
    plain = np.zeros(64, np.float32)
    with cuda.pinned(plain):
        assert streamlab.is_pinned(plain) and streamlab.is_pinned(plain[4:])
    assert not streamlab.is_pinned(plain)
    s = cuda.stream()
    d = cuda.device_array(64, dtype=np.float32)
    with streamlab.record_ops() as ops:
        d.copy_to_device(h, stream=s)
        d.copy_to_device(h.copy(), stream=s)
    s.synchronize()
    assert [op.pinned for op in ops.copies("h2d")] == [True, False]


def test_the_contexts_synchronize_waits_as_cuda_synchronize_does():
    """issue 32: cuda.current_context().synchronize() raised AttributeError on the
    simulator; on a GPU it waits for the device, and the record shows that host wait."""
    with streamlab.record_ops() as ops:
        cuda.current_context().synchronize()
        cuda.synchronize()
    assert [op.name for op in ops.syncs()] == ["device", "device"]


def test_mapped_array_is_host_memory_a_kernel_writes():
    m = cuda.mapped_array(8, dtype=np.int32)
    assert isinstance(m, np.ndarray)
    fill[1, 8](m, 7)
    cuda.synchronize()
    assert (m == 7).all()


def test_broken_callbacks_point_to_what_works():
    s = cuda.stream()
    with pytest.raises(NotImplementedError, match="cuLaunchHostFunc"):
        s.add_callback(lambda *a: None)
    with pytest.raises(NotImplementedError, match="call_soon_threadsafe"):
        s.async_done()


def test_the_spin_kernel_takes_its_time_on_the_model_not_the_host():
    s = cuda.stream()
    end = cuda.event()
    t0 = time.perf_counter()
    start = cuda.event()
    start.record(s)
    streamlab.spin[1, 1, s](streamlab.ms_to_ns(500))
    end.record(s)
    # the host is not held for the spin: far less than its 500 ms (a loaded 2-core CI
    # machine once took 5.6 ms here, so no tighter bound than the spin's own scale)
    assert time.perf_counter() - t0 < 0.1
    assert end.query() is False  # a GPU would still be spinning
    end.synchronize()
    # the events bracket the spin's 500 ms and the host's time between the two records,
    # which the model counts as it really was (a loaded CI machine once took 1.08 ms)
    assert 500 <= start.elapsed_time(end) < 505


def test_with_the_model_off_nanosleep_sleeps_on_the_host(tmp_path):
    import subprocess
    import sys

    code = ("import time, streamlab\nfrom numba import cuda\ns = cuda.stream()\n"
            "t0 = time.perf_counter()\nstreamlab.spin[1, 1, s](streamlab.ms_to_ns(30))\n"
            "print(time.perf_counter() - t0, streamlab.model.simulator_model())\n")
    env = dict(__import__("os").environ, STREAMLAB_MODEL="off", STREAMLAB_QUIET="1",
               STREAMLAB_DEVICE="sim")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert float(out[0]) >= 0.03 and out[1] == "None"


def test_nonblocking_stand_in_carries_its_flags():
    s = streamlab.stream(nonblocking=True, priority=-2)
    info = streamlab.stream_info(s)
    assert (info.kind, info.priority) == ("non-blocking", -2)
    assert streamlab.priority_range() == (0, -5)   # an H200's, as measured


def test_stream_done_resolves_in_the_simulator():
    async def main():
        s = cuda.stream()
        fill[1, 4, s](cuda.device_array(4), 1)
        return await asyncio.wait_for(streamlab.stream_done(s), 5)

    s = asyncio.run(main())
    assert isinstance(s, type(cuda.stream()))


def test_globaltimer_is_a_gpu_register_only():
    with pytest.raises(NotImplementedError, match="simulator has none"):
        streamlab.globaltimer()


def test_launches_from_several_host_threads_do_not_race_in_the_simulator():
    @cuda.jit
    def inc(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    data = [cuda.device_array(4) for _ in range(8)]
    for d in data:
        d.copy_to_device(np.zeros(4))
    errors = []

    def work(d):
        try:
            for _ in range(5):
                inc[1, 4](d)
        except Exception as exc:  # report, do not hide, a race
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d,)) for d in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all((d.copy_to_host() == 5).all() for d in data)


_idents = set()


@cuda.jit
def index_2d(out):
    x, y = cuda.grid(2)
    if x < out.shape[0] and y < out.shape[1]:
        out[x, y] = x * 1000 + y + cuda.threadIdx.x * 0  # every thread writes its own
        _idents.add(threading.get_ident())                # (the simulator runs Python)


@cuda.jit
def reverse_in_block(a):
    tile = cuda.shared.array(64, dtype=np.float32)
    i = cuda.threadIdx.x
    tile[i] = a[i]
    cuda.syncthreads()
    a[i] = tile[63 - i]


@cuda.jit
def fails_at_five(a):
    i = cuda.grid(1)
    a[i] = 1.0 if i != 5 else a[10_000]


def _barrier(x):
    return cuda.syncthreads()


@cuda.jit(device=True)
def waits(x):
    _barrier(x)


@cuda.jit
def waits_through_a_device_function(a):
    waits(a)
    a[cuda.grid(1)] += 1


def test_a_block_without_barriers_runs_its_threads_in_one_simulated_thread():
    """streamlab.sim.fill: a kernel that names no barrier runs a block's threads one after
    another in one thread (each with its own index); one that names syncthreads, itself or
    through what it calls, runs as numba's simulator runs it, a thread each."""
    from streamlab.sim import fill as simfill

    out = cuda.device_array((40, 24), dtype=np.int64)
    _idents.clear()
    index_2d[(3, 2), (16, 16)](out)
    x, y = np.meshgrid(np.arange(40), np.arange(24), indexing="ij")
    assert np.array_equal(out.copy_to_host(), x * 1000 + y)
    assert len(_idents) <= 6, "a thread for each block at most"
    a = cuda.to_device(np.arange(64, dtype=np.float32))
    reverse_in_block[1, 64](a)
    assert np.array_equal(a.copy_to_host(), np.arange(64, dtype=np.float32)[::-1])
    assert simfill._no_barriers(index_2d) and not simfill._no_barriers(reverse_in_block)
    assert not simfill._no_barriers(waits_through_a_device_function)
    with pytest.raises(IndexError, match=r"tid=\[5, 0, 0\] ctaid=\[0, 0, 0\]"):
        fails_at_five[1, 8](cuda.device_array(8, dtype=np.float32))


def test_each_simulated_thread_sleeps_on_its_own_when_a_block_shares_one():
    """cuda.nanosleep in every thread of a block run in one simulated thread: the model
    GPU reads the longest sleep of one CUDA thread, not the block's sleeps added up."""
    s = cuda.stream()
    start, end = cuda.event(), cuda.event()
    start.record(s)
    sleep_ms[2, 8, s](1.0)
    end.record(s)
    end.synchronize()
    assert 0.9 <= cuda.event_elapsed_time(start, end) < 3


def test_a_closed_contexts_streams_and_events_are_refused_as_on_a_gpu():
    """Issue 55 item 3: after cuda.close() a GPU refuses the streams and events of the
    context it destroyed (an H100: the stream's synchronize and a record into it,
    CUDA_ERROR_INVALID_CONTEXT; the event's query and synchronize, and a launch into the
    old stream, CUDA_ERROR_CONTEXT_IS_DESTROYED). The simulator accepted them; it refuses
    them now with the same codes, and new streams and events work (streamlab.sim.stream)."""
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent('''
        import re
        import numpy as np, streamlab
        from numba import cuda

        @cuda.jit
        def k(x):
            x[0] = 1

        s, ev, d = cuda.stream(), cuda.event(), cuda.device_array(1)
        k[1, 1, s](d); ev.record(s); s.synchronize()
        cuda.close()
        def code(f):
            try:
                f()
                return "accepted"
            except Exception as e:  # noqa: BLE001
                return re.search(r"CUDA_ERROR_[A-Z_]+", str(e)).group(0)
        print(code(lambda: s.synchronize()), code(lambda: ev.record(s)),
              code(lambda: ev.query()), code(lambda: ev.synchronize()),
              code(lambda: k[1, 1, s](cuda.device_array(1))),
              code(lambda: ev.wait(cuda.stream())))
        s2, ev2, d2 = cuda.stream(), cuda.event(), cuda.device_array(1)
        k[1, 1, s2](d2); ev2.record(s2); ev2.synchronize()
        print("new ones:", code(lambda: s2.synchronize()), ev2.query(), d2.copy_to_host()[0])
    ''')
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim", NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    first, second = r.stdout.strip().splitlines()[-2:]
    assert first.split() == ["CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_CONTEXT",
                             "CUDA_ERROR_CONTEXT_IS_DESTROYED",
                             "CUDA_ERROR_CONTEXT_IS_DESTROYED",
                             "CUDA_ERROR_CONTEXT_IS_DESTROYED",
                             "CUDA_ERROR_INVALID_CONTEXT"], first
    assert second == "new ones: accepted True 1.0", second


def test_default_streams_made_before_a_close_still_work_after_it():
    """Handles 0, 1 and 2 are CUDA's names for the current context's default streams, not
    objects of one context: the simulator refuses only streams and events it made before
    cuda.close() (found in review)."""
    import subprocess
    import sys
    import textwrap

    program = textwrap.dedent('''
        import numpy as np, streamlab
        from numba import cuda
        d0, lg, pt = cuda.default_stream(), cuda.legacy_default_stream(), \\
            cuda.per_thread_default_stream()
        cuda.close()
        for s in (d0, lg, pt):
            a = cuda.to_device(np.ones(4), stream=s)
            ev = cuda.event()
            ev.record(s)
            s.synchronize()
        print("ok", a.copy_to_host().sum())
    ''')
    env = dict(os.environ, STREAMLAB_QUIET="1", STREAMLAB_DEVICE="sim", NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "ok 4.0"
