"""Streams numba cannot make, and what kind of stream a stream is (the recorder's answer,
:func:`streamlab.ops.stream_info`, named here too).

``numba.cuda.stream()`` takes no flags: every stream it makes is *blocking* (it waits
for work on the legacy default stream) and has the default priority. CUDA also offers
non-blocking streams and stream priorities; numba-cuda 0.30 has no API for them, so
streamlab asks the driver for them and hands back an ordinary numba stream object.

>>> import streamlab
>>> from numba import cuda
>>> s = streamlab.stream(nonblocking=True)
>>> streamlab.stream_info(s).kind
'non-blocking'
>>> streamlab.stream_info(cuda.stream()).kind
'blocking'
"""

from __future__ import annotations

import weakref

from numba import cuda

from . import _device
from .ops import (  # noqa: F401  (what a stream is: the recorder's, named here too)
    BLOCKING, DEFAULT_HANDLE, LEGACY_DEFAULT, LEGACY_HANDLE, NON_BLOCKING, PER_THREAD_DEFAULT,
    PER_THREAD_HANDLE, _CU_STREAM_NON_BLOCKING, StreamInfo, _capturing, _check, _sim_made,
    canonical_handle, handle_of,
    stream_info, stream_key)


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
        _sim_made[handle_of(s)] = (nonblocking, priority)
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
    _blocking_events[ev] = blocking_sync
    return ev


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
