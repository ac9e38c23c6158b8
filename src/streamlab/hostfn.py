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
from .ops import emit, internal, running_host_function, timed
from .streams import handle_of


DRIVER_THREAD = "CUDA driver"  # the model's name for the thread that runs host functions


class HostFuncError(RuntimeError):
    """A host function raised; the original exception is its ``__cause__``."""


@dataclass
class HostCall:
    """One host function put into a stream: its result, or its exception, and timing.

    ``started_s`` and ``ended_s`` are ``time.perf_counter()`` readings taken by the
    thread that ran it (``thread_name``), to place the call on a timeline with
    ``Timeline.add_host_call``. On the simulator they are the model GPU's times: when
    a GPU's stream would have run it (see :mod:`streamlab.model`).
    """

    name: str
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    result: object = None
    exception: BaseException | None = None
    started_s: float | None = None
    ended_s: float | None = None
    thread_name: str | None = None
    op_uid: int | None = field(default=None, repr=False)  # its record, when recorded

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
    if call.op_uid is not None:  # what it does comes after its place in the stream
        with internal():
            emit("sync", "host function", detail={"after": call.op_uid})
    call.started_s = time.perf_counter()
    try:
        with running_host_function(call.op_uid):
            call.result = fn(*args, **kwargs)
    except BaseException as exc:  # reported by wait(); never lost on a driver thread
        call.exception = exc
        traceback.print_exception(exc)
        if not isinstance(exc, Exception) and not _on_driver_thread():
            raise  # KeyboardInterrupt, SystemExit: the thread that runs it must see them
    finally:
        call.ended_s = time.perf_counter()
        _on_the_model(call)
        call.done.set()


def _on_the_model(call: HostCall) -> None:
    """Tell the model GPUs how long the body ran; on the simulator, the call's times
    become the model's (when its stream reached it, on the model's clock)."""
    from .model import hostfn_ran, simulator_model

    hostfn_ran(call.op_uid, call.ended_s - call.started_s)
    model = simulator_model()
    if model is not None and call.op_uid is not None:
        times = model.times(call.op_uid)
        if times is not None:
            call.started_s, call.ended_s = times
            call.thread_name = DRIVER_THREAD  # where a GPU's driver would have run it


def _on_driver_thread() -> bool:
    return threading.current_thread() is not threading.main_thread() and \
        threading.current_thread().name.startswith(("Dummy", _SimDriver.THREAD))


class _SimDriver:
    """Host functions on the simulator, run as a GPU's driver would run them.

    A GPU runs a host function when its stream reaches it: later than the call that
    queued it, on a driver thread, and before anything issued to that stream afterwards.
    The simulator has no such later: everything it runs is done when the call returns.
    So streamlab queues each host function and runs it (in stream order) just before
    the next operation on its stream, any synchronize or query, or after ``DELAY_S`` on
    a thread of its own, whichever comes first. A host function that reads a loop
    variable it closed over then sees the value a GPU would show it: a later one.
    """

    DELAY_S = 0.02
    THREAD = "streamlab-sim-driver"

    def __init__(self):
        self.lock = threading.Condition()
        self.queues: dict = {}  # stream key -> [(due, call, fn, args, kwargs)]
        self.running: dict = {}  # stream key -> RLock held while its functions run
        self.thread: threading.Thread | None = None

    def submit(self, key, call, fn, args, kwargs) -> None:
        with self.lock:
            self.queues.setdefault(key, []).append(
                (time.perf_counter() + self.DELAY_S, call, fn, args, kwargs))
            self.running.setdefault(key, threading.RLock())
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name=self.THREAD,
                                               daemon=True)
                self.thread.start()
            self.lock.notify()

    def flush(self, key=None) -> None:
        """Run what is queued for stream ``key`` (every stream: None), here and now."""
        with self.lock:
            keys = [key] if key is not None else list(self.queues)
            keys = [k for k in keys if self.queues.get(k)]
        for k in keys:
            self._drain(k, until=None)

    def pending(self) -> bool:
        with self.lock:
            return any(self.queues.values())

    def _drain(self, key, until) -> None:
        with self.running[key]:
            while True:
                with self.lock:
                    queue = self.queues.get(key)
                    if not queue or (until is not None and queue[0][0] > until):
                        return
                    _, call, fn, args, kwargs = queue.pop(0)
                _run(call, fn, args, kwargs)

    def _loop(self) -> None:
        while True:
            with self.lock:
                dues = [q[0][0] for q in self.queues.values() if q]
                if not dues:
                    self.lock.wait()
                    continue
                wait = min(dues) - time.perf_counter()
                if wait > 0:
                    self.lock.wait(wait)
                    continue
                keys = [k for k, q in self.queues.items() if q]
            for k in keys:
                self._drain(k, until=time.perf_counter())


_sim_driver = _SimDriver()


def sim_flush(stream=None) -> None:
    """On the simulator, run the host functions queued for ``stream`` (and those of the
    default streams, which order with it), or all of them: called before an operation on
    a stream and before a synchronize. Nothing to do on a GPU."""
    if not _sim_driver.pending():
        return
    if stream is None:
        _sim_driver.flush()
        return
    from .ops import StreamRef

    ref = StreamRef.of(stream)
    if ref.is_legacy_default:
        _sim_driver.flush()
        return
    _sim_driver.flush(ref.key())
    if ref.kind != "non-blocking":
        _sim_driver.flush(StreamRef.of(0).key())


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _trampoline(user_data):
    with _lock:
        entry = _pending.pop(user_data or 0, None)
    if entry is not None:
        _run(*entry)


def _takes_name(fn) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return "name" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


_capture_lane: list = []  # [stream -> its graph capture lane or None], set by streamlab.graphs


@timed
def launch_host_func(stream, fn, *args, name: str | None = None, **kwargs) -> HostCall:
    """Have ``stream`` call ``fn(*args, **kwargs)`` on the host, in stream order.

    Returns at once with a :class:`HostCall`. On a GPU the driver calls ``fn`` on its
    own thread once the stream reaches it; work issued to the stream afterwards waits
    until ``fn`` returns. On the simulator it runs later too (see :class:`_SimDriver`):
    just before the stream's next operation, a synchronize, or 20 ms on.
    """
    if not callable(fn):
        raise TypeError(f"launch_host_func needs a function to call, got {fn!r}")
    if name is not None and _takes_name(fn):
        raise TypeError(
            f"launch_host_func's name= is the host function's label on a timeline, but "
            f"{getattr(fn, '__name__', fn)!r} takes a parameter called name too, and would "
            f"not get it. Pass it bound: functools.partial(fn, name=...), and a label with "
            f"name=, or leave name= out")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str (the host function's label), got {name!r}")
    handle = handle_of(stream)
    call = HostCall(name or getattr(fn, "__name__", "host function"))
    if on_simulator() and _capture_lane:
        lane = _capture_lane[0](stream)
        if lane is not None:  # a host node of a graph being captured: runs at each replay
            lane.host(fn, args, kwargs, name=name)
            return call
    op = emit("hostfn", call.name, stream)  # a recorder, if one is on, sees it too
    call.op_uid = op.uid if op is not None else None
    if on_simulator():
        from .ops import StreamRef

        _sim_driver.submit(StreamRef.of(stream).key(), call, fn, args, kwargs)
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


class StreamDone:
    """What :func:`stream_done` returns: ``await`` it. Code after the ``await`` is
    ordered after the stream's work (the race check and the labs' checks know it);
    code that never awaits it is not."""

    def __init__(self, future: asyncio.Future, call: HostCall):
        self._future = future
        self._call = call

    def __await__(self):
        result = yield from self._future.__await__()
        if self._call.op_uid is not None:
            with internal():
                emit("sync", "awaited", detail={"after": self._call.op_uid})
        return result

    def done(self) -> bool:
        """Has the stream's work (and so this awaitable) finished?"""
        return self._future.done()


def stream_done(stream) -> StreamDone:
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

    def wake():
        try:
            loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # the loop has closed: nobody awaits this any more
            pass

    call = launch_host_func(stream, wake, name="stream_done")
    return StreamDone(fut, call)
