"""A stand-in for the parts of cuda.core the course uses, for Numba's CUDA simulator.

On a GPU, ``from cuda.core import Device, StreamOptions`` is NVIDIA's cuda.core, and
streamlab does not touch it. On the simulator cuda.core cannot run (its ``Device()`` needs
the driver), so ``import streamlab`` puts this module in its place
(``sys.modules["cuda.core"]``, undone by ``streamlab.uninstall()``), as numba's simulator
stands in for ``numba.cuda``. The learner's lines stay the real ones:

>>> import streamlab
>>> from cuda.core import Device, EventOptions, StreamOptions
>>> s = Device().create_stream(options=StreamOptions(nonblocking=True, priority=-5))
>>> (s.is_nonblocking, s.priority)
(True, -5)
>>> Device().create_stream(options=StreamOptions(priority=-9))
Traceback (most recent call last):
ValueError: priority=-9 is out of range [-5, 0]
>>> ev = s.record(options=EventOptions(blocking_sync=True))
>>> ev.sync(); ev.is_blocking_sync, ev.is_done
(True, True)

What it has: ``Device`` (``create_stream``, ``create_event``, ``sync``,
``default_stream``, ``create_graph_builder``, ``memory_resource``, ``set_current``),
``Stream`` (``record``, ``wait``, ``sync``, ``is_nonblocking``, ``priority``,
``create_graph_builder``, ``__cuda_stream__``), ``Event`` (``sync``, ``is_done``, the
difference of two timing events in ms; refusals in cuda.core's words), ``StreamOptions``, ``EventOptions``,
``LEGACY_DEFAULT_STREAM``, ``PER_THREAD_DEFAULT_STREAM``, and ``cuda.core.graph``'s
``GraphBuilder`` and ``Graph`` (:mod:`streamlab.sim.graph`). Any other name is cuda.core's
own (imported, it behaves as without streamlab; what it does needs a GPU). Each stream and event is a
simulator stream or event of numba's underneath, so numba launches, copies and events take
these streams (through ``__cuda_stream__``), and record_ops, the race check and the model
GPU see every call. What differs from a GPU: nothing runs concurrently (the model GPU
gives the times), one device only, and a priority or blocking-sync flag changes no
scheduling, only what the stream or event reports (and what the course's checks read).
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass, replace

from .capture import SimCoreStream, SimGraphBuilder

_handles = itertools.count(0x7000)


def _cuda():
    from numba import cuda

    return cuda


@dataclass
class StreamOptions:
    """cuda.core's stream options: ``nonblocking`` (default True: the stream does not wait
    for the legacy default stream), ``priority`` (lower numbers first; default the lowest).
    Values are taken as cuda.core 1.2 takes them: ``nonblocking`` by its truth, ``priority``
    as an int (``-1.0`` or a numpy integer included; a str refused)."""

    nonblocking: bool = True
    priority: int | None = None

    def __post_init__(self):
        self.nonblocking = bool(self.nonblocking)
        if self.priority is not None:
            if isinstance(self.priority, (str, bytes)) or not hasattr(self.priority, "__int__"):
                raise TypeError(f"Expected int, got {type(self.priority).__name__}")
            self.priority = int(self.priority)


@dataclass
class EventOptions:
    """cuda.core's event options: ``timing_enabled`` (default False), ``blocking_sync``
    (default False: ``Event.sync`` spins), ``ipc_enabled`` (refused on the simulator)."""

    timing_enabled: bool | None = False
    blocking_sync: bool | None = False
    ipc_enabled: bool | None = False

    def __post_init__(self):  # cuda.core 1.2 takes a bool and nothing else here
        for name in ("timing_enabled", "blocking_sync", "ipc_enabled"):
            value = getattr(self, name)
            if value is None:
                setattr(self, name, False)
            elif not isinstance(value, bool):
                raise TypeError(f"Expected bool, got {type(value).__name__}")


class _Handle:
    """A handle as cuda.core gives it (``CUstream``, ``CUevent``): ``int()`` of it is the
    address; it is not an int, so ``f"{h:#x}"`` fails here as it does on a GPU."""

    __slots__ = ("_kind", "_value")

    def __init__(self, kind: str, value: int):
        self._kind, self._value = kind, value

    def __int__(self):
        return self._value

    def __eq__(self, other):
        return isinstance(other, _Handle) and other._value == self._value

    def __hash__(self):
        return hash((self._kind, self._value))

    def __repr__(self):
        return f"<{self._kind} {self._value:#x}>"


def _options(options, cls, what: str):
    if options is None:
        return cls()
    if isinstance(options, dict):
        try:
            return cls(**options)
        except TypeError as err:
            raise TypeError(f"{what}: {err} (the fields are those of cuda.core's "
                            f"{cls.__name__})") from None
    if isinstance(options, cls):
        return options
    raise TypeError(f"{what} takes options={cls.__name__}(...) or a dict of its fields, "
                    f"got {type(options).__name__}")


class Device:
    """cuda.core's Device, on the simulator: device 0, the only one there."""

    _one = None

    def __new__(cls, device_id: "int | Device | None" = None):
        if isinstance(device_id, Device):
            device_id = 0
        if device_id is not None and (isinstance(device_id, bool)
                                      or not isinstance(device_id, int)):
            raise TypeError(f"device_id is a GPU's number (0, 1, ...), got {device_id!r}")
        if device_id not in (None, 0):
            raise ValueError(f"device_id must be within [0, 1): the simulator has one GPU, "
                             f"got {device_id}")
        if cls._one is None:
            cls._one = super().__new__(cls)
        return cls._one

    @property
    def device_id(self) -> int:
        """0: the simulator has one GPU."""
        return 0

    @property
    def name(self) -> str:
        """'CUDA simulator'."""
        return "CUDA simulator"

    def set_current(self, ctx=None) -> None:
        """Nothing to make current on the simulator."""
        return None

    def sync(self) -> None:
        """Wait for all the device's work (``cuCtxSynchronize``)."""
        _cuda().synchronize()

    def create_stream(self, obj=None, options=None) -> "Stream":
        """A new stream (``options``: :class:`StreamOptions` or a dict of its fields), or a
        cuda.core view of ``obj``, any stream with ``__cuda_stream__`` (a numba one)."""
        if obj is not None:
            if options is not None:
                raise ValueError("obj and options cannot be both specified")
            return Stream._of(obj)
        opts = _options(options, StreamOptions, "create_stream")
        from ..streams import SIMULATED_PRIORITY_RANGE
        from .made import note_stream

        least, greatest = SIMULATED_PRIORITY_RANGE
        priority = least if opts.priority is None else opts.priority
        if not greatest <= priority <= least:  # cuda.core's words (an H200, cuda.core 1.2)
            raise ValueError(f"priority={priority} is out of range [{greatest}, {least}]")
        inner = _cuda().stream()
        note_stream(inner.handle, opts.nonblocking, priority)
        return Stream._wrap(inner)

    def create_event(self, options=None) -> "Event":
        """A new event (``options``: :class:`EventOptions` or a dict of its fields)."""
        return Event._new(options)

    @property
    def default_stream(self) -> "Stream":
        """The legacy default stream, or the per-thread one under
        CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1 (as cuda.core picks)."""
        per_thread = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") \
            not in ("", "0")
        return __getattr__("PER_THREAD_DEFAULT_STREAM" if per_thread  # (made on first use)
                           else "LEGACY_DEFAULT_STREAM")

    def create_graph_builder(self):
        """A graph builder on a new stream (see :mod:`streamlab.graphs`)."""
        return self.create_stream().create_graph_builder()

    @property
    def memory_resource(self):
        """The device's stream-ordered memory pool (see :mod:`streamlab.memory`)."""
        from .pool import SimMemoryResource

        return SimMemoryResource()

    def allocate(self, size: int, *, stream):
        """``memory_resource.allocate(size, stream=...)``: the stream is required, as in
        cuda.core."""
        return self.memory_resource.allocate(size, stream=stream)

    def __repr__(self):
        return "<Device 0 (CUDA simulator; streamlab's stand-in for cuda.core)>"


class Stream(SimCoreStream):
    """cuda.core's Stream, on the simulator: a numba simulator stream underneath (what
    ``graph.launch`` takes, as :class:`streamlab.sim.capture.SimCoreStream`)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Stream objects cannot be instantiated directly. Please use "
                           "Device APIs (create_stream) or other Stream APIs (from_handle).")

    @classmethod
    def _wrap(cls, inner) -> "Stream":
        s = object.__new__(cls)
        s._stream = inner  # (SimCoreStream's name for it)
        s._closed = False
        return s

    @property
    def _inner(self):
        return self._stream

    @classmethod
    def _of(cls, obj) -> "Stream":
        if isinstance(obj, Stream):
            return obj
        proto = getattr(obj, "__cuda_stream__", None)
        if proto is None:
            raise TypeError(f"{type(obj).__name__} is not a stream: create_stream(obj) "
                            f"takes an object with __cuda_stream__ (a numba stream, say)")
        if isinstance(obj, type(_cuda().default_stream())):  # a numba stream: itself inside
            return cls._wrap(obj)
        return cls.from_handle(int(proto()[1]))

    @staticmethod
    def from_handle(handle: int) -> "Stream":
        """A view of the stream whose handle is ``handle``."""
        cuda = _cuda()
        return Stream._wrap(type(cuda.default_stream())(int(handle)))

    def __cuda_stream__(self):
        return (0, int(self._inner.handle))

    @property
    def handle(self) -> "_Handle":
        """The stream's handle: ``int(s.handle)`` is its address, as for cuda.core's
        ``CUstream`` (which, like this, is not an int itself)."""
        return _Handle("CUstream", int(self._inner.handle))

    @property
    def is_closed(self) -> bool:
        """Has :meth:`close` been called?"""
        return self._closed

    @property
    def is_nonblocking(self) -> bool:
        """Does the stream run without waiting for the legacy default stream?"""
        from ..streams import NON_BLOCKING, stream_info

        return stream_info(self._inner).kind == NON_BLOCKING

    @property
    def priority(self) -> int:
        """The stream's priority, as it was made (lower numbers first)."""
        from ..streams import stream_info

        return stream_info(self._inner).priority

    @property
    def device(self) -> Device:
        """The device the stream belongs to."""
        return Device()

    def sync(self) -> None:
        """Wait on the host for the stream's work so far (``cuStreamSynchronize``)."""
        self._inner.synchronize()

    def record(self, event: "Event | None" = None, options=None) -> "Event":
        """Record ``event`` (or a new one, made with ``options``) in the stream."""
        if event is None:
            event = Event._new(options)
        elif not isinstance(event, Event):
            raise TypeError(f"record takes a cuda.core Event (Device().create_event()), got "
                            f"{type(event).__name__}")
        event._inner.record(self._inner)
        return event

    def wait(self, event_or_stream) -> None:
        """Make the stream's later work wait for an event, or for another stream's work so
        far (through an event recorded there, as cuda.core does)."""
        if isinstance(event_or_stream, Event):
            event_or_stream._inner.wait(self._inner)
            return
        if not hasattr(event_or_stream, "__cuda_stream__"):  # cuda.core's words
            raise ValueError(f"only an Event, Stream, or object supporting __cuda_stream__ "
                             f"can be waited, got {type(event_or_stream)}")
        other = Stream._of(event_or_stream)
        between = _cuda().event(timing=False)
        between.record(other._inner)
        between.wait(self._inner)

    def create_graph_builder(self):
        """A graph builder that captures into this stream (see :mod:`streamlab.graphs`)."""
        return SimGraphBuilder(self._inner)

    def close(self) -> None:
        """Nothing to destroy on the simulator."""
        self._closed = True

    def __eq__(self, other):
        return isinstance(other, Stream) and int(other.handle) == int(self.handle)

    def __hash__(self):
        return hash(int(self.handle))

    def __repr__(self):
        return f"<Stream handle={int(self.handle):#x} (simulator)>"


class Event:
    """cuda.core's Event, on the simulator: a numba simulator event underneath."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Event objects cannot be instantiated directly. Please use "
                           "Stream APIs (record).")

    @classmethod
    def _new(cls, options) -> "Event":
        opts = _options(options, EventOptions, "create_event")
        for field in ("timing_enabled", "blocking_sync", "ipc_enabled"):
            if not isinstance(getattr(opts, field), bool):
                raise TypeError(f"EventOptions.{field} must be True or False, got "
                                f"{getattr(opts, field)!r}")
        if opts.ipc_enabled:
            raise NotImplementedError("IPC events need a GPU and a second process: the "
                                      "simulator has neither")
        from ..streams import note_event

        ev = object.__new__(cls)
        ev._inner = _cuda().event(timing=opts.timing_enabled)
        ev._options = replace(opts)  # its flags as made: a later edit of opts changes nothing
        ev._closed = False
        ev._handle = next(_handles)
        note_event(ev._inner, opts.blocking_sync)  # known from creation, as on a GPU
        return ev

    @property
    def handle(self) -> "_Handle":
        """The event's handle (``int()`` of it is a number, as of cuda.core's ``CUevent``)."""
        return _Handle("CUevent", self._handle)

    @property
    def is_closed(self) -> bool:
        """Has :meth:`close` been called?"""
        return self._closed

    @property
    def is_timing_enabled(self) -> bool:
        """Was it made with ``timing_enabled=True``?"""
        return self._options.timing_enabled

    @property
    def is_blocking_sync(self) -> bool:
        """Was it made with ``blocking_sync=True`` (its ``sync`` sleeps, not spins)?"""
        return self._options.blocking_sync

    @property
    def is_ipc_enabled(self) -> bool:
        """False: no IPC on the simulator."""
        return False

    @property
    def is_done(self) -> bool:
        """Has the work before its record finished (``cuEventQuery``)?"""
        return self._inner.query()

    @property
    def device(self) -> Device:
        """The device the event belongs to."""
        return Device()

    def sync(self) -> None:
        """Wait on the host until the event is reached (``cuEventSynchronize``)."""
        self._inner.synchronize()

    def __sub__(self, other: "Event") -> float:
        """``end - start``: the milliseconds between two recorded timing events."""
        if not isinstance(other, Event):
            return NotImplemented
        # cuda.core's words (measured with cuda.core 1.2 on an H200)
        if not (self.is_timing_enabled and other.is_timing_enabled):
            raise RuntimeError("Both Events must be created with timing enabled in order to "
                               "subtract them; use EventOptions(timing_enabled=True) when "
                               "creating both events.")
        if self._inner._t_ns is None or other._inner._t_ns is None:
            raise RuntimeError("Both Events must be recorded before they can be subtracted; "
                               "use Stream.record() to record both events to a stream.")
        return other._inner.elapsed_time(self._inner)

    def close(self) -> None:
        """Nothing to destroy on the simulator."""
        self._closed = True

    def __repr__(self):
        return f"<Event handle={self._handle:#x} (simulator)>"


def __getattr__(name: str):
    # the default streams, made once numba's simulator streams exist
    if name in ("LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM"):
        from ..streams import LEGACY_HANDLE, PER_THREAD_HANDLE

        cuda = _cuda()
        inner = cuda.legacy_default_stream() if name.startswith("LEGACY") else \
            cuda.per_thread_default_stream()
        assert inner.handle in (LEGACY_HANDLE, PER_THREAD_HANDLE)
        value = Stream._wrap(inner)
        globals()[name] = value
        return value
    if name == "graph" and "cuda.core.graph" in sys.modules:  # the stand-in, while installed
        return sys.modules["cuda.core.graph"]
    # Everything else is cuda.core's own (importable here, as without streamlab; what it
    # does needs a GPU): code that only imports a name, as numba-cuda's own tests do,
    # behaves as it does without streamlab.
    if _real:
        return getattr(_real[0], name)
    raise AttributeError(f"module 'cuda.core' (streamlab's simulator stand-in) has no "
                         f"attribute {name!r}, and cuda.core itself is not installed")


_real: list = []  # the real cuda.core module, when it is installed

__all__ = ["Device", "Event", "EventOptions", "LEGACY_DEFAULT_STREAM",
           "PER_THREAD_DEFAULT_STREAM", "Stream", "StreamOptions"]


def install() -> None:
    """Make ``import cuda.core`` give this module (the registry undoes it)."""
    from .._patching import patch, patch_item

    me = sys.modules[__name__]
    try:
        import cuda.core as real
    except ImportError:
        real = None
    if real is not None and real is not me:
        _real[:] = [real]
        globals()["__path__"] = list(getattr(real, "__path__", []))  # its submodules
    patch_item(sys.modules, "cuda.core", me)
    from . import graph

    graph.install()  # `from cuda.core.graph import GraphBuilder`: the stand-in's
    try:
        import cuda as cuda_package
    except ImportError:  # no cuda-bindings or cuda-core installed: the entry is enough
        return
    patch(cuda_package, "core", me)
