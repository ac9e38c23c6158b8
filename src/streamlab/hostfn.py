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
  (:class:`_SimDriver`).

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
import functools
import itertools
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

from . import _device
from .ops import (current_host_function, emit, emitted_while_recording, internal, observing,
                  quietly, recording, running_host_function, timed)
from .streams import DriverStream, handle_of


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
    So streamlab queues each host function and runs it (in stream order, on a thread of
    its own) before the next operation on its stream, any synchronize or query (which wait
    for it), or after ``DELAY_S``, whichever comes first. A host function that reads a loop
    variable it closed over then sees the value a GPU would show it: a later one. And one
    that asks which thread it runs on is told, as on a GPU, that it is not yours.
    """

    DELAY_S = 0.02
    THREAD = "streamlab-sim-driver"

    def __init__(self):
        self.lock = threading.Condition()
        self.queues: dict = {}  # stream key -> [(due, call, fn, args, kwargs)]
        self.urgent: set = set()  # stream keys whose functions are wanted now
        self.running = None  # the stream key whose function runs now
        self.thread: threading.Thread | None = None

    def submit(self, key, call, fn, args, kwargs) -> None:
        with self.lock:
            self.queues.setdefault(key, []).append(
                (time.perf_counter() + self.DELAY_S, call, fn, args, kwargs))
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name=self.THREAD,
                                               daemon=True)
                self.thread.start()
            self.lock.notify_all()

    def flush(self, key=None) -> None:
        """Have what is queued for stream ``key`` (every stream: None) run now, and wait
        until it has."""
        with self.lock:
            keys = {key} if key is not None else set(self.queues)
            keys = {k for k in keys if self.queues.get(k) or self.running == k}
            if not keys:
                return
            if threading.current_thread() is self.thread:
                return  # a host function that calls CUDA: CUDA forbids it; never wait on
                # oneself (what it waits for runs after it, as on a GPU it would deadlock)
            self.urgent |= keys
            self.lock.notify_all()
            while any(self.queues.get(k) for k in keys) or self.running in keys:
                self.lock.wait()

    def pending(self) -> bool:
        with self.lock:
            return any(self.queues.values()) or self.running is not None

    def _next(self):
        """(key, entry) due now or wanted now, else (None, seconds to wait or None)."""
        now = time.perf_counter()
        soonest = None
        for k, q in self.queues.items():
            if not q:
                continue
            if k in self.urgent or q[0][0] <= now:
                return k, q.pop(0)
            soonest = q[0][0] - now if soonest is None else min(soonest, q[0][0] - now)
        return None, soonest

    def _loop(self) -> None:
        while True:
            with self.lock:
                key, entry = self._next()
                if key is None:
                    self.urgent = {k for k in self.urgent if self.queues.get(k)}
                    self.lock.wait(entry)
                    continue
                self.running = key
            try:
                _run(*entry[1:])
            finally:
                with self.lock:
                    self.running = None
                    if not self.queues.get(key):
                        self.urgent.discard(key)
                    self.lock.notify_all()


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
        from .ops import StreamRef

        _sim_driver.submit(StreamRef.of(stream).key(), call, fn, args, kwargs)
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
        raise HostFunctionFreed(
            "the ctypes function given to cuLaunchHostFunc was freed before the driver "
            "called it: keep the object alive until it has run (in a list, a dict or a "
            "global). On a GPU the driver would have called freed memory: a crash, or "
            "worse")
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
    from .ops import _capturing

    if handle not in (0, 1, 2) and _capturing(handle):
        return real(hStream, fn, userData)  # a graph's host node, called at every replay
    try:
        launch_c_function(handle, address, data, find_c_function(address))
    except RuntimeError:
        return real(hStream, fn, userData)  # the same refusal, from the driver itself
    return (driver.CUresult.CUDA_SUCCESS,)


def install() -> None:
    """On a GPU, record ``cuLaunchHostFunc`` while a recorder listens; everywhere, let a
    host function's news reach other threads in order (the registry undoes both)."""
    from ._patching import patch

    if not _device.SIMULATOR:
        try:
            from cuda.bindings import driver
        except ImportError:
            driver = None
        if driver is not None and not _real_driver_call:
            _real_driver_call.append(driver.cuLaunchHostFunc)
            patch(driver, "cuLaunchHostFunc", _watched_driver_call)
    _install_signals(patch)


def _hand_over() -> int | None:
    """The record that what the calling thread did so far precedes what a receiving
    thread does next: inside a host function, the host function's own (its place in its
    stream, which the model GPU knows too); elsewhere, while a recorder listens, a new
    ``sync "hand over"`` record (the race check's vector clock of this thread)."""
    uid = current_host_function()
    if uid is not None or not recording() or not emitted_while_recording():
        return uid  # (a thread that recorded nothing, a library's, hands over nothing)
    try:
        with internal(), quietly():
            op = emit("sync", "hand over")
    except Exception:  # noqa: BLE001  (a thread half started or ending: no record, no harm)
        return None
    return op.uid if op is not None else None


#: per thread, the hand-overs it has received lately (each is drawn once per thread)
_seen = threading.local()


def _received(uid: int) -> None:
    seen = getattr(_seen, "uids", None)
    if seen is None:
        seen = _seen.uids = {}
    if uid in seen:
        return
    seen[uid] = None
    if len(seen) > 256:
        del seen[next(iter(seen))]
    try:
        with internal(), quietly():
            emit("sync", "awaited", detail={"after": uid})
    except Exception:  # noqa: BLE001  (as above)
        pass


_THREADING = threading.__file__


def _from_threading(frame) -> bool:
    """Is the caller threading's own code (a Thread starting, a Condition, a Barrier)?"""
    return frame is not None and frame.f_code.co_filename == _THREADING


def _install_signals(patch) -> None:
    """What one thread hands to another orders the receiver after it. Inside a host
    function that is how its news reaches your code; between your own threads it is
    ordering like a join. The hand-overs drawn:

    - ``loop.call_soon_threadsafe(...)``: asyncio's way in from another thread, which
      ``asyncio.to_thread`` and ``run_in_executor`` use too;
    - ``threading.Event``: ``set()``, then a ``wait()`` or an ``is_set()`` that finds it set;
    - ``concurrent.futures.Future``: finished in one thread (``set_result``,
      ``set_exception``), found done by another (``result()``, ``exception()``, or a done
      callback run at once, which is how asyncio chains a worker's future that finished
      first);
    - ``queue.Queue`` (and its ``LifoQueue`` and ``PriorityQueue``): a ``get()``, or an
      ``empty()`` that finds an item, is ordered after every ``put()`` made before it, as
      the queue's own lock orders them.

    A look that finds the news counts whether or not the code then uses what it found (a
    sleep, then an ``is_set()`` whose answer is ignored, passes: lab 05 keeps it as a known
    hole). Not drawn, and so reported as a race though CPython orders them: a plain list
    or flag polled under the GIL, and ``queue.SimpleQueue`` (a C type, which cannot be
    patched). The records are made quietly (:func:`streamlab.ops.quietly`): a race they
    complete is raised at the thread's next ordinary operation, not inside the library's
    call."""
    import asyncio.base_events
    import concurrent.futures
    import queue

    loop_cls = asyncio.base_events.BaseEventLoop
    soon = loop_cls.call_soon_threadsafe

    def call_soon_threadsafe(self, callback, *args, context=None):
        uid = _hand_over() if observing() else None
        if uid is not None:
            inner = callback

            def callback(*a):  # runs on the loop's thread, after what came before
                _received(uid)
                return inner(*a)
        return soon(self, callback, *args, context=context)

    event_set, event_wait, event_is_set = (
        threading.Event.set, threading.Event.wait, threading.Event.is_set)

    def set(self):  # noqa: A001  (the method's name)
        uid = _hand_over() if observing() and not _from_threading(sys._getframe(1)) else None
        if uid is not None:  # (noted before the flag is set, so that a wait it wakes sees it)
            _note(self, uid)
        return event_set(self)

    def _receive_all(obj):
        for uid in dict.fromkeys(obj.__dict__.get("_streamlab_after", ())):
            _received(uid)

    def wait(self, timeout=None):
        out = event_wait(self, timeout)
        if out and "_streamlab_after" in self.__dict__ and observing():
            _receive_all(self)
        return out

    def is_set(self):
        out = event_is_set(self)
        if out and "_streamlab_after" in self.__dict__ and observing():
            _receive_all(self)
        return out

    patch(loop_cls, "call_soon_threadsafe", call_soon_threadsafe)
    patch(threading.Event, "set", set)
    patch(threading.Event, "wait", wait)
    patch(threading.Event, "is_set", is_set)

    future = concurrent.futures.Future
    set_result, set_exception, add_done_callback = (
        future.set_result, future.set_exception, future.add_done_callback)
    result, exception = future.result, future.exception

    def noted(method):
        @functools.wraps(method)
        def finish(self, *args, **kwargs):
            uid = _hand_over() if observing() and not self.done() else None
            if uid is not None:  # noted before the state changes, so a finder sees it
                _note(self, uid)
            return method(self, *args, **kwargs)
        return finish

    @functools.wraps(add_done_callback)
    def when_done(self, fn):
        if observing() and "_streamlab_after" in self.__dict__ and self.done():
            inner, after = fn, list(self.__dict__["_streamlab_after"])

            def fn(done):  # run now, in this thread: it found the future done
                for uid in after:
                    _received(uid)
                return inner(done)
        return add_done_callback(self, fn)

    def looked(method):
        @functools.wraps(method)
        def look(self, *args, **kwargs):
            out = method(self, *args, **kwargs)  # (returns only once the future is done)
            if "_streamlab_after" in self.__dict__ and observing():
                _receive_all(self)
            return out
        return look

    patch(future, "set_result", noted(set_result))
    patch(future, "set_exception", noted(set_exception))
    patch(future, "add_done_callback", when_done)
    patch(future, "result", looked(result))
    patch(future, "exception", looked(exception))

    # A queue: each put notes a hand-over (made before the queue's lock is taken, and
    # noted under it); a get, or an empty() that finds an item, takes under the same lock
    # the notes of every put made before it, and receives them once it returns.
    for cls in (queue.Queue, queue.LifoQueue, queue.PriorityQueue):
        patch(cls, "_put", _queue_put(cls._put))
        patch(cls, "_get", _queue_get(cls._get))
    patch(queue.Queue, "put", _queue_send(queue.Queue.put))
    patch(queue.Queue, "get", _queue_receive(queue.Queue.get))
    patch(queue.Queue, "empty", _queue_empty(queue.Queue.empty))


#: a put's hand-over, made before the queue's lock, noted under it; a get's notes, taken
#: under the lock, received once it returns (per thread)
_handing = threading.local()


def _note(obj, uid: int) -> None:
    after = obj.__dict__.setdefault("_streamlab_after", [])
    after.append(uid)
    del after[:-64]  # set or put again and again: its latest hand-overs


def _queue_send(put):
    @functools.wraps(put)
    def send(self, *args, **kwargs):
        _handing.put_uid = _hand_over() if observing() else None
        try:
            return put(self, *args, **kwargs)
        finally:
            _handing.put_uid = None
    return send


def _queue_put(put):
    @functools.wraps(put)
    def _put(self, item):
        uid = getattr(_handing, "put_uid", None)
        if uid is not None:
            _note(self, uid)
        return put(self, item)
    return _put


def _queue_get(get):
    @functools.wraps(get)
    def _get(self):
        if "_streamlab_after" in self.__dict__ and getattr(_handing, "taking", False):
            _handing.uids = list(self.__dict__["_streamlab_after"])
        return get(self)
    return _get


def _receive_taken() -> None:
    uids, _handing.uids = getattr(_handing, "uids", None), None
    for uid in dict.fromkeys(uids or ()):
        _received(uid)


def _queue_receive(get):
    @functools.wraps(get)
    def receive(self, *args, **kwargs):
        _handing.uids, _handing.taking = None, observing()
        try:
            item = get(self, *args, **kwargs)
        finally:
            _handing.taking = False
        _receive_taken()
        return item
    return receive


def _queue_empty(empty):
    @functools.wraps(empty)
    def looks_empty(self):
        if not (observing() and "_streamlab_after" in self.__dict__):
            return empty(self)
        with self.mutex:  # (as Queue.empty does, taking the notes under the same lock)
            out = not self._qsize()
            _handing.uids = None if out else list(self.__dict__["_streamlab_after"])
        _receive_taken()
        return out
    return looks_empty


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
