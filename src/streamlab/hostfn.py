"""Host functions run by a stream: streamlab's side of the driver's ``cuLaunchHostFunc``.

CUDA can put a host function into a stream (``cuLaunchHostFunc``): the driver calls it
once all earlier work in the stream is done, and later work in the stream waits for it to
return. numba-cuda 0.30's ``Stream.add_callback`` and ``Stream.async_done`` are meant for
this but are broken on a real GPU (``'CUstream' object has no attribute 'value'``), and
cuda.core 1.2 has no such call, so the course calls the driver through cuda.bindings, as
real code does:

>>> import ctypes, streamlab
>>> from cuda.bindings import driver
>>> from numba import cuda
>>> seen = []
>>> @ctypes.CFUNCTYPE(None, ctypes.c_void_p)      # CUDA's CUhostFn: void fn(void *userData)
... def landed(user_data):
...     seen.append(user_data)
>>> s = cuda.stream()
>>> driver.cuLaunchHostFunc(s.handle, ctypes.cast(landed, ctypes.c_void_p).value, 7)
(<CUresult.CUDA_SUCCESS: 0>,)
>>> s.synchronize(); seen
[7]

What streamlab adds, without standing in the way:

* while ``record_ops`` or ``race_check`` listens on a GPU, the call is recorded (its stream
  and its place in it) and the function's body is known to run after that place, so the
  race check and the labs' checks see what it reads; outside a recording the driver's own
  function is called and nothing else happens;
* a body that hands its news to another thread through ``loop.call_soon_threadsafe``, a
  ``threading.Event``, a ``concurrent.futures.Future`` or a ``queue.Queue`` orders that
  thread's later work after the stream's (an asyncio coroutine that awaits a future the
  host function resolves, say);
* on the simulator, which has no driver, :mod:`streamlab.sim.bindings` stands in for the
  call, and the function runs later, on a thread of its own, in stream order
  (:mod:`streamlab.sim.driver`).

Rules that come with it (CUDA's, not streamlab's):

* the function must not call CUDA (no copies, launches, synchronizes): it runs on a
  driver thread, and a CUDA call there may fail or deadlock;
* the stream waits while it runs: keep it short;
* in Python it must take the GIL, so a host thread that holds the GIL for long
  delays it (and so delays the stream);
* the ctypes function object must stay alive until the driver has called it.

:func:`launch_host_func` and :func:`stream_done` are the course's earlier wrappers of the
same call; the lessons now write the call itself.
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import threading
import time
import traceback
from dataclasses import dataclass, field

from . import _device
from .ops import emit, internal, observing, run_delay, running_host_function, timed
from .streams import DriverStream, handle_of


DRIVER_THREAD = "CUDA driver"  # the model's name for the thread that runs host functions
#: the name of the thread that runs host functions on the simulator (streamlab.sim.driver)
SIM_DRIVER_THREAD = "streamlab-sim-driver"


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
    #: how long its body ran, less the time its thread waited for a CPU
    #: (:func:`streamlab.ops.run_delay`): its length on a model GPU
    work_s: float | None = None
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
    call.started_s, waited = time.perf_counter(), run_delay()
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
        # its length on the model: less the time its thread waited for a CPU
        call.work_s = max(0.0, call.ended_s - call.started_s - (run_delay() - waited))
        _on_the_model(call)
        call.done.set()


def _on_the_model(call: HostCall) -> None:
    """Tell the model GPUs how long the body ran; on the simulator, the call's times
    become the model's (when its stream reached it, on the model's clock)."""
    from .model import hostfn_ran, simulator_model

    hostfn_ran(call.op_uid, call.work_s)
    model = simulator_model()
    if model is not None and call.op_uid is not None:
        times = model.times(call.op_uid)
        if times is not None:
            call.started_s, call.ended_s = times
            call.thread_name = DRIVER_THREAD  # where a GPU's driver would have run it


def _on_driver_thread() -> bool:
    return threading.current_thread() is not threading.main_thread() and \
        threading.current_thread().name.startswith(("Dummy", SIM_DRIVER_THREAD))


HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # CUDA's CUhostFn: void fn(void *userData)


@HOST_FN
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


_capture_lane: list = []  # [stream -> its graph capture lane or None], set by streamlab.sim.capture


def on_simulator_capture(lane) -> None:
    """The simulator's graph capture says, through ``lane(stream)``, which capture lane a
    stream is capturing into (or None); :func:`launch_host_func` asks it (this module
    does not import the simulator's capture: that one imports this)."""
    if not _capture_lane:
        _capture_lane.append(lane)


@timed
def launch_host_func(stream, fn, *args, name: str | None = None, **kwargs) -> HostCall:
    """Have ``stream`` call ``fn(*args, **kwargs)`` on the host, in stream order.

    Returns at once with a :class:`HostCall`. On a GPU the driver calls ``fn`` on its
    own thread once the stream reaches it; work issued to the stream afterwards waits
    until ``fn`` returns. On the simulator it runs later too (see :mod:`streamlab.sim.driver`):
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
    return _launch(stream, handle, fn, args, kwargs, name or getattr(fn, "__name__",
                                                                      "host function"))


def _launch(stream, handle: int, fn, args, kwargs, name: str, *, name_given=True) -> HostCall:
    """Put ``fn(*args, **kwargs)`` into ``stream`` (whose raw handle is ``handle``)."""
    call = HostCall(name)
    if _device.SIMULATOR and _capture_lane:
        lane = _capture_lane[0](stream)
        if lane is not None:  # a host node of a graph being captured: runs at each replay
            lane.host(fn, args, kwargs, name=name if name_given else None)
            return call
    op = emit("hostfn", call.name, stream)  # a recorder, if one is on, sees it too
    call.op_uid = op.uid if op is not None else None
    if _device.SIMULATOR:
        from .streams import StreamRef
        from .sim import driver as sim_driver

        sim_driver.submit(StreamRef.of(stream).key(), lambda: _run(call, fn, args, kwargs),
                          thread_name=SIM_DRIVER_THREAD)
        return call
    from cuda.bindings import driver

    key = next(_keys)
    with _lock:
        _pending[key] = (call, fn, args, kwargs)
    ptr = ctypes.cast(_trampoline, ctypes.c_void_p).value
    (err,) = _driver_call()(driver.CUstream(handle), driver.CUhostFn(ptr), key)
    if err != driver.CUresult.CUDA_SUCCESS:
        with _lock:
            _pending.pop(key, None)
        raise RuntimeError(f"cuLaunchHostFunc failed: {driver.cuGetErrorName(err)[1]!r}")
    return call


def stream_of_handle(handle: int):
    """A stream object for a raw ``CUstream`` address (what a driver call carries)."""
    if handle in (0, 1, 2):
        return handle
    if _device.SIMULATOR:
        from numba import cuda

        return type(cuda.default_stream())(handle)  # the simulator's stream of that handle
    return DriverStream(handle)


def as_address(value, cls, what: str) -> int:
    """The address a driver call takes for ``value``, as cuda.bindings converts it: None is
    0, an instance of ``cls`` (``CUstream``, ``CUhostFn``) or an int is itself."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a {cls.__name__} or an int address, got {value!r}")
    if isinstance(value, cls):
        return int(value)
    try:
        return int(cls(value))
    except TypeError:
        raise TypeError(
            f"{what} must be a {cls.__name__} or an int address, got "
            f"{type(value).__name__} (for a stream, pass stream.handle; for a ctypes "
            f"function, ctypes.cast(fn, ctypes.c_void_p).value)") from None


def user_data_address(value) -> int:
    """``userData`` as a ``void *``: an int (``id(obj)``, an index) or None."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(
        f"userData is passed to the host function as a void *: give an int (an index, or "
        f"id(obj) of an object you keep alive) or None, not {type(value).__name__}")


class HostFunctionFreed(RuntimeError):
    """The ctypes function given to ``cuLaunchHostFunc`` was freed before it could run."""


#: what a :class:`HostFunctionFreed` says (lab 05's judge says it too, in the grader)
FREED = ("the ctypes function given to cuLaunchHostFunc was freed before the driver "
         "called it: keep the object alive until it has run (in a list, a dict or a "
         "global). On a GPU the driver would have called freed memory: a crash, or worse")


def find_c_function(address: int):
    """A weak reference to the ctypes function object whose code is at ``address``, or
    None where it is not found among the objects made lately.

    Not among the caller's variables: reading a running frame's ``f_locals`` (Python
    3.11, 3.12) leaves a copy of them on the frame that keeps each one alive, so that a
    function the learner drops would live on under a check and die without one. The
    garbage collector's young generations hold a function made lately, and looking there
    holds nothing. They are looked through newest first, and only the newest
    ``_LOOK_AT`` of each: where collection is off or rare, a young generation grows
    without bound, and looking through 200,000 objects held a launch for 32 ms on an
    H100 (longer than the 20 ms of GPU work lab 05's check awaits)."""
    import gc
    import weakref

    for generation in (0, 1):
        for value in itertools.islice(reversed(gc.get_objects(generation)), _LOOK_AT):
            if isinstance(value, ctypes._CFuncPtr) and \
                    ctypes.cast(value, ctypes.c_void_p).value == address:
                return weakref.ref(value)
    return None


_LOOK_AT = 5000  # objects of each young generation find_c_function looks at, newest first


def _call_c_function(address: int, user_data: int, alive=None) -> None:
    """Call the C function at ``address`` as CUDA calls a host function. ``alive``: a
    weak reference to its ctypes object, when known: freed, it is not called (a GPU
    would call freed memory, and crash)."""
    if alive is not None and alive() is None:
        raise HostFunctionFreed(FREED)
    HOST_FN(address)(user_data)


@timed
def launch_c_function(handle: int, address: int, user_data: int, alive=None) -> HostCall:
    """The C function at ``address`` (a host function, as the driver's
    ``cuLaunchHostFunc`` takes it), called with ``user_data`` in stream order: the
    simulator's stand-in for the driver call lands here. ``alive``: a weak reference to
    its ctypes object (:func:`find_c_function`), or None."""
    call = _launch(stream_of_handle(handle), handle, _call_c_function,
                   (address, user_data, alive), {}, "host function", name_given=False)
    if call.op_uid is not None:
        if len(_calls) > 4096:
            _calls.pop(next(iter(_calls)))
        _calls[call.op_uid] = call
    return call


_calls: dict = {}  # op uid -> its HostCall (the latest 4096)


def call_of(uid: int) -> HostCall | None:
    """The :class:`HostCall` of the host function recorded as ``uid`` (made through
    ``cuLaunchHostFunc``; the latest 4096 are kept), or None."""
    return _calls.get(uid)


_real_driver_call: list = []  # [cuda.bindings' own cuLaunchHostFunc], on a GPU


def _driver_call():
    from cuda.bindings import driver

    return _real_driver_call[0] if _real_driver_call else driver.cuLaunchHostFunc


def _watched_driver_call(hStream, fn, userData):  # noqa: N803  (the driver's names)
    """``cuda.bindings.driver.cuLaunchHostFunc`` on a GPU: the driver's own call, recorded
    while a recorder listens (see the module's doc)."""
    real = _real_driver_call[0]
    if not observing():
        return real(hStream, fn, userData)
    from cuda.bindings import driver

    try:
        handle = as_address(hStream, driver.CUstream, "hStream")
        address = as_address(fn, driver.CUhostFn, "fn")
        data = user_data_address(userData)
    except TypeError:
        return real(hStream, fn, userData)  # the driver's own refusal, in its words
    if address == 0:
        return real(hStream, fn, userData)
    from .streams import capturing

    if handle not in (0, 1, 2) and capturing(handle):
        return real(hStream, fn, userData)  # a graph's host node, called at every replay
    try:
        launch_c_function(handle, address, data, find_c_function(address))
    except RuntimeError:
        return real(hStream, fn, userData)  # the same refusal, from the driver itself
    return (driver.CUresult.CUDA_SUCCESS,)


def install() -> None:
    """On a GPU, record ``cuLaunchHostFunc`` while a recorder listens (the registry undoes
    it). A host function's news reaching other threads is drawn by
    :func:`streamlab.handovers.watch_threads`, with the other hand-overs between threads."""
    from ._patching import patch

    if not _device.SIMULATOR:
        try:
            from cuda.bindings import driver
        except ImportError:
            driver = None
        if driver is not None and not _real_driver_call:
            _real_driver_call.append(driver.cuLaunchHostFunc)
            patch(driver, "cuLaunchHostFunc", _watched_driver_call)


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
