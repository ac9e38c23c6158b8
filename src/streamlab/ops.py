"""Record the stream and event operations that code issues, for checks that read structure.

A result can be right by luck (the simulator runs everything in order; a GPU race may not
show on one run). What the code *did* cannot: which stream each kernel went to, which
copies were from pinned memory, which events were recorded where and waited on where,
and where the host synchronized. :func:`record_ops` records exactly that, on a GPU and
on the simulator alike, while leaving every call to do what it always does.

>>> import numpy as np, streamlab
>>> from numba import cuda
>>> @cuda.jit
... def inc(x):
...     x[0] += 1
>>> s = cuda.stream()
>>> d = cuda.to_device(np.zeros(1), stream=s)
>>> with streamlab.record_ops() as ops:
...     inc[1, 1, s](d)
...     _ = d.copy_to_host(stream=s)
...     s.synchronize()
>>> [op.kind for op in ops]
['launch', 'copy', 'sync']
>>> ops.launches()[0].name, ops.launches()[0].stream == ops.copies()[0].stream
('inc', True)
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

from numba import cuda

from ._device import on_simulator
from .streams import canonical_handle, stream_info, stream_key

_local = threading.local()


@dataclass(frozen=True)
class StreamRef:
    """A stream as the recorder saw it: its handle, kind and the thread that used it."""

    handle: int
    kind: str  # legacy default, per-thread default, blocking, non-blocking
    thread: str

    @classmethod
    def of(cls, stream) -> "StreamRef":
        """The StreamRef of a numba stream (or 0) as seen from the calling thread."""
        return _ref(stream)

    @property
    def is_legacy_default(self) -> bool:
        return self.kind == "legacy default"

    def key(self):
        return stream_key(self.handle, self.thread)


@dataclass(frozen=True)
class Op:
    """One operation: a kernel launch, a copy, an event record or wait, or a synchronize."""

    index: int
    kind: str  # launch | copy | record | wait | sync | hostfn
    name: str  # kernel name; h2d/d2h/d2d; "event"; stream/device/event for sync
    stream: StreamRef | None = None
    event: int | None = None  # id() of the event object
    pinned: bool | None = None  # copies: is the host buffer pinned?
    thread: str = ""
    detail: dict = field(default_factory=dict, compare=False)

    def __str__(self) -> str:
        where = f" in {self.stream.kind} stream {self.stream.handle:#x}" if self.stream else ""
        return f"#{self.index} {self.kind} {self.name}{where}"


class OpLog(list):
    """The operations recorded, in the order they were issued, with questions to ask."""

    def launches(self, name: str | None = None) -> list[Op]:
        return [op for op in self if op.kind == "launch" and (name is None or op.name == name)]

    def copies(self, direction: str | None = None) -> list[Op]:
        return [op for op in self if op.kind == "copy"
                and (direction is None or op.name == direction)]

    def records(self) -> list[Op]:
        return [op for op in self if op.kind == "record"]

    def waits(self) -> list[Op]:
        return [op for op in self if op.kind == "wait"]

    def syncs(self) -> list[Op]:
        return [op for op in self if op.kind == "sync"]

    def host_functions(self) -> list[Op]:
        return [op for op in self if op.kind == "hostfn"]

    def recorded_before(self, wait: Op) -> Op | None:
        """The record of the event that ``wait`` waits on, issued last before it."""
        found = None
        for op in self:
            if op.index >= wait.index:
                break
            if op.kind == "record" and op.event == wait.event:
                found = op
        return found

    def on_stream(self, stream) -> list[Op]:
        """Operations issued to ``stream`` (a numba stream, or a StreamRef)."""
        key = stream.key() if isinstance(stream, StreamRef) else _ref(stream).key()
        return [op for op in self if op.stream is not None and op.stream.key() == key]

    def describe(self) -> str:
        return "\n".join(str(op) for op in self)


def _ref(stream) -> StreamRef:
    handle = canonical_handle(0 if stream is None else stream)
    return StreamRef(handle, stream_info(handle if handle in (1, 2) else stream).kind,
                     threading.current_thread().name)


def is_pinned(ary) -> bool:
    """Is the host array ``ary`` in pinned (page-locked) memory?"""
    if on_simulator():
        from ._simfill import is_pinned as sim_is_pinned

        return sim_is_pinned(ary)
    from cuda.bindings import driver

    ptr = ary.__array_interface__["data"][0]
    err, _ = driver.cuMemHostGetFlags(ptr)
    return err == driver.CUresult.CUDA_SUCCESS


class _Recorder:
    def __init__(self):
        self.log = OpLog()
        self.lock = threading.Lock()

    def add(self, kind, name, stream=None, **kw):
        ref = (_ref(stream) if (stream is not None or kind in ("launch", "copy", "hostfn"))
               else None)
        with self.lock:
            self.log.append(Op(len(self.log), kind, name, ref,
                               thread=threading.current_thread().name, **kw))


_active: list[_Recorder] = []


def _outermost(fn):
    """Record only the outermost recorded call (to_device calls copy_to_device inside)."""

    def wrapper(*args, **kwargs):
        depth = getattr(_local, "depth", 0)
        _local.depth = depth + 1
        try:
            return fn(depth == 0 and bool(_active), *args, **kwargs)
        finally:
            _local.depth = depth

    return wrapper


def _host_array(obj):
    import numpy as np

    return obj if isinstance(obj, np.ndarray) and not hasattr(obj, "gpu_data") else None


def _copy_op(direction, host, stream):
    pinned = is_pinned(host) if host is not None else None
    for r in _active:
        r.add("copy", direction, stream=stream, pinned=pinned)


@contextlib.contextmanager
def record_ops():
    """Record every launch, copy, event record/wait and synchronize issued in the block.

    Yields an :class:`OpLog`, filled as the code runs. Recording may be nested (each
    recorder sees everything) and is thread-safe. The calls behave exactly as without it.
    """
    rec = _Recorder()
    first = not _active
    _active.append(rec)
    patches = _install() if first else []
    try:
        yield rec.log
    finally:
        _active.remove(rec)
        for owner, name, original in reversed(patches):
            setattr(owner, name, original)


def _install():
    """Wrap numba's calls for this mode; return (owner, name, original) to restore."""
    patches = []

    def patch(owner, name, make):
        original = getattr(owner, name)
        patches.append((owner, name, original))
        setattr(owner, name, make(original))

    # --- copies ---------------------------------------------------------------
    def wrap_to_device(orig):
        @_outermost
        def to_device(record, obj, stream=0, copy=True, to=None):
            if record and copy:
                _copy_op("h2d", _host_array(obj), stream)
            return orig(obj, stream=stream, copy=copy, to=to)
        return to_device

    def wrap_copy_to_device(orig):
        @_outermost
        def copy_to_device(record, self, ary, stream=0):
            if record:
                host = _host_array(ary)
                _copy_op("h2d" if host is not None else "d2d", host, stream)
            return orig(self, ary, stream=stream)
        return copy_to_device

    def wrap_copy_to_host(orig):
        @_outermost
        def copy_to_host(record, self, ary=None, stream=0):
            out = orig(self, ary, stream=stream)
            if record:
                _copy_op("d2h", ary if ary is not None else out, stream)
            return out
        return copy_to_host

    # --- events and synchronizes ----------------------------------------------
    def wrap_event(kind):
        def make(orig):
            def method(self, stream=0):
                for r in _active:
                    r.add(kind, "event", stream=stream, event=id(self))
                return orig(self, stream)
            return method
        return make

    def wrap_event_sync(orig):
        def synchronize(self):
            for r in _active:
                r.add("sync", "event", event=id(self))
            return orig(self)
        return synchronize

    def wrap_stream_sync(orig):
        def synchronize(self):
            for r in _active:
                r.add("sync", "stream", stream=self)
            return orig(self)
        return synchronize

    def wrap_device_sync(orig):
        def synchronize():
            for r in _active:
                r.add("sync", "device")
            return orig()
        return synchronize

    if on_simulator():
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        event_cls, stream_cls = cuda.Event, cuda.Stream  # streamlab's simulator fills
        array_cls = FakeCUDAArray

        def wrap_getitem(orig):
            def __getitem__(self, configuration):
                out = orig(self, configuration)
                out._streamlab_stream = configuration[2] if len(configuration) > 2 else 0
                return out
            return __getitem__

        def wrap_call(orig):
            def __call__(self, *args):
                if _active and not self._device:
                    stream = getattr(self, "_streamlab_stream", 0)
                    for r in _active:
                        r.add("launch", self.fn.__name__, stream=stream,
                              detail={"grid": self.grid_dim, "block": self.block_dim})
                return orig(self, *args)
            return __call__

        patch(FakeCUDAKernel, "__getitem__", wrap_getitem)
        patch(FakeCUDAKernel, "__call__", wrap_call)
    else:
        from numba.cuda import dispatcher
        from numba.cuda.cudadrv import devicearray, driver

        event_cls, stream_cls = driver.Event, driver.Stream
        array_cls = devicearray.DeviceNDArrayBase

        def wrap_init(orig):
            def __init__(self, dispatcher_, griddim, blockdim, stream, sharedmem):
                self._streamlab_stream = stream
                return orig(self, dispatcher_, griddim, blockdim, stream, sharedmem)
            return __init__

        def wrap_launch(orig):
            def __call__(self, *args):
                for r in _active:
                    r.add("launch", self.dispatcher.py_func.__name__,
                          stream=getattr(self, "_streamlab_stream", 0),
                          detail={"grid": self.griddim, "block": self.blockdim})
                return orig(self, *args)
            return __call__

        patch(dispatcher._LaunchConfiguration, "__init__", wrap_init)
        patch(dispatcher._LaunchConfiguration, "__call__", wrap_launch)

    patch(cuda, "to_device", wrap_to_device)
    patch(array_cls, "copy_to_device", wrap_copy_to_device)
    patch(array_cls, "copy_to_host", wrap_copy_to_host)
    patch(event_cls, "record", wrap_event("record"))
    patch(event_cls, "wait", wrap_event("wait"))
    patch(event_cls, "synchronize", wrap_event_sync)
    patch(stream_cls, "synchronize", wrap_stream_sync)
    patch(cuda, "synchronize", wrap_device_sync)
    return patches
