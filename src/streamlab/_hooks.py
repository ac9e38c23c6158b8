"""Where streamlab sees numba's stream-ordered calls: one set of wrappers at the bottom.

Installed once, by ``import streamlab`` (which says so), and undone exactly by
:func:`uninstall`. Each wrapper calls numba's own function first, then, only while a
recorder or race check listens (:func:`streamlab.ops.recording`), describes what the
call did with :func:`streamlab.ops.emit`. The wrappers sit where every path meets:

on a GPU (numba-cuda's driver layer)
    ``driver.host_to_device`` / ``device_to_host`` / ``device_to_device`` /
    ``device_memset`` (every copy, the implicit ones of ``to_device``, ``copy_to_host()``
    and of host arrays passed to kernels included), ``Event.record/wait/synchronize/
    query``, ``Stream.synchronize``, ``Context.synchronize`` (``cuda.synchronize()`` by
    any name), and the kernel launch (``CUDADispatcher.call`` notes the kernel, the stream
    of its launch configuration and its arguments; the launch itself is recorded when
    numba hands it to the driver, after the arguments' implicit copies).

on the simulator
    its ``to_device``, ``FakeCUDAArray.copy_to_host/copy_to_device`` and element access
    from the host, and the kernel call. Events, streams and ``cuda.synchronize`` are
    streamlab's own there (:mod:`streamlab._simfill`), which record themselves.

on both, between host threads
    ``Thread.start`` and ``Thread.join``, and what one thread hands another
    (``loop.call_soon_threadsafe``, ``threading.Event``, ``concurrent.futures.Future``,
    ``queue.Queue``): how a host function's news, or a worker's, orders the thread that
    receives it (:func:`_install_signals`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import sys
import threading

import numpy as np

from . import _patching
from . import ops
from . import _device
from .ops import Region, allocation, current_host_function, describe_array, device_owner, \
    emit, emitted_while_recording, host_owner, internal, merge_pieces, observing, quietly, \
    recording, region_of

_tls = threading.local()
_footprint = {"current": None}  # the simulated kernel running now, while recording
_slept: dict = {"current": None}  # simulated thread -> ns it slept (cuda.nanosleep), per launch
_touched: dict = {"current": None}  # [bytes] the simulated kernel running now read and wrote
_installed = {"done": False}


# --- what a kernel does to its arguments, read from its code ----------------------------
# Which arguments a kernel reads, writes, or updates atomically: read from its own code.
#
# The race check needs to know, for each array a kernel is given, whether the kernel may
# write it. Guessing from names would be wrong as often as right, so this reads the
# kernel's Python function as numba's front end sees it (numba IR, before typing):
#
# * ``a[i] = v`` (``SetItem`` / ``StaticSetItem``) on an argument, or on a view of one
#   (``row = a[i]; row[j] = v``), writes it;
# * ``cuda.atomic.add(a, i, v)`` (any ``atomic.*``) updates it atomically;
# * a call to a ``@cuda.jit(device=True)`` function passes on whatever that function does
#   to its own parameters (read the same way);
# * everything else (``a[i]`` on the right, ``a.size``, ``len(a)``) only reads.
#
# (access_modes shows an example.)
#
# If the code cannot be read (a kernel built in a way the front end does not follow),
# every array argument counts as written: the check may then report a race that is not
# one, but never misses one for this reason.
READ, WRITE, ATOMIC = "read", "write", "atomic"
_RANK = {READ: 0, ATOMIC: 1, WRITE: 2}
_ATOMIC_CALL = re.compile(r"(^|\.)atomic\.\w+$")


def py_function(kernel):
    """The Python function behind a numba CUDA kernel or device function (GPU or
    simulator), or None."""
    fn = getattr(kernel, "py_func", None)
    if fn is None:
        fn = getattr(kernel, "fn", None)  # the simulator's FakeCUDAKernel
    return fn if callable(fn) else None


def access_modes(kernel) -> tuple[str, ...] | None:
    """For each parameter of ``kernel``: 'read', 'write' or 'atomic'. None if unknown.

    >>> from numba import cuda
    >>> @cuda.jit
    ... def k(src, dst, counter):
    ...     i = cuda.grid(1)
    ...     dst[i] = src[i]
    ...     cuda.atomic.add(counter, 0, 1)
    >>> access_modes(k)
    ('read', 'write', 'atomic')
    """
    fn = py_function(kernel)
    if fn is None:
        return None
    try:
        return _modes(fn)
    except Exception:  # noqa: BLE001  (any front-end failure means "unknown")
        return None


def parameter_names(kernel) -> tuple[str, ...]:
    """The names of ``kernel``'s parameters, in order (for messages)."""
    fn = py_function(kernel)
    if fn is None:
        return ()
    code = fn.__code__
    return code.co_varnames[:code.co_argcount]


@functools.lru_cache(maxsize=512)
def _modes(fn) -> tuple[str, ...]:
    from numba.core import ir
    from numba.core.compiler import run_frontend

    fir = run_frontend(fn)
    nargs = len(fir.arg_names)
    modes = [READ] * nargs

    def mark(params, mode):
        for p in params:
            if _RANK[mode] > _RANK[modes[p]]:
                modes[p] = mode

    stmts = [st for blk in fir.blocks.values() for st in blk.body]
    # Which parameters each variable may stand for (a view of an argument is the
    # argument), to a fixed point: assignments may come in any order across blocks.
    alias: dict[str, set[int]] = {}
    dotted: dict[str, str] = {}  # variable -> "cuda.atomic.add" for global attribute chains
    globals_: dict[str, object] = {}
    changed = True
    while changed:
        changed = False
        for st in stmts:
            if not isinstance(st, ir.Assign):
                continue
            target, value = st.target.name, st.value
            found: set[int] = set()
            if isinstance(value, ir.Arg):
                found = {value.index}
            elif isinstance(value, ir.Var):
                found = alias.get(value.name, set())
            elif isinstance(value, (ir.Global, ir.FreeVar)):
                globals_[target] = value.value
                dotted[target] = value.name
            elif isinstance(value, ir.Expr):
                if value.op in ("getitem", "static_getitem", "getattr"):
                    found = alias.get(value.value.name, set())
                    if value.op == "getattr" and value.value.name in dotted:
                        name = f"{dotted[value.value.name]}.{value.attr}"
                        if dotted.get(target) != name:
                            dotted[target] = name
                            changed = True
                elif value.op == "cast":
                    found = alias.get(value.value.name, set())
            if found and not found <= alias.get(target, set()):
                alias.setdefault(target, set()).update(found)
                changed = True

    for st in stmts:
        if isinstance(st, (ir.SetItem, ir.StaticSetItem)):
            mark(alias.get(st.target.name, ()), WRITE)
        elif isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) \
                and st.value.op == "call":
            call = st.value
            func = call.func.name
            args = [a.name for a in call.args]
            if _ATOMIC_CALL.search(dotted.get(func, "")) and args:
                mark(alias.get(args[0], ()), ATOMIC)
                continue
            callee = globals_.get(func)
            inner = access_modes(callee) if callee is not None and \
                py_function(callee) is not None else None
            if inner is None:
                continue
            for arg, mode in zip(args, inner):
                mark(alias.get(arg, ()), mode)
    return tuple(modes)


def _patch(owner, name: str, make, timed: bool = True) -> None:
    """Replace ``owner.name`` with ``make(original)``, in the registry that
    :func:`uninstall` undoes; ``timed``: a model GPU is told when the call begins and ends
    (see :func:`streamlab.ops.timed`)."""
    made = make(getattr(owner, name))
    _patching.patch(owner, name, ops.timed(made) if timed else made)


def install() -> None:
    """Wrap numba's calls for this mode (once)."""
    if _installed["done"]:
        return
    if _device.SIMULATOR:
        _install_simulator()
    else:
        _install_gpu()
    _install_threads()
    _install_signals(_patching.patch)
    _installed["done"] = True


def _install_threads() -> None:
    """``Thread.start`` and ``Thread.join`` order host threads: what a thread did before
    starting another comes before all the new one does; a join waits for all of it.

    Replaced for the whole process, not only inside ``record_ops``/``race_check``: a
    thread started before a recording begins may be joined inside it, and the recorder
    must see that join. Outside a recording the wrappers only call the originals."""

    def learners(frame) -> bool:  # started or joined by the program, not by a library
        return not frame.f_code.co_filename.startswith(ops._library_dirs())

    def start(orig):
        def start(self):
            if observing() and learners(sys._getframe(2)):  # (1: ops.timed)
                with ops.internal():
                    emit("sync", "thread start", detail={"child": self.name})
            return orig(self)
        return start

    def join(orig):
        def join(self, timeout=None):
            out = orig(self, timeout)
            if observing() and not self.is_alive() and learners(sys._getframe(2)):
                with ops.internal():
                    emit("sync", "thread join", detail={"child": self.name})
            return out
        return join

    _patch(threading.Thread, "start", start)
    _patch(threading.Thread, "join", join)


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


def uninstall() -> None:
    """Put back every object streamlab replaced: numba's functions that :func:`install`
    wrapped, the simulator's gaps that :mod:`streamlab._simfill` filled, the simulator's
    stand-in for cuda.core (``sys.modules["cuda.core"]``), the thread hooks and IPython's
    error display (one registry, :mod:`streamlab._patching`, latest first). The choice of
    the simulator itself (``NUMBA_ENABLE_CUDASIM``, set before numba was imported) stays.
    Afterwards numba behaves as if streamlab had never been imported; recording, race
    checks and, on the simulator, the model GPU's times are gone with it."""
    _patching.undo_all()
    _installed["done"] = False


def installed() -> bool:
    """Are numba's calls wrapped (by :func:`install`)?"""
    return _installed["done"]


def banner() -> str:
    """One line: what streamlab changed in numba, and how to undo it."""
    import os

    sim = ("fills the simulator's gaps (events with times, streams with handles, pinned "
           "and mapped memory, nanosleep; see streamlab._simfill), stands in for cuda.core's "
           "devices, streams and events (streamlab.sim.core) and for the driver's "
           "cuLaunchHostFunc (streamlab.sim.bindings), and ") if _device.SIMULATOR \
        else ("sees cuda.core's stream and event calls through CUPTI while recording "
              "(streamlab._driverwatch), records cuda.bindings' cuLaunchHostFunc while "
              "recording (streamlab.hostfn), ")
    race = " Every operation is race-checked (STREAMLAB_RACE_CHECK=1)." if \
        os.environ.get("STREAMLAB_RACE_CHECK", "") not in ("", "0") else ""
    return (f"streamlab: {sim}watches numba's launches, copies, events and synchronizes "
            f"(and threads starting and joining, and what a host function hands to "
            f"another thread) for record_ops and race_check; "
            f"streamlab.uninstall() undoes it.{race}")


# --- copies: one description for both modes -----------------------------------------
def copy_op(direction: str, stream, *, host: Region | None, device: Region | None,
            src: Region | None = None, pinned: bool | None, synchronous: bool) -> None:
    """Record a copy as CUDA defines it (the CUDA Runtime API's "API synchronization
    behavior"): which stream, what it reads and writes, and whether the host waited.

    * host to device, pinned: asynchronous, unless called without a stream;
    * host to device, pageable: the host buffer is read before the call returns (staged),
      the device is written later, in stream order;
    * device to host: the host waits unless the buffer is pinned and a stream is given;
    * device to device: never waits.
    """
    stream = stream if stream else 0
    if direction == "h2d":
        if pinned:
            emit("copy", "h2d", stream, pinned=True, blocking=synchronous,
                 reads=(host,), writes=(device,))
        else:
            emit("copy", "h2d", stream, pinned=False, writes=(device,), host_reads=(host,))
    elif direction == "d2h":
        emit("copy", "d2h", stream, pinned=pinned, blocking=synchronous or not pinned,
             reads=(device,), writes=(host,))
    elif direction == "d2d":
        emit("copy", "d2d", stream, reads=(src,), writes=(device,))
    else:
        emit("memset", "memset", stream, writes=(device,))


def _launch_op(kernel, name: str, args, stream, grid, block, footprint=None,
               slept_ns=None, touched=None) -> None:
    """Record a kernel launch with the memory it may read, write or update atomically.

    Which arguments it writes comes from its code (:func:`access_modes`). On the
    simulator, ``footprint`` holds the elements it really touched, so two kernels that
    write different parts of one array are not taken for a race."""
    modes = access_modes(kernel)
    names = parameter_names(kernel)
    reads, writes, atomics = [], [], []
    for i, arg in enumerate(args):
        if not _device_visible(arg):
            continue  # a host array: numba copies it (the copies are recorded)
        label = f"argument {names[i]!r}" if i < len(names) else f"argument {i}"
        region = region_of(arg, label)
        if region is None:
            continue
        mode = modes[i] if modes is not None and i < len(modes) else WRITE
        if footprint is None:
            (writes if mode == WRITE else atomics if mode == ATOMIC else reads).append(region)
            continue
        read, written = footprint.within(region)
        if mode == ATOMIC:
            atomics.append(_with_parts(region, read + written))
            continue
        if written:
            writes.append(_with_parts(region, written))
        if read:
            reads.append(_with_parts(region, read))
    emit("launch", name, stream, reads=reads, writes=writes, atomics=atomics,
         detail={"grid": grid, "block": block, "args": names, **_kernel_facts(kernel, args),
                 **({"slept_ns": slept_ns} if slept_ns else {}),
                 **({"bytes_touched": touched} if touched is not None else {}),
                 "modes": modes if modes is not None else "unknown: all written",
                 "footprint": "elements touched" if footprint is not None
                 else "whole arguments"})


def _kernel_facts(kernel, args) -> dict:
    """What a model GPU needs to time a launch: the kernel's Python function (a cost may
    be stated for it) and, for :data:`streamlab.spin`, the nanoseconds asked for."""
    from .spin import spin

    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    facts = {"py_func": fn}
    if fn is not None and fn is (getattr(spin, "py_func", None) or getattr(spin, "fn", None)) \
            and args:
        facts["spin_ns"] = int(args[0])
    return facts


def _with_parts(region: Region, pieces) -> Region:
    from dataclasses import replace

    parts = merge_pieces(pieces)
    return replace(region, lo=parts[0][0], hi=parts[-1][1], parts=parts)


class Footprint:
    """The elements a simulated kernel touched: (lo, hi) byte ranges read and written."""

    def __init__(self):
        self.reads: set = set()
        self.writes: set = set()

    def touch(self, ary, idx, write: bool) -> None:
        """Note that a simulated thread read (or wrote) ``ary[idx]``."""
        face = ary.__array_interface__
        base = face["data"][0]
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) == ary.ndim and all(isinstance(i, (int, np.integer)) for i in idx):
            off = 0
            for i, n, st in zip(idx, ary.shape, ary.strides):
                off += (i + n if i < 0 else i) * st
            piece = (base + off, base + off + ary.itemsize)
        else:
            sub = ary[idx]
            if hasattr(sub, "__array_interface__") and getattr(sub, "ndim", 0):
                piece = ops.extent(sub.__array_interface__)
            else:
                piece = ops.extent(face)
        (self.writes if write else self.reads).add(piece)

    def within(self, region: Region):
        """The pieces read, and written, inside ``region``."""
        def inside(pieces):
            return [p for p in pieces if region.lo <= p[0] < region.hi]
        return inside(self.reads), inside(self.writes)


def _device_visible(arg) -> bool:
    if _device.SIMULATOR:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return isinstance(arg, FakeCUDAArray)
    return bool(getattr(arg, "__cuda_memory__", False)) or \
        hasattr(arg, "__cuda_array_interface__")


# --- the GPU -------------------------------------------------------------------------
def _install_gpu() -> None:
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import driver

    def device_region(obj, size):
        ptr = driver.device_pointer(obj)
        what = f"the device array ({describe_array(obj)})"
        return Region(ptr, ptr + size, what, allocation(device_owner(obj)))

    def host_region(obj, size):
        ptr = driver.host_pointer(obj, readonly=True)
        owner = host_owner(obj) if not isinstance(obj, int) else None
        return Region(ptr, ptr + size, f"the host array ({describe_array(obj)})",
                      allocation(owner), host=True), ops._pinned_address(ptr)

    def regions(direction, dst, src, size):
        """What one of numba's four driver copy functions reads and writes."""
        if direction == "h2d":
            host, pinned = host_region(src, size)
            return dict(host=host, device=device_region(dst, size), pinned=pinned)
        if direction == "d2h":
            host, pinned = host_region(dst, size)
            return dict(host=host, device=device_region(src, size), pinned=pinned)
        if direction == "d2d":
            return dict(host=None, device=device_region(dst, size),
                        src=device_region(src, size), pinned=None)
        return dict(host=None, device=device_region(dst, size), pinned=None)  # memset

    def wrap(direction):
        def make(orig):
            signature = inspect.signature(orig)  # numba calls them by keyword too

            @functools.wraps(orig)
            def copy(*args, **kwargs):
                out = orig(*args, **kwargs)
                if observing():
                    bound = signature.bind(*args, **kwargs)
                    bound.apply_defaults()
                    a = bound.arguments
                    stream = a["stream"]
                    copy_op(direction, stream,
                            synchronous=not stream and direction in ("h2d", "d2h"),
                            **regions(direction, a["dst"], a.get("src"), a["size"]))
                return out
            return copy
        return make

    for name, direction in (("host_to_device", "h2d"), ("device_to_host", "d2h"),
                            ("device_to_device", "d2d"), ("device_memset", "memset")):
        _patch(driver, name, wrap(direction))
    _install_events(driver.Event)
    _patch(driver.Stream, "synchronize", _stream_sync)

    def context_sync(orig):
        def synchronize(self):
            out = orig(self)
            emit("sync", "device", detail={"device": self.device.id})
            return out
        return synchronize

    _patch(driver.Context, "synchronize", context_sync)

    def call(orig):
        def call(self, args, launch_config):
            if not observing() or getattr(_tls, "launch", None) is not None:
                return orig(self, args, launch_config)
            _tls.launch = (self, args, launch_config)
            try:
                return orig(self, args, launch_config)
            finally:
                _tls.launch = None
        return call

    def launch(orig):
        def launch(stream, config, kernel, *kernel_args):
            out = orig(stream, config, kernel, *kernel_args)
            pending = getattr(_tls, "launch", None)
            if pending is not None and observing():
                _tls.launch = None  # one launch per call
                disp, args, cfg = pending
                _launch_op(disp, disp.py_func.__name__, args, cfg.stream, cfg.griddim,
                           cfg.blockdim)
            return out
        return launch

    _patch(dispatcher.CUDADispatcher, "call", call)
    _patch(dispatcher, "launch", launch)
    _install_gpu_argument_copies()


def _install_gpu_argument_copies() -> None:
    """A host array passed to a kernel: numba-cuda 0.30 copies it in (and, unless it is
    an ``In`` argument, back out after the kernel) with the driver directly, in the
    launch's stream, not through the copy functions above."""
    from numba.cuda import args as nb_args

    def regions(hint, devary):
        nbytes = devary.size * devary.dtype.itemsize
        what = f"the host array ({describe_array(hint.value)})"
        device = Region(devary.ptr, devary.ptr + nbytes,
                        f"the device copy of {what[4:]}", allocation(devary))
        return region_of(hint.value, what), device, ops.is_pinned(hint.value)

    def handle(stream) -> int:
        return int(getattr(stream, "handle", stream) or 0)

    def out_to_device(orig):
        def to_device(self, retr, stream=0):
            before = len(retr)
            devary = orig(self, retr, stream)
            if len(retr) > before and observing():  # converted: a host array
                host, device, pinned = regions(self, devary)
                if type(self).copy_input:
                    copy_op("h2d", stream, host=host, device=device, pinned=pinned,
                            synchronous=False)
                back = retr[-1]

                def copy_back():
                    out = back()
                    if observing():
                        copy_op("d2h", stream, host=host, device=device, pinned=pinned,
                                synchronous=handle(stream) == 0)
                    return out

                retr[-1] = copy_back
            return devary
        return to_device

    def in_to_device(orig):
        def to_device(self, retr, stream=0):
            devary = orig(self, retr, stream)
            value = self.value
            if observing() and isinstance(value, np.ndarray) and \
                    not getattr(value, "__cuda_memory__", False):
                host, device, pinned = regions(self, devary)
                copy_op("h2d", stream, host=host, device=device, pinned=pinned,
                        synchronous=False)
            return devary
        return to_device

    _patch(nb_args.Out, "to_device", out_to_device)
    _patch(nb_args.In, "to_device", in_to_device)


def _install_events(event_cls) -> None:
    """Event.record/wait/synchronize/query (the GPU's; the simulator's record themselves)."""

    def record(orig):
        def record(self, stream=0):
            out = orig(self, stream)
            emit("record", "event", stream, event=self)
            return out
        return record

    def wait(orig):
        def wait(self, stream=0):
            out = orig(self, stream)
            emit("wait", "event", stream, event=self)
            return out
        return wait

    def synchronize(orig):
        def synchronize(self):
            out = orig(self)
            emit("sync", "event", event=self)
            return out
        return synchronize

    def query(orig):
        def query(self):
            out = orig(self)
            emit("query", "event", event=self, detail={"result": bool(out)})
            return out
        return query

    for name, make in (("record", record), ("wait", wait), ("synchronize", synchronize),
                       ("query", query)):
        _patch(event_cls, name, make)


def _stream_sync(orig):
    def synchronize(self):
        out = orig(self)
        emit("sync", "stream", self)
        return out
    return synchronize


# --- the simulator -------------------------------------------------------------------
def _install_simulator() -> None:
    """The simulator's copies, element access from the host, and kernel launches."""
    _sim_copies()
    _sim_element_access()
    _sim_launches()


def slept(ns: int) -> bool:
    """A simulated thread calls ``cuda.nanosleep(ns)``: note it for the model GPU (which
    adds the longest sleep of a launch to the kernel's time). False outside a launch."""
    current = _slept["current"]
    if current is None:
        return False
    key = threading.get_ident()
    current[key] = current.get(key, 0) + int(ns)
    return True


def _in_kernel() -> bool:
    """Is this a simulated CUDA thread (a BlockThread): is array access the kernel's?"""
    from numba.cuda.simulator import kernel as sim_kernel

    return isinstance(threading.current_thread(), sim_kernel.BlockThread)


def _sim_device_region(dev):
    return region_of(dev, f"the device array ({describe_array(dev)})")


def _sim_host_region(ary):
    return region_of(ary, f"the host array ({describe_array(ary)})")


def _sim_copies() -> None:  # noqa: C901  (three copies, each with its capture)
    """to_device (by every name), copy_to_host and copy_to_device: recorded, and after
    the host functions queued in their stream (see streamlab.sim.driver)."""
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    from ._pinned import is_pinned
    from .sim import driver as sim_driver
    from .sim import capture as _capture

    fake = sim_da.FakeCUDAArray
    def to_device_wrap(orig):
        def to_device(ary, stream=0, copy=True, to=None):
            lane = None if _in_kernel() or not _capture.capturing else _capture.sim_lane(stream)
            if lane is None and copy and _capture.capturing and not _in_kernel():
                _capture.sim_refuse_legacy("cuda.to_device", stream)
            if lane is not None:  # the copy is captured; the allocation happens now
                if to is not None:
                    lane.copy("h2d", to, ary)
                    return None
                if _capture.capturing:
                    _capture.sim_refuse_allocation("cuda.to_device (it allocates)")
                out = orig(ary, stream=0, copy=False)
                out.stream = stream
                if copy:
                    lane.copy("h2d", out, ary)
                return out
            if not _in_kernel():
                if sim_driver.outstanding:  # host functions queued in the stream run first
                    sim_driver.flush(stream)
            out = orig(ary, stream=stream, copy=copy, to=to)
            if to is None and isinstance(out, fake):
                out.stream = stream  # as on a GPU: the array remembers its stream
                if copy and observing() and not _in_kernel():
                    host = ary if hasattr(ary, "__array_interface__") else None
                    copy_op("h2d", stream, host=_sim_host_region(host) if host is not None
                            else None, device=_sim_device_region(out),
                            pinned=host is not None and is_pinned(host),
                            synchronous=not stream)
            return out
        return to_device

    def copy_to_host(orig):
        def copy_to_host(self, ary=None, stream=0):
            lane = None if _in_kernel() or not _capture.capturing \
                else _capture.sim_lane(stream or self.stream)
            if lane is None and _capture.capturing and not _in_kernel():
                _capture.sim_refuse_legacy("copy_to_host", stream or self.stream)
            if lane is not None:  # captured into a graph: it runs at each replay
                if ary is None:
                    ary = np.empty(self.shape, self.dtype)  # pageable: accepted, as on a GPU (filled at each replay)
                lane.copy("d2h", ary, self)
                return ary
            if not _in_kernel():
                if sim_driver.outstanding:
                    sim_driver.flush(stream or self.stream)
            out = orig(self, ary, stream)
            if observing() and not _in_kernel():
                stream = stream or self.stream  # as numba does on a GPU
                copy_op("d2h", stream, host=_sim_host_region(out),
                        device=_sim_device_region(self),
                        pinned=is_pinned(out), synchronous=not stream)
            return out
        return copy_to_host

    def copy_to_device(orig):
        def copy_to_device(self, ary, stream=0):
            lane = None if _in_kernel() or not _capture.capturing \
                else _capture.sim_lane(stream or self.stream)
            if lane is None and _capture.capturing and not _in_kernel():
                _capture.sim_refuse_legacy("copy_to_device", stream or self.stream)
            if lane is not None:  # captured into a graph: it runs at each replay
                lane.copy("d2d" if isinstance(ary, fake) else "h2d", self, ary)
                return None
            if not _in_kernel():
                if sim_driver.outstanding:
                    sim_driver.flush(stream or self.stream)
            out = orig(self, ary, stream)
            if observing() and not _in_kernel():
                stream = stream or self.stream
                if isinstance(ary, fake):
                    copy_op("d2d", stream, host=None, device=_sim_device_region(self),
                            src=_sim_device_region(ary), pinned=None, synchronous=False)
                else:
                    copy_op("h2d", stream, host=_sim_host_region(ary),
                            device=_sim_device_region(self),
                            pinned=is_pinned(ary), synchronous=not stream)
            return out
        return copy_to_device

    original_to_device = sim_da.to_device
    wrapped = ops.timed(to_device_wrap(original_to_device))
    _patching.patch_everywhere(original_to_device, wrapped)
    _patch(fake, "copy_to_host", copy_to_host)
    _patch(fake, "copy_to_device", copy_to_device)



def _sim_element_access() -> None:
    """``d[i]`` and ``d[i] = v`` on a device array from the host: a copy on a GPU."""
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    fake = sim_da.FakeCUDAArray
    def getitem(orig):
        def __getitem__(self, idx):
            out = orig(self, idx)
            if not isinstance(out, fake) and observing() and not _in_kernel():
                # an element read from the host: a device-to-host copy on a GPU
                emit("copy", "d2h", self.stream or 0, pinned=False, blocking=True,
                     reads=(_sim_device_region(self),))
            return out
        return __getitem__

    def setitem(orig):
        def __setitem__(self, idx, val):
            out = orig(self, idx, val)
            if observing() and not _in_kernel():
                # an element written from the host: a copy and a synchronize on a GPU
                emit("copy", "h2d", self.stream or 0, pinned=False, blocking=True,
                     writes=(_sim_device_region(self),))
            return out
        return __setitem__

    _patch(fake, "__getitem__", getitem)
    _patch(fake, "__setitem__", setitem)


def _sim_launches() -> None:
    """A kernel launch, recorded once its grid has run (before the copies back of host
    arrays), with the elements it touched; mapped arrays passed as device memory."""
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.cudadrv import devicearray as sim_da

    from ._pinned import SimMappedArray
    from .sim import driver as sim_driver
    from .sim import capture as _capture

    fake = sim_da.FakeCUDAArray

    def call(orig):
        def __call__(self, *args):
            if self._device:
                return orig(self, *args)
            if _capture.capturing:  # (nothing captures: the graph stand-in is not asked)
                lane = _capture.sim_lane(getattr(self, "_streamlab_stream", 0))
                if lane is not None:  # captured into a graph: it runs at each replay
                    return lane.kernel(self, args)
                _capture.sim_refuse_legacy(f"a launch of {self.fn.__name__}",
                                           getattr(self, "_streamlab_stream", 0))
            if sim_driver.outstanding:
                sim_driver.flush(getattr(self, "_streamlab_stream", 0))
            # mapped host memory: the kernel writes the host array itself, as on a GPU
            args = tuple(fake(a) if isinstance(a, SimMappedArray) else a for a in args)
            if not observing():
                return orig(self, *args)
            _tls.launch = (self, args)
            try:
                return orig(self, *args)
            finally:
                _tls.launch = None
        return __call__

    def swapped(orig):
        @contextlib.contextmanager
        def swapped_cuda_module(fn, fake_cuda_module):
            pending = getattr(_tls, "launch", None)
            if pending is None:
                with orig(fn, fake_cuda_module):
                    yield
                return
            _tls.launch = None
            # the elements touched, for the race check (a model GPU needs only the arrays)
            footprint = Footprint() if recording() else None
            _footprint["current"] = footprint  # launches take turns (see _simfill)
            _slept["current"] = slept = {}
            _touched["current"] = touched = [0]
            try:
                with orig(fn, fake_cuda_module):
                    yield
            finally:
                _footprint["current"] = None
                _slept["current"] = None
                _touched["current"] = None
            if observing():
                kernel, args = pending
                _launch_op(kernel, kernel.fn.__name__, args,
                           getattr(kernel, "_streamlab_stream", 0), kernel.grid_dim,
                           kernel.block_dim, footprint, max(slept.values(), default=0),
                           touched[0])
        return swapped_cuda_module

    inner = sim_da.FakeWithinKernelCUDAArray

    def kernel_getitem(orig):
        def __getitem__(self, idx):
            out = orig(self, idx)
            touched = _touched["current"]
            if touched is not None and not isinstance(out, inner):
                touched[0] += self._item._ary.itemsize
                footprint = _footprint["current"]
                if footprint is not None:
                    footprint.touch(self._item._ary, idx, False)
            return out
        return __getitem__

    def kernel_setitem(orig):
        def __setitem__(self, idx, val):
            out = orig(self, idx, val)
            touched = _touched["current"]
            if touched is not None:
                touched[0] += self._item._ary.itemsize
                footprint = _footprint["current"]
                if footprint is not None:
                    footprint.touch(self._item._ary, idx, True)
            return out
        return __setitem__

    _patch(inner, "__getitem__", kernel_getitem, timed=False)  # inside kernels: hot
    _patch(inner, "__setitem__", kernel_setitem, timed=False)

    _patch(sim_kernel.FakeCUDAKernel, "__call__", call)
    _patch(sim_kernel, "swapped_cuda_module", swapped)
