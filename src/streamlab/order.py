"""The order CUDA guarantees between operations, and the races it leaves open.

Numba's simulator runs every operation to the end, in the order it was issued, so a
missing ``event.wait`` still gives the right answer there; on a GPU the same code may
not. What is *allowed* to overlap does not depend on the machine: it follows from CUDA's
rules. This module applies them to a record of operations (:func:`streamlab.record_ops`):

* operations in one stream run in the order they were issued;
* an operation starts after the host has issued it, so after everything the host did
  before (host code runs in order, per host thread);
* the legacy default stream waits for all earlier work in the *blocking* streams of its
  device, and they wait for it (not non-blocking streams; a per-thread default stream
  counts as blocking here, as CUDA's documentation says: "The per-thread default stream
  is not a non-blocking stream and will synchronize with the legacy default stream if
  both are used in a program");
* ``event.record(s)`` marks the point in ``s`` at that moment; ``event.wait(t)`` makes
  later work in ``t`` wait for it. Waiting on an event never recorded waits for nothing;
* the host waits for a stream, an event, or the device when it synchronizes (or when
  ``event.query()`` returns True), and for a copy that CUDA makes synchronous (a copy to
  pageable host memory, or one issued with no stream).

From these, two operations are **ordered** if a chain of such steps leads from one to the
other (vector clocks, one per stream and host thread). A **race** is two operations that
touch the same memory, at least one writing (two atomic updates do not race), with no
order between them: on a GPU they may run in either order, or at once.

>>> import numpy as np, streamlab
>>> from numba import cuda
>>> @cuda.jit
... def produce(x):
...     x[0] = 1
>>> @cuda.jit
... def consume(x, y):
...     y[0] = x[0]
>>> a, b = cuda.stream(), cuda.stream()
>>> x, y = cuda.device_array(1), cuda.device_array(1)
>>> with streamlab.record_ops() as ops:
...     produce[1, 1, a](x)
...     consume[1, 1, b](x, y)          # no event: nothing orders b after a
>>> races = streamlab.find_races(ops)
>>> print(races[0].message())    # doctest: +ELLIPSIS
kernel consume in blocking stream ... reads argument 'x' while kernel produce in blocking stream ... writes it, and nothing orders the two. ...
"""

from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass

from . import ops as _ops
from .streams import PER_THREAD_SYNCS_WITH_LEGACY, StreamRef  # noqa: F401  (the rule)
from .kernels import ATOMIC, READ, WRITE  # noqa: F401  (the access modes, named once)
from .ops import Op, OpLog
from .regions import Region



class RaceError(AssertionError):
    """Operations that touch the same memory may run at once; the message says which,
    and how to order them."""


@dataclass(frozen=True)
class Race:
    """Two unordered operations on the same memory: ``first`` was issued before ``second``."""

    first: Op
    second: Op
    first_mode: str
    second_mode: str
    region: Region  # what ``second`` touched

    def message(self, names: dict | None = None) -> str:
        """The race in one paragraph; ``names`` maps stream keys to names."""
        verb = {READ: "reads", WRITE: "writes", ATOMIC: "updates"}
        return (f"{self.second.describe(names)} {verb[self.second_mode]} {self.region.what} "
                f"while {self.first.describe(names)} {verb[self.first_mode]} it, and "
                f"nothing orders the two. {self.fix(names)}")

    def fix(self, names: dict | None = None) -> str:
        """How to order the two, in words."""
        first, second = self.first, self.second
        if first.kind == "copy" and first.name == "h2d" and not first.pinned and \
                first.stream is not None and first.stream.is_legacy_default:
            return ("A copy from pageable memory with no stream (cuda.to_device(x), or "
                    "copy_to_device(x)) returns once x is staged; the copy lands later, "
                    "in the legacy default stream, which a non-blocking stream does not "
                    "wait for. Copy in the stream that uses it (stream=s), or call "
                    "cuda.synchronize() after the copy.")
        if second.kind == "host" or (second.stream is None):
            return ("Wait for the GPU work before the host touches the memory: "
                    "stream.synchronize(), or an event recorded after it and "
                    "event.synchronize(); in asyncio, await a future that a host function in "
                    "the stream resolves (driver.cuLaunchHostFunc, then "
                    "loop.call_soon_threadsafe).")
        if first.kind == "host":
            return ("The host touched the memory while the GPU may still use it: wait "
                    "for the GPU's earlier work first (stream.synchronize() or "
                    "event.synchronize()).")
        if first.stream is not None and first.stream.key() != second.stream.key():
            return (f"Order them with an event: record it in "
                    f"{first.stream.describe(names)} after the first (event.record(stream)), "
                    f"and make {second.stream.describe(names)} wait on it before the second "
                    f"(event.wait(stream)).")
        return "Issue them to one stream, or order them with an event."


class Order:
    """Happens-before over operations fed one by one, in the order they were issued.

    ``feed(op)`` returns the races that ``op`` completes. ``ordered(a, b)`` says whether
    ``a`` happens before ``b``.
    """

    def __init__(self):
        self.host = {}  # host agent -> vector clock of that host thread now
        self.last = {}  # stream agent -> vector clock of its last operation
        self.kinds = {}  # stream agent -> StreamRef
        self.events = {}  # event object -> vector clock at its latest record
        self.clock = {}  # op uid -> (agent, position, vector clock)
        self.counts = {}  # agent -> operations so far
        self.history = {}  # allocation -> {(agent, mode): [(op, position, region, clock)]}
        self.races: list[Race] = []
        self.waits_on_nothing: list[Op] = []  # waits on events never recorded before them
        self.fed: list[Op] = []  # every operation, in the order fed

    @property
    def notes(self) -> list[Op]:
        """Hints that are not races: the waits on events never recorded (see note())."""
        return self.waits_on_nothing

    # --- vector clocks ---------------------------------------------------------------
    @staticmethod
    def _join(into: dict, other: dict | None) -> dict:
        if other:
            for agent, n in other.items():
                if into.get(agent, 0) < n:
                    into[agent] = n
        return into

    def _tick(self, agent, vc: dict) -> int:
        n = self.counts.get(agent, 0) + 1
        self.counts[agent] = n
        vc[agent] = n
        return n

    def ordered(self, a: Op, b: Op) -> bool:
        """Does ``a`` happen before ``b`` (both fed)?"""
        agent, pos, _ = self.clock[a.uid]
        return self.clock[b.uid][2].get(agent, 0) >= pos

    def host_after(self, op: Op, thread: str | None = None) -> bool:
        """Has the host thread ``thread`` (default: the one that issued ``op``) waited,
        by now, for ``op`` to finish?"""
        agent, pos, _ = self.clock[op.uid]
        host = self.host.get(("host", thread or op.thread), {})
        return host.get(agent, 0) >= pos

    # --- the rules -------------------------------------------------------------------
    def _implicit(self, ref) -> list:
        """Stream agents whose earlier work an operation in ``ref``'s stream waits for."""
        return ref.implicit_waits(self.kinds)

    def feed(self, op: Op) -> list[Race]:
        """Take the next operation (in issue order); return the races it completes."""
        self.fed.append(op)
        host_agent = ("host", op.thread)
        host = self.host.setdefault(host_agent, {})
        host_pos = self._tick(host_agent, host)
        if op.stream is not None and op.kind not in ("sync", "host"):
            agent = ("stream", op.stream.key())
            self.kinds.setdefault(agent, op.stream)
            vc = self._join(dict(self.last.get(agent, {})), host)
            for other in self._implicit(op.stream):
                self._join(vc, self.last.get(other))
            if op.kind == "wait":
                if op.event in self.events:
                    self._join(vc, self.events[op.event])
                elif op not in self.waits_on_nothing:
                    self.waits_on_nothing.append(op)
            pos = self._tick(agent, vc)
            self.last[agent] = vc
            self.clock[op.uid] = (agent, pos, vc)
            if op.kind == "record":
                self.events[op.event] = vc
            if op.host_reads:  # staged by the host before the call returned
                staged = Op(op.index, "host", "read", thread=op.thread, where=op.where,
                            reads=op.host_reads, detail={"for": op.describe()})
                self.races.extend(self._accesses(staged, host_agent, host_pos, dict(host)))
            if op.blocking:
                self._join(host, vc)
        elif op.kind == "host" and op.detail.get("in_host_function") in self.clock:
            # inside a host function: at its place in its stream (see ops.running_host_function)
            agent, pos, vc = self.clock[op.detail["in_host_function"]]
            self.clock[op.uid] = (agent, pos, vc)
        else:
            self._host_wait(op, host)
            agent, pos, vc = host_agent, host_pos, dict(host)
            self.clock[op.uid] = (agent, pos, vc)
        found = self._accesses(op, agent, pos, vc)
        self.races.extend(found)
        return found

    def _host_wait(self, op: Op, host: dict) -> None:
        if (op.kind == "sync" and op.name == "stream") or \
                (op.kind == "query" and op.name == "stream" and op.detail.get("result")):
            agent = ("stream", op.stream.key())
            self._join(host, self.last.get(agent))
            if op.stream.is_legacy_default:  # the legacy stream waits for blocking ones
                for other in self._implicit(op.stream):
                    self._join(host, self.last.get(other))
        elif op.kind == "sync" and op.name == "device":
            device = op.detail.get("device", 0)
            for agent, ref in self.kinds.items():
                if ref.device == device:
                    self._join(host, self.last.get(agent))
        elif (op.kind == "sync" and op.name == "event") or \
                (op.kind == "query" and op.detail.get("result")):
            self._join(host, self.events.get(op.event))
        elif op.kind == "sync" and op.name == "thread start":
            # what the parent did before start() comes before all the child does
            child = self.host.setdefault(("host", op.detail["child"]), {})
            self._join(child, host)
        elif op.kind == "sync" and op.name == "thread join":
            self._join(host, self.host.get(("host", op.detail["child"])))
        elif op.kind == "sync" and op.name in ("host function", "awaited"):
            # a host function runs once its stream reaches it; code after an awaited
            # stream_done runs once the stream's host function has run
            ran = self.clock.get(op.detail.get("after"))
            if ran is not None:
                self._join(host, ran[2])

    # --- memory ----------------------------------------------------------------------
    def _accesses(self, op: Op, agent, pos: int, vc: dict) -> list[Race]:
        found, paired = [], set()  # one race per pair of operations, however many
        # of their accesses clash (a kernel that reads and writes an array touches it twice)
        for mode, regions in ((WRITE, op.writes), (ATOMIC, op.atomics), (READ, op.reads)):
            for region in regions:
                key = region.alloc or (region.lo, region.hi)
                hist = self.history.setdefault(key, {})
                for (other_agent, other_mode), entries in hist.items():
                    if other_agent == agent or not _conflict(mode, other_mode):
                        continue
                    for other, other_pos, other_region, other_vc in entries:
                        if vc.get(other_agent, 0) >= other_pos or \
                                other_vc.get(agent, 0) >= pos:
                            continue  # ordered, one way or the other (a host function's
                            # accesses are recorded when it runs, after later stream work)
                        if region.overlaps(other_region) and id(other) not in paired:
                            paired.add(id(other))
                            found.append(Race(other, op, other_mode, mode, region))
                # An older access by the same agent, inside this one, is ordered before
                # it: whatever races with the older one races with this one too.
                mine = [e for e in hist.get((agent, mode), []) if not region.covers(e[2])]
                mine.append((op, pos, region, vc))
                hist[(agent, mode)] = mine
        return found


def _conflict(a: str, b: str) -> bool:
    if a == READ and b == READ:
        return False
    return not (a == ATOMIC and b == ATOMIC)


def analyze(ops) -> Order:
    """Feed every operation of ``ops`` (an OpLog, or any list of Ops) to a new Order."""
    order = Order()
    for op in ops:
        order.feed(op)
    return order


def find_races(ops) -> list[Race]:
    """The races in a record of operations (see the module docstring)."""
    return analyze(ops).races


def stream_names(names) -> dict:
    """{name: stream} as given by a learner -> {StreamRef key: name} for messages."""
    if not names:
        return {}
    if not isinstance(names, dict):
        raise TypeError(f"names must be a dict of name -> stream, got {type(names).__name__}")
    out = {}
    for name, stream in names.items():
        if not isinstance(name, str):
            raise TypeError(f"names maps a name (str) to a stream; got the key {name!r}")
        out[StreamRef.of(stream).key()] = name
    return out


def report(races, notes=(), limit: int = 5, names: dict | None = None) -> str:
    """The races as a learner reads them: one paragraph each, the first ``limit`` of them.
    ``names`` maps stream keys to names (see :func:`stream_names`)."""
    if not races:
        return "race check: no races."
    lines = [f"race check: {len(races)} race{'s' if len(races) != 1 else ''} "
             f"(operations on the same memory that nothing orders):"]
    for i, race in enumerate(races[:limit], 1):
        lines.append(f"  {i}. {race.message(names)}")
    if len(races) > limit:
        lines.append(f"  ... and {len(races) - limit} more of the same kinds.")
    for wait in notes:
        lines.append(f"  Note: {note(wait, names)}")
    return "\n".join(lines)


def note(wait: Op, names: dict | None = None) -> str:
    """The hint for a wait on an event never recorded before it."""
    return (f"{wait.describe(names)} waits on an event that was never recorded before it: "
            f"it waits for nothing. Record the event first.")


class RaceCheck:
    """What :func:`race_check` found: ``races``, ``notes``, ``ops`` and ``report()``."""

    def __init__(self, names: dict | None = None):
        self.ops: OpLog = OpLog()
        self.races: list[Race] = []
        self.notes: list[Op] = []  # waits on events never recorded
        self.names = names or {}

    def report(self) -> str:
        """The races and notes as a learner reads them."""
        return report(self.races, self.notes, names=self.names)

    def __bool__(self) -> bool:
        return bool(self.races)


@contextlib.contextmanager
def race_check(*, raises: bool = True, quiet: bool = False, read_results: bool = True,
               names=None, file=None):
    """Check the block for races, on the simulator as on a GPU.

    Every stream-ordered call in the block is recorded (from any thread); when the block
    ends, CUDA's ordering rules decide which operations may overlap (see this module's
    docstring), and each pair that touches the same memory, one of them writing, with
    nothing ordering them, is a race. ``read_results=True`` treats the end of the block
    as the host reading every host array that the block's GPU work wrote (a copy to
    pinned memory, a kernel writing mapped memory): wait for them inside the block.

    Races are printed (to ``file``, default stdout; not at all with ``quiet=True``) and,
    with ``raises=True``, raised as :class:`RaceError`. The block's result is in the
    yielded :class:`RaceCheck`.
    ``names={"stream0": stream0, ...}`` names streams in the report.
    """
    result = RaceCheck(stream_names(names))
    with checked_here():
        with _ops.record_ops() as log:
            yield result
            if read_results:
                _read_at_end(log)
    order = analyze(log)
    result.ops, result.races, result.notes = log, order.races, order.notes
    if result.races:
        if not quiet:
            print(result.report(), file=file or sys.stdout)
        if raises:
            raise RaceError(result.report())


@contextlib.contextmanager
def checked_here():
    """Operations issued inside are checked by the block itself (a race_check, a lab's
    check): a session-wide race check (STREAMLAB_RACE_CHECK=1) leaves them to it."""
    _tls.explicit = getattr(_tls, "explicit", 0) + 1
    try:
        yield
    finally:
        _tls.explicit -= 1


def _read_at_end(log: OpLog) -> None:
    """The host reads, now, every host array that GPU work in ``log`` wrote."""
    written = {}
    for op in log:
        if op.stream is not None and op.kind in ("copy", "launch"):
            for region in op.writes + op.atomics:
                if region.host:
                    written[(region.alloc, region.lo, region.hi)] = region
    if written:
        _ops.emit("host", "read", reads=list(written.values()),
                  detail={"for": "the end of the race_check block"})


_tls = threading.local()


# --- a whole session under the race check (STREAMLAB_RACE_CHECK=1) --------------------
class _Session:
    """Every operation of the process, checked as it is issued; a race raises RaceError
    in the thread that issues its second operation (used to run every notebook and
    solution under the check). Operations inside an explicit race_check block are left
    to that block."""

    def __init__(self):
        self.order = Order()
        self.pending: list[Race] = []

    def __call__(self, op: Op) -> None:
        if getattr(_tls, "explicit", 0):
            return
        found = self.order.feed(op)
        if found:
            self.pending.extend(found)

    def raise_pending(self) -> None:
        if self.pending and not getattr(_tls, "explicit", 0) and \
                threading.current_thread() is threading.main_thread():
            races, notes = self.pending, self.order.notes
            # The cell stops here, so its later operations (a synchronize, say) never
            # run: start afresh rather than blame the next cells for this one's race.
            self.order, self.pending = Order(), []
            raise RaceError(report(races, notes))


_session: _Session | None = None


def start_session() -> None:
    """Check every operation from now on (what STREAMLAB_RACE_CHECK=1 does at import)."""
    global _session
    if _session is None:
        _session = _Session()
        _ops.add_listener(_session)
        _ops.add_after_emit(_session.raise_pending)
