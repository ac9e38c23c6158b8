"""Host functions run by a stream, in order, and an awaitable for a stream's work.

CUDA can put a host function into a stream (``cudaLaunchHostFunc``): the driver calls
it once all earlier work in the stream is done, and later work in the stream waits
for it to return. numba-cuda 0.30's ``Stream.add_callback`` and ``Stream.async_done``
are meant for this but are broken on a real GPU (``'CUstream' object has no attribute
'value'``), so streamlab calls the driver's ``cuLaunchHostFunc`` through cuda.bindings.

>>> import streamlab
>>> from numba import cuda
>>> s = cuda.stream()
>>> seen = []
>>> call = streamlab.launch_host_func(s, seen.append, "chunk 0 landed")
>>> call.wait(timeout=10)
>>> seen
['chunk 0 landed']

Rules that come with it (CUDA's, not streamlab's):

* the function must not call CUDA (no copies, launches, synchronizes): it runs on a
  driver thread, and a CUDA call there may fail or deadlock;
* the stream waits while it runs: keep it short;
* in Python it must take the GIL, so a host thread that holds the GIL for long
  delays it (and so delays the stream).
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import threading
import time
import traceback
from dataclasses import dataclass, field

from ._device import on_simulator
from .streams import handle_of


class HostFuncError(RuntimeError):
    """A host function raised; the original exception is its ``__cause__``."""


@dataclass
class HostCall:
    """One host function put into a stream: its result, or its exception, and timing.

    ``started_s`` and ``ended_s`` are ``time.perf_counter()`` readings taken by the
    thread that ran it (``thread_name``), to place the call on a timeline with
    ``Timeline.add_host``.
    """

    name: str
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    result: object = None
    exception: BaseException | None = None
    started_s: float | None = None
    ended_s: float | None = None
    thread_name: str | None = None

    def wait(self, timeout: float | None = None):
        """Block until the function has run; return its result or raise its error."""
        if not self.done.wait(timeout):
            raise TimeoutError(
                f"host function {self.name!r} had not run after {timeout} s: is the "
                f"work before it in the stream still running, or stuck?"
            )
        if self.exception is not None:
            raise HostFuncError(
                f"host function {self.name!r} raised {type(self.exception).__name__}: "
                f"{self.exception}"
            ) from self.exception
        return self.result


_pending: dict[int, tuple] = {}
_keys = itertools.count(1)
_lock = threading.Lock()


def _run(call: HostCall, fn, args, kwargs) -> None:
    call.thread_name = threading.current_thread().name
    call.started_s = time.perf_counter()
    try:
        call.result = fn(*args, **kwargs)
    except BaseException as exc:  # reported by wait(); never lost on a driver thread
        call.exception = exc
        traceback.print_exception(exc)
    finally:
        call.ended_s = time.perf_counter()
        call.done.set()


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _trampoline(user_data):
    with _lock:
        entry = _pending.pop(user_data or 0, None)
    if entry is not None:
        _run(*entry)


def launch_host_func(stream, fn, *args, name: str | None = None, **kwargs) -> HostCall:
    """Have ``stream`` call ``fn(*args, **kwargs)`` on the host, in stream order.

    Returns at once with a :class:`HostCall`. On a GPU the driver calls ``fn`` on its
    own thread once the stream reaches it; work issued to the stream afterwards waits
    until ``fn`` returns. On the simulator all earlier work is already done, so ``fn``
    runs before this returns.
    """
    if not callable(fn):
        raise TypeError(f"launch_host_func needs a function to call, got {fn!r}")
    handle = handle_of(stream)
    call = HostCall(name or getattr(fn, "__name__", "host function"))
    from .ops import emit  # a recorder, if one is on, sees host functions too

    emit("hostfn", call.name, stream)
    if on_simulator():
        _run(call, fn, args, kwargs)
        return call
    from cuda.bindings import driver

    key = next(_keys)
    with _lock:
        _pending[key] = (call, fn, args, kwargs)
    ptr = ctypes.cast(_trampoline, ctypes.c_void_p).value
    (err,) = driver.cuLaunchHostFunc(driver.CUstream(handle), driver.CUhostFn(ptr), key)
    if err != driver.CUresult.CUDA_SUCCESS:
        with _lock:
            _pending.pop(key, None)
        raise RuntimeError(f"cuLaunchHostFunc failed: {driver.cuGetErrorName(err)[1]!r}")
    return call


def stream_done(stream) -> asyncio.Future:
    """An awaitable that resolves (to ``stream``) once the stream's work so far is done.

    Call it from a coroutine: ``await streamlab.stream_done(s)``. The event loop keeps
    running other tasks meanwhile; no host thread blocks.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "stream_done must be called inside a running event loop: "
            "`await streamlab.stream_done(s)` from a coroutine (in Jupyter, a cell can "
            "use await directly)"
        ) from None
    fut = loop.create_future()

    def resolve():
        if not fut.done():
            fut.set_result(stream)

    launch_host_func(stream, loop.call_soon_threadsafe, resolve, name="stream_done")
    return fut
