"""Record the stream-ordered operations that code issues, for checks that read structure.

A result can be right by luck (the simulator runs everything in order; a GPU race may not
show on one run). What the code *did* cannot: which stream each kernel went to and which
arrays it wrote, which copies were from pinned memory, which events were recorded where
and waited on where, and where the host synchronized. :func:`record_ops` records exactly
that, on a GPU and on the simulator alike, while leaving every call to do what it always
does; :mod:`streamlab.order` reads the record for what CUDA's rules allow to overlap.

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

How it sees every call: streamlab wraps numba's own functions at the bottom (the driver
module's copy functions, the Event, Stream and Context methods, the kernel launch) once,
when it is imported, and says so in its banner. So a call is recorded whatever name the
code reached it by (``from numba.cuda import synchronize``, a bound ``s.synchronize`` kept
from earlier) and from whichever thread. Outside a ``record_ops`` block the wrappers do
nothing but call numba. ``streamlab.uninstall()`` puts numba back exactly.

What a record holds (:class:`Op`): the kind (launch, copy, memset, record, wait, sync,
query, hostfn, host, graph: a graph's launch), the stream (:class:`streamlab.streams.StreamRef`), the event object itself (kept
alive by the record, so that a freed event's reused ``id()`` cannot confuse two events),
the memory read and written (:class:`streamlab.regions.Region`, from the arrays; which kernel arguments a
kernel writes is read from the kernel's own code, see :func:`streamlab.kernels.access_modes`),
whether the host waited for the operation before the call returned (``blocking``), the
line of code that issued it, and whether streamlab itself issued it (``internal``: a
Timeline's events and synchronizes, which checks of the learner's calls leave out).

This module is the recorder, and nothing else writes its state. Its parts, in order:

* the records (:class:`Op`, :class:`OpLog`); a record's stream is a
  :class:`streamlab.streams.StreamRef`, its memory regions :class:`streamlab.regions.Region`;
* the bus: :func:`emit` feeds the recorders, the listeners (race checks) and the model
  GPUs, with the line of code that issued each call; :func:`record_ops` and the
  listeners' registration; and the per-thread state the bus reads (a host function's
  body running, a graph's replay, streamlab's own work: :func:`internal`).

The rest of what a record says lives beside it, a job per module: what a stream is
(:mod:`streamlab.streams`), memory identity (:mod:`streamlab.regions`), what a copy and
a launch touch (:mod:`streamlab.kernels`), and how host threads hand over to one another
(:mod:`streamlab.handovers`). Its readers (:mod:`streamlab.order`, :mod:`streamlab.model`,
the checks) only read.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import threading
from dataclasses import dataclass, field

from .regions import region_of
from .streams import StreamRef, ref_of

_tls = threading.local()
_lock = threading.RLock()
_recorders: list["_Recorder"] = []
_listeners: list = []  # callables (op) -> None, fed every op under the lock (race checks)
_after: list = []  # callables () -> None, run after each emit outside the lock (may raise)
_models: list = []  # model GPUs (streamlab.model), fed every op and every call's end
_launch_watches: list = []  # fn(stream), called just before each of the code's launches

OP_KINDS = ("launch", "copy", "memset", "record", "wait", "sync", "query", "hostfn", "host",
         "graph")


@dataclass(frozen=True, eq=False)
class Op:
    """One operation: a launch, copy, memset, event record/wait/query, synchronize, host
    function, or a host access that a check declares (kind ``host``)."""

    index: int
    kind: str  # see OP_KINDS
    name: str  # kernel name; h2d/d2h/d2d; "event"; sync: stream/device/event; host: read/write
    stream: StreamRef | None = None
    event: object | None = None  # the event object itself (records, waits, event syncs)
    pinned: bool | None = None  # copies: is the host buffer pinned?
    thread: str = ""
    blocking: bool = False  # the host waited for it to finish before the call returned
    internal: bool = False  # issued by streamlab itself (a Timeline, a check's timing)
    reads: tuple = ()  # Regions read
    writes: tuple = ()  # Regions written (plainly)
    atomics: tuple = ()  # Regions updated only with atomic operations
    host_reads: tuple = ()  # Regions the issuing host thread read before the call returned
    where: str = ""  # the line of code that issued it
    detail: dict = field(default_factory=dict)
    uid: int = 0  # the same operation in every recorder (``index`` is per recorder)

    def __str__(self) -> str:
        where = f" in {self.stream.describe()}" if self.stream else ""
        return f"#{self.index} {self.kind} {self.name}{where}"

    def describe(self, names: dict | None = None) -> str:
        """The operation as a learner wrote it, with the line that issued it. ``names``
        maps stream keys (``StreamRef.key()``) to the names to call them by."""
        what = {
            "launch": f"kernel {self.name}",
            "copy": {"h2d": "host-to-device copy", "d2h": "device-to-host copy",
                     "d2d": "device-to-device copy"}.get(self.name, f"copy {self.name}"),
            "memset": "memset",
            "record": "event.record",
            "wait": "event.wait",
            "hostfn": f"host function {self.name!r}",
            "host": "the host",
            "sync": {"device": "cuda.synchronize()", "stream": "stream.synchronize()",
                     "event": "event.synchronize()"}.get(self.name, self.name),
            "query": "stream.query()" if self.name == "stream" else "event.query()",
            "graph": "graph.launch",
        }[self.kind]
        if "driver" in self.detail:  # seen through CUPTI: a call numba did not make
            what = self.detail["driver"]
        if self.stream is not None and self.kind not in ("sync", "host"):
            what += f" in {self.stream.describe(names)}"
        return what + (f" ({self.where})" if self.where else "")


class OpLog(list):
    """The operations recorded, in the order they were issued, with questions to ask.

    The questions (``launches()``, ``syncs()``, ...) are about the learner's own calls:
    they leave out what streamlab issued itself (``op.internal``). Iterating the log
    gives everything, which is what the order of operations needs.
    """

    def user(self) -> list[Op]:
        """The operations the code issued, without streamlab's own."""
        return [op for op in self if not op.internal]

    def launches(self, name: str | None = None) -> list[Op]:
        """The learner's kernel launches (of kernel ``name`` only, if given)."""
        return [op for op in self.user() if op.kind == "launch"
                and (name is None or op.name == name)]

    def copies(self, direction: str | None = None) -> list[Op]:
        """The learner's copies ("h2d", "d2h" or "d2d" only, if given)."""
        return [op for op in self.user() if op.kind == "copy"
                and (direction is None or op.name == direction)]

    def records(self) -> list[Op]:
        """The learner's event records."""
        return [op for op in self.user() if op.kind == "record"]

    def waits(self) -> list[Op]:
        """The learner's event waits."""
        return [op for op in self.user() if op.kind == "wait"]

    def syncs(self) -> list[Op]:
        """The learner's host synchronizes (device, stream, event)."""
        return [op for op in self.user() if op.kind == "sync"]

    def queries(self) -> list[Op]:
        """The learner's event.query() calls (``detail["result"]``: what they found)."""
        return [op for op in self.user() if op.kind == "query"]

    def graph_launches(self) -> list[Op]:
        """The learner's graph launches (``graph.launch(stream)``; the work a graph's
        replay issues is the graph's, marked ``detail["graph_node"]``, and internal)."""
        return [op for op in self.user() if op.kind == "graph"]

    def host_functions(self) -> list[Op]:
        """The host functions the learner put into streams."""
        return [op for op in self.user() if op.kind == "hostfn"]

    def recorded_before(self, wait: Op) -> Op | None:
        """The record of the event that ``wait`` waits on, issued last before it."""
        found = None
        for op in self:
            if op.index >= wait.index:
                break
            if op.kind == "record" and op.event is wait.event:
                found = op
        return found

    def on_stream(self, stream) -> list[Op]:
        """Operations issued to ``stream`` (a numba stream, or a StreamRef)."""
        key = stream.key() if isinstance(stream, StreamRef) else ref_of(stream).key()
        return [op for op in self.user() if op.stream is not None and op.stream.key() == key]

    def describe(self) -> str:
        """Every operation, one line each."""
        return "\n".join(str(op) for op in self)

# --- recording -----------------------------------------------------------------------
class _Recorder:
    def __init__(self):
        self.log = OpLog()


def recording() -> bool:
    """Is anything listening (a record_ops block or a race check)? The hooks' fast path."""
    return bool(_recorders or _listeners)


def observing() -> bool:
    """Is anything listening, a model GPU included (:mod:`streamlab.model`)? The model
    needs the operations but not the elements a simulated kernel touched."""
    return bool(_recorders or _listeners or _models)


def add_model(model) -> None:
    """Feed ``model`` every operation, and the end of every wrapped call."""
    with _lock:
        _models.append(model)
    observers_changed()


def remove_model(model) -> None:
    """Stop feeding ``model`` (see :func:`add_model`)."""
    with _lock:
        if model in _models:
            _models.remove(model)
    observers_changed()


def models() -> list:
    """The model GPUs fed now."""
    return list(_models)


def timed(fn):
    """Wrap one of numba's calls so that a model GPU knows when it began and ended: the
    real time spent inside (a simulated kernel, a host wait) is the model's to replace."""
    import functools
    import time

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not _models:
            return fn(*args, **kwargs)
        depth = getattr(_tls, "depth", 0)
        if depth == 0:
            _tls.began, _tls.began_delay = time.perf_counter(), run_delay()
        _tls.depth = depth + 1
        try:
            return fn(*args, **kwargs)
        finally:
            _tls.depth = depth
            if depth == 0:
                ended, name = time.perf_counter(), threading.current_thread().name
                delay = run_delay()
                for model in list(_models):
                    model.call_ended(name, ended, delay)

    call.__streamlab_timed__ = True
    return call


def call_started_at() -> float:
    """When the wrapped call now running in this thread began (now, outside one)."""
    import time

    if getattr(_tls, "depth", 0) > 0:
        return _tls.began
    return time.perf_counter()


def call_started_delay() -> float:
    """:func:`run_delay` when the wrapped call now running in this thread began (now,
    outside one)."""
    if getattr(_tls, "depth", 0) > 0:
        return _tls.began_delay
    return run_delay()


def run_delay() -> float:
    """Seconds this thread has spent ready to run but waiting for a CPU, since it began:
    time the operating system gave to other processes. The model GPU takes it off the
    host's own work between calls, so that a busy machine (other programs, a test run
    beside the notebook) does not slow the modelled host down. Linux says it (the second
    field of ``/proc/thread-self/schedstat``); elsewhere this is 0 and nothing is taken
    off."""
    held = getattr(_tls, "schedstat", None)
    if held is None:
        held = _tls.schedstat = _ThreadFile("/proc/thread-self/schedstat")
    if held.fd < 0:
        return 0.0
    try:
        return int(os.pread(held.fd, 128, 0).split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class _ThreadFile:
    """A file of one thread's own, open while the thread lives: kept in the thread's
    local storage, which Python drops when the thread ends, and closed then (the
    simulator starts a thread for each kernel's blocks: a file left open by each ran the
    process out of file descriptors)."""

    __slots__ = ("fd",)

    def __init__(self, path: str):
        try:
            self.fd = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = -1

    def __del__(self):
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except (OSError, TypeError):  # (TypeError: at exit, os may be gone)
                pass
            self.fd = -1


#: streamlab's own folder: only code there may mark its operations as streamlab's. As it
#: was loaded (a path with "..", when a script put one on sys.path, is the path that the
#: package's code objects carry) and as an absolute path.
_PACKAGE = (os.path.dirname(__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)


class _Internal:
    """What :func:`internal` returns: a context manager (a class, not a generator: it
    sits inside every span, whose host cost should be small)."""

    __slots__ = ("depth", "around")

    def __enter__(self):
        frame = sys._getframe(1)
        if not frame.f_code.co_filename.startswith(_PACKAGE):  # (either form)
            raise RuntimeError(
                "streamlab.ops.internal() marks the operations streamlab itself issues (a "
                "timeline's events, a check's own work), so that checks leave them out: "
                "code outside streamlab cannot use it. Take it out; your operations are "
                "your code's own")
        self.depth = getattr(_tls, "internal", 0)
        _tls.__dict__.setdefault("entered", []).append((frame, self.around))
        _tls.internal = self.depth + 1

    def __exit__(self, *exc):
        _tls.internal = self.depth
        _tls.entered.pop()
        return False


def internal(*, around_learner_code: bool = False):
    """Mark the operations issued inside as streamlab's own (``op.internal``): those that
    streamlab's code issues in the block, with no learner's frame between (a learner's
    function called from inside stays the learner's, and so does code that sets the
    thread's flag by hand: issue 56). ``around_learner_code``: the learner's code called
    inside is marked too (a graph capture, whose calls run later, in the replay)."""
    block = _Internal()
    block.around = around_learner_code
    return block


@contextlib.contextmanager
def running_host_function(uid: int | None):
    """The host accesses inside happen in a host function (the record ``uid``): they
    take its place in its stream, before everything issued to the stream after it."""
    import time

    before = (getattr(_tls, "hostfn", None), getattr(_tls, "hostfn_began", None),
              getattr(_tls, "hostfn_began_delay", None))
    _tls.hostfn, _tls.hostfn_began, _tls.hostfn_began_delay = \
        uid, time.perf_counter(), run_delay()
    try:
        yield
    finally:
        _tls.hostfn, _tls.hostfn_began, _tls.hostfn_began_delay = before


def current_host_function() -> int | None:
    """The record of the host function whose body runs in this thread now, or None."""
    return getattr(_tls, "hostfn", None)


@contextlib.contextmanager
def replaying_graph(graph_id: int):
    """The operations issued inside are the nodes of the graph ``graph_id``, replayed by
    one launch (their records say so in ``detail["graph_node"]``: the model GPU charges
    them no host cost of their own)."""
    before = getattr(_tls, "graph", None)
    _tls.graph = graph_id
    try:
        yield
    finally:
        _tls.graph = before


def host_function_began() -> float | None:
    """When (``time.perf_counter()``) the body of :func:`current_host_function` began."""
    return getattr(_tls, "hostfn_began", None) if current_host_function() is not None \
        else None


def host_function_began_delay() -> float:
    """:func:`run_delay` when the body of :func:`current_host_function` began."""
    began = getattr(_tls, "hostfn_began_delay", None)
    return began if began is not None and current_host_function() is not None else 0.0


@functools.lru_cache(maxsize=1)
def library_dirs() -> tuple[str, ...]:
    """Folders of the code that is never the learner's: streamlab, numba, cuda-python,
    and the standard library's threading and contextlib (found once)."""
    import importlib.util

    # streamlab's folder both as loaded and as an absolute path: code objects carry
    # the path as loaded ("scripts/../src/streamlab" when a script put that on
    # sys.path), and a frame of streamlab's must never be taken for the learner's
    dirs = [p.rstrip(os.sep) for p in _PACKAGE] + [
        os.path.dirname(contextlib.__file__), os.path.dirname(threading.__file__)]
    for name in ("numba", "numba.cuda", "cuda.bindings", "cuda.core"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(os.path.abspath(loc))
    return tuple(dict.fromkeys(dirs))


_numpy_dir = os.path.dirname(os.path.dirname(os.path.abspath(_np_file))) \
    if (_np_file := getattr(__import__("numpy"), "__file__", None)) else None


@functools.lru_cache(maxsize=1)
def _not_the_learners() -> tuple:
    return library_dirs() + ((_numpy_dir,) if _numpy_dir else ())


def _caller() -> str:
    """The learner's line that issued the call: the first frame outside numba,
    cuda-python, numpy, streamlab and the standard library."""
    skip = _not_the_learners()
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(skip):
            name = frame.f_code.co_name
            if name != "<module>":
                return f"line {frame.f_lineno} in {name}"
            short = os.path.basename(path)
            if short.startswith("<") or "ipykernel" in path:
                return f"line {frame.f_lineno} of the cell"
            return f"line {frame.f_lineno} of {short}"
        frame = frame.f_back
    return ""


_uids = itertools.count(1)


_STREAM_KINDS = frozenset(("launch", "copy", "memset", "record", "wait", "hostfn"))


def emit(kind: str, name: str, stream=None, *, event=None, pinned=None, blocking=False,
         reads=(), writes=(), atomics=(), host_reads=(), detail=None,
         stream_ref=None) -> Op | None:
    """Record one operation in every active recorder (called by the hooks); return it.

    Every span and every call a check records comes through here, so it is kept lean
    (issue 54: a span while record_ops is on, at most 50 us on a GPU): the thread's
    state read once, and the Op made without the frozen dataclass's field-by-field
    ``__init__``."""
    if not (_recorders or _listeners or _models):
        return None
    full = bool(_recorders or _listeners)
    ref = stream_ref
    if ref is None and (stream is not None or kind in _STREAM_KINDS):
        ref = ref_of(stream)
    state = _tls.__dict__  # this thread's own
    hostfn = state.get("hostfn")
    if hostfn is not None:  # a host access in a host function, or a CUDA call from one
        detail = dict(detail or {}, **{"in_host_function" if kind == "host"
                                       else "issued_in_host_function": hostfn})
    graph = state.get("graph")
    if graph is not None:  # a node of a graph being replayed
        detail = dict(detail or {}, graph_node=graph)
    mine = state.get("internal", 0) > 0
    if mine:  # streamlab's own only if its code issued it inside its internal() block,
        # with no learner's frame between (not a flag the learner's code set: issue 56)
        block, around = (state.get("entered") or ((None, False),))[-1]
        skip, frame, mine = _not_the_learners(), sys._getframe(1), False
        while frame is not None and not mine:
            mine = frame is block
            if not mine and not around and not frame.f_code.co_filename.startswith(skip):
                break
            frame = frame.f_back
    op = object.__new__(Op)
    fields = op.__dict__
    fields.update(index=0, kind=kind, name=name, stream=ref, event=event, pinned=pinned,
                  thread=threading.current_thread().name, blocking=blocking,
                  internal=mine,
                  reads=_regions(reads), writes=_regions(writes), atomics=_regions(atomics),
                  host_reads=_regions(host_reads), where=_caller() if full else "",
                  detail=detail or {}, uid=next(_uids))
    state["last_uid"] = _emitted["last"] = op.uid
    with _lock:
        for rec in _recorders:
            rec.log.append(_numbered(op, len(rec.log)))
        for listen in _listeners:
            listen(op)
        for model in _models:
            model.feed(op)
    if _after and not state.get("quiet", 0):  # (a hand-over's: the checks wait for the next)
        for after in _after:
            after()
    return op


def _regions(regions) -> tuple:
    """The regions given, less the Nones (most records touch none: no work then)."""
    return tuple(r for r in regions if r is not None) if regions else ()


def _numbered(op: Op, index: int) -> Op:
    """``op`` as one recorder numbers it: ``dataclasses.replace(op, index=index)``, less
    its cost (the span benchmark's profile found replace a quarter of a record's time
    while a recorder listens: it calls the frozen class's __init__ field by field)."""
    copy = object.__new__(Op)
    copy.__dict__.update(op.__dict__)
    copy.__dict__["index"] = index
    return copy


@contextlib.contextmanager
def quietly():
    """Records emitted inside run no after-emit hooks (the session race check's raise):
    a hand-over's record is made inside a library's call (a queue's put, an Event's
    is_set), where an exception would be lost or leave the library's state half done.
    A race it completes is raised at the thread's next ordinary operation."""
    _tls.quiet = getattr(_tls, "quiet", 0) + 1
    try:
        yield
    finally:
        _tls.quiet -= 1


def host_access(arrays, mode: str = "read", what: str = "") -> None:
    """Declare that the host reads (or writes) these host arrays now: a check calls this
    where its contract says a result is ready, so that the order of operations can tell
    whether the GPU work that produced it was waited for."""
    if mode not in ("read", "write"):
        raise ValueError(f"mode must be 'read' or 'write', got {mode!r}")
    regions = []
    for i, ary in enumerate(arrays):
        region = region_of(ary, what or f"host array {i}")
        if region is None or not region.host:
            raise TypeError(f"host_access takes host (numpy) arrays, got "
                            f"{type(ary).__name__}: the host cannot touch device memory")
        regions.append(region)
    emit("host", mode, reads=regions if mode == "read" else (),
         writes=regions if mode == "write" else ())


@contextlib.contextmanager
def record_ops():
    """Record every launch, copy, event record/wait and synchronize issued in the block,
    from any thread.

    Yields an :class:`OpLog`, filled as the code runs. Recorders may be nested, and may
    end in any order: each sees everything issued while it is open. The calls behave
    exactly as without it.
    """
    rec = _Recorder()
    with _lock:
        _recorders.append(rec)
    _listening_changed()
    try:
        yield rec.log
    finally:
        with _lock:
            _recorders.remove(rec)
        _listening_changed()


def add_listener(fn) -> None:
    """Call ``fn(op)`` for every operation emitted from now on (a session race check)."""
    with _lock:
        _listeners.append(fn)
    _listening_changed()


@contextlib.contextmanager
def watch_launches(before):
    """Call ``before(stream)`` just before every kernel launch issued inside the block
    that is not streamlab's own (:func:`internal`), from any thread, with the stream the
    launch names (a stream object, or 0). It runs outside the lock, marked internal: it
    may record an event (the checks' per-stream spans,
    :func:`streamlab.check.time_per_stream`). Nothing is called after a launch: an event
    recorded after each launch held the hardware queues back (lab 08 on an H100)."""
    with _lock:
        _launch_watches.append(before)
    try:
        yield
    finally:
        with _lock:
            _launch_watches.remove(before)


def launch_watched(stream) -> None:
    """The hooks' call just before a kernel launch into ``stream``: the watches of
    :func:`watch_launches`, if any, are told."""
    if not _launch_watches or getattr(_tls, "internal", 0) > 0:
        return
    with internal():
        for before in list(_launch_watches):
            before(stream)


def add_after_emit(fn) -> None:
    """Run ``fn()`` after every emitted operation, outside the lock (it may raise)."""
    with _lock:
        _after.append(fn)


_on_listening: list = []  # fn(listening: bool): told when recording() may have changed


def on_listening(fn) -> None:
    """Call ``fn(recording())`` whenever a recorder or listener comes or goes (the GPU's
    driver watch subscribes to CUPTI only while someone listens)."""
    _on_listening.append(fn)


_emitted = {"last": 0, "since": None}  # the latest uid; the latest before recording began


def emitted_while_recording() -> bool:
    """Has the calling thread issued an operation since the recording now on began? (A
    thread that has not has nothing to hand over to another: a library's own thread.)"""
    since = _emitted["since"]
    return since is not None and getattr(_tls, "last_uid", -1) > since


def _listening_changed() -> None:
    listening = recording()
    if listening and _emitted["since"] is None:
        _emitted["since"] = _emitted["last"]
    elif not listening:
        _emitted["since"] = None
    for fn in list(_on_listening):
        fn(listening)
    observers_changed()


_on_observing: list = []  # fn(): told when observing() may have changed


def on_observing(fn) -> None:
    """Call ``fn()`` whenever a recorder, listener or model GPU comes or goes, or a model
    GPU is first fed (the thread hand-overs replace the standard library's methods only
    while something needs them: :func:`streamlab.handovers.needed`)."""
    if fn not in _on_observing:
        _on_observing.append(fn)


def stop_observing(fn) -> None:
    """Stop calling ``fn`` (see :func:`on_observing`)."""
    if fn in _on_observing:
        _on_observing.remove(fn)


def observers_changed() -> None:
    """Tell the :func:`on_observing` subscribers that what observes may have changed (a
    model GPU says so when it is first fed)."""
    for fn in list(_on_observing):
        fn()
