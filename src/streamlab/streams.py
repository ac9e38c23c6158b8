"""What a stream is, and the streams and events numba cannot make.

**What a stream is.** Every record of an operation names its stream (:class:`StreamRef`):
its handle, its kind (legacy default, per-thread default, blocking, non-blocking), its
priority and its device, asked of the driver once per stream object (on the simulator,
of what made the stream) and kept: :func:`stream_info`, :func:`ref_of`.

**Streams numba cannot make.** ``numba.cuda.stream()`` takes no flags: every stream it
makes is *blocking* (it waits for work on the legacy default stream) and has the default
priority. CUDA also offers non-blocking streams and stream priorities; numba-cuda 0.30
has no API for them, so streamlab asks the driver for them and hands back an ordinary
numba stream object (:func:`stream`, and :func:`event` for events that sleep in
``synchronize()``).

>>> import streamlab
>>> from numba import cuda
>>> s = streamlab.stream(nonblocking=True)
>>> streamlab.stream_info(s).kind
'non-blocking'
>>> streamlab.stream_info(cuda.stream()).kind
'blocking'
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from dataclasses import dataclass, field

from numba import cuda

from . import _device

#: Does the per-thread default stream synchronise with the legacy default stream, as a
#: blocking stream does? Measured on a GPU (tests/test_gpu.py): yes, both ways.
PER_THREAD_SYNCS_WITH_LEGACY = True


@dataclass(frozen=True)
class StreamRef:
    """A stream as the recorder saw it: its handle, kind, device and the thread that used it."""

    handle: int
    kind: str  # legacy default, per-thread default, blocking, non-blocking
    thread: str
    device: int = 0
    priority: int = field(default=0, compare=False)  # lower runs first (stream_info)

    @classmethod
    def of(cls, stream) -> "StreamRef":
        """The StreamRef of a numba stream (or 0) as seen from the calling thread; a
        StreamRef (a grader's transcript holds them) is its own."""
        return stream if isinstance(stream, StreamRef) else ref_of(stream)

    @property
    def is_legacy_default(self) -> bool:
        """Is this the legacy default stream (which waits for blocking streams)?"""
        return self.kind == "legacy default"

    @property
    def is_per_thread_default(self) -> bool:
        """Is this a host thread's per-thread default stream?"""
        return self.kind == "per-thread default"

    @property
    def blocking(self) -> bool:
        """Does a stream of this kind wait for the legacy default stream (and it for it)?"""
        return self.kind == "blocking" or (self.is_per_thread_default
                                           and PER_THREAD_SYNCS_WITH_LEGACY)

    def implicit_waits(self, kinds: dict) -> list:
        """The legacy default stream's rule: of the streams ``kinds`` (agent ->
        StreamRef), those whose earlier work an operation in this stream waits for."""
        device = self.device
        if self.is_legacy_default:
            return [a for a, r in kinds.items() if r.device == device
                    and r.blocking and not r.is_legacy_default]
        if self.blocking:
            return [a for a, r in kinds.items() if r.device == device and r.is_legacy_default]
        return []

    def key(self):
        """What identifies the stream: per-thread default streams are one per thread, and
        the default streams are one per device."""
        return (self.device, stream_key(self.handle, self.thread))

    def describe(self, names: dict | None = None) -> str:
        """'stream0' if ``names`` (StreamRef keys to names) has it, else what it is."""
        if names and self.key() in names:
            return names[self.key()]
        if self.is_legacy_default:
            return "the legacy default stream"
        if self.is_per_thread_default:
            return f"the per-thread default stream of thread {self.thread}"
        return f"{self.kind} stream {self.handle:#x}"

# --- what a stream is: its handle, kind, priority and device ---------------------------
LEGACY_DEFAULT = "legacy default"
PER_THREAD_DEFAULT = "per-thread default"
BLOCKING = "blocking"
NON_BLOCKING = "non-blocking"

# CUDA's handles for its default streams (the simulator gives its streams the same)
DEFAULT_HANDLE = 0  # CU_STREAM_DEFAULT: numba's cuda.default_stream()
LEGACY_HANDLE = 1  # CU_STREAM_LEGACY
PER_THREAD_HANDLE = 2  # CU_STREAM_PER_THREAD
_CU_STREAM_NON_BLOCKING = 1  # the stream flag


@dataclass(frozen=True)
class StreamInfo:
    """What a stream is: its handle, kind, priority and the device it belongs to."""

    handle: int
    kind: str  # one of: legacy default, per-thread default, blocking, non-blocking
    priority: int
    device: int

    def describe(self) -> str:
        """'non-blocking stream, priority -2', say."""
        text = self.kind + " stream"
        if self.priority:
            text += f", priority {self.priority}"
        return text


def handle_of(stream) -> int:
    """The raw CUstream address of a numba, cuda.core or simulator stream, or of 0."""
    if stream is None:
        raise TypeError(
            "a stream is required here; pass the stream the work was issued to "
            "(cuda.default_stream() for the default stream)"
        )
    is_stream_object = hasattr(stream, "__cuda_stream__") or hasattr(stream, "handle")
    if isinstance(stream, bool) or not (isinstance(stream, int) or is_stream_object):
        raise TypeError(
            f"{stream!r} is not a CUDA stream: pass a stream from cuda.stream(), "
            f"streamlab.stream(), cuda.default_stream() or a cuda.core Stream")
    if isinstance(stream, int):
        if stream not in (0, LEGACY_HANDLE, PER_THREAD_HANDLE):
            raise TypeError(
                f"{stream} is not a stream: pass a stream object (cuda.stream(), "
                f"cuda.default_stream(), ...). 0, 1 and 2 stand for CUDA's default "
                f"streams; to use a raw CUstream address, wrap it with cuda.core's "
                f"Stream.from_handle(address) (or, on a GPU, numba's "
                f"cuda.external_stream(address))")
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int(proto()[1])
    return int(stream)


def canonical_handle(stream) -> int:
    """The handle, with handle 0 resolved to the default stream it stands for.

    Handle 0 is the legacy default stream (1), or the per-thread one (2) when
    CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1, so that each stream has one handle.
    """
    handle = handle_of(stream)
    if handle == 0:
        return PER_THREAD_HANDLE if _per_thread_by_env() and not _device.SIMULATOR \
            else LEGACY_HANDLE
    return handle


def stream_key(handle: int, thread: str | None = None):
    """What identifies a stream, given its canonical handle (see :func:`canonical_handle`).

    Handle 2 means "the calling thread's per-thread default stream": one stream per host
    thread, so it is told apart by the thread's name too. Every other handle is itself.
    """
    if handle == PER_THREAD_HANDLE:
        return (handle, thread if thread is not None else threading.current_thread().name)
    return handle


def _per_thread_by_env() -> bool:
    # cuda.bindings reads this once; with it, handle 0 means the per-thread stream.
    return os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") not in ("", "0")


def stream_info(stream) -> StreamInfo:
    """Describe ``stream``: legacy default, per-thread default, blocking or non-blocking.

    On a GPU, a stream object is asked about once: its kind, priority and device are fixed
    when it is made, so the answer is kept for as long as the object lives (four driver
    calls an event record cost before, each seen by CUPTI while a check records)."""
    if not _device.SIMULATOR and not isinstance(stream, int):
        try:
            known = _known.get(stream)
        except TypeError:  # an object that cannot be weakly referenced: asked each time
            known = None
        if known is not None:
            return known[0]
    handle = handle_of(stream)
    if _device.SIMULATOR:
        return _sim_info(stream, handle)
    from cuda.bindings import driver
    from numba import cuda

    device = cuda.get_current_device().id
    if handle == 0:
        kind = PER_THREAD_DEFAULT if _per_thread_by_env() else LEGACY_DEFAULT
    elif handle == LEGACY_HANDLE:
        kind = LEGACY_DEFAULT
    elif handle == PER_THREAD_HANDLE:
        kind = PER_THREAD_DEFAULT
    elif capturing(handle):
        # A capturing stream refuses cuStreamGetFlags (STREAM_CAPTURE_UNSUPPORTED, measured
        # on an H200), and the refusal would invalidate the capture: describe it as it
        # was last seen, or as cuda.core makes its builders' streams (non-blocking).
        known = _seen.get(handle)
        return known if known is not None else StreamInfo(handle, NON_BLOCKING, 0, device)
    else:
        err, flags = driver.cuStreamGetFlags(driver.CUstream(handle))
        _check(err, "cuStreamGetFlags")
        kind = NON_BLOCKING if int(flags) & _CU_STREAM_NON_BLOCKING else BLOCKING
        device = _device_of(handle)
    err, priority = driver.cuStreamGetPriority(driver.CUstream(handle))
    _check(err, "cuStreamGetPriority")
    info = StreamInfo(handle=handle, kind=kind, priority=int(priority), device=device)
    if handle not in (0, LEGACY_HANDLE, PER_THREAD_HANDLE):
        if len(_seen) > 4096:  # streams come and go; the cache only bridges captures
            _seen.clear()
        _seen[handle] = info
        if not isinstance(stream, int):
            try:
                _known[stream] = (info, {})
            except TypeError:
                pass
    return info


_seen: dict = {}  # handle -> StreamInfo, for streams asked about while capturing
#: stream object -> (StreamInfo, {thread name: StreamRef}), for as long as the object
#: lives (see stream_info and ref_of)
_known: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def capturing(handle: int) -> bool:
    """Whether the stream ``handle`` is being captured into a graph now, an invalidated
    capture not yet ended included (GPU). Every span asks (a span in a capture is
    refused), so the driver's module is found once, not imported per call."""
    driver = _driver()
    err, status = driver.cuStreamIsCapturing(driver.CUstream(handle))
    if err != driver.CUresult.CUDA_SUCCESS:
        return False  # the flags query below then reports what is wrong
    # INVALIDATED counts too: the stream is still capturing until the capture is ended
    return status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


@functools.lru_cache(maxsize=1)
def _driver():
    """cuda.bindings' driver module, imported once (GPU only)."""
    from cuda.bindings import driver

    return driver


def _device_of(handle: int) -> int:
    from cuda.bindings import driver

    err, dev = driver.cuStreamGetDevice(driver.CUstream(handle))
    _check(err, "cuStreamGetDevice")
    return int(dev)


def _sim_info(stream, handle: int) -> StreamInfo:
    if handle in (DEFAULT_HANDLE, LEGACY_HANDLE):
        return StreamInfo(handle, LEGACY_DEFAULT, 0, 0)
    if handle == PER_THREAD_HANDLE:
        return StreamInfo(handle, PER_THREAD_DEFAULT, 0, 0)
    # As a GPU's driver knows a stream's flags from its creation alone, so does the
    # simulator: an attribute set on a stream later (s.priority = -5) changes nothing.
    from .sim.made import flags_of

    nonblocking, priority = flags_of(handle)
    return StreamInfo(handle, NON_BLOCKING if nonblocking else BLOCKING, priority, 0)


def _check(err, what: str) -> None:
    from cuda.bindings import driver

    if err != driver.CUresult.CUDA_SUCCESS:
        name = driver.cuGetErrorName(err)[1]
        raise RuntimeError(f"{what} failed: {name.decode() if isinstance(name, bytes) else name}")


# --- what a stream is, seen from the calling thread ---------------------------------
def _device_id() -> int:
    if _device.SIMULATOR:
        return 0
    from numba import cuda

    return cuda.get_current_device().id


def ref_of(stream) -> StreamRef:
    """``stream`` (a stream object, or 0 for the default stream) as the recorder names
    it, seen from the calling thread: a per-thread default stream is the thread's own.

    A stream object that is not a default stream is described once per thread that
    uses it, and that StreamRef is kept with the object (every record and launch in it
    asks: issue 55)."""
    thread = threading.current_thread().name
    kept = None
    if stream is not None and not isinstance(stream, int):
        try:
            kept = _known.get(stream)
        except TypeError:  # an object that cannot be weakly referenced
            kept = None
        if kept is not None:
            ref = kept[1].get(thread)
            if ref is not None:
                return ref
    handle = canonical_handle(0 if stream is None else stream)
    special = handle in (1, 2)
    info = stream_info(handle if special else stream)
    device = _device_id() if special else info.device
    ref = StreamRef(handle, info.kind, thread, device, info.priority)
    if not special and stream is not None and not isinstance(stream, int):
        try:
            if _device.SIMULATOR:  # (on a GPU, stream_info keeps what it asked)
                kept = kept or _known.setdefault(stream, (info, {}))
            else:
                kept = _known.get(stream)
        except TypeError:  # an object that cannot be weakly referenced
            kept = None
        if kept is not None and kept[0] == info:  # (not a capture's guess)
            kept[1][thread] = ref
    return ref


# The range of the H100s and H200s the course was measured on (GPU_NOTES): what the
# simulator reports, so that a priority a GPU would refuse is refused there too.
SIMULATED_PRIORITY_RANGE = (0, -5)


def priority_range() -> tuple[int, int]:
    """(lowest, highest) stream priority; a lower number runs first. On the simulator,
    the range of the H100 and H200 (0 to -5), though nothing runs first there."""
    if _device.SIMULATOR:
        return SIMULATED_PRIORITY_RANGE
    from cuda.bindings import driver

    cuda.current_context()  # make sure numba's context is current
    err, least, greatest = driver.cuCtxGetStreamPriorityRange()
    _check(err, "cuCtxGetStreamPriorityRange")
    return (int(least), int(greatest))


def stream(*, nonblocking: bool = False, priority: int | None = None):
    """A numba stream that may be non-blocking, or have a priority.

    ``nonblocking=True``: the stream does not wait for the legacy default stream, and
    the legacy default stream does not wait for it (CUDA's cudaStreamNonBlocking).
    ``priority``: lower numbers are higher priority; see :func:`priority_range`.

    It is an ordinary numba ``Stream``: it works in launches (``kernel[grid, block, s]``),
    copies (``stream=s``) and events (``ev.record(s)``, ``ev.wait(s)``). On the
    simulator it is a stand-in that carries the same attributes (and, like every
    simulated stream, runs nothing concurrently).

    How: numba has no API for stream flags, so the stream is created by the driver
    (``cuStreamCreateWithPriority``, through cuda.bindings) in numba's current context,
    and handed to numba to destroy with that context, as it does its own streams.
    (cuda.core's ``Device.create_stream`` makes the same stream, after
    ``Device.set_current()``. With it, the test suite on two H200s crashed at
    interpreter exit inside numba's module unload, in 3 runs of 3; with the driver
    call and numba owning the stream, 3 runs of 3 exited cleanly. The cause was not
    established.)
    """
    if not isinstance(nonblocking, bool):
        raise TypeError(f"nonblocking must be True or False, got {nonblocking!r}")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise TypeError(f"priority must be an int or None, got {priority!r}")
    least, greatest = priority_range()
    if priority is None:
        priority = least  # CUDA's default: the lowest priority
    elif not greatest <= priority <= least:
        where = "the simulator's (an H200's)" if _device.SIMULATOR else "this GPU's"
        raise ValueError(
            f"priority {priority} is outside {where} range: from {least} (lowest) "
            f"to {greatest} (highest); lower numbers run first."
        )
    if _device.SIMULATOR:
        s = cuda.stream()
        from .sim.made import note_stream

        note_stream(handle_of(s), nonblocking, priority)
        return s
    from cuda.bindings import driver as cu
    from numba.cuda.cudadrv import driver as nbdriver

    ctx = cuda.current_context()
    flags = _CU_STREAM_NON_BLOCKING if nonblocking else 0
    err, handle = cu.cuStreamCreateWithPriority(flags, priority)
    _check(err, "cuStreamCreateWithPriority")
    return nbdriver.Stream(handle, finalizer=nbdriver._stream_finalizer(ctx.deallocations, handle))


_CU_EVENT_BLOCKING_SYNC = 1
_CU_EVENT_DISABLE_TIMING = 2


def event(*, timing: bool = True, blocking_sync: bool = False):
    """A numba event that may use blocking synchronisation.

    ``timing=False``: the event keeps no time (``elapsed_time`` refuses it), and its record
    costs the host a little less (``cuda.event(timing=False)`` makes the same).
    ``blocking_sync=True``: a host thread in ``event.synchronize()`` sleeps until the event
    has happened, instead of spinning on a CPU core (CUDA's ``cudaEventBlockingSync``;
    numba has no API for it). The wait takes as long either way; the CPU time differs.

    It is an ordinary numba ``Event``: ``record(s)``, ``wait(s)``, ``synchronize()``,
    ``elapsed_time``. On the simulator it is a simulated event that carries the same
    attributes; nothing spins or sleeps there.

    >>> import streamlab
    >>> ev = streamlab.event(blocking_sync=True)
    >>> ev.blocking_sync, ev.timing
    (True, True)
    """
    for name, value in (("timing", timing), ("blocking_sync", blocking_sync)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if _device.SIMULATOR:
        ev = cuda.event(timing=timing)
    else:
        from cuda.bindings import driver as cu
        from numba.cuda.cudadrv import driver as nbdriver

        ctx = cuda.current_context()
        flags = (_CU_EVENT_BLOCKING_SYNC if blocking_sync else 0) | \
            (0 if timing else _CU_EVENT_DISABLE_TIMING)
        err, handle = cu.cuEventCreate(flags)
        _check(err, "cuEventCreate")
        ev = nbdriver.Event(handle, finalizer=nbdriver._event_finalizer(ctx.deallocations, handle))
    ev.timing, ev.blocking_sync = timing, blocking_sync
    note_event(ev, blocking_sync)
    return ev


def note_event(ev, blocking_sync: bool) -> None:
    """Keep how ``ev`` was made (``blocking_sync``), as the driver knows it from creation
    (:func:`is_blocking_sync` answers it); the simulator's events are noted here too."""
    _blocking_events[ev] = blocking_sync


_blocking_events: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class DriverStream:
    """A stream a driver call carried by its handle alone (seen through CUPTI, or passed
    to ``cuLaunchHostFunc``): made by cuda.core or another library, or numba's own."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)

    def __repr__(self):
        return f"<CUDA stream {self.handle:#x}>"


class DriverEvent:
    """An event a record of operations knows by its handle alone: one seen through
    CUPTI (:mod:`streamlab._driverwatch`), made by cuda.core or another library. One
    object per handle, so that a record and the wait on it meet. ``blocking_sync``: how it
    was created, or None when its creation was not seen."""

    def __init__(self, handle: int):
        self.handle = handle
        self.blocking_sync: bool | None = None

    def __repr__(self):
        return f"<CUDA event {self.handle:#x}>"


def is_blocking_sync(ev) -> bool | None:
    """Was ``ev`` made to sleep in ``synchronize()`` (``EventOptions(blocking_sync=True)``,
    or :func:`event` with ``blocking_sync=True``)? Known from its creation, as the driver
    knows it: setting an attribute on an event made otherwise changes nothing. None for an
    event seen through CUPTI whose creation was not seen."""
    if isinstance(ev, DriverEvent):
        return ev.blocking_sync
    try:
        return _blocking_events.get(ev, False)
    except TypeError:  # not weakly referable: not an event made here
        return False
