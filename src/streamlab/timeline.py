"""Record what ran when, from CUDA event timestamps and the host clock.

A GPU span is a pair of CUDA events recorded in one stream around the work (a kernel,
a copy, a host function, a wait). A host span is a pair of ``time.perf_counter()``
readings. A :class:`Timeline` puts both on one time axis, in milliseconds from its
origin: at creation it records an *origin* event and notes the host clock while that
event completes, so GPU times (``origin.elapsed_time(ev)``) and host times
(``perf_counter() - origin_host``) share the same zero, to within
``clock_uncertainty_ms`` (tens of microseconds on a GPU).

>>> import numpy as np, streamlab
>>> from numba import cuda
>>> @cuda.jit
... def double(x):
...     i = cuda.grid(1)
...     if i < x.size:
...         x[i] *= 2
>>> s = cuda.stream()
>>> tl = streamlab.Timeline()
>>> tl.name_stream(s, "work")
>>> a = np.ones(256)
>>> with tl.span("copy in", s, kind="h2d"):
...     d = cuda.to_device(a, stream=s)
>>> with tl.span("double", s):
...     double[1, 256, s](d)
>>> with tl.span("copy out", s, kind="d2h"):
...     out = d.copy_to_host(stream=s)
>>> with tl.host("host waits"):
...     s.synchronize()
>>> [sp.name for sp in tl.trace().on_row("work")]
['copy in', 'double', 'copy out']
>>> float(out[0])
2.0

``tl.span`` records the two events for you: on a GPU, bare driver events from a pool
(cheap for the host), each record also told to ``record_ops`` and ``race_check`` while
they listen (as streamlab's own work); on the simulator, numba's own events, which the
model GPU times. To show the event calls themselves, record
your own numba events and hand them over with :meth:`Timeline.add`.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from dataclasses import dataclass

from numba import cuda

from . import _device
from ._device import device_name
from .model import simulator_model, timeline_made
from .ops import emit, internal, observing
from .ops import models as ops_models
from . import streams as _streams
from .streams import PER_THREAD_HANDLE, canonical_handle, stream_info, stream_key
from .trace import HOST_KINDS, KINDS, Row, Span, Trace, check_kind


class TimelineError(RuntimeError):
    """A timeline cannot be read as asked; the message says what to do."""


class TimelineNotReady(TimelineError):
    """A span's work had not finished when the timeline was read."""


@dataclass
class _GpuEntry:
    name: str
    row: str
    kind: str
    start: object
    end: object


@dataclass
class _HostEntry:
    name: str
    row: str
    kind: str
    start_s: float
    end_s: float
    thread: str = ""
    uid: int | None = None  # a host function's record (its times on a model GPU)
    real: tuple | None = None  # (start, end) on the host's clock, for predictions


class _PooledEvent:
    """A CUDA event of the span pool: a bare driver handle, recorded by the driver call
    itself (numba's Event costs about 8 us to make and 2.5 us to record; this, 1.3 us
    to record and nothing to make once the pool has it)."""

    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    def query(self) -> bool:
        drv, ok = _driver()
        (err,) = drv.cuEventQuery(self.handle)
        if err == drv.CUresult.CUDA_ERROR_NOT_READY:
            done = False
        elif err != ok:
            _fail(err, "query a span's event")
        else:
            done = True
        if observing():  # as numba's Event.query tells the recorders (the race check
            emit("query", "event", event=self, detail={"result": done})  # learns a wait)
        return done

    def synchronize(self) -> None:
        drv, ok = _driver()
        (err,) = drv.cuEventSynchronize(self.handle)
        if err != ok:
            _fail(err, "wait for a span's event")
        if observing():  # as numba's Event.synchronize: the host has waited for it
            emit("sync", "event", event=self)


_drv: list = []  # [cuda.bindings.driver, CUDA_SUCCESS], once a span needs them


def _driver():
    if not _drv:
        from cuda.bindings import driver

        _drv[:] = [driver, driver.CUresult.CUDA_SUCCESS]
    return _drv


def _fail(err, what: str):
    raise TimelineError(f"could not {what}: the driver said {getattr(err, 'name', err)}")


_pool: dict[int, list] = {}  # device id -> free events (made in its primary context)
_pool_lock = threading.Lock()


def _take_events(device: int, make_current, recycle) -> tuple:
    """Two events of the pool. When it runs short, ``recycle()`` first gives back the
    events of the timeline's spans that have finished (timed now, once), and only then
    are events made, 64 at a time: so a long timeline does not make two events a span
    (each seen by CUPTI while a recorder listens: issue 54), and holds few. A thread whose
    first CUDA call is a span has no context yet, and cuEventCreate then fails with
    CUDA_ERROR_INVALID_CONTEXT (found in review, issue 54): ``make_current()`` then has
    numba make the thread's device current (and raises if it is not the timeline's), and
    the call is made again."""
    with _pool_lock:
        free = _pool.get(device)
        if free is None or len(free) < 2:
            free = _pool.setdefault(device, [])
            free += recycle()
        if len(free) < 2:
            drv, ok = _driver()
            for _ in range(64):
                err, ev = drv.cuEventCreate(0)  # CU_EVENT_DEFAULT: timing on
                if err != ok:
                    make_current()
                    err, ev = drv.cuEventCreate(0)
                if err != ok:
                    _fail(err, "make events for the timeline's spans")
                free.append(_PooledEvent(ev))
        return free.pop(), free.pop()


def _give_back(device: int, events: list) -> None:
    """A Timeline's events, back to the pool once the timeline is gone."""
    with _pool_lock:
        _pool.setdefault(device, []).extend(events)


class _SpanBlock:
    """``with timeline.span(...)``: a class, not a generator, for a lean host cost (see
    benchmarks/span_overhead.py)."""

    __slots__ = ("tl", "name", "stream", "kind", "handle", "key", "row", "start", "end")

    def __init__(self, tl, name, stream, kind):
        self.tl, self.name, self.stream, self.kind = tl, name, stream, kind
        self.start = self.end = None  # set on entering: one block is entered once

    def __enter__(self):
        tl, name, stream = self.tl, self.name, self.stream
        known = tl._handles.get(id(stream))
        if known is not None and known[0] is stream:
            handle, key = known[1], known[2]
        else:
            handle = canonical_handle(stream)
            key = stream_key(handle)
            if handle != PER_THREAD_HANDLE and not isinstance(stream, int):
                tl._handles[id(stream)] = (stream, handle, key)
        self.handle, self.key = handle, key
        tl._refuse_capture(name, stream, handle)
        row = tl._rows.get(key)
        self.row = row.label if row is not None else tl._stream_row(stream)
        if self.start is not None:
            raise RuntimeError(f"span {name!r}: this tl.span(...) was entered already; write "
                               f"`with tl.span(...)` anew for each span")
        held = tl._open.setdefault(key, self)  # one dict step: no lock needed
        if held is not self:
            raise ValueError(
                f"span {name!r} opens inside span {held.name!r} on the same "
                f"stream ({self.row}): spans on one stream cannot nest, or the work would "
                f"count twice. Close the first span before opening the next")
        try:
            if tl.simulated:
                # numba's own events, which the model GPU times
                tl._check_current_device()
                self.start, self.end = cuda.event(timing=True), cuda.event(timing=True)
                with internal():
                    self.start.record(stream)
            else:
                # lean: two events of the pool, recorded by the driver call alone
                drv, ok = _drv or _driver()
                if not tl._one_gpu:  # with one GPU, no other can be current
                    err, dev = drv.cuCtxGetDevice()
                    if err != ok or int(dev) != tl.device_id:
                        tl._check_current_device()
                self.start, self.end = _take_events(tl.device_id, tl._check_current_device,
                                                    tl._recycle)
                tl._pooled.add(self.start)
                tl._pooled.add(self.end)
                (err,) = drv.cuEventRecord(self.start.handle, handle)
                if err != ok and tl._one_gpu:
                    # a thread with no context current yet: numba makes it current
                    tl._check_current_device()
                    (err,) = drv.cuEventRecord(self.start.handle, handle)
                if err != ok:
                    _fail(err, f"record span {name!r}'s start event")
                if observing():  # what record_ops and race_check see: streamlab's own
                    with internal():
                        emit("record", "event", stream, event=self.start)
        except BaseException:
            if tl._open.get(key) is self:
                del tl._open[key]
            raise
        return None

    def __exit__(self, exc_type, exc, tb):
        tl = self.tl
        try:
            if exc_type is None:
                if isinstance(self.end, _PooledEvent):
                    drv, ok = _drv
                    (err,) = drv.cuEventRecord(self.end.handle, self.handle)
                    if err != ok:
                        _fail(err, f"record span {self.name!r}'s end event")
                    if observing():
                        with internal():
                            emit("record", "event", self.stream, event=self.end)
                else:
                    with internal():
                        self.end.record(self.stream)
                tl._entries.append(_GpuEntry(self.name, self.row, self.kind, self.start,
                                             self.end))
        finally:
            if tl._open.get(self.key) is self:
                del tl._open[self.key]
        return False


class Timeline:
    """A recorder of GPU spans (event pairs) and host spans (host clock) on one axis.

    One timeline measures one device: CUDA events on different GPUs share no clock.
    Make the timeline inside ``with cuda.gpus[i]:`` to measure GPU ``i``.
    """

    def __init__(self, *, calibrations: int = 5):
        if isinstance(calibrations, bool) or not isinstance(calibrations, int):
            raise TypeError(f"calibrations must be a whole number of tries (5 by default), "
                            f"got {calibrations!r}")
        self.simulated = _device.SIMULATOR
        self.device = _device.SIMULATOR_NAME if self.simulated else device_name()
        self.device_id = cuda.get_current_device().id if not self.simulated else 0
        self._entries: list = []
        self._rows: dict[object, Row] = {}  # key: stream handle, or ("host", thread id)
        self._labels: dict[int, str] = {}
        self._numbered = 0
        self._open: dict = {}  # stream key -> the span block open on it
        # id(stream) -> (the stream, its handle, its key), worked out at its first span
        # (not per-thread default streams: one per thread). It holds the stream object,
        # so that its id cannot be another's while the timeline lives.
        self._handles: dict = {}
        self._lock = threading.Lock()  # rows may be made from several host threads
        self._model = simulator_model() if self.simulated else None
        self._origin, self.host_origin_s, self.clock_uncertainty_ms = self._calibrate(
            calibrations
        )
        # one GPU in the process: a span need not ask which GPU is current (issue 54)
        self._one_gpu = not self.simulated and len(cuda.gpus) == 1
        # the pool's events this timeline holds: until its spans are timed (_recycle), or
        # until it is gone
        self._pooled: set = set()
        self._timed = 0  # the entries before this one are timed or not the pool's
        if not self.simulated:
            weakref.finalize(self, _give_back, self.device_id, self._pooled)
        timeline_made(self)

    # --- time base -------------------------------------------------------------
    def _calibrate(self, tries: int):
        """Record an origin event on an idle stream; note the host clock around it."""
        if tries < 1:
            raise ValueError("calibrations must be at least 1")
        if self.simulated:
            cal = cuda.stream()
        else:
            from .streams import stream as make_stream

            cal = make_stream(nonblocking=True)  # unaffected by legacy-stream work
        best = None
        for _ in range(tries):
            ev = cuda.event(timing=True)
            with internal():
                h0 = time.perf_counter()
                ev.record(cal)
                ev.synchronize()
                h1 = time.perf_counter()
            if best is None or (h1 - h0) < (best[2] - best[1]):
                best = (ev, h0, h1)
        ev, h0, h1 = best
        if self._model is not None:  # the model's clock: the event's time on it, exactly
            return ev, self._model.times(ev._uid)[1], 0.0
        # The event's GPU timestamp lies between h0 and h1: take the middle.
        return ev, (h0 + h1) / 2, (h1 - h0) / 2 * 1000.0

    # --- rows ------------------------------------------------------------------
    def name_stream(self, stream, label: str) -> None:
        """Show ``stream`` under ``label`` (e.g. "producer 0") instead of "stream N".

        A per-thread default stream is named for the thread that calls this."""
        if not isinstance(label, str) or not label:
            raise TypeError(f"a stream's label must be a non-empty string, got {label!r}")
        if label.startswith("host: "):
            raise ValueError(f"{label!r} looks like a host thread's row ('host: <thread>'): "
                             f"name the stream something else")
        key = stream_key(canonical_handle(stream))
        taken = {lab for k, lab in self._labels.items() if k != key}
        taken |= {row.label for k, row in self._rows.items() if k != key}
        if label in taken:
            raise ValueError(f"the label {label!r} is already used for another stream "
                             f"(or a row of this timeline): choose another")
        self._labels[key] = label
        if key in self._rows:
            old = self._rows[key]
            self._rows[key] = Row(label, old.detail)
            self._relabel(old.label, label)

    def _relabel(self, old: str, new: str) -> None:
        for e in self._entries:
            if e.row == old:
                e.row = new

    def _stream_row(self, stream) -> str:
        with self._lock:
            return self._stream_row_locked(stream)

    def _stream_row_locked(self, stream) -> str:
        key = stream_key(canonical_handle(stream))  # per-thread streams: a row per thread
        row = self._rows.get(key)
        if row is not None:
            return row.label
        info = stream_info(stream)
        if not self.simulated and info.device != self.device_id:
            raise TimelineError(
                f"this stream belongs to GPU {info.device} but the timeline measures "
                f"GPU {self.device_id}: events on different GPUs share no clock. Make one "
                f"Timeline per GPU, inside `with cuda.gpus[{info.device}]:`."
            )
        label = self._labels.get(key)
        if label is None:
            if isinstance(key, tuple):
                label = f"{info.kind} stream ({key[1]})"
            elif key == 1:
                label = f"{info.kind} stream"
            else:
                taken = set(self._labels.values()) | {r.label for r in self._rows.values()}
                while True:  # skip numbers a name_stream label already took
                    self._numbered += 1
                    label = f"stream {self._numbered}"
                    if label not in taken:
                        break
        self._rows[key] = Row(label, info.describe())
        return label

    def _host_row(self, thread: str | None) -> str:
        name = thread if thread is not None else threading.current_thread().name
        if not isinstance(name, str) or not name:
            raise TypeError(f"thread must be a thread's name, got {thread!r}")
        key = ("host", name)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = Row(f"host: {name}", "host thread", host=True)
                self._rows[key] = row
        return row.label

    def _recycle(self) -> list:
        """Time the spans whose work has finished, oldest first, and return their pool
        events (called with the pool's lock held, when it runs short). A span's times are
        read as trace() reads them, from the origin event; the entry then keeps the two
        numbers. It stops at the first span not finished (another stream's, maybe), and
        leaves every span alone while a model GPU is fed (its predictions find the spans
        by their events). The recorders hear of each span timed here as of trace()'s
        look at it: a query of its end event that found it done (the race check then
        knows the host saw that work finish, as it would have in trace())."""
        if ops_models():
            return []
        drv, ok = _driver()
        origin, told = self._origin.handle, observing()
        entries, freed, i = self._entries, [], self._timed
        while i < len(entries):
            e = entries[i]
            if type(e) is _GpuEntry and type(e.end) is _PooledEvent:
                err, end = drv.cuEventElapsedTime(origin, e.end.handle)
                if err != ok:  # not finished (or not timeable: trace() will say why)
                    break
                err, start = drv.cuEventElapsedTime(origin, e.start.handle)
                if err != ok:
                    break
                if told:
                    with internal():
                        emit("query", "event", event=e.end, detail={"result": True})
                freed += (e.start, e.end)
                e.start, e.end = float(start), float(end)
            i += 1
        self._timed = i
        self._pooled.difference_update(freed)
        return freed

    def _check_current_device(self) -> None:
        if self.simulated:
            return
        current = cuda.get_current_device().id
        if current != self.device_id:
            raise TimelineError(
                f"the current GPU is {current} but this timeline measures GPU "
                f"{self.device_id}: events on different GPUs share no clock. Use one "
                f"Timeline per GPU, each made and used inside `with cuda.gpus[i]:`."
            )

    # --- recording GPU spans ---------------------------------------------------
    def span(self, name: str, stream, kind: str = "kernel"):
        """Record a start event before and an end event after the block, in ``stream``.

        The work inside the block must be issued to the same ``stream``; the events
        then bracket exactly that work in the stream's order.
        """
        if kind not in KINDS:
            check_kind(kind)  # raises, naming the kinds
        if kind == "host":
            raise ValueError("host work has no stream: use `with timeline.host(name):`")
        if stream is None:
            raise TypeError(
                f"span {name!r} needs the stream its work goes to. Pass "
                f"cuda.default_stream() to time work on the default stream."
            )
        return _SpanBlock(self, str(name), stream, kind)

    def _refuse_capture(self, name, stream, handle) -> None:
        """A span in a stream being captured into a graph is refused. Measured on an
        H200: the events' records become edges of the graph, not nodes, so no replay
        records them and reading the span fails later with CUDA_ERROR_INVALID_VALUE.
        Refused here, where the mistake is. (One driver call on the handle the span has
        already worked out: in the span benchmark's profile on an H100, the earlier check,
        which worked the handle out again, took about a quarter of a span's time; issue 54.)"""
        if self.simulated:
            from .graphs import is_capturing  # the simulator's, chosen at import

            capturing = is_capturing(stream)
        else:
            capturing = handle not in (0, 1, 2) and _streams.capturing(handle)
        if capturing:
            raise TimelineError(
                f"span {name!r}: its stream is being captured into a graph, where an "
                f"event's record is an edge between nodes, not a time: no replay would "
                f"record it. Put the span around the replay instead: "
                f"`with timeline.span(name, s): graph.launch(Device().create_stream(s))`."
            )

    def add(self, name: str, start_event, end_event, stream, kind: str = "kernel") -> None:
        """Add a span from two events that you recorded yourself in ``stream``.

        Both must be made with ``cuda.event(timing=True)`` (the default) and recorded
        with ``event.record(stream)`` around the work.
        """
        check_kind(kind)
        if kind == "host":
            raise ValueError("host work has no events: use timeline.add_host(...)")
        for role, ev in (("start", start_event), ("end", end_event)):
            if not (hasattr(ev, "record") and hasattr(ev, "elapsed_time")):
                raise TypeError(
                    f"span {name!r}: the {role} event {ev!r} is not a CUDA event; "
                    f"make one with cuda.event(timing=True)"
                )
        row = self._stream_row(stream)
        self._entries.append(_GpuEntry(str(name), row, kind, start_event, end_event))

    # --- recording host spans --------------------------------------------------
    @contextlib.contextmanager
    def host(self, name: str):
        """Time the block on the host clock, on the row of the calling thread."""
        t0 = time.perf_counter()
        yield
        t1 = time.perf_counter()
        self.add_host(name, t0, t1)

    def add_host(self, name: str, start_s: float, end_s: float, thread: str | None = None,
                 kind: str = "host", *, model_times: bool = False,
                 uid: int | None = None) -> None:
        """Add host work measured with ``time.perf_counter()`` (seconds).

        It goes on the row of the thread named ``thread`` (default: the calling one).
        On the simulator the times are moved to the model GPU's clock (the host's own
        work keeps its length; the simulator's slowness does not count).
        """
        if check_kind(kind) not in HOST_KINDS:
            raise ValueError(f"host work is of kind 'host' or 'hostfn', not {kind!r}")
        if start_s is None or end_s is None:
            raise ValueError(f"host span {name!r} has no start or end time: did it run?")
        row = self._host_row(thread)
        name_of_thread = thread if thread is not None else threading.current_thread().name
        real = float(start_s), float(end_s)
        start_s, end_s = real
        if self._model is not None and not model_times:  # host clock -> the model's
            start_s = self._model.to_model(name_of_thread, start_s)
            # (the two ends are mapped on either side of the thread's calls: a span the
            # mapping turned round, seen once in CI under load, is the model's, and ends
            # where it starts)
            end_s = max(start_s, self._model.to_model(name_of_thread, end_s))
        self._entries.append(_HostEntry(str(name), row, kind, start_s, end_s,
                                        name_of_thread, uid, real))

    def add_host_call(self, call) -> None:
        """Place a finished :class:`~streamlab.HostCall` on the row of the thread that ran it."""
        if not call.done.is_set():
            raise TimelineNotReady(
                f"host function {call.name!r} has not run yet: call.wait() first, or "
                f"synchronize its stream")
        self.add_host(call.name, call.started_s, call.ended_s, thread=call.thread_name,
                      kind="hostfn", model_times=True, uid=call.op_uid)

    # --- reading ---------------------------------------------------------------
    def trace(self, synchronize: bool = True) -> Trace:
        """The spans recorded so far, in ms from the origin.

        Spans whose work has not finished are waited for (their end events are
        synchronized) unless ``synchronize=False``, which raises instead.
        """
        from numba.cuda.cudadrv.driver import CudaAPIError

        if self._open:
            names = ", ".join(repr(b.name) for b in list(self._open.values()))
            raise TimelineError(
                f"span {names} was opened and not closed: read the timeline after its "
                f"`with timeline.span(...)` block ends")
        spans = []
        for e in self._entries:
            if isinstance(e, _HostEntry):
                spans.append(Span(
                    e.name, e.row, e.kind,
                    (e.start_s - self.host_origin_s) * 1000.0,
                    (e.end_s - self.host_origin_s) * 1000.0,
                ))
                continue
            if type(e.start) is float:  # timed already, its events recycled (_recycle)
                spans.append(Span(e.name, e.row, e.kind, e.start, e.end))
                continue
            try:
                with internal():
                    ready = e.end.query()
                if not ready:
                    if not synchronize:
                        raise TimelineNotReady(
                            f"span {e.name!r} on {e.row} has not finished. Synchronize "
                            f"first (stream.synchronize() or cuda.synchronize()), or call "
                            f"trace() with synchronize=True to wait for it."
                        )
                    with internal():
                        e.end.synchronize()
                start = self._origin.elapsed_time(e.start)
                end = self._origin.elapsed_time(e.end)
            except CudaAPIError as err:
                raise TimelineError(
                    f"span {e.name!r} on {e.row}: its events cannot be timed ({err}). "
                    f"Each event must come from cuda.event(timing=True) (not timing=False) "
                    f"and be recorded with event.record(stream) around the work, on the "
                    f"GPU this timeline measures."
                ) from err
            spans.append(Span(e.name, e.row, e.kind, start, end))
        host_rows = [r for r in self._rows.values() if r.host]
        stream_rows = [r for r in self._rows.values() if not r.host]
        return Trace(
            spans=tuple(spans),
            rows=tuple(host_rows + stream_rows),
            device=self.device,
            simulated=self.simulated,
            device_id=self.device_id,
            host_origin_s=self.host_origin_s,
            clock_uncertainty_ms=self.clock_uncertainty_ms,
            model=self._model.profile.label if self._model is not None else "",
        )

    # Shortcuts that read the trace.
    def table(self) -> str:
        """The trace's table (see :meth:`Trace.table`)."""
        return self.trace().table()

    def metrics(self, **kwargs):
        """The trace's metrics (see :meth:`Trace.metrics`)."""
        return self.trace().metrics(**kwargs)

    def plot(self, **kwargs):
        """Draw the trace (see :func:`streamlab.plot`)."""
        return self.trace().plot(**kwargs)

    def to_chrome_trace(self, path=None):
        """The trace as Chrome trace JSON (see :func:`streamlab.to_chrome_trace`)."""
        return self.trace().to_chrome_trace(path)

    def predicted(self, model) -> Trace:
        """This timeline's spans as the model GPU ``model`` places them (what
        :func:`streamlab.predict`'s ``trace()`` gives): every event at the model's time
        for its record, host work moved to the model's host clock."""
        from .model import ModelError

        def event_s(ev, what):
            m = model.events.get(ev)
            if m is None:
                raise ModelError(f"the model never saw {what} recorded: make the Timeline and "
                                 f"run its work inside `with streamlab.predict():`")
            return model.times(m.uid)[1]

        with model.lock:
            origin = event_s(self._origin, "this timeline's origin event")
            spans = []
            for e in self._entries:
                if isinstance(e, _HostEntry):
                    times = model.times(e.uid) if e.uid is not None else None
                    if times is None:
                        real = e.real or (e.start_s, e.end_s)
                        times = (model.to_model(e.thread, real[0]),
                                 model.to_model(e.thread, real[1]))
                    start, end = times
                else:
                    start = event_s(e.start, f"span {e.name!r}'s start event")
                    end = event_s(e.end, f"span {e.name!r}'s end event")
                spans.append(Span(e.name, e.row, e.kind, (start - origin) * 1000.0,
                                  (end - origin) * 1000.0))
        measured = self.trace()
        return Trace(spans=tuple(spans), rows=measured.rows, device=self.device,
                     simulated=self.simulated, device_id=self.device_id,
                     host_origin_s=origin, clock_uncertainty_ms=0.0,
                     model=model.profile.label)

    def __len__(self) -> int:
        return len(self._entries)

