"""Host functions run by a stream, and the asyncio awaitable (any device)."""

import asyncio

import numpy as np
import pytest
from numba import cuda

import streamlab
from streamlab import HostFuncError


@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def test_host_functions_run_in_stream_order_and_return_results():
    s = cuda.stream()
    seen = []
    calls = [streamlab.launch_host_func(s, seen.append, i) for i in range(5)]
    last = streamlab.launch_host_func(s, lambda: sum(seen), name="total")
    assert last.wait(timeout=10) == 10
    assert seen == [0, 1, 2, 3, 4]
    assert all(c.done.is_set() and c.ended_s >= c.started_s for c in calls)
    assert last.name == "total"


def test_host_function_sees_the_kernel_before_it():
    s = cuda.stream()
    d = cuda.to_device(np.zeros(16), stream=s)
    pinned = cuda.pinned_array(16)
    add_one[1, 16, s](d)
    d.copy_to_host(pinned, stream=s)
    call = streamlab.launch_host_func(s, lambda: float(pinned.sum()))
    assert call.wait(timeout=10) == 16.0


def test_an_exception_in_a_host_function_is_reported(capsys):
    s = cuda.stream()
    call = streamlab.launch_host_func(s, lambda: 1 / 0, name="bad")
    with pytest.raises(HostFuncError, match="'bad' raised ZeroDivisionError"):
        call.wait(timeout=10)
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_launch_host_func_refuses_what_is_not_callable():
    with pytest.raises(TypeError, match="needs a function"):
        streamlab.launch_host_func(cuda.stream(), "print")


def test_stream_done_needs_an_event_loop():
    with pytest.raises(RuntimeError, match="inside a running event loop"):
        streamlab.stream_done(cuda.stream())


def test_stream_done_in_asyncio_lets_other_tasks_run():
    async def main():
        s = cuda.stream()
        streamlab.spin[1, 1, s](streamlab.ms_to_ns(2))
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.ensure_future(ticker())
        done = await asyncio.wait_for(streamlab.stream_done(s), 10)
        t.cancel()
        return done is s, ticks

    same, ticks = asyncio.run(main())
    assert same and ticks >= 1


def test_find_c_function_looks_at_the_newest_young_objects_only():
    """With collection off, the young generation grows without bound (a launch once
    waited 32 ms for the search on an H100): the function just made is found among the
    newest objects, and one buried under more than ``_LOOK_AT`` newer ones is not
    looked for."""
    import ctypes
    import gc

    from streamlab import hostfn

    def address(fn):
        return ctypes.cast(fn, ctypes.c_void_p).value

    was = gc.isenabled()
    gc.disable()
    try:
        old = hostfn.HOST_FN(lambda _: None)
        junk = [[i] for i in range(4 * hostfn._LOOK_AT)]
        new = hostfn.HOST_FN(lambda _: None)
        found = hostfn.find_c_function(address(new))
        assert found is not None and found() is new
        assert hostfn.find_c_function(address(old)) is None
        del junk
    finally:
        if was:
            gc.enable()
