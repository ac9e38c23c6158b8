"""The simulator's stream and event: handles, times on the model GPU, and what a GPU
refuses.

numba-cuda's simulator has one stream object with no handle, and an event that never
keeps a time. :class:`SimStream` has the GPU stream's handle (0, 1 and 2 for the default
streams, as CUDA numbers them) and :class:`SimEvent` a time on the model GPU
(:mod:`streamlab.model`); :func:`calls` makes numba.cuda's event and stream functions
with them (:mod:`streamlab.sim.fill` puts them in place).

**A closed context.** After ``cuda.close()`` a GPU refuses the streams and events of the
context it destroyed. Measured on an H100 (numba-cuda 0.30, driver 580): the old
stream's ``synchronize()`` and the old event's ``record()`` into it fail with
CUDA_ERROR_INVALID_CONTEXT, the old event's ``query()`` and ``synchronize()``, and a
launch into the old stream, with CUDA_ERROR_CONTEXT_IS_DESTROYED. The simulator's own
``close()`` only marked the device list closed and went on accepting them; here a stream
or event made before the latest ``cuda.close()`` is refused with the same codes (a new
event's record into an old stream, not measured, with the stream's). The default streams
(handles 0, 1 and 2) name the current context's own and are not refused. (In that
probe, new streams, events and arrays made after the close were refused too; yet
numba-cuda's own tests make new ones after ``cuda.close()`` on a GPU and pass. Which of
the two a program meets was not established, so new objects are accepted here.)
"""

from __future__ import annotations

import contextlib
import itertools
import time

from numba.cuda.simulator import api as sim_api
from numba.cuda.simulator.cudadrv.driver import CudaAPIError

from . import capture
from . import driver as sim_driver
from ..model import simulator_model
from ..ops import emit, timed
from ..streams import DEFAULT_HANDLE, LEGACY_HANDLE, PER_THREAD_HANDLE  # CUDA's own handles

_handles = itertools.count(0x1000)


def flush(stream=None) -> None:
    """Before work on ``stream`` (any synchronize: None), the host functions queued ahead
    of it run (:func:`streamlab.sim.driver.flush`); with none queued or running, as
    nearly always, the driver is not asked. Every copy, launch, record and synchronize
    comes here first: one in a stream made before ``cuda.close()`` is refused, as on a
    GPU."""
    made = getattr(stream, "_streamlab_context", None) if stream else None
    if made is not None and made != _context["closes"]:
        refuse_after_close("a call in this stream")
    if sim_driver.driver.outstanding:
        sim_driver.flush(stream)


_BROKEN_CALLBACK = (
    "Stream.{name} is broken in numba-cuda 0.30 on a real GPU ('CUstream' object has "
    "no attribute 'value'), so the course does not use it on either path. Put a host "
    "function into the stream with the driver's call, cuda.bindings.driver."
    "cuLaunchHostFunc(stream.handle, fn_address, user_data) (notebook 05 shows how; the "
    "simulator stands in for it), and in asyncio await a future that the host function "
    "resolves with loop.call_soon_threadsafe."
)

#: how many times cuda.close() has run: a stream or event made before the latest is
#: refused (see the module's text)
_context = {"closes": 0}


def refuse_after_close(what: str, code: str = "CONTEXT_IS_DESTROYED") -> None:
    """Refuse ``what`` as a GPU does: its stream or event belongs to a context that
    ``cuda.close()`` destroyed."""
    number = {"CONTEXT_IS_DESTROYED": 709, "INVALID_CONTEXT": 201}[code]
    raise CudaAPIError(
        number,
        f"[CUDA_ERROR_{code}] {what}: its stream or event was made before cuda.close(), "
        f"which destroyed the context it belongs to. Make streams and events anew after "
        f"cuda.close(), or restart the kernel (Kernel > Restart) instead of calling it")


def check_open(obj, what: str, code: str = "CONTEXT_IS_DESTROYED") -> None:
    """Refuse ``what`` if ``obj`` (a stream or event of this module) was made before the
    latest ``cuda.close()``, as a GPU refuses one of the context that was destroyed. The
    default streams (handles 0, 1 and 2) are CUDA's names for the current context's own,
    and belong to no one context (None)."""
    made = getattr(obj, "_streamlab_context", None)
    if made is not None and made != _context["closes"]:
        refuse_after_close(what, code)


class SimStream(sim_api.stream):
    """A simulator stream with a handle and the GPU stream's attributes."""

    def __init__(self, handle=None):
        # (its kind and priority: streamlab.stream_info, from its creation)
        self.handle = next(_handles) if handle is None else int(handle)
        # the context it belongs to (a default stream's handle names the current one's)
        self._streamlab_context = None if self.handle in (DEFAULT_HANDLE, LEGACY_HANDLE,
                                                          PER_THREAD_HANDLE) \
            else _context["closes"]

    def __int__(self):
        return self.handle

    def __cuda_stream__(self):
        return (0, self.handle)

    def __eq__(self, other):
        return isinstance(other, SimStream) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        names = {
            DEFAULT_HANDLE: "<Default CUDA stream (simulator)>",
            LEGACY_HANDLE: "<Legacy default CUDA stream (simulator)>",
            PER_THREAD_HANDLE: "<Per-thread default CUDA stream (simulator)>",
        }
        if self.handle in names:
            return names[self.handle]
        return f"<CUDA stream {self.handle:#x} (simulator)>"

    def add_callback(self, callback, arg=None):
        """Refused: broken in numba-cuda 0.30 on a GPU (see the error's text)."""
        raise NotImplementedError(_BROKEN_CALLBACK.format(name="add_callback"))

    def async_done(self):
        """Refused: broken in numba-cuda 0.30 on a GPU (see the error's text)."""
        raise NotImplementedError(_BROKEN_CALLBACK.format(name="async_done"))

    @timed
    def synchronize(self):
        """Wait for the stream's work (the host functions queued in it run first)."""
        check_open(self, "stream.synchronize()", "INVALID_CONTEXT")
        if capture.capturing:
            capture.sim_refuse_sync("stream.synchronize()")
        flush(self)
        emit("sync", "stream", self)

    @contextlib.contextmanager
    def auto_synchronize(self):
        """As numba's own on a GPU: the stream, then its synchronize() on the way out
        (numba's simulator only yields, so a wait written this way went unseen)."""
        yield self
        self.synchronize()


class SimEvent(sim_api.Event):
    """A simulator event, timed by the model GPU (:mod:`streamlab.model`).

    The simulator runs everything synchronously; the model says when a GPU would
    have reached the event. With the model off (``STREAMLAB_MODEL=off``), an event's
    time is the host-clock time at which it was recorded.
    """

    def __init__(self, timing=True):
        self._streamlab_context = _context["closes"]  # the context it belongs to
        self.timing = bool(timing)
        self._t_ns = None
        self._uid = None  # its latest record, as the model knows it
        # where it was last recorded: False never, None outside any capture, else
        # (capture, its point in the graph) (streamlab.sim.capture reads and sets it)
        self._streamlab_captured = False

    @timed
    def record(self, stream=0):
        """Record the event in ``stream`` (the model GPU times it)."""
        check_open(self, "event.record(stream)", "INVALID_CONTEXT")
        check_open(stream, "event.record(stream)", "INVALID_CONTEXT")
        if capture.capturing and capture.sim_event_record(self, stream):
            return  # a point in a graph being captured (see streamlab.sim.capture)
        self._streamlab_captured = None  # recorded outside any capture
        flush(stream)  # queued host functions come before the event
        self._t_ns = time.perf_counter_ns()
        op = emit("record", "event", stream, event=self)
        self._uid = op.uid if op is not None and simulator_model() is not None else None

    @timed
    def wait(self, stream=0):
        """Make ``stream`` wait for the event's latest record."""
        check_open(self, "event.wait(stream)", "INVALID_CONTEXT")
        if capture.capturing and capture.sim_event_wait(self, stream):
            return  # the stream joins a graph's capture (see streamlab.sim.capture)
        flush(stream)
        emit("wait", "event", stream, event=self)

    @timed
    def synchronize(self):
        """Wait for the event's latest record."""
        check_open(self, "event.synchronize()")
        if capture.capturing or self._streamlab_captured:
            capture.sim_refuse_event(self, "event.synchronize()")
        flush()
        emit("sync", "event", event=self)

    @timed
    def query(self):
        """Has the model GPU reached the event's latest record by now?"""
        check_open(self, "event.query()")
        if capture.capturing or self._streamlab_captured:
            capture.sim_refuse_event(self, "event.query()")
        flush()
        model = simulator_model()
        done = True if model is None or self._uid is None else model.done(self._uid)
        emit("query", "event", event=self, detail={"result": done})
        return done

    def _model_time_ms(self, role):
        """The event's time on the model, in ms (None with the model off)."""
        model = simulator_model()
        if model is None or self._uid is None:
            return None
        if not model.done(self._uid):
            raise CudaAPIError(
                600,
                f"[CUDA_ERROR_NOT_READY] the {role} event has not been reached yet "
                f"(on the model GPU, as it would not have on a GPU): synchronize on "
                f"it (event.synchronize()) before asking for elapsed_time.",
            )
        return model.times(self._uid)[1] * 1000.0

    def _check(self, role):
        if self._streamlab_captured:
            raise CudaAPIError(
                1,
                f"[CUDA_ERROR_INVALID_VALUE] the {role} event was last recorded inside "
                f"a graph's capture, where a record is an edge, not a node: no replay "
                f"records it. Time a replay with events recorded around "
                f"graph.launch(stream), outside the capture.",
            )
        if not self.timing:
            raise CudaAPIError(
                400,
                f"[CUDA_ERROR_INVALID_HANDLE] the {role} event was created with "
                f"timing=False and keeps no time; create it with "
                f"cuda.event(timing=True).",
            )
        if self._t_ns is None:
            raise CudaAPIError(
                400,
                f"[CUDA_ERROR_INVALID_HANDLE] the {role} event was never recorded; "
                f"call event.record(stream) after the work it marks.",
            )

    def elapsed_time(self, evtend):
        self._check("start")
        evtend._check("end")
        start, end = self._model_time_ms("start"), evtend._model_time_ms("end")
        if start is not None and end is not None:
            return end - start
        return (evtend._t_ns - self._t_ns) / 1e6

    def __repr__(self):
        state = "recorded" if self._t_ns is not None else "not recorded"
        return f"<CUDA event (simulator), timing={self.timing}, {state}>"


def calls() -> dict:
    """numba.cuda's event and stream functions, synchronize and close, made with them."""
    base_close = sim_api.close

    def event(timing=True):
        return SimEvent(timing=timing)

    def event_elapsed_time(evtstart, evtend):
        return evtstart.elapsed_time(evtend)

    def stream():
        return SimStream()

    def default_stream():
        return SimStream(DEFAULT_HANDLE)

    def legacy_default_stream():
        return SimStream(LEGACY_HANDLE)

    def per_thread_default_stream():
        return SimStream(PER_THREAD_HANDLE)

    def close():
        """cuda.close(): the simulator's own; the streams and events made before it are
        refused from now on, as a GPU refuses them (see the module's text)."""
        _context["closes"] += 1
        return base_close()

    @timed
    def synchronize():
        if capture.capturing:
            capture.sim_refuse_sync("cuda.synchronize()")
        flush()
        emit("sync", "device", detail={"device": 0})

    return {
        "event": event,
        "Event": SimEvent,
        "event_elapsed_time": event_elapsed_time,
        "stream": stream,
        "Stream": SimStream,
        "default_stream": default_stream,
        "legacy_default_stream": legacy_default_stream,
        "per_thread_default_stream": per_thread_default_stream,
        "synchronize": synchronize,
        "close": close,
    }


